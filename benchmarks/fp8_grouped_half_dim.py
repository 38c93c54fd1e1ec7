"""Blackwell's fp8 half-efficiency dimension for grouped expert GEMMs, from paired MXFP8 / BF16 runs.

Two published pairs ran the same MoE model, layout and stack on Blackwell in BF16 and in MXFP8, so their
tokens/s ratio isolates what fp8 does to the step (everything else cancels):

- Megatron-LM's MoE recipes (2026-07), Qwen3-30B-A3B on 16 GB200, TP1 EP16, MBS 4: MXFP8 (partial CUDA
  graphs) 480.3 against BF16 504.2 TFLOP/s/GPU, a ratio of 0.953 (the MXFP8 recipe also has the graphs);
- Megatron-Bridge issue #4439, Qwen3-30B-A3B on 8 B200, EP8, MBS 4: MXFP8 ~562 against BF16 ~552 TFLOP/s,
  1.018.

rigplan puts fp8 at 1.23-1.27x in both with the dense fp8 curve (Blackwell's fp8 half dimension equal to
bf16's, from OpenXLA's cuBLAS table of GEMMs with every dimension >= 1024). The expert GEMMs of these
models are thin (expert ffn 768): MXFP8 grouped GEMMs, with their per-expert quantization and scale
layout kernels, gain little there. Kernel benchmarks say the same on B200: torchao's MXFP8 grouped GEMM
(forward + backward with its quantization) is 1.64-1.81x bf16 at Llama 4 shapes (N 8192, K 5120) but
1.19-1.60x at DeepSeek-V3's (N 2048, K 7168), and a user measures 0.95x for a whole MoE layer at
dim 2048, expert ffn 1408 (pytorch/torchtitan #2086).

This script finds the half dimension of the grouped fp8 curve that makes rigplan's predicted ratio match
both pairs (least squares on the log ratio), and prints the ratios on a grid. It then checks the fitted curve
on two DeepSeek-V3 pairs it was not fitted on (expert ffn 2048):

- Megatron-Bridge's revised 25.11 tables, 256 GB300, PP2 VP4 EP32: FP8-MX 1088 against BF16 961 model
  TFLOP/s, 1.132 (the MoE suite's bridge2511r-gb300-deepseekv3 rows);
- Megatron-Bridge PR #1869, 256 B200 in the 25.11 tracker: MXFP8 557 against BF16 532 TFLOP/s, 1.047,
  taken in the 25.11 table's B200 layout (PP16, EP8, MBS 1, GBS 2048; the PR does not print its layout).

Run: python benchmarks/fp8_grouped_half_dim.py
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import rigplan.estimate.efficiency as efficiency
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.validation.run import SUITES, load_case_file

PAIRS = (
    ("recipes2607-gb200-qwen3-30b-mxfp8-partial-cg", "recipes2607-gb200-qwen3-30b-bf16", 480.3 / 504.2),
    ("bridge4439-b200-qwen3-30b-mxfp8", "bridge4439-b200-qwen3-30b-bf16", 562.0 / 552.0),
)
"""(fp8 case, bf16 case, measured fp8 / bf16 tokens/s) from the MoE validation suite's sources."""

CHECKS = (
    ("bridge2511r-gb300-deepseekv3-mx", "bridge2511r-gb300-deepseekv3-bf16", 1088.0 / 961.0),
    ("b200-deepseek-v3-mxfp8", "b200-deepseek-v3-bf16", 557.0 / 532.0),
)
"""Pairs the fit does not use: the first from the MoE suite, the second built below (B200_DEEPSEEK)."""

B200_DEEPSEEK = dict(model="deepseek-v3", gpu="b200", gpus=256, seq=4096, micro_batch=1, global_batch=2048, tp=1,
                     pp=16, ep=8, etp=1, zero=1, recompute="none", attention="flash", framework="nemo",
                     grad_reduce_dtype="bf16", balanced_routing=True)


def _requests() -> dict[str, EstimateRequest]:
    requests = {case.id: case.request for case in load_case_file(SUITES["moe"].default_file).cases}
    requests["b200-deepseek-v3-mxfp8"] = EstimateRequest(**B200_DEEPSEEK, precision="fp8", fp8_recipe="mxfp8")
    requests["b200-deepseek-v3-bf16"] = EstimateRequest(**B200_DEEPSEEK, precision="bf16-mixed")
    return requests


def predicted_ratio(requests: dict[str, EstimateRequest], fp8_id: str, bf16_id: str, half_dim: float) -> float:
    saved = efficiency.BLACKWELL
    efficiency.BLACKWELL = dataclasses.replace(saved, fp8_grouped_half_dim=half_dim)
    try:
        fast, slow = (estimate(requests[i]).step for i in (fp8_id, bf16_id))
        return float((fast.tokens_per_step / fast.step_time_s) / (slow.tokens_per_step / slow.step_time_s))
    finally:
        efficiency.BLACKWELL = saved


def main() -> None:
    requests = _requests()
    grid = [0.0, 1090.0, 1500.0, 2000.0, 2500.0, 2600.0, 3000.0, 3500.0]

    def loss(half: float) -> float:
        return sum(math.log(predicted_ratio(requests, f, b, half) / measured) ** 2 for f, b, measured in PAIRS)

    print("half dim | " + " | ".join(f"{f.split('-')[0]} pred (meas {m:.3f})" for f, _, m in PAIRS))
    for half in grid:
        ratios = [predicted_ratio(requests, f, b, half) for f, b, _ in PAIRS]
        label = "dense fp8 curve" if half == 0.0 else f"{half:,.0f}"
        print(f"{label:>15} | " + " | ".join(f"{r:.3f}" for r in ratios))
    lo, hi = 1000.0, 5000.0
    for _ in range(40):  # golden-section search on the log-ratio loss
        a, b = hi - (hi - lo) / 1.618, lo + (hi - lo) / 1.618
        lo, hi = (lo, b) if loss(a) < loss(b) else (a, hi)
    best: Any = (lo + hi) / 2
    print(f"least-squares half dimension: {best:,.0f} (loss {loss(best):.4f}); "
          f"ratios {', '.join(f'{predicted_ratio(requests, f, b, best):.3f}' for f, b, _ in PAIRS)}")
    used = efficiency.BLACKWELL.fp8_grouped_half_dim
    for fp8_id, bf16_id, measured in CHECKS:
        grouped, dense = (predicted_ratio(requests, fp8_id, bf16_id, half) for half in (used, 0.0))
        print(f"check {fp8_id} / {bf16_id}: measured {measured:.3f}; rigplan {grouped:.3f} with the catalog's "
              f"{used:,.0f}, {dense:.3f} with the dense fp8 curve")


if __name__ == "__main__":
    main()
