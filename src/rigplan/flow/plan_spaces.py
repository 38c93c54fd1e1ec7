"""The layout spaces of a plan, computed ahead in one background thread.

A plan evaluates a few layout spaces (one per NVLink domain and list of GPU counts), then times every GPU
type on its space (search.evaluate.fastest_per_count). The spaces' memory is numpy arithmetic on long
arrays, which runs outside the interpreter lock; the timing is mostly interpreter work. So while the
planner times the GPU types whose space is ready, one thread computes the next spaces, in the order the
GPU types first need them, each taking the layouts the earlier spaces hold from there (as the serial
order did). The spaces and the plan are the same as computed serially; only the wall time differs
(benchmarks/plan_speed_moe.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.search.evaluate import SEARCH_THREADS, SpaceMemory, space_memory
from rigplan.search.space import MAX_EP, MAX_PP, RECOMPUTE, ZERO_STAGES, layout_space

SpaceKey = tuple[int, tuple[int, ...]]
"""(NVLink domain size, GPU counts)."""

MUON_ZERO_STAGES = (0, 1)
"""ZeRO stages the search tries for Muon: its distributed implementations shard its states by layer over data
parallel (Megatron-Core's dist_muon, with the distributed Adam optimizer off; Liu et al. 2025's Distributed Muon),
which ZeRO-1 stands for; none runs under FSDP, so layouts with ZeRO-2 or 3 could not be launched."""


def space_memory_for(arch: Architecture, job: Job, key: SpaceKey, target: int,
                     known: Sequence[SpaceMemory], max_pp: int = MAX_PP,
                     max_ep: int = MAX_EP) -> SpaceMemory | None:
    """Peak memory of the layout space of (NVLink domain, GPU counts), taking every layout a `known`
    space holds from there (search.evaluate.space_memory); None when the space has no layout. `max_pp`: 1 for a
    framework without a pipeline schedule (domain.frameworks.FrameworkPreset.no_pipeline); `max_ep`: 1 for one whose
    expert parallelism rigplan does not model (FrameworkPreset.unmodelled_expert_parallel)."""
    domain, counts = key
    layouts = layout_space(arch, domain, list(counts), job.seq_len, sequence_parallel=True,
                           zero_stages=MUON_ZERO_STAGES if job.optimizer == "muon" else ZERO_STAGES,
                           heads_split_by_cp=job.cp_comm_type == "a2a", max_pp=max_pp, max_ep=max_ep)
    if not len(layouts):
        return None
    return space_memory(arch, job, layouts, RECOMPUTE, target, known=known)


class PlanSpaces:
    """The spaces of `keys` (in the order they are first needed), computed in that order by one background
    thread when there is a core to spare, else on first request. Use as a context manager: leaving it
    cancels the spaces not started."""

    def __init__(self, arch: Architecture, job: Job, keys: Sequence[SpaceKey], target: int,
                 max_pp: int = MAX_PP, max_ep: int = MAX_EP) -> None:
        self._arch, self._job, self._target = arch, job, target
        self._max_pp, self._max_ep = max_pp, max_ep
        self._done: dict[SpaceKey, SpaceMemory | None] = {}
        self._futures: dict[SpaceKey, Future[SpaceMemory | None]] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rigplan-spaces") \
            if SEARCH_THREADS > 1 and len(keys) > 0 else None
        for key in dict.fromkeys(keys):
            if self._pool is not None:
                self._futures[key] = self._pool.submit(self._compute, key)

    def _compute(self, key: SpaceKey) -> SpaceMemory | None:
        known = [memory for memory in self._done.values() if memory is not None]
        memory = space_memory_for(self._arch, self._job, key, self._target, known, self._max_pp, self._max_ep)
        self._done[key] = memory
        return memory

    def get(self, key: SpaceKey) -> SpaceMemory | None:
        future = self._futures.get(key)
        if future is not None:
            return future.result()
        if key not in self._done:
            self._compute(key)
        return self._done[key]

    def __enter__(self) -> PlanSpaces:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
