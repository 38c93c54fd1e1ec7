"""Vectorised evaluation of a layout space: memory feasibility, then step time, for one GPU type.

Memory does not depend on the GPU type (only its capacity does), so the planner computes it once
per node size and GPU count and reuses it for every GPU type with that node size.

The fastest layout per GPU count is found without timing every layout, and with the same answer as
timing them all (tests/unit/test_search_exact.py). A micro-batch's seconds on each pace-setting rank
(estimate.stage_time.pace_terms) depend on tp, pp, vpp, cp, ep, etp and the micro-batch only, so they are
computed once per distinct combination (a few per cent of the layouts) and give each layout a lower
bound on its step time (estimate.stage_time.pace_lower_bound_s), hence an upper bound on its tokens/s. The
layouts with the highest bounds of each GPU count are timed first, then (when many remain) an even
sample of those whose bound reaches the best rate so far; every layout whose bound reaches the best
rate after that is timed last; the others cannot reach it and are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate.calibration import Calibration
from rigplan.estimate.memory import peak_total_bytes_choices
from rigplan.estimate.stage_time import PaceTerms, PaceWork, pace_lower_bound_s, pace_terms, pace_work
from rigplan.estimate.step import step_time
from rigplan.search.space import MICRO_BATCHES, LayoutArrays

SEED_CLOSENESS = 0.8
"""Seeds are drawn from the pairs whose bound is at least this share of their count's highest (the
order of the first rounds only saves time; the last round alone decides what is timed)."""
SEEDS = (32,)
"""Rounds before the last: the 32 pairs of each GPU count with the highest tokens/s bounds are timed
first, and their best rate is the bar every other pair's bound must reach."""
SAMPLE_ABOVE = 4096
SAMPLE_STRIDE = 16
"""When more than SAMPLE_ABOVE pairs remain for the last round, every SAMPLE_STRIDE-th of them is timed
first and raises the bar. Where communication the bound leaves out dominates (PCIe cards), the pairs
with the highest bounds are not the fastest and the seeds' bar stays low; in the qwen3-235b plan the
sample cuts the pairs timed from 373k to 128k (step_time 0.39 -> 0.20 s of CPU)."""
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
    """Index of one layout of each distinct (tp, pp, vpp, cp, ep, etp, micro-batch): the layouts whose
    pace terms (estimate.stage_time.pace_terms) are computed for the whole group."""
    pace_group: Any = None
    """Per layout, its row in pace_first."""
    block: Any = None
    """Per layout, the index of its GPU count in block_counts."""
    block_counts: Any = None
    """The distinct GPU counts, ascending."""
    block_sizes: Any = None
    """Per GPU count, its layouts."""
    block_batch_ok: Any = None
    """Per GPU count, its layouts whose batch is ok (float, as np.bincount with weights gives it)."""
    rate_scale: Any = None
    """Per layout, tokens per step / (m + (pp - 1)/vpp): over a micro-batch's seconds on the slowest rank,
    an upper bound of its tokens/s (estimate.stage_time.pace_lower_bound_s)."""
    row_order: Any = None
    """(argsort of the layouts' row keys, the sorted keys): how another space finds its layouts here."""
    work: dict[Any, PaceWork] = field(default_factory=dict)
    """Per (model, job with its recompute choice), the GPU-independent pace work
    (estimate.stage_time.pace_work) of every row of pace_first, filled by the first GPU type that needs it."""


