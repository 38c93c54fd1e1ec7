"""What one layer of one layout costs the same on every pipeline rank: its rates (peaks, GEMM and attention
efficiencies, per-token element-wise bytes, kernel counts: LayerRates) and its collectives per micro-batch (the
tensor-parallel collective, the context-parallel exchange, an MoE layer's dispatch and combine: LayerTerms).
estimate.stage_time multiplies them by each rank's layers. They depend on a layout only through tp, cp, ep, etp, the
micro-batch, the ZeRO stage and whether sequence parallelism is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate import (
    comm,
    hf_experts,
    linear_attention,
    moe,
    peft_kbit,
    recompute_modules,
    sparse_attention,
    tensor_parallel,
)
from rigplan.estimate.attention_core import attention_core_efficiency
from rigplan.estimate.efficiency import (
    Efficiency,
    attention_flop_per_exp,
    attention_kernel_efficiency,
    attention_kernel_for,
    clock_fraction,
    gemm_clock_fraction,
    gemm_efficiency,
)
from rigplan.estimate.elementwise import elementwise_bytes_per_token, fp8_cast_bytes_per_token, kernels_per_layer
from rigplan.estimate.flops import attention_head_dims

Num = Any


def _gemm_efficiency(eff: Efficiency, dims: Num, clock: float = 1.0, *, fp8: bool = False,
                     grouped: bool = False, fp4: bool = False) -> Num:
    return gemm_efficiency(eff, dims, fp8=fp8, grouped=grouped, fp4=fp4) * clock


def runs_nvfp4(job: Job, gpu: Gpu, eff: Efficiency) -> bool:
    """Whether the linear layers' GEMMs run in NVFP4 (--fp8-recipe nvfp4 on a part with fp4 tensor cores)."""
    return bool(job.precision == "fp8" and job.fp8_recipe == "nvfp4" and gpu.peak_flop_per_s.get("fp4")
                and eff.fp4_gemm_max)


def _proj_dims(arch: Architecture, tp: Num, tokens: Num) -> Num:
    """Representative smaller GEMM dimension of the attention projections after the tp split."""
    h = arch.hidden
    q_w = arch.num_heads * (arch.mla.qk_head_dim if arch.mla else arch.dim_per_head)
    return np.minimum(np.minimum(h, q_w / tp), tokens)


def _mlp_dims(arch: Architecture, tp: Num, tokens: Num) -> Num:
    """Dense MLP (or, in an MoE model with shared experts, the shared expert) after the tp split;
    routed experts are shaped by estimate.moe.expert_gemm_dims."""
    h = arch.hidden
    width = arch.moe.shared_ffn if arch.moe is not None and arch.moe.num_shared_experts else arch.ffn
    return np.minimum(np.minimum(h, width / tp), tokens)


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerRates:
    """The parts of _compute_time that are the same on every pipeline rank of one layout: peaks, GEMM and
    attention efficiencies, per-token element-wise bytes and kernel counts (computed once per pace_terms call)."""

    tokens: Num
    bf16_peak: float
    gemm_peak: float
    fp8: bool
    proj_eff: Num
    mlp_eff: Num
    expert_rate: Num
    load: Num
    head_eff: Num
    adapter_eff: Num
    attn_eff: Num
    linear_eff: Num
    """A linear-attention layer's chunked kernel (linear_attention.core_gemm_dim-wide matmuls, bf16)."""
    backward_rate: float
    read_bytes: float
    grad_bytes: float
    local_expert_params: Num
    """One MoE layer's expert parameters on this rank (0 for a dense model)."""
    fp32_experts: Num
    hbm_bytes_per_s: float
    attn_share: Num
    mlp_share: Num
    elementwise_per_token: Num
    moe_act_per_token: Num
    permute_per_token: Num
    """An MoE layer's token permutation bytes per token and pass (moe.permute_bytes_per_token, over tp)."""
    expert_path_per_token: tuple[Num, Num]
    """An MoE layer's clamp and fc2 bias loop bytes per token, (forward, backward), over tp
    (moe.expert_path_bytes_per_token)."""
    dispatch_einsum_per_token: Num
    """FLOPs per token of one one-hot dispatch or combine einsum, over tp (moe.dispatch_einsum_flop_per_token)."""
    dispatch_einsum_eff: Num
    mla_up_proj_per_token: Num
    layernorm_per_token: Num
    dense_mlp_per_token: Num
    casts_per_token: Num
    kernels: float
    kbit: tuple[Num, ...] | None


