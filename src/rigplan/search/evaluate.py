"""Vectorised evaluation of a layout space: memory feasibility, then step time, for one GPU type.

Memory does not depend on the GPU type (only its capacity does), so the planner computes it once
per node size and GPU count and reuses it for every GPU type with that node size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate.calibration import Calibration
from rigplan.estimate.memory import peak_total_bytes_batch
from rigplan.estimate.step import step_time
from rigplan.search.space import MICRO_BATCHES, LayoutArrays


@dataclass(frozen=True)
class SpaceMemory:
    """Peak device bytes per layout and recompute choice (rows: recompute options)."""

    layouts: LayoutArrays
    recompute: tuple[str, ...]
    total_bytes: Any
    """Array of shape (len(recompute), len(layouts)); inf where the layout's batch is not ok."""
    global_batch: Any
    """Sequences per step per layout: the target rounded down to a multiple of micro_batch·dp."""
    batch_ok: Any
    """micro_batch·dp does not exceed the target global batch (the batch is a training choice, not
    something to inflate to use more GPUs)."""


def global_batches(target_sequences: int, micro_batch: Any, dp: Any) -> Any:
    unit = micro_batch * dp
    return np.maximum(target_sequences // unit, 1) * unit


def space_memory(arch: Architecture, job: Job, layouts: LayoutArrays, recompute: tuple[str, ...],
                 target_sequences: int) -> SpaceMemory:
    """Peak memory of every layout under every recompute option (grouped by micro-batch). Layouts whose
    dp x micro-batch exceeds the target batch are never run, so their memory is not computed (inf)."""
    totals = np.full((len(recompute), len(layouts)), np.inf)
    gb = global_batches(target_sequences, layouts.micro_batch, layouts.dp)
    batch_ok = layouts.micro_batch * layouts.dp <= target_sequences
    for mb in MICRO_BATCHES:
        mask = (layouts.micro_batch == mb) & batch_ok
        if not mask.any():
            continue
        sub = layouts.take(mask)
        for row, choice in enumerate(recompute):
            sized = replace(job, micro_batch=mb, recompute=choice, global_batch=target_sequences)  # type: ignore[arg-type]
            totals[row, mask] = peak_total_bytes_batch(arch, sized, sub)
    return SpaceMemory(layouts=layouts, recompute=recompute, total_bytes=totals, global_batch=gb,
                       batch_ok=batch_ok)


@dataclass(frozen=True)
class BestLayout:
    """The fastest layout that fits, for one GPU type and count, with the counts behind the search."""

    index: int
    recompute: str
    step_time_s: float
    tokens_per_s: float
    global_batch: int
    evaluated: int
    feasible: int
    infeasible_memory: int
    infeasible_batch: int = 0
    """Layouts whose data-parallel micro-batches (dp x micro-batch) exceed the global batch."""
    borderline: BestLayout | None = None
    """The fastest layout over the capacity but within `over_limit_bytes`, when it is faster than the
    fitting winner or nothing fits (plan keeps it, marked: it may not fit)."""


def _winners(rates: Any, counts: Any, fits: Any) -> tuple[Any, Any, Any, Any]:
    """Per GPU count (in sorted order): the sort order, the start of each count's run, the best rate of each
    layout over recompute rows among `fits`, and that row; the winner of a count is the first maximum in
    (recompute, layout) order."""
    masked = np.where(fits, rates, -np.inf)
    best_rate = masked.max(axis=0)
    best_row = np.argmax(masked == best_rate[np.newaxis, :], axis=0)
    index = np.arange(len(counts))
    order = np.lexsort((index, best_row, -best_rate, counts))
    sorted_counts = counts[order]
    starts = np.flatnonzero(np.r_[True, sorted_counts[1:] != sorted_counts[:-1]])
    return order, starts, best_rate, best_row


def fastest_per_count(arch: Architecture, job: Job, gpu: Gpu, memory: SpaceMemory, usable_bytes: float,
                      calibration: Calibration | None = None,
                      over_limit_bytes: float | None = None) -> dict[int, BestLayout]:
    """For each GPU count in the space, the fastest layout that fits (with the search's counts); a
    calibration for this GPU replaces the efficiency parameters it measured.

    Every (recompute, layout) pair that fits is timed; the winner of a count is the first maximum in
    (recompute, layout) order, found for all counts in one sort (rate, then recompute row, then index).
    With `over_limit_bytes` (above the capacity), pairs up to it are timed too, and the fastest of those
    over the capacity is attached to a count's result when it beats the fitting winner.
    """
    lay = memory.layouts
    n_rc = len(memory.recompute)
    batch_ok = memory.batch_ok
    memory_ok = memory.total_bytes <= usable_bytes
    fits = memory_ok & batch_ok[np.newaxis, :]
    within = fits if over_limit_bytes is None else (memory.total_bytes <= over_limit_bytes) & batch_ok[np.newaxis, :]
    rates = np.full(fits.shape, -np.inf)
    steps = np.full(fits.shape, np.inf)
    for row, choice in enumerate(memory.recompute):
        mask = within[row]
        if not mask.any():
            continue
        sub = lay.take(mask)
        timed = replace(job, recompute=choice)  # type: ignore[arg-type]
        r = step_time(arch, timed, sub, gpu, global_batch=memory.global_batch[mask], tp=sub.tp, pp=sub.pp,
                      dp=sub.dp, cp=sub.cp, ep=sub.ep, vpp=sub.vpp, micro_batch=sub.micro_batch, zero=sub.zero,
                      calibration=calibration, etp=sub.etp)
        rates[row, mask] = np.asarray(r.tokens_per_step / r.step_time_s)
        steps[row, mask] = np.asarray(r.step_time_s)
    counts = np.asarray(lay.gpus)
    order, starts, _, best_row = _winners(rates, counts, fits)
    sorted_counts = counts[order]
    feasible_by = np.add.reduceat(fits.sum(axis=0)[order], starts)
    memory_out_by = np.add.reduceat((~memory_ok & batch_ok[np.newaxis, :]).sum(axis=0)[order], starts)
    batch_out_by = np.add.reduceat((~batch_ok[order]).astype(np.int64), starts)
    sizes = np.diff(np.r_[starts, len(order)])
    over: dict[int, BestLayout] = {}
    if over_limit_bytes is not None:
        o_order, o_starts, o_rate, o_row = _winners(rates, counts, within & ~memory_ok)
        for start in o_starts:
            i = int(o_order[start])
            if np.isfinite(o_rate[i]):
                row = int(o_row[i])
                over[int(counts[i])] = BestLayout(
                    index=i, recompute=memory.recompute[row], step_time_s=float(steps[row, i]),
                    tokens_per_s=float(rates[row, i]), global_batch=int(memory.global_batch[i]),
                    evaluated=0, feasible=0, infeasible_memory=0)
    results: dict[int, BestLayout] = {}
    for k, start in enumerate(starts):
        count = int(sorted_counts[start])
        evaluated = int(sizes[k]) * n_rc
        feasible = int(feasible_by[k])
        infeasible_memory = int(memory_out_by[k])
        infeasible_batch = int(batch_out_by[k]) * n_rc
        i = int(order[start])
        alternative = over.get(count)
        if feasible == 0:
            results[count] = BestLayout(index=-1, recompute="", step_time_s=np.inf, tokens_per_s=0.0,
                                        global_batch=0, evaluated=evaluated, feasible=0,
                                        infeasible_memory=infeasible_memory, infeasible_batch=infeasible_batch,
                                        borderline=alternative)
            continue
        row = int(best_row[i])
        if alternative is not None and alternative.tokens_per_s <= float(rates[row, i]):
            alternative = None
        results[count] = BestLayout(
            index=i, recompute=memory.recompute[row], step_time_s=float(steps[row, i]),
            tokens_per_s=float(rates[row, i]), global_batch=int(memory.global_batch[i]),
            evaluated=evaluated, feasible=feasible, infeasible_memory=infeasible_memory,
            infeasible_batch=infeasible_batch, borderline=alternative)
    return results
