"""Pareto front of time versus cost: the candidates no other candidate beats on both."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def pareto_front(items: Sequence[T], *, time_of: Callable[[T], float], cost_of: Callable[[T], float]) -> list[T]:
    """Items not dominated in (time, cost), sorted by time; ties keep the first one seen.

    Sort by time then cost and sweep: an item is on the front when it is cheaper than every
    faster item. O(n log n).
    """
    ordered = sorted(items, key=lambda x: (time_of(x), cost_of(x)))
    front: list[T] = []
    best_cost = float("inf")
    for item in ordered:
        cost = cost_of(item)
        if cost < best_cost:
            front.append(item)
            best_cost = cost
    return front


def thin_front(front: Sequence[T], *, time_of: Callable[[T], float], cost_of: Callable[[T], float],
               step: float = 0.05) -> list[T]:
    """A Pareto front (sorted by time) with near-duplicates dropped for display: a point is kept when
    its cost or its time differs by at least `step` (5%) from the last kept one. The fastest and the
    cheapest points are always kept. Every node count being a candidate makes long runs of points a
    fraction of a percent apart; they say nothing the neighbours do not."""
    if len(front) <= 2:
        return list(front)
    kept = [front[0]]
    for item in front[1:-1]:
        last = kept[-1]
        if (time_of(item) >= time_of(last) * (1 + step)
                or cost_of(item) <= cost_of(last) * (1 - step)):
            kept.append(item)
    kept.append(front[-1])
    return kept
