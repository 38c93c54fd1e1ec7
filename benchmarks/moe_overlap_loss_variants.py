"""Where the MoE suite's eager runs lose host/GPU overlap, and two smooth models of it tried and not applied
(docs/methodology/moe.md, 'What the host model was tried against').

It prints three tables from the MoE suite (rigplan validate --suite moe), tokens/s errors with + = rigplan too fast:
1. The runs under a full-iteration CUDA graph (no host time in rigplan or in the run), banded by the host load their
   ops would have without the graph (estimate.moe_host.host_timing on the same job with cuda_graphs 'none'). If the
   eager runs' drift with host load came from the GPU side (thin expert GEMMs, many kernels), these would drift too.
2. The eager Megatron-Core runs (NeMo, Megatron-LM, Megatron-Bridge; AWS's EFA campaigns left out), by host-load band
   and by pipeline parallelism.
3. Two smooth host/GPU combinations in place of max(G, H) for each run's pacing micro-batch: max(G, H) + s·min(G, H)
   and (G^p + H^p)^(1/p), with G the rank's GPU stream (compute and exposed communication) and H = host load x G,
   applied as a change of the step by the difference over one step's worth of micro-batches (the bubble's share is
   left as it was). For each: rows beyond 35% either way and rows more than 25% too slow.

Run: python benchmarks/moe_overlap_loss_variants.py
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import yaml

import rigplan.estimate.stage_time as stage_time
from rigplan.estimate import moe_host
from rigplan.validation.regimes import tokens_error
from rigplan.validation.run import CASES_DIR, run_suite

BANDS = ((0.0, 0.3), (0.3, 0.7), (0.7, 1.5), (1.5, 1e9))


def _summary(errors: list[float]) -> str:
    if not errors:
        return "-"
    return (f"{len(errors):3d} runs, median {statistics.median(errors) * 100:+6.1f}%, "
            f"{sum(abs(e) > 0.35 for e in errors):2d} beyond 35%")


def graphed_runs_by_would_be_load(cases: dict[str, Any]) -> None:
    loads: list[float] = []
    original = moe_host.host_timing

    def recording(arch: Any, job: Any, gpu: Any, ep: Any, gpu_s: Any, **kw: Any) -> Any:
        out = original(arch, job, gpu, ep, gpu_s, **kw)
        if job.cuda_graphs == "full":
            eager = original(arch, dataclasses.replace(job, cuda_graphs="none"), gpu, ep, gpu_s, **kw)
            loads.append(float(np.max(eager.load)))
        return out

    stage_time.moe_host.host_timing = recording  # type: ignore[assignment]
    rows: list[tuple[float, float]] = []
    try:
        for case_id, case in cases.items():
            if case["request"].get("cuda_graphs") != "full":
                continue
            loads.clear()
            results = run_suite("moe", case=case_id)
            if results and results[0].error is not None and (e := tokens_error(results[0])) is not None and loads:
                rows.append((max(loads), e))
    finally:
        stage_time.moe_host.host_timing = original  # type: ignore[assignment]
    print("1. full-iteration CUDA graph runs, by the host load their ops would have eager:")
    for low, high in BANDS:
        errors = [e for load, e in rows if low <= load < high]
        print(f"   {low:.1f}-{high if high < 1e8 else 'up':<4}: {_summary(errors)}")


def eager_rows(cases: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in run_suite("moe"):
        if r.error is None or not r.detail or not r.detail.get("host_load"):
            continue
        e = tokens_error(r)
        if e is None:
            continue
        d = r.detail
        rows.append({"id": r.id, "group": r.group, "e": e, "load": d["host_load"], "est": d["step_time_s"],
                     "gpu": d["compute_s"] + d["exposed_comm_s"], "request": cases[r.id]["request"]})
    return rows


def megatron_by_band_and_pipeline(rows: list[dict[str, Any]]) -> None:
    print("2. eager Megatron-Core runs (AWS's EFA campaigns left out), by host load and pipeline parallelism:")
    chosen = [r for r in rows if r["request"].get("framework") in ("nemo", "megatron")
              and r["request"].get("cuda_graphs") != "full" and not r["group"].startswith("aws")]
    for low, high in (*BANDS[:2], (0.7, 1e9)):
        for label, keep in (("pp 1", lambda q: q.get("pp", 1) == 1), ("pp > 1", lambda q: q.get("pp", 1) > 1)):
            errors = [r["e"] for r in chosen if low <= r["load"] < high and keep(r["request"])]
            print(f"   load {low:.1f}-{high if high < 1e8 else 'up':<4} {label:7}: {_summary(errors)}")


def variants(rows: list[dict[str, Any]], all_errors: dict[str, float]) -> None:
    print("3. smooth host/GPU combinations (rows: beyond 35% too fast / too slow / more than 25% too slow):")
    by_id = {r["id"]: r for r in rows}

    def evaluate(extra: Callable[[float, float], float]) -> str:
        errors = []
        for case_id, e in all_errors.items():
            r = by_id.get(case_id)
            if r is None:
                errors.append(e)
                continue
            g, h = r["gpu"], r["load"] * r["gpu"]
            measured = r["est"] * (1.0 + e)
            errors.append(measured / (r["est"] + extra(g, h)) - 1.0)
        fast, slow = sum(v > 0.35 for v in errors), sum(v < -0.35 for v in errors)
        slower = sum(v < -0.25 for v in errors)
        return f"median |error| {statistics.median(abs(v) for v in errors) * 100:4.1f}%, {fast} / {slow} / {slower}"

    print(f"   max(G, H) as now          : {evaluate(lambda g, h: 0.0)}")
    for s in (0.2, 0.3, 0.4, 0.5):
        print(f"   max(G, H) + {s:.1f} min(G, H) : {evaluate(lambda g, h, s=s: s * min(g, h))}")
    for p in (2, 3, 4):
        print(f"   (G^{p} + H^{p})^(1/{p})       : {evaluate(lambda g, h, p=p: (g**p + h**p) ** (1 / p) - max(g, h))}")


def main() -> None:
    cases = {c["id"]: c for c in yaml.safe_load((CASES_DIR / "moe.yaml").read_text())["cases"]}
    graphed_runs_by_would_be_load(cases)
    rows = eager_rows(cases)
    megatron_by_band_and_pipeline(rows)
    all_errors = {r.id: e for r in run_suite("moe") if r.error is not None and (e := tokens_error(r)) is not None}
    variants(rows, all_errors)


if __name__ == "__main__":
    main()
