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
    """Array of shape (len(recompute), len(layouts))."""
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
    """Peak memory of every layout under every recompute option (grouped by micro-batch)."""
    totals = np.zeros((len(recompute), len(layouts)))
    gb = global_batches(target_sequences, layouts.micro_batch, layouts.dp)
    for mb in MICRO_BATCHES:
        mask = layouts.micro_batch == mb
        if not mask.any():
            continue
        sub = layouts.take(mask)
        for row, choice in enumerate(recompute):
            sized = replace(job, micro_batch=mb, recompute=choice, global_batch=target_sequences)  # type: ignore[arg-type]
            totals[row, mask] = peak_total_bytes_batch(arch, sized, sub)
    return SpaceMemory(layouts=layouts, recompute=recompute, total_bytes=totals, global_batch=gb,
                       batch_ok=layouts.micro_batch * layouts.dp <= target_sequences)


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


def fastest_per_count(arch: Architecture, job: Job, gpu: Gpu, memory: SpaceMemory, usable_bytes: float,
                      calibration: Calibration | None = None) -> dict[int, BestLayout]:
    """For each GPU count in the space, the fastest layout that fits (with the search's counts); a
    calibration for this GPU replaces the efficiency parameters it measured."""
    lay = memory.layouts
    counts = lay.gpus
    batch_ok = memory.batch_ok[np.newaxis, :]
    memory_ok = memory.total_bytes <= usable_bytes
    fits = memory_ok & batch_ok
    rates = np.full(fits.shape, -np.inf)
    steps = np.full(fits.shape, np.inf)
    for row, choice in enumerate(memory.recompute):
        mask = fits[row]
        if not mask.any():
            continue
        sub = lay.take(mask)
        timed = replace(job, recompute=choice)  # type: ignore[arg-type]
        r = step_time(arch, timed, sub, gpu, global_batch=memory.global_batch[mask], tp=sub.tp, pp=sub.pp,
                      dp=sub.dp, cp=sub.cp, ep=sub.ep, vpp=sub.vpp, micro_batch=sub.micro_batch, zero=sub.zero,
                      calibration=calibration, etp=sub.etp)
        rates[row, mask] = np.asarray(r.tokens_per_step / r.step_time_s)
        steps[row, mask] = np.asarray(r.step_time_s)
    results: dict[int, BestLayout] = {}
    n_rc = len(memory.recompute)
    for count in np.unique(counts):
        cols = counts == count
        evaluated = int(cols.sum()) * n_rc
        block = np.where(cols[np.newaxis, :], rates, -np.inf)
        feasible = int(fits[:, cols].sum())
        infeasible_batch = int((~memory.batch_ok[cols]).sum()) * n_rc
        infeasible_memory = int((~memory_ok[:, cols] & memory.batch_ok[cols][np.newaxis, :]).sum())
        if feasible == 0:
            results[int(count)] = BestLayout(index=-1, recompute="", step_time_s=np.inf, tokens_per_s=0.0,
                                             global_batch=0, evaluated=evaluated, feasible=0,
                                             infeasible_memory=infeasible_memory, infeasible_batch=infeasible_batch)
            continue
        row, index = np.unravel_index(int(np.argmax(block)), block.shape)
        results[int(count)] = BestLayout(
            index=int(index), recompute=memory.recompute[int(row)], step_time_s=float(steps[row, index]),
            tokens_per_s=float(rates[row, index]), global_batch=int(memory.global_batch[index]),
            evaluated=evaluated, feasible=feasible, infeasible_memory=infeasible_memory,
            infeasible_batch=infeasible_batch)
    return results
