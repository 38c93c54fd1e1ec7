"""The host's side of an MoE layer: the ops a Megatron-Core MoE layer issues from Python, what one op costs on each
CPU family, and how long a micro-batch takes when the host must issue every op of it (dropless routing syncs the host
once a layer; per-module CUDA graphs replace captured regions by one launch; a full-iteration graph removes the host
from the step). Used by estimate.stage_time beside the GPU-side model of estimate.moe.
"""

from __future__ import annotations

from typing import NamedTuple

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import CUDA_GRAPH_SCOPES, Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate import linear_attention, recompute_modules
from rigplan.estimate.moe import (
    CLAMPED_GLU_HOST_OPS,
    EXPERT_BIAS_LOOP_HOST_OPS,
    Num,
    clamped_glu,
    host_syncs,
    megatron_expert_path,
    static_expert_shapes,
)

TORCH_LINEAR_CPU_S = {"x86": 13.48e-6, "grace": 37.08e-6}
"""CPU time of one torch.nn.Linear forward (bf16, hidden 2048, 8192 tokens) in a tight loop: a DGX H100's Xeon
Platinum 8480C and a GB200's Grace, TransformerEngine issue #2053 (2025-08). The same benchmark gives te.Linear 99.66
us on GB200 and 90.53 us on GH200 (2.69x and 2.73x their torch op)."""
TE_OVER_TORCH = 99.66 / 37.08
"""te.Linear's CPU time over torch.nn.Linear's on GB200 (TransformerEngine issue #2053)."""

HOST_OP_S = {"x86": TORCH_LINEAR_CPU_S["x86"] * TE_OVER_TORCH, "grace": TORCH_LINEAR_CPU_S["grace"]}
"""Host seconds to issue one op of the counts below (host_ops_per_moe_layer) in a training process, by CPU family:
36.2 us on x86, 37.08 us on Grace.

The counts are mostly Transformer Engine module and fused-kernel calls. The MoE suite bounds the cost per counted op
from both sides, with the GPU time rigplan gives each run (docs/methodology/moe.md, 'Validation'): from below by the
dropless runs the host paces, from above by those the GPU paces. On x86 hosts the host-paced Megatron-Core runs give
29-39 us (Megatron-Bridge 25.11's and 26.02's Qwen3-30B-A3B on 8 B200 at one 4,096-token micro-batch 37.9 and 36.4,
Megatron-LM's 2026-07 H100 recipes 39.2 in FP8 and 33.7 in BF16, Together AI's B300 29) and the GPU-paced ones at
most 48-56 us (Megatron-Bridge 26.04's DeepSeek-V3 on B300 and B200, 48.5 and 54.0); the isolated torch op, 13.48
us, is below every host-paced run, and that op times Transformer Engine's module overhead (TE_OVER_TORCH), 36.2 us,
is inside the bounds. On Grace the GPU-paced GB200 and GB300 runs allow at most 40 us (the MoE ModelZoo's BF16
Qwen3-235B on GB200 39.8, Megatron-Bridge 25.11's GB300 Qwen3-235B 39.9) and the torch op, 37.08 us, is inside; its
te.Linear figure (99.66 us, before Transformer Engine's Grace-prompted CPU work, PR #2146) is not. So in training an op
costs about the same on both hosts, which the isolated benchmark does not show. Before 2026-12-06 rigplan took the
torch figures on both (x86 13.48 us)."""
MOE_LAYER_HOST_OPS = 25.0
"""Ops the host issues per MoE layer and pass outside the expert GEMMs, counted from Megatron-Core's
router and MoEAlltoAllTokenDispatcher with permute and router fusion: router (gate GEMM, fp32 cast,
fused score/top-k, auxiliary loss 2, saving it: 6), preprocess (tokens per expert, its gather over
the EP group, 4 split computations, 3 device-to-host copies: 9), dispatch (permute index and
permute, all-to-all, sort by local expert: 4), the fused activation (1), combine (sort back,
all-to-all, unpermute: 3) and 2 reshapes."""
CUDA_GRAPH_SCOPE_OPS = {"attn": 6.0, "mamba": linear_attention.MAMBA2_FORWARD_KERNELS, "moe_router": 6.0,
                        "moe_preprocess": 9.0}