def _with_search_arrays(memory: SpaceMemory, seq_len: int) -> SpaceMemory:
    """The GPU-independent arrays fastest_per_count reads, computed once per space."""
    lay = memory.layouts
    if memory.row_order is not None:
        first, group = _pace_groups_from_rows(*memory.row_order, len(lay))
    else:
        first, group = pace_groups(lay)
    counts = np.asarray(lay.gpus)
    if counts.size and bool(np.all(counts[1:] >= counts[:-1])):  # layout_space lists counts in order
        changes = np.r_[True, counts[1:] != counts[:-1]]
        block_counts, block = counts[changes], np.cumsum(changes) - 1
    else:
        block_counts, block = np.unique(counts, return_inverse=True)
    m = np.maximum(memory.global_batch / (lay.micro_batch * lay.dp), 1.0)
    scale = m * lay.micro_batch * lay.dp * float(seq_len) / (m + (lay.pp - 1.0) / lay.vpp)
    block = np.ravel(block)
    return replace(memory, pace_first=first, pace_group=group, block=block, block_counts=block_counts,
                   block_sizes=np.bincount(block, minlength=block_counts.size),
                   block_batch_ok=np.bincount(block, weights=memory.batch_ok, minlength=block_counts.size),
                   rate_scale=scale)


def _pace_groups_from_rows(order: Any, sorted_keys: Any, n: int) -> tuple[Any, Any]:
    """pace_groups from the sorted row keys: their leading bits are the pace columns (ROW_KEY_BITS), so
    each group is a run of the sorted keys; its representative is one member (any member has the same
    pace columns)."""
    shift = sum(bits for column, bits in ROW_KEY_BITS if column not in PACE_COLUMNS)
    pace_keys = sorted_keys >> shift
    starts = np.r_[True, pace_keys[1:] != pace_keys[:-1]] if n else np.zeros(0, dtype=bool)
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(starts) - 1
    return order[starts], group


def pace_groups(layouts: LayoutArrays) -> tuple[Any, Any]:
    """(a representative index, group of each layout) of the distinct (tp, pp, vpp, cp, ep, etp,
    micro-batch)."""
    if len(layouts) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    key = np.zeros(len(layouts), dtype=np.int64)
    for column in (layouts.tp, layouts.pp, layouts.vpp, layouts.cp, layouts.ep, layouts.etp, layouts.micro_batch):
        values = np.asarray(column, dtype=np.int64)
        key = key * (int(values.max()) + 1) + values
    _, first, group = np.unique(key, return_index=True, return_inverse=True)
    return first, group.ravel()


SEARCH_THREADS = max(1, min(4, os.cpu_count() or 1))
"""Threads that evaluate the micro-batch groups of a layout space at once. The memory of ~10^5 layouts is
numpy arithmetic on long arrays, which runs outside the interpreter lock: on 2 cores the qwen3-235b
plan's first space takes 0.26 s instead of 0.45 s (benchmarks/plan_speed_moe.py). Each group is computed
by the same pure function as serially, so the result does not depend on the number of threads."""


def parallel_map(function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """[function(item) for item in items], spread over SEARCH_THREADS threads when there are several."""
    if SEARCH_THREADS == 1 or len(items) < 2:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(SEARCH_THREADS, len(items)), thread_name_prefix="rigplan-search") as pool:
        return list(pool.map(function, items))


