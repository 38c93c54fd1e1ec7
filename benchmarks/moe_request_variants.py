"""Two variants tried against the MoE suite and not applied (docs/methodology/moe.md, 'What the host model was tried
against', the eleventh and twelfth tries).

frozen-wgrad: a LoRA or QLoRA run's frozen experts issue no weight-gradient GEMM in the backward (Transformer Engine's
GroupedLinear computes wgrad only for a weight that requires a gradient), so the variant counts 2 backward host ops
per local expert and grouped linear instead of estimate.moe_host.EXPERT_HOST_OPS' 3 on the suite's LoRA runs.

cudnn-sdpa: recent PyTorch builds put cuDNN first in SDPA's backend order on sm90 and sm100 (sdp_utils.cpp,
check_prefer_cudnn_attention); the variant enters attention_kernel cudnn on every torchtitan run that leaves the
kernel to the preset (SDPA's flash backend).

Each prints the rows the variant touches, their tokens/s error before and after (positive: rigplan too fast), and
their median absolute and signed error, rows beyond 35% and rows out of tolerance, before and after.

Run: python benchmarks/moe_request_variants.py frozen-wgrad|cudnn-sdpa
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from typing import Any

import rigplan.estimate.moe_host as moe_host
from rigplan.validation.regimes import tokens_error
from rigplan.validation.run import SUITES, load_case_file

CASES = list(load_case_file(SUITES["moe"].default_file).cases)
EVALUATE = SUITES["moe"].evaluate


def _error(case: Any) -> tuple[float, str]:
    result = EVALUATE(case)
    error = tokens_error(result)
    assert error is not None, case.id
    return error, result.status


def frozen_wgrad() -> list[tuple[str, tuple[float, str], tuple[float, str]]]:
    touched = [c for c in CASES if c.request.method in ("lora", "qlora")]
    before = {c.id: _error(c) for c in touched}
    original = moe_host.expert_host_ops

    def without_wgrad(arch: Any, job: Any, ep: Any, phase: str) -> Any:
        ops = original(arch, job, ep, phase)
        if job.is_peft and phase == "backward" and not job.moe_fused_grouped_mlp:
            ops = ops - 2.0 * arch.moe.num_experts / moe_host.xp.asfloat(ep)
        return ops

    moe_host.expert_host_ops = without_wgrad
    try:
        return [(c.id, before[c.id], _error(c)) for c in touched]
    finally:
        moe_host.expert_host_ops = original


def cudnn_sdpa() -> list[tuple[str, tuple[float, str], tuple[float, str]]]:
    touched = [c for c in CASES if str(c.request.framework) == "torchtitan" and c.request.attention_kernel == "sdpa"]
    rows = []
    for case in touched:
        swapped = case.model_copy(update={"request": case.request.model_copy(update={"attention_kernel": "cudnn"})})
        rows.append((case.id, _error(case), _error(swapped)))
    return rows


VARIANTS: dict[str, Callable[[], list[tuple[str, tuple[float, str], tuple[float, str]]]]] = {
    "frozen-wgrad": frozen_wgrad, "cudnn-sdpa": cudnn_sdpa}


def _summary(errors: list[float], statuses: list[str]) -> str:
    return (f"median |error| {statistics.median(abs(e) for e in errors):6.1%}  signed "
            f"{statistics.median(errors):+6.1%}  beyond 35%: {sum(abs(e) > 0.35 for e in errors)}  "
            f"out of tolerance: {sum(s == 'fail' for s in statuses)}")


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: python benchmarks/moe_request_variants.py {'|'.join(VARIANTS)}")
    rows = VARIANTS[sys.argv[1]]()
    for case_id, (before, _), (after, status) in rows:
        print(f"{case_id:55s} {before:+7.1%} -> {after:+7.1%}  {status}")
    print(f"{len(rows)} rows, as it is: {_summary([b[0] for _, b, _ in rows], [b[1] for _, b, _ in rows])}")
    print(f"{len(rows)} rows, variant:  {_summary([a[0] for _, _, a in rows], [a[1] for _, _, a in rows])}")


if __name__ == "__main__":
    main()