"""Host ops a per-module CUDA graph scope (Megatron-Core / Transformer Engine cuda_graph_scope) replaces with
one graph launch, forward and backward alike: attn, the attention block of the fused stack (norm, qkv
projection, rotary, attention kernel, output projection, residual add: 6 of FUSED_KERNELS_PER_LAYER's 14);
mamba, a Mamba-2 mixer's kernels (linear_attention.MAMBA2_FORWARD_KERNELS); moe_router and moe_preprocess,
MOE_LAYER_HOST_OPS' router (6) and preprocess (9) counts. In a hybrid model attn captures the full-attention
layers and mamba the Mamba-2 ones, each by its share of the layers."""
EXPERT_HOST_OPS = {"forward": 2.0, "backward": 3.0}
"""Host ops per local expert and grouped linear (fc1, fc2): TransformerEngine's GroupedLinear splits its input per
expert and issues one GEMM per expert (forward) or a dgrad and a wgrad GEMM (backward), in bf16 and fp8 alike. In
early 2025 the fp8 path also allocated its cast outputs per expert, 2 torch.empty per GEMM input (TransformerEngine
issue #1499, TE 1.13); TransformerEngine PRs #1793 and #1934 (2025-05 and 2025-07) allocate the quantized per-expert
buffers of the fp8 and MXFP8 GroupedLinear in one call, so stacks from NeMo 25.09 on (most of the MoE suite) pay no
per-expert surplus in fp8; older ones (NeMo 25.04 images: DGX Cloud's FP8 Grok-1 and Llama 4 recipes) may, and rigplan
has no stack version to tell them apart. Before 2026-12-06 rigplan counted 4 and 5 in fp8."""

FUSED_GROUPED_MLP_HOST_OPS = {"forward": 1.2e-3 / HOST_OP_S["grace"], "backward": 2.1e-3 / HOST_OP_S["grace"]}
"""Host ops of the whole routed-expert MLP (fc1, activation, fc2) per pass with Transformer Engine's fused MXFP8
grouped MLP (Job.moe_fused_grouped_mlp), in HOST_OP_S units: its forward takes about 1.2 ms and its backward
2.1 ms of CPU time on a GB200 with 64 experts (TransformerEngine issue #2897, 2026-04, a benchmark at hidden
size 128 where the GPU work is negligible), 32 and 57 ops at Grace's 37.08 us. One fused op issues every
expert, so the count is taken for any number of local experts (part of it, the wgrad allocations, grows
with them: an overestimate below 64)."""


def _mixer_share(arch: Architecture, scope: str) -> float:
    """Share of the layers whose token mixer a mixer scope captures: attn the full-attention layers, mamba the
    Mamba-2 ones; 1 for the MoE scopes."""
    linear = arch.linear_attention_share  # 0 without linear attention
    if scope == "attn":
        return 1.0 - linear
    if scope == "mamba":
        return linear if arch.has_mamba2 else 0.0
    return 1.0


def graph_captured_ops(arch: Architecture, job: Job, scopes: tuple[str, ...] = CUDA_GRAPH_SCOPES) -> float:
    """Host ops a layer saves, on the model's mean, to the job's per-module CUDA graph scopes among `scopes`: each
    captured scope's ops (CUDA_GRAPH_SCOPE_OPS) become one graph launch, on the layers whose module it captures."""
    return sum((CUDA_GRAPH_SCOPE_OPS[s] - 1.0) * _mixer_share(arch, s) for s in job.cuda_graph_scope if s in scopes)


def expert_host_ops(arch: Architecture, job: Job, ep: Num, phase: str) -> Num:
    """Host ops of one MoE layer's routed experts in `phase` ('forward' or 'backward'): E/ep local experts'
    grouped-GEMM ops (or the fused grouped MLP's, FUSED_GROUPED_MLP_HOST_OPS; under the static-shape MoE one
    grouped GEMM a linear whatever the local experts, counted as one expert's), and the clamp and fc2 bias loop of
    Megatron-Core's biased or clamped experts (megatron_expert_path)."""
    assert arch.moe is not None
    local = arch.moe.num_experts / xp.asfloat(ep)
    if job.moe_fused_grouped_mlp:
        return FUSED_GROUPED_MLP_HOST_OPS[phase] + 0.0 * local
    if static_expert_shapes(job):  # one grouped GEMM a linear, its split sizes on the device: one expert's ops
        return 2.0 * EXPERT_HOST_OPS[phase] + 0.0 * local
    ops = 2.0 * EXPERT_HOST_OPS[phase] * local
    if megatron_expert_path(arch, job):
        index = 0 if phase == "forward" else 1
        ops = ops + (CLAMPED_GLU_HOST_OPS[index] if clamped_glu(arch) else 0.0)
        ops = ops + (local * EXPERT_BIAS_LOOP_HOST_OPS[index] if arch.moe.expert_bias else 0.0 * local)
    return ops


