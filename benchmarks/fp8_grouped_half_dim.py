"""Blackwell's and Hopper's fp8 half-efficiency dimension for grouped expert GEMMs, from paired fp8 / bf16 runs.

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

Hopper gets the same treatment from the two FP8 / BF16 pairs of one model, layout and stack on H100 in the MoE
suite: Megatron-LM's MoE recipes (2026-07), Qwen3-30B-A3B on 32 H100, EP8, blockwise FP8 242.9 against BF16
240.5 TFLOP/s/GPU (1.010; the FP8 recipe also captures partial CUDA graphs, which rigplan models), and NVIDIA
DGX Cloud's Grok-1 recipe on NeMo 25.04, 512 H100, per-tensor delayed scaling, 13.433 against 15.933 s a step
(1.186). The check is the same release's Llama 4 Maverick pair on 512 H100 (3.855 against 4.426 s, 1.148; its
FP8 run also with full CUDA graphs). Since the x86 host op went to 36.2 us (estimate.moe_host.HOST_OP_S, 2026-12-06)
the host paces the Qwen3-30B-A3B pair, whose prediction (1.158) no half dimension moves: Grok-1 alone sets the curve.

Run: python benchmarks/fp8_grouped_half_dim.py [--family blackwell|hopper]
"""

from __future__ import annotations

import argparse
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

HOPPER_PAIRS = (
    ("recipes2607-h100-qwen3-30b-fp8", "recipes2607-h100-qwen3-30b-bf16", 242.9 / 240.5),
    ("dgxc-h100-grok1-fp8-512", "dgxc-h100-grok1-bf16-512", 15.933 / 13.433),
)
"""Hopper's (fp8 case, bf16 case, measured fp8 / bf16 tokens/s), from the MoE validation suite's sources."""

HOPPER_CHECKS = (
    ("dgxc-h100-llama4-maverick-fp8-512", "dgxc-h100-llama4-maverick-bf16-512", 4.426 / 3.855),
)
"""The Hopper pair the fit does not use."""

FAMILIES = {
    "blackwell": ("BLACKWELL", PAIRS, CHECKS, [0.0, 1090.0, 1500.0, 2000.0, 2500.0, 2600.0, 3000.0, 3500.0],
                  (1000.0, 5000.0)),
    "hopper": ("HOPPER", HOPPER_PAIRS, HOPPER_CHECKS, [0.0, 553.0, 800.0, 910.0, 1070.0, 1500.0, 2000.0],
               (553.0, 3000.0)),
}
"""Per family: its efficiency record in rigplan.estimate.efficiency, the fitted pairs, the checks, the printed grid
and the search interval of the half dimension (0 on the grid: the family's dense fp8 curve)."""

B200_DEEPSEEK = dict(model="deepseek-v3", gpu="b200", gpus=256, seq=4096, micro_batch=1, global_batch=2048, tp=1,
                     pp=16, ep=8, etp=1, zero=1, recompute="none", attention="flash", framework="nemo",
                     grad_reduce_dtype="bf16", balanced_routing=True)


def _requests() -> dict[str, EstimateRequest]:
    requests = {case.id: case.request for case in load_case_file(SUITES["moe"].default_file).cases}
    requests["b200-deepseek-v3-mxfp8"] = EstimateRequest(**B200_DEEPSEEK, precision="fp8", fp8_recipe="mxfp8")
    requests["b200-deepseek-v3-bf16"] = EstimateRequest(**B200_DEEPSEEK, precision="bf16-mixed")
    return requests


def predicted_ratio(requests: dict[str, EstimateRequest], fp8_id: str, bf16_id: str, half_dim: float,
                    record: str = "BLACKWELL") -> float:
    saved = getattr(efficiency, record)
    setattr(efficiency, record, dataclasses.replace(saved, fp8_grouped_half_dim=half_dim))
    try:
        fast, slow = (estimate(requests[i]).step for i in (fp8_id, bf16_id))
        return float((fast.tokens_per_step / fast.step_time_s) / (slow.tokens_per_step / slow.step_time_s))
    finally:
        setattr(efficiency, record, saved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), default="blackwell")
    record, pairs, checks, grid, (lo, hi) = FAMILIES[parser.parse_args().family]
    requests = _requests()

    def ratio(fp8_id: str, bf16_id: str, half: float) -> float:
        return predicted_ratio(requests, fp8_id, bf16_id, half, record)

    def loss(half: float) -> float:
        return sum(math.log(ratio(f, b, half) / measured) ** 2 for f, b, measured in pairs)

    print("half dim | " + " | ".join(f"{f.split('-')[0]} pred (meas {m:.3f})" for f, _, m in pairs))
    for half in grid:
        ratios = [ratio(f, b, half) for f, b, _ in pairs]
        label = "dense fp8 curve" if half == 0.0 else f"{half:,.0f}"
        print(f"{label:>15} | " + " | ".join(f"{r:.3f}" for r in ratios))
    for _ in range(40):  # golden-section search on the log-ratio loss
        a, b = hi - (hi - lo) / 1.618, lo + (hi - lo) / 1.618
        lo, hi = (lo, b) if loss(a) < loss(b) else (a, hi)
    best: Any = (lo + hi) / 2
    print(f"least-squares half dimension: {best:,.0f} (loss {loss(best):.4f}); "
          f"ratios {', '.join(f'{ratio(f, b, best):.3f}' for f, b, _ in pairs)}")
    used = getattr(efficiency, record).fp8_grouped_half_dim
    for fp8_id, bf16_id, measured in checks:
        grouped, dense = (ratio(fp8_id, bf16_id, half) for half in (used, 0.0))
        print(f"check {fp8_id} / {bf16_id}: measured {measured:.3f}; rigplan {grouped:.3f} with the catalog's "
              f"{used:,.0f}, {dense:.3f} with the dense fp8 curve")


if __name__ == "__main__":
    main()
