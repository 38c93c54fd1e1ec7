"""Vectorised evaluation of a layout space: memory feasibility, then step time, for one GPU type.

Memory does not depend on the GPU type (only its capacity does), so the planner computes it once
per node size and GPU count and reuses it for every GPU type with that node size.

The fastest layout per GPU count is found without timing every layout, and with the same answer as
timing them all (tests/unit/test_search_exact.py). A micro-batch's seconds on each pace-setting rank
(estimate.step.pace_terms) depend on tp, pp, vpp, cp, ep, etp and the micro-batch only, so they are
computed once per distinct combination (a few per cent of the layouts) and give each layout a lower
bound on its step time (estimate.step.pace_lower_bound_s), hence an upper bound on its tokens/s. The
layouts with the highest bounds of each GPU count are timed first; every layout whose bound reaches the
best rate so far is timed next; the others cannot reach it and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate.calibration import Calibration
from rigplan.estimate.memory import peak_total_bytes_choices
from rigplan.estimate.step import PaceTerms, pace_lower_bound_s, pace_terms, step_time
from rigplan.search.space import MICRO_BATCHES, LayoutArrays

SEED_CLOSENESS = 0.8
"""Seeds are drawn from the pairs whose bound is at least this share of their count's highest (the
order of the first rounds only saves time; the last round alone decides what is timed)."""
SEEDS = (32,)
"""Rounds before the last: the 32 pairs of each GPU count with the highest tokens/s bounds are timed
first, and their best rate is the bar every other pair's bound must reach."""
BOUND_MARGIN = 1e-9
"""Relative slack on the step-time bound, far above the rounding of a few float64 sums, so that no
layout the bound excludes could tie the best one."""


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
    pace_first: Any = None
    """Index of the first layout of each distinct (tp, pp, vpp, cp, ep, etp, micro-batch): the layouts
    whose pace terms (estimate.step.pace_terms) are computed."""
    pace_group: Any = None
    """Per layout, its row in pace_first."""
    block: Any = None
    """Per layout, the index of its GPU count in block_counts."""
    block_counts: Any = None
    """The distinct GPU counts, ascending."""
    rate_scale: Any = None
    """Per layout, tokens per step / (m + (pp - 1)/vpp): over a micro-batch's seconds on the slowest rank,
    an upper bound of its tokens/s (estimate.step.pace_lower_bound_s)."""


def _with_search_arrays(memory: SpaceMemory, seq_len: int) -> SpaceMemory:
    """The GPU-independent arrays fastest_per_count reads, computed once per space."""
    lay = memory.layouts
    first, group = pace_groups(lay)
    block_counts, block = np.unique(np.asarray(lay.gpus), return_inverse=True)
    m = np.maximum(memory.global_batch / (lay.micro_batch * lay.dp), 1.0)
    scale = m * lay.micro_batch * lay.dp * float(seq_len) / (m + (lay.pp - 1.0) / lay.vpp)
    return replace(memory, pace_first=first, pace_group=group, block=np.ravel(block), block_counts=block_counts,
                   rate_scale=scale)


def _row_keys(layouts: LayoutArrays, radix: Any) -> Any:
    key = np.zeros(len(layouts), dtype=np.int64)
    columns = (layouts.tp, layouts.pp, layouts.vpp, layouts.dp, layouts.cp, layouts.ep, layouts.etp, layouts.zero,
               layouts.micro_batch)
    for column, base in zip(columns, radix, strict=True):
        key = key * int(base) + np.asarray(column, dtype=np.int64)
    return key


