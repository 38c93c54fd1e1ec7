"""A variant of the host model tried against the MoE suite and not applied: the host time of the regions per-module
CUDA graphs capture, taken from measured A/Bs instead of kernel counts (docs/methodology/moe.md, 'What the host model
was tried against').

rigplan counts the attention block, the router and the dispatcher's preprocess as 6, 6 and 9 host ops a pass
(estimate.moe_host.CUDA_GRAPH_SCOPE_OPS). Two published A/Bs time what capturing them saves: Megatron-Bridge's
CUDA-graph guide (Qwen3-30B-A3B on 16 H100, TP2 PP2 EP4, 623 -> 484 ms with attn, moe_router and moe_preprocess: 1.9
ms a layer and micro-batch, about 72 x86 ops a pass at 13.48 us where rigplan counts 18) and the Qwen3-235B model
card's GB200 pair (80.78 -> 72.55 s with moe_router and moe_preprocess, PP16 and 512 micro-batches a step: 2.7 ms a
layer and micro-batch, about 36 Grace ops a pass at 37.08 us where rigplan counts 13). The variant gives the regions
A, R and P ops a pass (captured whole by their graphs), on x86 hosts only or on every host, and prints the MoE suite's
rows, median absolute and signed error in tokens/s (positive: rigplan too fast), rows beyond 35%, rows too slow beyond
35% and failing rows, for the model as it is and for the variant.

Run: python benchmarks/moe_graph_scope_cost_variant.py [A R P [x86|all]]   (default 36 14.4 21.6 x86)
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import rigplan.estimate.moe_host as moe_host
from rigplan.validation.regimes import tokens_error
from rigplan.validation.run import run_suite

COUNTED = dict(moe_host.CUDA_GRAPH_SCOPE_OPS)
COUNTED_LAYER_OPS = moe_host.MOE_LAYER_HOST_OPS



def summary() -> tuple[int, float, float, int, int, int]:
    results = [r for r in run_suite("moe") if r.error is not None]
    errors = [tokens_error(r) for r in results]
    return (len(errors), round(statistics.median(abs(e) for e in errors) * 100, 1),
            round(statistics.median(errors) * 100, 1), sum(abs(e) > 0.35 for e in errors),
            sum(e < -0.35 for e in errors), sum(r.status == "fail" for r in results))


def with_measured_regions(attn: float, router: float, preprocess: float, hosts: str) -> None:
    measured = {"attn": attn, "moe_router": router, "moe_preprocess": preprocess}
    extra_layer = (router - COUNTED["moe_router"]) + (preprocess - COUNTED["moe_preprocess"])
    original = moe_host.exposed_host_s

    def patched(arch: Any, job: Any, host_cpu: str, ep: Any, gpu_s: Any, *, kernels: float, **kw: Any) -> Any:
        if hosts == "x86" and host_cpu != "x86":
            return original(arch, job, host_cpu, ep, gpu_s, kernels=kernels, **kw)
        moe_host.CUDA_GRAPH_SCOPE_OPS.update(measured)
        moe_host.MOE_LAYER_HOST_OPS = COUNTED_LAYER_OPS + extra_layer
        try:
            return original(arch, job, host_cpu, ep, gpu_s, kernels=kernels + attn - COUNTED["attn"], **kw)
        finally:
            moe_host.CUDA_GRAPH_SCOPE_OPS.update(COUNTED)
            moe_host.MOE_LAYER_HOST_OPS = COUNTED_LAYER_OPS

    moe_host.exposed_host_s = patched


def main() -> None:
    attn, router, preprocess = (float(x) for x in sys.argv[1:4]) if len(sys.argv) > 3 else (36.0, 14.4, 21.6)
    hosts = sys.argv[4] if len(sys.argv) > 4 else "x86"
    print("(rows, median |error| %, median signed %, beyond 35%, too slow beyond 35%, failing) in tokens/s")
    print("as is:  ", summary())
    with_measured_regions(attn, router, preprocess, hosts)
    print(f"variant attn={attn:g} router={router:g} preprocess={preprocess:g} on {hosts}:", summary())


if __name__ == "__main__":
    main()
