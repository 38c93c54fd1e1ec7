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