def memory_subset(memory: SpaceMemory, layouts: LayoutArrays, seq_len: int) -> SpaceMemory | None:
    """`memory` restricted to `layouts` when they are some of its layouts in the same order (a smaller
    NVLink domain allows fewer tp degrees over the same GPU counts), else None. Memory depends on the
    layout only, so the restricted rows are the ones space_memory would compute."""
    big = memory.layouts
    if len(layouts) > len(big) or layouts.sequence_parallel != big.sequence_parallel or layouts.split != big.split:
        return None
    if not len(layouts):
        return None
    columns = ("tp", "pp", "vpp", "dp", "cp", "ep", "etp", "zero", "micro_batch")
    radix = [max(int(np.max(getattr(big, c))), int(np.max(getattr(layouts, c)))) + 1 for c in columns]
    if float(np.prod(np.asarray(radix, dtype=np.float64))) >= 2.0**62:
        return None
    big_keys, small_keys = _row_keys(big, radix), _row_keys(layouts, radix)
    mask = np.isin(big_keys, small_keys)
    if not np.array_equal(big_keys[mask], small_keys):
        return None
    return _with_search_arrays(SpaceMemory(layouts=layouts, recompute=memory.recompute,
                                           total_bytes=memory.total_bytes[:, mask],
                                           global_batch=memory.global_batch[mask], batch_ok=memory.batch_ok[mask]),
                               seq_len)


