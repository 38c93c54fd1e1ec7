"""A variant of the step-time model tried against the suites and not applied: the MoE layer's own kernels in the GPU's
launch gaps (docs/methodology/moe.md, 'What the host model was tried against').

rigplan charges KERNEL_GAP_S (3 us) for each of a layer's dense kernels (estimate.elementwise.kernels_per_layer) but
not for the MoE layer's router and dispatcher kernels or its per-expert GEMMs. The variant adds, per MoE layer of a
stage and micro-batch, KERNEL_GAP_S x ((R + forward kernels) x (1 + recomputed share) + R + backward kernels), with R
the router and dispatcher's kernels (estimate.moe_host.MOE_LAYER_HOST_OPS, 25) and, per local expert and grouped linear,
G x (1 GEMM forward, 2 backward, one cast more each in fp8); the fused grouped MLP counts 1 and 2. It prints, per
suite, the rows compared, the median absolute and signed error in tokens/s (positive: rigplan too fast), the rows
beyond 35% and the rows that fail their tolerance, for the model as it is (R = G = 0) and for the variant.

Run: python benchmarks/moe_kernel_gap_variant.py [R G]   (default 25 1; 25 0.25 models four GEMM streams)
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from typing import Any

import numpy as np

import rigplan.estimate.stage_time as stage_time
from rigplan.estimate.elementwise import KERNEL_GAP_S
from rigplan.estimate.moe_host import MOE_LAYER_HOST_OPS
from rigplan.validation.regimes import tokens_error
from rigplan.validation.run import run_suite

SUITES = ("moe", "throughput", "frontier", "dense_oos")



def summary() -> dict[str, tuple[int, float, float, int, int]]:
    out = {}
    for suite in SUITES:
        results = run_suite(suite)
        errors = [tokens_error(r) for r in results if r.error is not None]
        out[suite] = (len(errors), round(statistics.median(abs(e) for e in errors) * 100, 1),
                      round(statistics.median(errors) * 100, 1), sum(abs(e) > 0.35 for e in errors),
                      sum(r.status == "fail" for r in results))
    return out


def with_moe_kernel_gaps(router_kernels: float, gemm_scale: float) -> None:
    original = stage_time._compute_time

    def patched(arch: Any, job: Any, rates: Any, stage: Any, need_gemm: bool, flops: Any) -> Any:
        computed = original(arch, job, rates, stage, need_gemm, flops)
        if arch.moe is None:
            return computed
        moe_layers = np.maximum(stage.layers - stage.dense_layers, 0.0)
        per_expert = (3.0 if arch.mlp == "gated" else 2.0) * arch.hidden * arch.moe.expert_ffn
        local = rates.local_expert_params / per_expert
        cast = 1.0 if rates.fp8 else 0.0
        forward, backward = ((1.0, 2.0) if job.moe_fused_grouped_mlp else
                             (gemm_scale * 2.0 * local * (1.0 + cast), gemm_scale * 2.0 * local * (2.0 + cast)))
        redone = stage.recomputed_layers / np.maximum(stage.layers, 1.0)
        extra = moe_layers * KERNEL_GAP_S * ((router_kernels + forward) * (1.0 + redone) + router_kernels + backward)
        return dataclasses.replace(computed, compute_s=computed.compute_s + extra)

    stage_time._compute_time = patched


def main() -> None:
    router_kernels = float(sys.argv[1]) if len(sys.argv) > 1 else MOE_LAYER_HOST_OPS
    gemm_scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    print("(rows, median |error| %, median signed %, beyond 35%, failing) in tokens/s")
    print("as is:  ", summary())
    with_moe_kernel_gaps(router_kernels, gemm_scale)
    print(f"variant R={router_kernels:g} G={gemm_scale:g}:", summary())


if __name__ == "__main__":
    main()