def global_batches(target_sequences: int, micro_batch: Any, dp: Any) -> Any:
    unit = micro_batch * dp
    return np.maximum(target_sequences // unit, 1) * unit


ROW_KEY_BITS = (("tp", 6), ("pp", 7), ("vpp", 3), ("cp", 5), ("ep", 10), ("etp", 6), ("micro_batch", 4),
                ("dp", 17), ("zero", 2))
"""Bits of each layout column in a row key (60 in all): a layout's memory depends on these alone. The
pace columns (PACE_COLUMNS) lead, so sorted keys keep each pace group together."""
PACE_COLUMNS = ("tp", "pp", "vpp", "cp", "ep", "etp", "micro_batch")
"""The columns a layout's pace terms depend on (estimate.stage_time.pace_terms)."""


def row_keys(layouts: LayoutArrays) -> Any:
    """One int64 per layout that identifies it (ROW_KEY_BITS), or None when a column does not fit."""
    key = np.zeros(len(layouts), dtype=np.int64)
    for column, bits in ROW_KEY_BITS:
        values = np.asarray(getattr(layouts, column), dtype=np.int64)
        if values.size and (int(values.max()) >= 1 << bits or int(values.min()) < 0):
            return None
        key = (key << bits) | values
    return key


def space_memory(arch: Architecture, job: Job, layouts: LayoutArrays, recompute: tuple[str, ...],
                 target_sequences: int, known: Sequence[SpaceMemory] = ()) -> SpaceMemory:
    """Peak memory of every layout under every recompute option (grouped by micro-batch). Layouts whose
    dp x micro-batch exceeds the target batch are never run, so their memory is not computed (inf).

    `known`: spaces already computed for the same model, job and target batch (a planner's other GPU
    types); a layout one of them holds takes its numbers from there (memory depends on the layout only:
    the same layout on 8-GPU and 4-GPU nodes, or in a narrower NVLink domain, needs the same bytes)."""
    totals = np.full((len(recompute), len(layouts)), np.inf)
    gb = global_batches(target_sequences, layouts.micro_batch, layouts.dp)
    batch_ok = layouts.micro_batch * layouts.dp <= target_sequences
    todo = batch_ok.copy()
    keys = row_keys(layouts) if known else None
    for other in known if keys is not None else ():
        if (other.recompute != recompute or other.layouts.sequence_parallel != layouts.sequence_parallel
                or other.layouts.split != layouts.split or other.row_order is None):
            continue
        wanted = np.flatnonzero(todo)
        order, sorted_keys = other.row_order
        at = np.minimum(np.searchsorted(sorted_keys, keys[wanted]), max(sorted_keys.size - 1, 0))
        found = sorted_keys[at] == keys[wanted] if sorted_keys.size else np.zeros(wanted.size, dtype=bool)
        totals[:, wanted[found]] = other.total_bytes[:, order[at[found]]]
        todo[wanted[found]] = False
    groups = [(mb, mask) for mb, mask in ((mb, (layouts.micro_batch == mb) & todo) for mb in MICRO_BATCHES)
              if mask.any()]

    def micro_batch_totals(group: tuple[int, Any]) -> Any:
        mb, mask = group
        sized = replace(job, micro_batch=mb, global_batch=target_sequences)
        return peak_total_bytes_choices(arch, sized, layouts.take(mask), recompute)

    for (_, mask), part in zip(groups, parallel_map(micro_batch_totals, groups), strict=True):
        totals[:, mask] = part
    if keys is None:
        keys = row_keys(layouts)
    order = np.argsort(keys) if keys is not None else None  # a space's layouts are distinct: any sort
    memory = SpaceMemory(layouts=layouts, recompute=recompute, total_bytes=totals, global_batch=gb,
                         batch_ok=batch_ok, row_order=None if order is None else (order, keys[order]))
    return _with_search_arrays(memory, job.seq_len)


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


def fastest_per_count(arch: Architecture, job: Job, gpu: Gpu, memory: SpaceMemory, usable_bytes: float,
                      calibration: Calibration | None = None,
                      over_limit_bytes: float | None = None) -> dict[int, BestLayout]:
    """For each GPU count in the space, the fastest layout that fits (with the search's counts); a
    calibration for this GPU replaces the efficiency parameters it measured.

    The winner of a count is the first maximum in (recompute, layout) order of the tokens/s of every
    (recompute, layout) pair that fits. Pairs whose tokens/s bound cannot reach the best timed rate of
    their count are not timed (module docstring); they cannot be that maximum. With `over_limit_bytes`
    (above the capacity), pairs up to it whose bound reaches the count's fitting winner are timed too, and
    the fastest of those is attached to the count's result (`borderline`) when it beats that winner.
    """
    lay = memory.layouts
    n_rc = len(memory.recompute)
    if memory.block is None:
        memory = _with_search_arrays(memory, job.seq_len)
    block, block_counts, first, group = memory.block, memory.block_counts, memory.pace_first, memory.pace_group
    n_blocks = block_counts.size
    jobs = [replace(job, recompute=choice) for choice in memory.recompute]  # type: ignore[arg-type]

    # Every fitting (recompute, layout) pair, and with over_limit_bytes every pair up to it, in
    # (recompute, layout) order, with its tokens/s bound; offsets[row]:offsets[row + 1] are a row's pairs.
    limit = usable_bytes if over_limit_bytes is None else over_limit_bytes
    row_cols = [np.flatnonzero((memory.total_bytes[row] <= limit) & memory.batch_ok) for row in range(n_rc)]
    offsets = np.cumsum([0] + [cols.size for cols in row_cols])
    pair_col = np.concatenate(row_cols) if row_cols else np.zeros(0, dtype=np.int64)
    pair_row = np.repeat(np.arange(n_rc), np.diff(offsets))
    pair_fits = np.concatenate([memory.total_bytes[row][cols] <= usable_bytes for row, cols in enumerate(row_cols)]
                               ) if row_cols else np.zeros(0, dtype=bool)
    bound = np.empty(pair_row.size)
    paces: dict[int, tuple[Any, Any, PaceTerms]] = {}
    for row in range(n_rc):
        lo, hi = int(offsets[row]), int(offsets[row + 1])
        cols = pair_col[lo:hi]
        if not cols.size:
            continue
        col_groups = group[cols]
        present = np.zeros(len(first), dtype=bool)
        present[col_groups] = True
        key = (arch, jobs[row])
        if key not in memory.work:
            every = lay.take(first)
            memory.work[key] = pace_work(arch, jobs[row], every, tp=every.tp, pp=every.pp, vpp=every.vpp,
                                         cp=every.cp, micro_batch=every.micro_batch)
        kept = np.flatnonzero(present)
        rep = lay.take(first[kept])
        pace = pace_terms(arch, jobs[row], rep, gpu, tp=rep.tp, pp=rep.pp, vpp=rep.vpp, cp=rep.cp, ep=rep.ep,
                          etp=rep.etp, micro_batch=rep.micro_batch, calibration=calibration,
                          work=memory.work[key].take(kept))
        # pace_lower_bound_s with m = 1 and pp = 1: the slowest rank's micro-batch of each distinct group
        slowest = np.asarray(pace_lower_bound_s(pace, global_batch=1.0, pp=1.0, vpp=1.0, dp=1.0, micro_batch=1.0))
        at = (np.cumsum(present) - 1)[col_groups]
        bound[lo:hi] = memory.rate_scale[cols] / (slowest * (1.0 - BOUND_MARGIN))[at]
        paces[row] = (cols, at, pace)
    pair_block = block[pair_col]
    # The fitting pairs' highest bound and their number per count: each row's pairs are in layout order,
    # so a count's pairs of one row are runs (one run each when the space lists its counts in order).
    fit_pairs = np.flatnonzero(pair_fits)
    fit_block, fit_bound = pair_block[fit_pairs], bound[fit_pairs]
    runs = np.flatnonzero(np.r_[True, fit_block[1:] != fit_block[:-1]]) if fit_pairs.size else fit_pairs
    top = np.full(n_blocks, -np.inf)
    feasible_by = np.zeros(n_blocks, dtype=np.int64)
    if runs.size:
        np.maximum.at(top, fit_block[runs], np.maximum.reduceat(fit_bound, runs))
        np.add.at(feasible_by, fit_block[runs], np.diff(np.r_[runs, fit_pairs.size]))

    rate = np.full(pair_row.size, -np.inf)
    step = np.full(pair_row.size, np.inf)
    timed = np.zeros(pair_row.size, dtype=bool)

    def time_pairs(pairs: Any) -> None:
        """Time these pairs exactly, with their pace terms already computed."""
        for row in range(n_rc):
            lo, hi = offsets[row], offsets[row + 1]
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
    # enough), then (SAMPLE_ABOVE) a sample of the pairs whose bound reaches its count's best timed rate,
    # then every pair whose bound reaches it: the bar only rises, so no pair left out could reach the
    # best rate.
    with np.errstate(divide="ignore", invalid="ignore"):
        closeness = fit_bound / top[fit_block]
    close = closeness >= SEED_CLOSENESS
    near = fit_pairs[close]
    order = near[np.argsort(fit_block[close] + 0.5 * (1.0 - closeness[close]))]
    starts = np.searchsorted(pair_block[order], np.arange(n_blocks))
    rank_in_block = np.arange(order.size) - starts[pair_block[order]]
    bar = np.full(n_blocks, -np.inf)
    for seeds in (*SEEDS, None):
        if seeds:
            pick = order[rank_in_block < seeds]
            pick = pick[~timed[pick] & (bound[pick] >= bar[pair_block[pick]])]
        else:
            pick = np.flatnonzero(pair_fits & ~timed & (bound >= bar[pair_block]))
            if pick.size > SAMPLE_ABOVE:
                sample = pick[::SAMPLE_STRIDE]
                timed[sample] = True
                time_pairs(sample)
                np.maximum.at(bar, pair_block[sample], rate[sample])
                pick = pick[~timed[pick] & (bound[pick] >= bar[pair_block[pick]])]  # the bar only rose
            # Pairs over the capacity (within over_limit_bytes) matter only where their bound reaches the
            # fitting winner's rate, the last bar: they are timed with the last round (one step_time call
            # per row), those whose bound reaches the bar before it, and kept only if it reaches the last.
            pick = np.r_[pick, np.flatnonzero(~pair_fits & (bound >= bar[pair_block]))]
        if pick.size:
            time_pairs(pick)
            pick = pick[pair_fits[pick]]
            timed[pick] = True
            np.maximum.at(bar, pair_block[pick], rate[pick])
    timed |= ~pair_fits & (bound >= bar[pair_block])

    # The winner of each count: the first maximum in (recompute, layout) order among the timed pairs
    # that fit; the borderline one: the same among the timed pairs over the capacity.
    def first_max(chosen: Any) -> Any:
        done = np.flatnonzero(chosen)
        order = done[np.lexsort((-rate[done], pair_block[done]))]  # stable: ties keep pair order
        best = np.full(n_blocks, -1)
        if order.size:
            firsts = np.flatnonzero(np.r_[True, pair_block[order][1:] != pair_block[order][:-1]])
            best[pair_block[order[firsts]]] = order[firsts]
        return best

    winner = first_max(timed & pair_fits)
    over_winner = first_max(timed & ~pair_fits)
    sizes, batch_in_by = memory.block_sizes, memory.block_batch_ok
    memory_out_by = batch_in_by * n_rc - feasible_by
    batch_out_by = sizes - batch_in_by
    results: dict[int, BestLayout] = {}
    for k in range(n_blocks):
        count = int(block_counts[k])
        common = dict(evaluated=int(sizes[k]) * n_rc, feasible=int(feasible_by[k]),
                      infeasible_memory=int(memory_out_by[k]), infeasible_batch=int(batch_out_by[k]) * n_rc)
        alternative: BestLayout | None = None
        o = int(over_winner[k])
        if o >= 0 and np.isfinite(rate[o]):
            oi, orow = int(pair_col[o]), int(pair_row[o])
            alternative = BestLayout(index=oi, recompute=memory.recompute[orow], step_time_s=float(step[o]),
                                     tokens_per_s=float(rate[o]), global_batch=int(memory.global_batch[oi]),
                                     evaluated=0, feasible=0, infeasible_memory=0)
        if common["feasible"] == 0:
            results[count] = BestLayout(index=-1, recompute="", step_time_s=np.inf, tokens_per_s=0.0,
                                        global_batch=0, borderline=alternative, **common)
            continue
        w = int(winner[k])
        i, row = int(pair_col[w]), int(pair_row[w])
        if alternative is not None and alternative.tokens_per_s <= float(rate[w]):
            alternative = None
        results[count] = BestLayout(index=i, recompute=memory.recompute[row], step_time_s=float(step[w]),
                                    tokens_per_s=float(rate[w]), global_batch=int(memory.global_batch[i]),
                                    borderline=alternative, **common)
    return results