def pace_groups(layouts: LayoutArrays) -> tuple[Any, Any]:
    """(first index, group of each layout) of the distinct (tp, pp, vpp, cp, ep, etp, micro-batch)."""
    if len(layouts) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    key = np.zeros(len(layouts), dtype=np.int64)
    for column in (layouts.tp, layouts.pp, layouts.vpp, layouts.cp, layouts.ep, layouts.etp, layouts.micro_batch):
        values = np.asarray(column, dtype=np.int64)
        key = key * (int(values.max()) + 1) + values
    _, first, group = np.unique(key, return_index=True, return_inverse=True)
    return first, group.ravel()


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
        sized = replace(job, micro_batch=mb, global_batch=target_sequences)
        totals[:, mask] = peak_total_bytes_choices(arch, sized, sub, recompute)
    return _with_search_arrays(SpaceMemory(layouts=layouts, recompute=recompute, total_bytes=totals,
                                           global_batch=gb, batch_ok=batch_ok), job.seq_len)


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
    calibration for this GPU replaces the efficiency parameters it measured.

    The winner of a count is the first maximum in (recompute, layout) order of the tokens/s of every
    (recompute, layout) pair that fits. Pairs whose tokens/s bound cannot reach the best timed rate of
    their count are not timed (module docstring); they cannot be that maximum.
    """
    lay = memory.layouts
    n_rc = len(memory.recompute)
    batch_ok = memory.batch_ok
    memory_ok = memory.total_bytes <= usable_bytes
    fits = memory_ok & batch_ok[np.newaxis, :]
    if memory.block is None:
        memory = _with_search_arrays(memory, job.seq_len)
    block, block_counts, first, group = memory.block, memory.block_counts, memory.pace_first, memory.pace_group
    n_blocks = block_counts.size
    jobs = [replace(job, recompute=choice) for choice in memory.recompute]  # type: ignore[arg-type]

    # Every fitting (recompute, layout) pair, in (recompute, layout) order, with its tokens/s bound.
    pair_row, pair_col = np.nonzero(fits)
    bound = np.empty(pair_row.size)
    paces: dict[int, tuple[Any, Any, PaceTerms]] = {}
    for row in range(n_rc):
        lo, hi = np.searchsorted(pair_row, [row, row + 1])
        cols = pair_col[lo:hi]
        if not cols.size:
            continue
        present = np.zeros(len(first), dtype=bool)
        present[group[cols]] = True
        rep = lay.take(first[present])
        pace = pace_terms(arch, jobs[row], rep, gpu, tp=rep.tp, pp=rep.pp, vpp=rep.vpp, cp=rep.cp, ep=rep.ep,
                          etp=rep.etp, micro_batch=rep.micro_batch, calibration=calibration)
        # pace_lower_bound_s with m = 1 and pp = 1: the slowest rank's micro-batch of each distinct group
        slowest = np.asarray(pace_lower_bound_s(pace, global_batch=1.0, pp=1.0, vpp=1.0, dp=1.0, micro_batch=1.0))
        at = (np.cumsum(present) - 1)[group[cols]]
        bound[lo:hi] = memory.rate_scale[cols] / (slowest[at] * (1.0 - BOUND_MARGIN))
        paces[row] = (cols, at, pace)
    pair_block = block[pair_col]
    top = np.full(n_blocks, -np.inf)
    np.maximum.at(top, pair_block, bound)

    rate = np.full(pair_row.size, -np.inf)
    step = np.full(pair_row.size, np.inf)
    timed = np.zeros(pair_row.size, dtype=bool)

    def time_pairs(pairs: Any) -> None:
        """Time these pairs exactly, with their pace terms already computed."""
        for row in range(n_rc):
            lo, hi = np.searchsorted(pair_row, [row, row + 1])
            mine = pairs[(pairs >= lo) & (pairs < hi)]
            if not mine.size:
                continue
            cols, at, pace = paces[row]
            columns = cols[mine - lo]
            sub = lay.take(columns)
            r = step_time(arch, jobs[row], sub, gpu, global_batch=memory.global_batch[columns], tp=sub.tp,
                          pp=sub.pp, dp=sub.dp, cp=sub.cp, ep=sub.ep, vpp=sub.vpp, micro_batch=sub.micro_batch,
                          zero=sub.zero, calibration=calibration, etp=sub.etp, pace=pace.take(at[mine - lo]))
            rate[mine] = np.asarray(r.tokens_per_step / r.step_time_s)
            step[mine] = np.asarray(r.step_time_s)

    # Rounds: per GPU count, the SEEDS pairs with the highest bounds first (an approximate order is
    # enough), then every pair whose bound reaches its count's best timed rate: the bar only rises,
    # so no pair left out could reach the best rate.
    closeness = bound / top[pair_block]
    near = np.flatnonzero(closeness >= SEED_CLOSENESS)
    order = near[np.argsort(pair_block[near] + 0.5 * (1.0 - closeness[near]))]
    starts = np.searchsorted(pair_block[order], np.arange(n_blocks))
    rank = np.full(pair_row.size, np.iinfo(np.int64).max)
    rank[order] = np.arange(order.size) - starts[pair_block[order]]
    bar = np.full(n_blocks, -np.inf)
    for seeds in (*SEEDS, None):
        pick = np.flatnonzero(~timed & (bound >= bar[pair_block]) & ((rank < seeds) if seeds else True))
        if pick.size:
            timed[pick] = True
            time_pairs(pick)
            np.maximum.at(bar, pair_block[pick], rate[pick])

    # The winner of each count: the first maximum in (recompute, layout) order among the timed pairs.
    done = np.flatnonzero(timed)
    order = done[np.lexsort((pair_col[done], pair_row[done], -rate[done], pair_block[done]))]
    winner = np.full(n_blocks, -1)
    firsts = np.flatnonzero(np.r_[True, pair_block[order][1:] != pair_block[order][:-1]]) if order.size else order
    winner[pair_block[order[firsts]]] = order[firsts]
    sizes = np.bincount(block, minlength=n_blocks)
    batch_in_by = np.bincount(block, weights=batch_ok, minlength=n_blocks)
    feasible_by = np.bincount(pair_block, minlength=n_blocks)
    memory_out_by = batch_in_by * n_rc - feasible_by
    batch_out_by = sizes - batch_in_by
    results: dict[int, BestLayout] = {}
    for k in range(n_blocks):
        count = int(block_counts[k])
        common = dict(evaluated=int(sizes[k]) * n_rc, feasible=int(feasible_by[k]),
                      infeasible_memory=int(memory_out_by[k]), infeasible_batch=int(batch_out_by[k]) * n_rc)
        if common["feasible"] == 0:
            results[count] = BestLayout(index=-1, recompute="", step_time_s=np.inf, tokens_per_s=0.0,
                                        global_batch=0, **common)
            continue
        w = int(winner[k])
        i, row = int(pair_col[w]), int(pair_row[w])
        results[count] = BestLayout(index=i, recompute=memory.recompute[row], step_time_s=float(step[w]),
                                    tokens_per_s=float(rate[w]), global_batch=int(memory.global_batch[i]), **common)
    return results
