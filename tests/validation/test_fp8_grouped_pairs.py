"""The grouped fp8 curve (fp8_grouped_half_dim) against fp8 / bf16 pairs of one model, layout and stack
(benchmarks/fp8_grouped_half_dim.py): on Blackwell the two MXFP8 pairs it was fitted on (Qwen3-30B-A3B) and two
DeepSeek-V3 pairs it was not; on Hopper the two pairs it was fitted on (Qwen3-30B-A3B, Grok-1) and the Llama 4
Maverick pair it was not. The Hopper Qwen3-30B-A3B pair is host-paced under the host model of 2026-12-06 and no longer
bears on the curve (expected to fail, below)."""

from __future__ import annotations

import pytest

from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.validation.run import SUITES, load_case_file

CASES = {case.id: case.request for case in load_case_file(SUITES["moe"].default_file).cases}
B200_DEEPSEEK = dict(model="deepseek-v3", gpu="b200", gpus=256, seq=4096, micro_batch=1, global_batch=2048, tp=1,
                     pp=16, ep=8, etp=1, zero=1, recompute="none", attention="flash", framework="nemo",
                     grad_reduce_dtype="bf16", balanced_routing=True)
CASES["b200-deepseek-v3-mxfp8"] = EstimateRequest(**B200_DEEPSEEK, precision="fp8", fp8_recipe="mxfp8")
CASES["b200-deepseek-v3-bf16"] = EstimateRequest(**B200_DEEPSEEK, precision="bf16-mixed")


RECIPES_H100_PAIR_HOST_PACED = (
    "host-paced at one sequence a micro-batch, and the pair differs in more than fp8: the FP8 recipe captures attn, "
    "moe_router and moe_preprocess in CUDA graphs, the BF16 one nothing, so rigplan's host model (estimate.moe_host, "
    "x86 op 36.2 us since 2026-12-06) gives the FP8 run 36 fewer host ops a layer and micro-batch and 1.16x the BF16 "
    "throughput where 1.01x was measured (each row alone within 15%); what the graphed FP8 run pays instead is not "
    "identified")


def tokens_per_s(case: str) -> float:
    step = estimate(CASES[case]).step
    return float(step.tokens_per_step / step.step_time_s)


@pytest.mark.parametrize(("fp8_case", "bf16_case", "measured"), [
    ("recipes2607-gb200-qwen3-30b-mxfp8-partial-cg", "recipes2607-gb200-qwen3-30b-bf16", 480.3 / 504.2),
    ("bridge4439-b200-qwen3-30b-mxfp8", "bridge4439-b200-qwen3-30b-bf16", 562.0 / 552.0),
    ("bridge2511r-gb300-deepseekv3-mx", "bridge2511r-gb300-deepseekv3-bf16", 1088.0 / 961.0),  # not fitted on
    ("b200-deepseek-v3-mxfp8", "b200-deepseek-v3-bf16", 557.0 / 532.0),  # Megatron-Bridge PR #1869, not fitted on
    pytest.param("recipes2607-h100-qwen3-30b-fp8", "recipes2607-h100-qwen3-30b-bf16", 242.9 / 240.5,
                 marks=pytest.mark.xfail(strict=True, reason=RECIPES_H100_PAIR_HOST_PACED)),
    ("dgxc-h100-grok1-fp8-512", "dgxc-h100-grok1-bf16-512", 15.933 / 13.433),
    ("dgxc-h100-llama4-maverick-fp8-512", "dgxc-h100-llama4-maverick-bf16-512", 4.426 / 3.855),  # not fitted on
])
def test_fp8_over_bf16_matches_the_measured_pair(fp8_case: str, bf16_case: str, measured: float) -> None:
    assert tokens_per_s(fp8_case) / tokens_per_s(bf16_case) == pytest.approx(measured, rel=0.05)


def test_hopper_grouped_curve_is_what_makes_the_pairs_agree() -> None:
    """With Hopper's dense fp8 curve the H100 pairs' fp8 gain is 5-12% above the measured; the grouped curve is the
    only difference."""
    import dataclasses

    import rigplan.estimate.efficiency as efficiency

    saved = efficiency.HOPPER
    efficiency.HOPPER = dataclasses.replace(saved, fp8_grouped_half_dim=0.0)
    try:
        dense = tokens_per_s("dgxc-h100-grok1-fp8-512") / tokens_per_s("dgxc-h100-grok1-bf16-512")
    finally:
        efficiency.HOPPER = saved
    assert dense > 1.10 * 15.933 / 13.433
