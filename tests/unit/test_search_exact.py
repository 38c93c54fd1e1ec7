"""The plan search's speed-ups change no answer: each is compared here with the exhaustive search it
replaces (every fitting (recompute, layout) pair timed, the first maximum per GPU count)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.estimate.step import scale_up_domain, step_time
from rigplan.flow import plan as plan_module
from rigplan.flow.plan import plan
from rigplan.flow.request import PlanRequest
from rigplan.search import evaluate
from rigplan.search.evaluate import BestLayout, SpaceMemory, fastest_per_count, space_memory
from rigplan.search.space import RECOMPUTE, gpu_counts, layout_space


def exhaustive_fastest_per_count(arch: Any, job: Job, gpu: Any, memory: SpaceMemory, usable_bytes: float,
                                 calibration: Any = None, over_limit_bytes: float | None = None,
                                 ) -> dict[int, BestLayout]:
    """The reference: time every fitting pair (and every pair up to over_limit_bytes), then one masked argmax
    per GPU count; the fastest pair over the capacity is attached where it beats the fitting winner."""
    lay = memory.layouts
    counts = lay.gpus
    memory_ok = memory.total_bytes <= usable_bytes
    fits = memory_ok & memory.batch_ok[np.newaxis, :]
    limit = usable_bytes if over_limit_bytes is None else over_limit_bytes
    within = (memory.total_bytes <= limit) & memory.batch_ok[np.newaxis, :]
    rates = np.full(fits.shape, -np.inf)
    steps = np.full(fits.shape, np.inf)
    for row, choice in enumerate(memory.recompute):
        mask = within[row]
        if not mask.any():
            continue
        sub = lay.take(mask)
        r = step_time(arch, replace(job, recompute=choice), sub, gpu, global_batch=memory.global_batch[mask],
                      tp=sub.tp, pp=sub.pp, dp=sub.dp, cp=sub.cp, ep=sub.ep, vpp=sub.vpp,
                      micro_batch=sub.micro_batch, zero=sub.zero, calibration=calibration, etp=sub.etp)
        rates[row, mask] = np.asarray(r.tokens_per_step / r.step_time_s)
        steps[row, mask] = np.asarray(r.step_time_s)
    results = {}
    n_rc = len(memory.recompute)
    for count in np.unique(counts):
        cols = counts == count
        block = np.where(cols[np.newaxis, :] & fits, rates, -np.inf)
        over = np.where(cols[np.newaxis, :] & within & ~memory_ok, rates, -np.inf)
        alternative = None
        if over_limit_bytes is not None and np.isfinite(over.max()):
            orow, oindex = np.unravel_index(int(np.argmax(over)), over.shape)
            if over[orow, oindex] > block.max():
                alternative = BestLayout(index=int(oindex), recompute=memory.recompute[int(orow)],
                                         step_time_s=float(steps[orow, oindex]),
                                         tokens_per_s=float(rates[orow, oindex]),
                                         global_batch=int(memory.global_batch[oindex]), evaluated=0, feasible=0,
                                         infeasible_memory=0)
        feasible = int(fits[:, cols].sum())
        common = dict(evaluated=int(cols.sum()) * n_rc, feasible=feasible,
                      infeasible_memory=int((~memory_ok[:, cols] & memory.batch_ok[cols][np.newaxis, :]).sum()),
                      infeasible_batch=int((~memory.batch_ok[cols]).sum()) * n_rc)
        if feasible == 0:
            results[int(count)] = BestLayout(index=-1, recompute="", step_time_s=np.inf, tokens_per_s=0.0,
                                             global_batch=0, borderline=alternative, **common)
            continue
        row, index = np.unravel_index(int(np.argmax(block)), block.shape)
        results[int(count)] = BestLayout(index=int(index), recompute=memory.recompute[int(row)],
                                         step_time_s=float(steps[row, index]), tokens_per_s=float(rates[row, index]),
                                         global_batch=int(memory.global_batch[index]), borderline=alternative,
                                         **common)
    return results


SPACES = [("llama-3.1-8b", "h100-sxm", 2048), ("qwen3-30b-a3b", "h100-sxm", 4096),
          ("llama-3.1-70b", "a100-80gb-sxm", 4096), ("mixtral-8x7b", "rtx-4090", 2048)]


@pytest.mark.parametrize("model,gpu_id,seq", SPACES)
def test_fastest_per_count_matches_the_exhaustive_search(model: str, gpu_id: str, seq: int) -> None:
    catalog = load_catalog()
    arch = catalog.model(model).to_domain()
    gpu = catalog.gpu(gpu_id).to_domain()
    job = Job(seq_len=seq)
    layouts = layout_space(arch, scale_up_domain(gpu), gpu_counts(gpu.gpus_per_node, 64), seq,
                           sequence_parallel=True)
    memory = space_memory(arch, job, layouts, RECOMPUTE, 256)
    found = 0
    # several capacities, so that each recompute choice wins somewhere
    assert np.all(np.isinf(memory.total_bytes[:, ~memory.batch_ok]))
    kept = 0
    for usable in np.quantile(memory.total_bytes[:, memory.batch_ok], [0.05, 0.3, 0.6, 0.95]):
        fast = fastest_per_count(arch, job, gpu, memory, float(usable))
        assert fast == exhaustive_fastest_per_count(arch, job, gpu, memory, float(usable))
        found += sum(b.index >= 0 for b in fast.values())
        over = float(usable) * 1.15
        fast = fastest_per_count(arch, job, gpu, memory, float(usable), over_limit_bytes=over)
        assert fast == exhaustive_fastest_per_count(arch, job, gpu, memory, float(usable), over_limit_bytes=over)
        for best in fast.values():
            if best.borderline is not None:
                kept += 1
                i = best.borderline.index
                total = memory.total_bytes[memory.recompute.index(best.borderline.recompute), i]
                assert float(usable) < total <= over
                assert best.borderline.tokens_per_s > best.tokens_per_s
    assert found and kept


@pytest.mark.parametrize("request_fields", [
    dict(model="llama-3.1-8b", tokens="100B", gpus_max=64, gpu=["h100-sxm", "a100-40gb-sxm", "rtx-4090", "gb200"]),
    dict(model="qwen3-30b-a3b", tokens="200B", gpus_max=64, gpu=["h100-sxm", "a100-80gb-sxm", "mi300x"]),
    dict(model="llama-3.1-70b", tokens="1T", gpus_max=256, deadline="60d", budget="3M",
         gpu=["h100-sxm", "b200", "l40s", "rtx-4090"]),
])
def test_plan_answers_match_the_exhaustive_search(request_fields: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    request = PlanRequest(**request_fields)
    fast = plan(request).to_dict()
    monkeypatch.setattr(plan_module, "fastest_per_count", exhaustive_fastest_per_count)
    monkeypatch.setattr(evaluate, "fastest_per_count", exhaustive_fastest_per_count)
    reference = plan(request).to_dict()
    for key in ("ranked", "pareto", "candidates"):
        assert fast[key] == reference[key]
    assert {k: v for k, v in fast["stats"].items() if k != "elapsed_s"} == \
        {k: v for k, v in reference["stats"].items() if k != "elapsed_s"}


def test_memory_of_many_recompute_choices_matches_rank_by_rank() -> None:
    """peak_total_bytes_choices (model states shared, activations per distinct combination) gives the
    numbers of rank_memory evaluated layout by layout, rank by rank, choice by choice."""
    from rigplan.estimate.memory import peak_total_bytes_choices, rank_memory

    catalog = load_catalog()
    for model in ("qwen3-235b-a22b", "llama-3.1-70b"):
        arch = catalog.model(model).to_domain()
        layouts = layout_space(arch, 8, gpu_counts(8, 512), 4096, sequence_parallel=True)
        sub = layouts.take(layouts.micro_batch == 2)
        job = Job(seq_len=4096, micro_batch=2, global_batch=512)
        fast = peak_total_bytes_choices(arch, job, sub, RECOMPUTE)
        pp = np.asarray(sub.pp)
        for k, choice in enumerate(RECOMPUTE):
            chosen = replace(job, recompute=choice)  # type: ignore[arg-type]
            ranks = [rank_memory(arch, chosen, sub, r).total_bytes for r in (0 * pp, np.minimum(1, pp - 1), pp - 1)]
            assert np.array_equal(fast[k], np.maximum(np.maximum(ranks[0], ranks[1]), ranks[2]))


def test_memory_taken_from_other_spaces_matches_its_own() -> None:
    """A space that takes its layouts' memory from spaces computed before (a narrower NVLink domain,
    4-GPU nodes beside 8-GPU ones) holds the numbers space_memory computes for it alone."""
    catalog = load_catalog()
    arch = catalog.model("qwen3-30b-a3b").to_domain()
    job = Job(seq_len=4096)
    wide = space_memory(arch, job, layout_space(arch, 8, gpu_counts(8, 256), 4096, sequence_parallel=True),
                        RECOMPUTE, 256)
    for domain, per_node in ((2, 8), (4, 4)):
        layouts = layout_space(arch, domain, gpu_counts(per_node, 256), 4096, sequence_parallel=True)
        reused = space_memory(arch, job, layouts, RECOMPUTE, 256, known=[wide])
        direct = space_memory(arch, job, layouts, RECOMPUTE, 256)
        assert np.array_equal(reused.total_bytes, direct.total_bytes)
        assert np.array_equal(reused.global_batch, direct.global_batch)


def test_stage_tables_answer_batches_with_repeated_pipelines() -> None:
    """Each (pp, vpp) appears several times (an even number of times included) in a batch: every row
    gets the layers its own split gives."""
    from rigplan.domain import stages
    from rigplan.domain.stages import DEFAULT_SPLIT, chunk_layer_counts, rank_layer_counts

    stages._flat_tables.cache_clear()

    pairs = [(p, v) for p in (1, 2, 3, 4, 8, 12) for v in (1, 2, 4) if v == 1 or p > 1]
    pp = np.array([p for p, _ in pairs] * 6 + [5, 5])  # more than 64 rows: the batched lookup
    vpp = np.array([v for _, v in pairs] * 6 + [2, 2])
    rank = np.array(list(range(len(pp)))) % pp
    for chunk in (None, 0, 1):
        got = (rank_layer_counts(DEFAULT_SPLIT, 61, 3, pp, vpp, rank) if chunk is None
               else chunk_layer_counts(DEFAULT_SPLIT, 61, 3, pp, vpp, rank, chunk))
        for i in range(len(pp)):
            one = (rank_layer_counts(DEFAULT_SPLIT, 61, 3, int(pp[i]), int(vpp[i]), int(rank[i])) if chunk is None
                   else chunk_layer_counts(DEFAULT_SPLIT, 61, 3, int(pp[i]), int(vpp[i]), int(rank[i]), chunk))
            assert (got[0][i], got[1][i]) == one


def test_threads_change_no_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spaces computed in a background thread, and each space's micro-batch groups in parallel, give the
    plan the serial order gives (flow.plan_spaces, search.evaluate.parallel_map)."""
    from rigplan.flow import plan_spaces

    request = PlanRequest(model="mixtral-8x7b", tokens="100B", gpus_max=64,
                          gpu=["h100-sxm", "gb200", "rtx-4090", "mi300x"])

    def outcome() -> tuple[Any, ...]:
        result = plan(request)
        stats = {k: v for k, v in result.stats.items() if k != "elapsed_s"}
        return ([(c.gpu, c.gpus, c.layout, c.cost_usd, c.tokens_per_s) for c in result.ranked + result.pareto], stats)

    answers = []
    for threads in (1, 2):
        monkeypatch.setattr(evaluate, "SEARCH_THREADS", threads)
        monkeypatch.setattr(plan_spaces, "SEARCH_THREADS", threads)
        answers.append(outcome())
    assert answers[0] == answers[1]
    assert answers[0][0], "the plan found options"