def layer_rates(arch: Architecture, job: Job, layout: Layout, gpu: Gpu, eff: Efficiency, tp: Num, cp: Num, ep: Num,
           mb: Num, etp: Num | None = None) -> LayerRates:
    tokens = mb * job.seq_len / cp
    clock = clock_fraction(gpu)  # attention kernels
    gemm_clock = gemm_clock_fraction(gpu)
    bf16_peak = gpu.peak("fp16" if job.precision == "fp16-mixed" else "bf16")
    if job.precision == "fp32":
        bf16_peak = gpu.peak("tf32")
    fp8_capable = bool(gpu.peak_flop_per_s.get("fp8") and eff.fp8_gemm_max)
    fp8 = job.precision == "fp8" and fp8_capable
    fp4 = fp8 and runs_nvfp4(job, gpu, eff)
    gemm_peak = gpu.peak("fp4") if fp4 else gpu.peak("fp8") if fp8 else bf16_peak
    # Routed experts: grouped GEMMs of the busiest rank's thin shapes, paced by its load (estimate.moe); in fp8 alone
    # with Job.fp8_experts (the rest bf16), in bf16 alone with Job.bf16_experts (the rest fp8)
    expert_fp8 = (fp8 and not job.bf16_experts) or (job.fp8_experts and fp8_capable)
    expert_peak = gemm_peak if expert_fp8 == fp8 else gpu.peak("fp8") if expert_fp8 else bf16_peak
    # transformers' fp32 experts run fp32 GEMMs (PyTorch's float32 matmul precision, no TF32); none in a dense model
    fp32_experts = hf_experts.expert_weights_fp32(job, layout.zero) if arch.moe is not None else 0.0
    load = moe.by_expert_ranks(ep, job, moe.load_factor)
    expert_tp = tp if etp is None else etp
    expert_eff = _gemm_efficiency(eff, moe.expert_gemm_dims(arch, tokens, tp, ep, expert_tp, load), gemm_clock,
                                  fp8=expert_fp8, grouped=not job.moe_fused_grouped_mlp, fp4=fp4 and expert_fp8)
    if job.attention == "flash":
        kernel = attention_kernel_for(eff, job.kernels, job.attention_kernel, attention_head_dims(arch))
        curve = eff.attention[kernel]
        speedup = gpu.peak("fp8") / gpu.peak("bf16") if fp8 and job.fp8_attention else 1.0
        attn_eff = attention_kernel_efficiency(
            eff, curve, attention_core_efficiency(arch, job, eff, kernel, cp),
            peak_flop_per_s=gpu.peak("bf16"), exp_per_s=gpu.exp_per_s,
            flop_per_exp=attention_flop_per_exp(*attention_head_dims(arch)), fp8_speedup=speedup) * clock
    else:
        attn_eff = _gemm_efficiency(eff, float(arch.dim_per_head), gemm_clock)
    read_bytes, grad_bytes = moe.expert_weight_bytes(job, fp8 and not job.bf16_experts)
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    mlp_width = float(arch.ffn or (arch.moe.shared_ffn if arch.moe else 0))  # ffn 0: an MoE model's shared expert
    f_in = (2.0 if arch.mlp == "gated" else 1.0) * mlp_width
    replicated, split = moe.by_expert_ranks(ep, job, lambda j: elementwise_bytes_per_token(arch, j))
    norm_tp = tp if layout.sequence_parallel else 1.0
    moe_act: Num = 0.0
    if arch.moe is not None and (moe.act_recomputed(job) or recompute_modules.moe_layer_recomputed(arch, job)):
        moe_act = moe.by_expert_ranks(ep, job, lambda j: moe.activation_bytes_per_token(arch, j)) / tp
    mla: Num = 0.0
    if recompute_modules.mla_up_proj_recomputed(arch, job):
        mla = recompute_modules.mla_up_proj_rope_bytes_per_token(arch, job) / tp
    layernorm: Num = 0.0
    if recompute_modules.layernorm_recomputed(job):
        layernorm = recompute_modules.layernorm_bytes_per_token(arch, job) / norm_tp
    dense_mlp: Num = 0.0
    if recompute_modules.dense_mlp_recomputed(job):
        dense_mlp = recompute_modules.dense_mlp_activation_bytes_per_token(arch, job) / tp
    casts: Num = 0.0
    any_fp8 = fp8 or expert_fp8
    if any_fp8:
        casts = moe.by_expert_ranks(ep, job, lambda j: fp8_cast_bytes_per_token(arch, j, tp))
    expert_path = moe.by_expert_ranks(ep, job, lambda j: moe.expert_path_bytes_per_token(arch, j))
    gate_shard = moe.gate_shard(tp, cp, bool(layout.sequence_parallel))
    einsum_side = np.minimum(np.minimum(arch.hidden, job.seq_len / gate_shard),  # the einsums' thinnest side
                             np.maximum(moe.capacity_slots(arch, job, gate_shard), 1.0))
    return LayerRates(
        tokens=tokens, bf16_peak=bf16_peak, gemm_peak=gemm_peak, fp8=any_fp8,
        proj_eff=_gemm_efficiency(eff, _proj_dims(arch, tp, tokens), gemm_clock, fp8=fp8, fp4=fp4),
        mlp_eff=_gemm_efficiency(eff, _mlp_dims(arch, tp, tokens), gemm_clock, fp8=fp8, fp4=fp4),
        expert_rate=np.where(np.asarray(fp32_experts) > 0, gpu.peak("fp32"), expert_peak) * expert_eff, load=load,
        head_eff=_gemm_efficiency(eff, np.minimum(np.minimum(arch.hidden, arch.vocab / tp), tokens), gemm_clock),
        adapter_eff=_gemm_efficiency(eff, float(job.lora_rank), gemm_clock), attn_eff=attn_eff,
        linear_eff=_gemm_efficiency(eff, linear_attention.core_gemm_dim(arch), gemm_clock),
        backward_rate=eff.fp8_backward_rate if fp8 else 1.0, read_bytes=read_bytes, grad_bytes=grad_bytes,
        local_expert_params=moe.local_expert_params(arch, ep, expert_tp) if arch.moe is not None else 0.0,
        fp32_experts=fp32_experts,
        hbm_bytes_per_s=gpu.memory_bandwidth_bytes_per_s * eff.hbm,
        attn_share=tensor_parallel.column_parallel_share(q_w, kv_w, 0.0, 0.0),
        mlp_share=tensor_parallel.column_parallel_share(0.0, 0.0, f_in, mlp_width),
        elementwise_per_token=replicated / norm_tp + split / tp, moe_act_per_token=moe_act,
        permute_per_token=moe.permute_bytes_per_token(arch, job, ep, expert_tp) / tp,
        expert_path_per_token=(expert_path[0] / tp, expert_path[1] / tp),
        dispatch_einsum_per_token=moe.dispatch_einsum_flop_per_token(arch, job, gate_shard) / norm_tp,
        dispatch_einsum_eff=_gemm_efficiency(eff, einsum_side, gemm_clock),
        mla_up_proj_per_token=mla, layernorm_per_token=layernorm, dense_mlp_per_token=dense_mlp,
        casts_per_token=casts, kernels=kernels_per_layer(arch, job),
        kbit=peft_kbit.kbit_parts(arch, job, tokens=tokens, ep=ep, load=load))


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerTerms:
    """One layer's rates and its seconds of collectives per micro-batch, before any overlap, on every rank alike."""

    rates: LayerRates
    tp_collective_s: Num
    """One TP collective of T·h·p, x (1 + ffn_blocks_per_layer) / 2 (a mixer-only layer collects once, not twice)."""
    kv_gather_s: Num
    """Gathering the k/v replicas of a kv head split over tp ranks (tensor_parallel.kv_replica_gather_s)."""
    cp_per_layer: Num
    """The context-parallel exchange that overlap may hide behind the attention core (ring or all-to-all)."""
    exposed_cp_per_layer: Num
    """Context-parallel traffic nothing hides: a hybrid's linear-attention layers, sparse attention's key gather."""
    a2a_per_layer: Num
    """An MoE layer's dispatch and combine, forward and backward (moe.expert_all_to_all_s)."""
    a2a_recompute_per_layer: Num
    """What a recomputed MoE layer (or block) adds: its forward dispatch and combine again."""