def host_ops_per_moe_layer(arch: Architecture, job: Job, ep: Num, dense_kernels: float) -> tuple[Num, Num]:
    """(forward, backward) ops the host issues for one MoE layer: the layer's other kernels, the
    router and dispatcher (MOE_LAYER_HOST_OPS) and the experts' (expert_host_ops), less what per-module CUDA graphs
    capture (graph_captured_ops)."""
    if arch.moe is None:
        return 0.0 * xp.asarray(ep), 0.0 * xp.asarray(ep)
    own = dense_kernels + MOE_LAYER_HOST_OPS - graph_captured_ops(arch, job)
    return own + expert_host_ops(arch, job, ep, "forward"), own + expert_host_ops(arch, job, ep, "backward")


COMPILED_PROGRAM_VENDORS = frozenset({"google"})
"""Vendors whose parts run the training step as one compiled program: a Cloud TPU executes the XLA program of the
whole jitted step (JAX / MaxText, PyTorch/XLA), so the host issues no per-op work and MaxText's dropless experts
have static shapes (ragged GEMMs up to a fixed bound, no device-to-host copy of the tokens per expert)."""

EXPERT_PHASE_DISPATCH_OPS = 3.0
"""MOE_LAYER_HOST_OPS issued between the layer's host sync (Megatron-Core's cuda_sync_point 'before_ep_alltoall')
and its last expert GEMM: the dispatch all-to-all, the sort by local expert and the fused activation (the sort back,
the combine all-to-all and the unpermute come after the experts)."""


def expert_phase_host_ops(arch: Architecture, job: Job, ep: Num) -> Num:
    """Forward host ops of one MoE layer from its sync to its last expert GEMM: EXPERT_PHASE_DISPATCH_OPS and the
    experts' forward ops (expert_host_ops)."""
    if arch.moe is None:
        return 0.0 * xp.asarray(ep)
    return EXPERT_PHASE_DISPATCH_OPS + expert_host_ops(arch, job, ep, "forward")


FC1_SHARE = 2.0 / 3.0
"""fc1's share of a gated expert's forward GEMM FLOPs: gate and up projections (2·h·2f) against fc2's down (2·f·h)."""


def glu_offset_syncs(arch: Architecture, job: Job) -> bool:
    """Whether the experts' clamped GLU syncs the host a second time in each MoE layer's forward: Megatron-Core's
    fused weighted_bias_quick_geglu_impl (megatron/core/fusions/fused_bias_geglu.py, the activation TEGroupedMLP runs
    for gpt-oss with bias_activation_fusion) makes its linear offset a device tensor on every call,
    torch.tensor(linear_offset, device=input.device): a copy from pageable host memory, which PyTorch completes with a
    stream synchronisation (copy_kernel_cuda with non_blocking False, c10::cuda::memcpy_and_sync). The host then
    waits for fc1's GEMMs before it issues the activation and fc2."""
    return megatron_expert_path(arch, job) and clamped_glu(arch)


def fc1_phase_host_ops(arch: Architecture, job: Job, ep: Num) -> Num:
    """Forward host ops of one MoE layer from its dispatch sync to the clamped GLU's offset sync (glu_offset_syncs):
    the dispatch all-to-all and the sort (2 of EXPERT_PHASE_DISPATCH_OPS), fc1's per-expert ops and the clamp's ops,
    the offset copy included (CLAMPED_GLU_HOST_OPS). 0 where the layer has no such sync."""
    if arch.moe is None or not glu_offset_syncs(arch, job):
        return 0.0 * xp.asarray(ep)
    local = arch.moe.num_experts / xp.asfloat(ep)
    return EXPERT_PHASE_DISPATCH_OPS - 1.0 + EXPERT_HOST_OPS["forward"] * local + CLAMPED_GLU_HOST_OPS[0]


