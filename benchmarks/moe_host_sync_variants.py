"""Two variants of the MoE host model tried against the MoE suite and not applied (docs/methodology/moe.md, 'What the
host model was tried against', the ninth and tenth tries).

merged: under full recompute each recomputed layer's forward runs inside the backward and syncs there, so the
recompute and the backward of those layers share per-layer segments; the variant times them as one synced pass
(the host through both expert phases, then the GPU through the attention backward and the next layer's recomputed
attention) instead of the recompute's own two-phase bound plus the backward's max(host, GPU).

torchtitan: torchtitan's experts issue one torch._grouped_mm per grouped linear (3 forward, 6 backward, plus the
activation's 2 and 3), not Transformer Engine's per-expert GEMMs; a plain torch op costs the isolated figure
(estimate.moe_host.TORCH_LINEAR_CPU_S) rather than the Transformer Engine one; and without expert parallelism its
token permutation has static shapes, so there is no per-layer host sync.

Each prints, for the model as it is and for the variant, the rows compared, the median absolute and signed error in
tokens/s (positive: rigplan too fast) and the rows beyond 35%, for the out-of-sample rows and the whole MoE suite, then
the rows that move by more than half a point.

Run: python benchmarks/moe_host_sync_variants.py merged|torchtitan
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import numpy as np

import rigplan.estimate.moe_host as moe_host
from rigplan.validation.regimes import out_of_sample, tokens_error
from rigplan.validation.run import run_suite

GROUPED_MM_HOST_OPS = {"forward": 5.0, "backward": 9.0}


def errors() -> dict[str, tuple[float, bool]]:
    return {r.id: (e, out_of_sample(r)) for r in run_suite("moe") if r.error is not None
            if (e := tokens_error(r)) is not None}


def summary(errs: dict[str, tuple[float, bool]]) -> str:
    parts = []
    for label, chosen in (("out of sample", [e for e, oos in errs.values() if oos]),
                          ("whole suite", [e for e, _ in errs.values()])):
        parts.append(f"{label}: {len(chosen)} rows, median |error| {statistics.median(abs(e) for e in chosen):.1%}, "
                     f"signed {statistics.median(chosen):+.1%}, beyond 35% {sum(abs(e) > 0.35 for e in chosen)}")
    return "; ".join(parts)


def merged_variant() -> None:
    state: dict[str, Any] = {}
    original_exposed = moe_host.exposed_host_s

    def host_paced_s(gpu_s: Any, *, host_forward_s: Any, host_backward_s: Any, host_recompute_s: Any,
                     recompute_share: Any, sync: bool = True, expert_gpu_s: Any = 0.0, expert_host_s: Any = 0.0,
                     fc1_gpu_s: Any = 0.0, fc1_host_s: Any = 0.0) -> Any:
        gpu, r = np.asarray(gpu_s, dtype=np.float64), np.asarray(recompute_share, dtype=np.float64)
        if not sync:
            return np.maximum(gpu, host_forward_s + host_backward_s + host_recompute_s)
        forward_gpu = gpu / (3.0 + r)
        expert_gpu = np.minimum(expert_gpu_s, forward_gpu)
        forward = moe_host.synced_pass_s(forward_gpu, host_forward_s, expert_gpu, expert_host_s, fc1_gpu_s, fc1_host_s)
        backward_gpu = 2.0 * forward_gpu
        merged_gpu = r * (forward_gpu + backward_gpu)
        merged_host = host_recompute_s + r * host_backward_s
        experts_host = r * (expert_host_s + state["expert_backward_host_s"])
        experts_gpu = r * 3.0 * expert_gpu
        merged = np.maximum(np.maximum(merged_gpu, merged_host), experts_host + merged_gpu - experts_gpu)
        rest = np.maximum((1.0 - r) * backward_gpu, (1.0 - r) * host_backward_s)
        return forward + merged + rest

    def exposed_host_s(arch: Any, job: Any, gpu: Any, ep: Any, gpu_s: Any, **counts: Any) -> Any:
        state["expert_backward_host_s"] = 0.0
        if arch.moe is not None and job.kernels == "fused":
            op_s = moe_host.HOST_OP_S.get(gpu.host_cpu, moe_host.HOST_OP_S["x86"])
            moe_layers = counts["layers"] - counts["dense_layers"] + counts["lm_head"] * arch.moe.mtp_layers
            backward_ops = moe_host.EXPERT_PHASE_DISPATCH_OPS + moe_host.expert_host_ops(arch, job, ep, "backward")
            state["expert_backward_host_s"] = moe_layers * backward_ops * op_s
        return original_exposed(arch, job, gpu, ep, gpu_s, **counts)

    moe_host.host_paced_s = host_paced_s  # type: ignore[assignment]
    moe_host.exposed_host_s = exposed_host_s  # type: ignore[assignment]


def torchtitan_variant() -> None:
    original_ops, original_exposed, original_syncs = (moe_host.host_ops_per_moe_layer, moe_host.exposed_host_s,
                                                      moe_host.host_syncs)

    def host_ops_per_moe_layer(arch: Any, job: Any, ep: Any, dense_kernels: float) -> Any:
        if job.kernels != "eager" or arch.moe is None:
            return original_ops(arch, job, ep, dense_kernels)
        own = dense_kernels + moe_host.MOE_LAYER_HOST_OPS + 0.0 * np.asarray(ep, dtype=np.float64)
        return own + GROUPED_MM_HOST_OPS["forward"], own + GROUPED_MM_HOST_OPS["backward"]

    def exposed_host_s(arch: Any, job: Any, gpu: Any, ep: Any, gpu_s: Any, **counts: Any) -> Any:
        if job.kernels != "eager" or arch.moe is None:
            return original_exposed(arch, job, gpu, ep, gpu_s, **counts)
        saved = dict(moe_host.HOST_OP_S)
        moe_host.HOST_OP_S.update(moe_host.TORCH_LINEAR_CPU_S)
        with_ep = float(np.max(np.asarray(ep))) > 1.0
        moe_host.host_syncs = lambda j: with_ep and original_syncs(j)  # type: ignore[assignment]
        try:
            return original_exposed(arch, job, gpu, ep, gpu_s, **counts)
        finally:
            moe_host.HOST_OP_S.clear()
            moe_host.HOST_OP_S.update(saved)
            moe_host.host_syncs = original_syncs  # type: ignore[assignment]

    moe_host.host_ops_per_moe_layer = host_ops_per_moe_layer  # type: ignore[assignment]
    moe_host.exposed_host_s = exposed_host_s  # type: ignore[assignment]


def main() -> None:
    variant = sys.argv[1] if len(sys.argv) > 1 else "merged"
    if variant not in ("merged", "torchtitan"):
        print("usage: python benchmarks/moe_host_sync_variants.py merged|torchtitan", file=sys.stderr)
        sys.exit(2)
    before = errors()
    print("as is:  ", summary(before))
    (merged_variant if variant == "merged" else torchtitan_variant)()
    after = errors()
    print(f"{variant}:", summary(after))
    for case_id, (error, _) in before.items():
        if abs(after[case_id][0] - error) > 0.005:
            print(f"  {case_id}: {error:+.1%} -> {after[case_id][0]:+.1%}")


if __name__ == "__main__":
    main()