def layer_terms(arch: Architecture, job: Job, layout: Any, gpu: Gpu, eff: Efficiency, *, intra: comm.Tier,
                inter: comm.Tier, domain: int, tp: Num, cp: Num, ep: Num, etp: Num, mb: Num) -> LayerTerms:
    """The LayerTerms of these rows (degrees may be arrays; `domain`: the scale-up domain's GPUs)."""
    p = job.compute_dtype_bytes
    seq = float(job.seq_len)
    tokens = mb * seq / cp
    tp_place = comm.place_group(gpu, tp, stride=1, domain_size=domain, intra=intra, inter=inter)
    cp_place = comm.place_group(gpu, cp, stride=tp, domain_size=domain, intra=intra, inter=inter)
    one_link = comm.scaled_tier(intra, comm.mesh_share(gpu.link, 2))  # a point-to-point peer in a full mesh
    tp_collective_s = comm.hierarchical_all_reduce_s(tokens * arch.hidden * p, tp, tp_place.per_node, tp_place.intra,
                                                     inter) * (1.0 + arch.ffn_blocks_per_layer) / 2.0
    kv_gather_s = tensor_parallel.kv_replica_gather_s(arch, tokens=tokens, tp=tp, head_dims=attention_head_dims(arch),
                                                      dtype_bytes=p, per_node=tp_place.per_node,
                                                      intra=tp_place.intra, inter=inter)
    ulysses = job.cp_comm_type == "a2a"
    if ulysses:
        d_qk, d_v = attention_head_dims(arch)
        cp_per_layer = comm.ulysses_all_to_all_s(
            tokens=tokens, qkv_width=arch.num_heads * d_qk + arch.kv_heads * (d_qk + d_v),
            out_width=arch.num_heads * d_v, tp=tp, cp=cp, dtype_bytes=p, per_node=cp_place.per_node,
            intra=cp_place.intra, inter=inter)
    elif not sparse_attention.runs_sparse_kernels(arch, job):
        kv_heads_per_rank = np.maximum(arch.kv_heads / tp, 1.0)
        block = comm.ring_attention_block_bytes(seq_len=seq, micro_batch=mb, cp=cp, kv_heads=kv_heads_per_rank,
                                                head_dim=arch.dim_per_head, dtype_bytes=p)
        cp_per_layer = (comm.ring_attention_s(block, cp, cp_place.per_node, one_link, inter)
                        + comm.ring_attention_s(block, cp, cp_place.per_node, one_link, inter, backward=True))
    exposed_cp_per_layer: Num = 0.0  # a hybrid's linear-attention layers: all-to-all to head shards, exposed
    if arch.linear_attention is not None:
        exposed_cp_per_layer = arch.linear_attention_share * linear_attention.context_parallel_s(
            arch, tokens=tokens, tp=tp, cp=cp, dtype_bytes=p, per_node=cp_place.per_node, intra=cp_place.intra,
            inter=inter)
        cp_per_layer = cp_per_layer * (1.0 - arch.linear_attention_share)
    elif sparse_attention.runs_sparse_kernels(arch, job) and not ulysses:  # DSA: the whole sequence's keys, exposed
        keys = tokens * cp * sparse_attention.cp_gathered_width(arch) * p
        cp_per_layer = 0.0 * tokens
        gather_args = (keys, cp, cp_place.per_node, cp_place.intra, inter)
        exposed_cp_per_layer = comm.hierarchical_all_gather_s(*gather_args) + comm.hierarchical_reduce_scatter_s(
            *gather_args)
    a2a_per_layer: Num = 0.0
    a2a_recompute_per_layer: Num = 0.0
    if arch.moe is not None:
        # the allgather dispatcher's group is the etp·ep consecutive ranks that hold every expert once
        group, stride = (ep * etp, 1) if moe.dispatcher(job) == "allgather" else (ep, etp)
        ep_intra = comm.place_group(gpu, group, stride=stride, domain_size=domain, intra=intra, inter=inter).intra
        a2a_args = dict(tokens=tokens, tp=tp, ep=ep, etp=etp, domain=domain, intra=ep_intra, inter=inter)
        a2a_per_layer = moe.expert_all_to_all_s(arch, job, recomputed_share=0.0, **a2a_args)
        if job.recompute == "full" or recompute_modules.moe_layer_recomputed(arch, job):
            # the forward dispatch and combine of a recomputed layer (or MoE block) run again
            a2a_recompute_per_layer = moe.expert_all_to_all_s(arch, job, recomputed_share=1.0,
                                                              **a2a_args) - a2a_per_layer
    return LayerTerms(rates=layer_rates(arch, job, layout, gpu, eff, tp, cp, ep, mb, etp),
                      tp_collective_s=tp_collective_s, kv_gather_s=kv_gather_s, cp_per_layer=cp_per_layer,
                      exposed_cp_per_layer=exposed_cp_per_layer, a2a_per_layer=a2a_per_layer,
                      a2a_recompute_per_layer=a2a_recompute_per_layer)