def synced_pass_s(gpu_s: Num, host_s: Num, expert_gpu_s: Num, expert_host_s: Num, fc1_gpu_s: Num = 0.0,
                  fc1_host_s: Num = 0.0) -> Num:
    """Seconds of a forward pass whose MoE layers each sync the host once, two phases a layer: after the sync
    the expert phase (host expert_host_s, GPU expert_gpu_s), then the rest up to the next sync (attention,
    router). One queue in order on each side, so the pass takes the longest of GPU alone, host alone, and
    host through the expert phase then GPU through the rest: max(G, H, H_e + G - G_e), the two-machine flow-shop
    bound (Johnson) at the phase boundary. Source of the order: Megatron-Core's MoEAlltoAllTokenDispatcher syncs
    'before_ep_alltoall' in dropless routing (token_dispatcher.py, preprocess). Where a second sync splits the
    expert phase after fc1 (glu_offset_syncs; fc1_gpu_s and fc1_host_s, the part of the expert phase before it),
    that part takes max(G_1, H_1) on its own and the rest of the layer the bound above over what is left. Leaves
    out the order inside a phase (its ops taken as evenly mixed) and the host time before the sync (router,
    preprocess), which the GPU's attention of the same layer covers."""
    first = xp.maximum(fc1_gpu_s, fc1_host_s)
    gpu, host = gpu_s - fc1_gpu_s, host_s - fc1_host_s
    rest_gpu = xp.maximum(gpu - (expert_gpu_s - fc1_gpu_s), 0.0)
    return first + xp.maximum(xp.maximum(gpu, host), expert_host_s - fc1_host_s + rest_gpu)


def host_paced_s(gpu_s: Num, *, host_forward_s: Num, host_backward_s: Num, host_recompute_s: Num,
                 recompute_share: Num, sync: bool = True, expert_gpu_s: Num = 0.0, expert_host_s: Num = 0.0,
                 fc1_gpu_s: Num = 0.0, fc1_host_s: Num = 0.0) -> Num:
    """Seconds of one micro-batch when the host must issue every op of it.

    Dropless routing needs the tokens per expert on the host (the all-to-all splits and the grouped
    GEMM's per-expert sizes): Megatron-Core's MoEAlltoAllTokenDispatcher copies them device-to-host
    and synchronises once per MoE layer in the forward (cuda_sync_point), so the host cannot run
    ahead of the GPU across layers; each pass then takes the longer of its GPU time and its host
    time, and a forward or recompute pass with the expert phase given (expert_gpu_s, expert_host_s; fc1_gpu_s
    and fc1_host_s where the clamped GLU syncs again after fc1) the bound of synced_pass_s. The GPU time of a
    pass is split by its FLOPs: forward 1, recompute r, backward 2 (of 3 + r). Without a sync (static shapes)
    the host may run ahead through the whole micro-batch.
    """
    gpu = xp.asfloat(gpu_s)
    r = xp.asfloat(recompute_share)
    passes = 3.0 + r
    if not sync:
        return xp.maximum(gpu, host_forward_s + host_backward_s + host_recompute_s)
    forward_gpu = gpu / passes
    expert_gpu = xp.minimum(xp.asfloat(expert_gpu_s), forward_gpu)
    fc1_gpu = xp.minimum(xp.asfloat(fc1_gpu_s), expert_gpu)
    forward = synced_pass_s(forward_gpu, host_forward_s, expert_gpu, expert_host_s, fc1_gpu, fc1_host_s)
    recompute = synced_pass_s(forward_gpu * r, host_recompute_s, expert_gpu * r, expert_host_s * r, fc1_gpu * r,
                              fc1_host_s * r)
    return forward + recompute + xp.maximum(gpu * 2.0 / passes, host_backward_s)


class HostTiming(NamedTuple):
    """One micro-batch's host side on one pipeline rank (host_timing)."""

    exposed_s: Num
    """Seconds by which issuing the micro-batch's ops outlasts its GPU time (0 where the GPU paces it)."""
    load: Num
    """Seconds the host spends issuing the micro-batch's ops over its GPU time (0 where the host issues none: a
    full-iteration CUDA graph, a compiled program, a dense model). The MoE suite's eager runs drift from rigplan's
    step time as this rises (flow.regime's host-load axis), so the accuracy line quotes it."""


def issues_moe_ops(arch: Architecture, job: Job, gpu: Gpu) -> bool:
    """Whether the host issues an MoE model's ops one by one: not under a full-iteration CUDA graph, not on a part
    that runs the step as one compiled program (COMPILED_PROGRAM_VENDORS), and not for a dense model."""
    return arch.moe is not None and job.cuda_graphs != "full" and gpu.vendor not in COMPILED_PROGRAM_VENDORS


def no_host_time(gpu_s: Num) -> HostTiming:
    """A HostTiming of nothing, shaped as `gpu_s`."""
    none = 0.0 * xp.asfloat(gpu_s)
    return HostTiming(exposed_s=none, load=none)


def host_timing(arch: Architecture, job: Job, gpu: Gpu, ep: Num, gpu_s: Num, *, kernels: float, layers: Num,
                dense_layers: Num, lm_head: Num, recomputed_layers: Num,
                experts_s: tuple[Num, Num] = (0.0, 0.0)) -> HostTiming:
    """The host's side of one micro-batch on one pipeline rank (MoE models only: the per-layer host sync of dropless
    routing, host_paced_s): the seconds by which issuing its ops outlasts its GPU time, and the host's issue time
    over that GPU time. `gpu_s` is the GPU's whole stream of the micro-batch, compute and the exposed collectives:
    the host keeps issuing while a collective runs. `kernels`: a layer's forward kernels
    (estimate.elementwise.kernels_per_layer); the rank holds `layers`, of them `dense_layers` dense, the MTP modules
    where lm_head is 1, and fully recomputes `recomputed_layers`. Megatron's 'moe' recompute module
    (estimate.recompute_modules) issues each MoE block's forward ops again inside the backward, counted there."""
    if not issues_moe_ops(arch, job, gpu):
        return no_host_time(gpu_s)
    assert arch.moe is not None
    op_s = HOST_OP_S.get(gpu.host_cpu, HOST_OP_S["x86"])
    fwd_ops, bwd_ops = host_ops_per_moe_layer(arch, job, ep, kernels)
    moe_layers = layers - dense_layers + lm_head * arch.moe.mtp_layers
    share = recomputed_layers / xp.maximum(xp.asfloat(layers), 1.0)
    dense_ops = kernels - graph_captured_ops(arch, job, scopes=("attn", "mamba"))
    if recompute_modules.moe_layer_recomputed(arch, job):
        bwd_ops = bwd_ops + (fwd_ops - dense_ops)
    two_phase = 1.0 if job.kernels == "fused" else 0.0
    expert_compute_s, ep_s = experts_s
    dispatch = ep_s / (2.0 + share) / 2.0  # the forward's dispatch, half its all-to-all
    expert_gpu = expert_compute_s + dispatch
    fc1_gpu = dispatch + FC1_SHARE * expert_compute_s if glu_offset_syncs(arch, job) else 0.0 * dispatch
    forward = (moe_layers * fwd_ops + dense_layers * dense_ops) * op_s
    backward = (moe_layers * bwd_ops + dense_layers * dense_ops) * op_s
    paced = host_paced_s(gpu_s, host_forward_s=forward, host_backward_s=backward, host_recompute_s=forward * share,
                         recompute_share=share, sync=host_syncs(job), expert_gpu_s=expert_gpu,
                         expert_host_s=moe_layers * expert_phase_host_ops(arch, job, ep) * op_s * two_phase,
                         fc1_gpu_s=fc1_gpu, fc1_host_s=moe_layers * fc1_phase_host_ops(arch, job, ep) * op_s)
    issue = forward * (1.0 + share) + backward
    return HostTiming(exposed_s=xp.maximum(paced - xp.asfloat(gpu_s), 0.0),
                      load=issue / xp.maximum(xp.asfloat(gpu_s), 1e-30))


def exposed_host_s(arch: Architecture, job: Job, gpu: Gpu, ep: Num, gpu_s: Num, *, kernels: float, layers: Num,
                   dense_layers: Num, lm_head: Num, recomputed_layers: Num,
                   experts_s: tuple[Num, Num] = (0.0, 0.0)) -> Num:
    """Seconds by which issuing one micro-batch's ops on the host outlasts its GPU time on one pipeline rank
    (host_timing's exposed_s)."""
    return host_timing(arch, job, gpu, ep, gpu_s, kernels=kernels, layers=layers, dense_layers=dense_layers,
                       lm_head=lm_head, recomputed_layers=recomputed_layers, experts_s=experts_s).exposed_s
