"""One micro-batch on one pipeline rank: compute seconds (GEMMs at their shapes' efficiency, attention,
element-wise traffic, launch gaps), the tensor-, context- and expert-parallel traffic of the rank's layers
and what of it overlap hides, and the host time of MoE layers; the ranks that can set a pipeline's
pace (pace_candidates) and, per layout, those ranks' seconds (pace_terms) with a lower bound on the
step they lead to (pace_lower_bound_s). estimate.step adds the pipeline, FSDP and data-parallel terms.

The formulas and sources are in estimate.step's docstring and in each function's. Arguments that are
counts may be numpy arrays of layouts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.domain.stages import (
    DEFAULT_SPLIT,
    busiest_middle_rank,
    chunk_layer_counts,
    rank_layer_counts,
)
from rigplan.estimate import (
    hf_experts,
    moe,
    moe_host,
    overlap,
    peft_experts,
    recompute,
    recompute_modules,
    tensor_parallel,
)
from rigplan.estimate.calibration import Calibration, calibrated_efficiency, calibrated_tiers
from rigplan.estimate.elementwise import (
    FP8_CAST_BYTES,
    KERNEL_GAP_S,
)
from rigplan.estimate.flops import (
    StepFlops,
    op_recompute_matmul_share,
    stage_micro_batch_flops,
)
from rigplan.estimate.layer_terms import LayerRates, layer_terms
from rigplan.estimate.states import first_dense_layers

Num = Any


@dataclass(frozen=True, kw_only=True, slots=True)
class ComputeTime:
    """Seconds of one micro-batch's computation on one rank, and the parts communication may hide behind."""

    compute_s: Num
    backward_s: Num
    core_s: Num
    """The attention core (ring attention hides behind it)."""
    gemm_s: Num
    """Projection and MLP GEMMs, forward, backward and recompute (TP userbuffers overlap); 0 unless asked."""
    column_backward_gemm_s: Num
    """The column-parallel linears' backward GEMMs (Megatron's async TP backward); 0 unless asked."""
    expert_forward_s: Num = 0.0  # the routed experts' forward GEMMs and clamp/bias path (moe_host's expert phase)


def _compute_time(arch: Architecture, job: Job, rates: LayerRates, stage: StageShape, need_gemm: bool,
                  flops: StepFlops) -> ComputeTime:
    """One micro-batch on one stage: its compute seconds and their parts (ComputeTime); the GEMM
    windows are computed only when need_gemm. `rates`: the layout's layer_rates, the same on every stage;
    `flops`: the stage's stage_flops."""
    r = rates
    recomputed_share = stage.recomputed_layers / np.maximum(stage.layers, 1.0)
    gemm_peak, bf16_peak, load, backward_rate = r.gemm_peak, r.bf16_peak, r.load, r.backward_rate

    # Expert GEMMs: the longer of their FLOPs and their weights' traffic (estimate.moe, expert_weight_bytes)
    moe_layers = np.maximum(stage.layers - stage.dense_layers, 0.0) if arch.moe is not None else 0.0
    weights_pass_s = moe_layers * r.local_expert_params / r.hbm_bytes_per_s
    forward_expert_s = flops.forward.expert_flop * load / r.expert_rate
    backward_expert_s = flops.backward.expert_flop * load / r.expert_rate / backward_rate
    recompute_share = np.where(flops.forward.expert_flop > 0,
                               flops.recompute.expert_flop / np.maximum(flops.forward.expert_flop, 1e-30), 0.0)
    expert_s = {
        "forward": np.maximum(forward_expert_s, weights_pass_s * r.read_bytes),
        "backward": (np.maximum(backward_expert_s, weights_pass_s * r.read_bytes) if job.is_peft else
                     np.maximum(backward_expert_s / 2.0, weights_pass_s * r.read_bytes)
                     + np.maximum(backward_expert_s / 2.0, weights_pass_s * r.grad_bytes)),
        "recompute": np.maximum(flops.recompute.expert_flop * load / r.expert_rate,
                                weights_pass_s * r.read_bytes * recompute_share),
    }

    def gemm_of(ops: Any, phase: str, rate: float = 1.0) -> Num:  # the GEMMs TP collectives feed or drain
        return ((ops.attention_proj_flop / (gemm_peak * r.proj_eff) + ops.mlp_flop / (gemm_peak * r.mlp_eff)) / rate
                + expert_s[phase])

    def time_of(ops: Any, phase: str, rate: float = 1.0) -> Num:
        return (gemm_of(ops, phase, rate)
                + ops.router_flop / (bf16_peak * r.head_eff) + ops.lm_head_flop / (bf16_peak * r.head_eff)
                + ops.adapter_flop / (bf16_peak * r.adapter_eff)
                + ops.attention_core_flop / (bf16_peak * r.attn_eff)
                + ops.linear_core_flop / (bf16_peak * r.linear_eff))

    # fp8 dgrad/wgrad GEMMs run with split accumulation where the part has a fast mode (efficiency.py)
    forward_s = time_of(flops.forward, "forward")
    backward_s = time_of(flops.backward, "backward", backward_rate)
    recompute_s = time_of(flops.recompute, "recompute")
    # the einsum dispatcher's one-hot dispatch and combine GEMMs (moe.DISPATCH_EINSUMS), bf16 whatever the recipe
    einsum_s = r.dispatch_einsum_per_token * r.tokens * moe_layers / (bf16_peak * r.dispatch_einsum_eff)
    einsums_forward, einsums_backward = moe.DISPATCH_EINSUMS
    einsums_redone = recomputed_share + (1.0 if recompute_modules.moe_layer_recomputed(arch, job) else 0.0)
    forward_s = forward_s + einsums_forward * einsum_s
    backward_s = backward_s + einsums_backward * einsum_s
    recompute_s = recompute_s + einsums_forward * einsums_redone * einsum_s
    gemm_s = (gemm_of(flops.forward, "forward") + gemm_of(flops.backward, "backward", backward_rate)
              + gemm_of(flops.recompute, "recompute")) if need_gemm else 0.0
    column_backward_s: Num = 0.0
    if need_gemm:
        column_backward_s = (flops.backward.attention_proj_flop / (gemm_peak * r.proj_eff) * r.attn_share
                             + flops.backward.mlp_flop / (gemm_peak * r.mlp_eff) * r.mlp_share) / backward_rate
    core_s = (flops.forward.attention_core_flop + flops.backward.attention_core_flop
              + flops.recompute.attention_core_flop) / (bf16_peak * r.attn_eff)
    layers = stage.layers
    tokens = r.tokens
    # torchtitan's per-op checkpointing ('op', its _save_list) keeps matmul and attention outputs; element-wise reruns
    redone = recomputed_share + (1.0 if job.recompute == "op" else 0.0)
    passes = 3.0 + redone
    elementwise = r.elementwise_per_token * tokens * layers * passes
    # token permutation: forward, its backward (the same bytes, moe.permute_bytes_per_token) and any recompute
    moe_redone = redone + (1.0 if recompute_modules.moe_layer_recomputed(arch, job) else 0.0)
    elementwise = elementwise + r.permute_per_token * tokens * moe_layers * (2.0 + moe_redone)
    # Megatron-Core's clamp and fc2 bias loop around biased or clamped experts: forward (again if recomputed), backward
    path_forward, path_backward = r.expert_path_per_token
    elementwise = elementwise + (path_forward * (1.0 + moe_redone) + path_backward) * tokens * moe_layers
    if arch.moe is not None and (moe.act_recomputed(job) or recompute_modules.moe_layer_recomputed(arch, job)):
        # moe_act (or the whole MoE block): the routed experts' activation runs once more, before fc2's backward
        elementwise = elementwise + r.moe_act_per_token * tokens * (layers - stage.dense_layers)
    # Megatron's per-module recompute (estimate.recompute_modules): the element-wise part of what reruns
    if recompute_modules.mla_up_proj_recomputed(arch, job):
        elementwise = elementwise + r.mla_up_proj_per_token * tokens * layers
    if recompute_modules.layernorm_recomputed(job):
        attn_norms, _ = recompute_modules.separate_norms(arch, moe_layer=False)
        norms = attn_norms * layers + (layers - stage.dense_layers if arch.moe is not None else 0.0)
        elementwise = elementwise + r.layernorm_per_token * tokens * norms
    if recompute_modules.dense_mlp_recomputed(job):
        dense = stage.dense_layers if arch.moe is not None else layers
        elementwise = elementwise + r.dense_mlp_per_token * tokens * dense
    if r.fp8:
        recast = 1.0 if job.recompute == "full" else op_recompute_matmul_share(arch) if job.recompute == "op" else 0.0
        elementwise = elementwise + r.casts_per_token * tokens * layers * (1.0 + recast / 2.0)
    if peft_experts.applies(arch, job):  # W' rebuilt each forward pass; its gradient written, read for A and B
        rebuild, gradient = peft_experts.pass_bytes(arch, job, r.local_expert_params, r.fp32_experts)
        elementwise = elementwise + (rebuild * (1.0 + moe_redone) + gradient) * moe_layers
    if job.fp8_experts:  # torchao casts the expert weights in each grouped GEMM call
        elementwise = elementwise + (2.0 + redone) * FP8_CAST_BYTES[job.fp8_recipe] * r.local_expert_params * moe_layers
    launches = r.kernels * layers * passes
    if r.kbit is not None:
        # peft's QLoRA on Hugging Face modules (peft_kbit): casts, adapters, dequantization; each pass and recompute
        per_token_bytes, per_layer_bytes, kernels, moe_bytes, moe_kernels = r.kbit  # MoE layers: their own parts
        dense = stage.dense_layers if arch.moe is not None else layers
        elementwise = elementwise + ((per_token_bytes * tokens + per_layer_bytes) * dense + moe_bytes * moe_layers) * (
            2.0 + redone)
        launches = launches + (kernels * dense + moe_kernels * moe_layers) * passes
    elementwise_s = elementwise / r.hbm_bytes_per_s
    gaps_s = launches * KERNEL_GAP_S
    compute = forward_s + backward_s + recompute_s + elementwise_s + gaps_s
    return ComputeTime(compute_s=compute, backward_s=backward_s, core_s=core_s, gemm_s=gemm_s,
                       column_backward_gemm_s=column_backward_s,
                       expert_forward_s=expert_s["forward"] + path_forward * tokens * moe_layers / r.hbm_bytes_per_s)


@dataclass(frozen=True, kw_only=True, slots=True)
class StageShape:
    """One pipeline rank as step time sees it (arrays in batch mode)."""

    rank: Num
    layers: Num
    dense_layers: Num
    lm_head: Num
    """1.0 where the rank holds the LM head, loss and MTP modules (the last rank), else 0.0."""
    recomputed_layers: Num
    """Layers a full recompute runs again on this rank (all of them unless estimate.recompute says less)."""


def pace_candidates(arch: Architecture, job: Job, layout: Any, pp: Num, vpp: Num) -> list[StageShape]:
    """The ranks that can set a pipeline's pace: the first (embedding), the busiest middle one and
    the last (LM head + loss), each with its layers under the layout's split (domain.stages).
    Every other middle rank has no more layers than the busiest one and no head."""
    split = getattr(layout, "split", DEFAULT_SPLIT)
    first_dense = first_dense_layers(arch)
    pp_i = np.rint(np.asarray(pp)).astype(np.int64)
    vpp_i = np.rint(np.asarray(vpp)).astype(np.int64)
    ranks = [np.zeros_like(pp_i), np.asarray(busiest_middle_rank(split, arch.num_layers, first_dense, pp_i, vpp_i)),
             pp_i - 1]
    shapes = []
    for rank in ranks:
        layers, dense = rank_layer_counts(split, arch.num_layers, first_dense, pp_i, vpp_i, rank)
        redone: Num = 0.0
        for c in range(int(np.max(vpp_i)) if vpp_i.size else 1):
            chunk, _ = chunk_layer_counts(split, arch.num_layers, first_dense, pp_i, vpp_i, rank, c)
            redone = redone + recompute.recomputed_layers(job, chunk, layers)
        shapes.append(StageShape(rank=rank, layers=np.asarray(layers, dtype=np.float64),
                                 dense_layers=np.asarray(dense, dtype=np.float64),
                                 lm_head=np.where(rank == pp_i - 1, 1.0, 0.0),
                                 recomputed_layers=np.asarray(redone, dtype=np.float64)))
    return shapes


def scale_up_domain(gpu: Gpu) -> int:
    """GPUs that reach each other over the scale-up link: the link's domain, never more than a node
    (NVL72 racks are catalogued as 72-GPU nodes)."""
    return min(gpu.link.domain_size, gpu.gpus_per_node)


@dataclass(frozen=True, slots=True)
class PaceTerms:
    """One micro-batch's seconds by cause on each pipeline rank that can set the pace (pace_candidates),
    per layout row: compute (with the overlap tax of tp, cp and ep), exposed tp/cp/ep/host seconds, their
    totals, backward seconds, layers and rank. They depend on tp, pp, vpp, cp, ep, etp and the micro-batch
    only (not on dp, ZeRO or the global batch), so a search computes them once per distinct combination
    and spreads them over its layouts with `take` (search.evaluate)."""

    ranks: tuple[dict[str, Num], ...]

    def take(self, index: Any) -> PaceTerms:
        return PaceTerms(ranks=tuple({k: np.asarray(v)[index] for k, v in r.items()} for r in self.ranks))


def degree(given: Num | None, default: Num) -> Num:
    """A parallel degree (or micro-batch) as a float array: the one given, else the layout's."""
    return np.asarray(default if given is None else given, dtype=np.float64)


def _expert_tp(tp: Num, etp: Num | None, layout: Any) -> Num:
    etp_in = etp if etp is not None else getattr(layout, "etp", 0)
    return np.where(np.asarray(etp_in) > 0, np.asarray(etp_in, dtype=np.float64), tp)


def stage_flops(arch: Architecture, job: Job, layout: Any, stage: StageShape, *, tp: Num, cp: Num,
                micro_batch: Num) -> StepFlops:
    """FLOPs of one micro-batch on a rank of this shape (flops.stage_micro_batch_flops)."""
    return stage_micro_batch_flops(arch, job, layout, layers=stage.layers, dense_layers=stage.dense_layers,
                                   lm_head=stage.lm_head, micro_batch=micro_batch, tp=tp, cp=cp,
                                   recompute_fraction=stage.recomputed_layers / np.maximum(stage.layers, 1.0))


def _take(value: Any, index: Any) -> Any:
    """A frozen dataclass of numbers (or nested ones) restricted to the rows `index`; scalars stay."""
    names = getattr(value, "__dataclass_fields__", None)
    if names is not None:
        return type(value)(**{name: _take(getattr(value, name), index) for name in names})
    return value[index] if isinstance(value, np.ndarray) and value.ndim else value


@dataclass(frozen=True, slots=True)
class PaceWork:
    """What pace_terms computes that does not depend on the GPU: the candidate ranks' shapes
    (pace_candidates) and their FLOPs per micro-batch, per layout row. A search over many GPU types
    computes it once per layout space and recompute choice."""

    shapes: tuple[StageShape, ...]
    flops: tuple[StepFlops, ...]

    def take(self, index: Any) -> PaceWork:
        return PaceWork(shapes=tuple(_take(s, index) for s in self.shapes),
                        flops=tuple(_take(f, index) for f in self.flops))


def pace_work(arch: Architecture, job: Job, layout: Any, *, tp: Num, pp: Num, vpp: Num, cp: Num,
              micro_batch: Num) -> PaceWork:
    """The GPU-independent part of pace_terms (PaceWork) for these rows."""
    tp, cp = np.asarray(tp, dtype=np.float64), np.asarray(cp, dtype=np.float64)
    mb = np.asarray(micro_batch, dtype=np.float64)
    shapes = tuple(pace_candidates(arch, job, layout, np.asarray(pp, dtype=np.float64),
                                   np.asarray(vpp, dtype=np.float64)))
    return PaceWork(shapes=shapes, flops=tuple(stage_flops(arch, job, layout, s, tp=tp, cp=cp, micro_batch=mb)
                                               for s in shapes))


def pace_terms(arch: Architecture, job: Job, layout: Any, gpu: Gpu, *, tp: Num | None = None,
               pp: Num | None = None, vpp: Num | None = None, cp: Num | None = None, ep: Num | None = None,
               etp: Num | None = None, micro_batch: Num | None = None,
               calibration: Calibration | None = None, work: PaceWork | None = None) -> PaceTerms:
    """One micro-batch on each candidate pace rank (PaceTerms), before pipeline, FSDP and data-parallel
    terms; degrees default to the layout's and may be numpy arrays. `work`: these rows' pace_work,
    when the caller has it already."""
    tp = degree(tp, layout.tp)
    pp = degree(pp, layout.pp)
    cp = degree(cp, layout.cp)
    ep = degree(ep, layout.ep)
    vpp = degree(vpp, layout.vpp)
    etp = _expert_tp(tp, etp, layout)
    mb = degree(micro_batch, job.micro_batch)
    eff = calibrated_efficiency(gpu, calibration)
    intra, inter = calibrated_tiers(gpu, calibration)
    domain = scale_up_domain(gpu)
    tp_overlap_any = bool(job.tp_comm_overlap and layout.sequence_parallel)
    tp_overlap = (tp > 1) if tp_overlap_any else False
    # Megatron-Core / Transformer Engine linears issue their backward TP collectives asynchronously
    tp_async_backward = job.kernels == "fused" if job.tp_async_backward is None else job.tp_async_backward

    layer = layer_terms(arch, job, layout, gpu, eff, intra=intra, inter=inter, domain=domain, tp=tp, cp=cp, ep=ep,
                        etp=etp, mb=mb)
    rates = layer.rates
    ulysses = job.cp_comm_type == "a2a"

    def stage_terms(stage: StageShape, flops: StepFlops) -> dict[str, Num]:  # one rank's micro-batch, by cause
        timed = _compute_time(arch, job, rates, stage, need_gemm=tp_overlap_any or tp_async_backward, flops=flops)
        compute, backward, core = timed.compute_s, timed.backward_s, timed.core_s
        layers = stage.layers
        # Tensor parallel (estimate.tensor_parallel): forward, backward and recompute collectives of T·h·p,
        # exposed, async beside the backward GEMMs (Megatron/TE), or overlapped with userbuffers.
        tp_total, tp_s, tp_tax = tensor_parallel.tensor_parallel_s(
            layer.tp_collective_s, layers, stage.recomputed_layers, sequence_parallel=bool(layout.sequence_parallel),
            async_backward=tp_async_backward, overlap_on=tp_overlap, gemm_s=timed.gemm_s,
            column_backward_gemm_s=timed.column_backward_gemm_s)
        kv_s = layer.kv_gather_s * (2.0 * layers + stage.recomputed_layers)
        tp_total = np.where(tp > 1, tp_total, 0.0) + kv_s
        tp_s = np.where(tp > 1, tp_s, 0.0) + kv_s
        tp_tax = np.where(tp > 1, tp_tax, 0.0)
        # Context parallel: ring K/V exchange per layer, hidden behind the attention core when overlapped; the
        # all-to-all form is exposed, its forward half again in recomputed layers.
        cp_total = layers * layer.cp_per_layer
        if ulysses:
            cp_total = cp_total + stage.recomputed_layers * layer.cp_per_layer / 2.0
            cp_s, cp_tax = cp_total, 0.0 * cp_total
        else:
            cp_s, _, cp_tax = overlap.hide(cp_total, core, overlap.P2P_OVERLAP_SM_SHARE, on=job.cp_comm_overlap)
        exposed_cp = layer.exposed_cp_per_layer * (layers + stage.recomputed_layers / 2.0)
        cp_total, cp_s = cp_total + exposed_cp, cp_s + exposed_cp
        # Expert parallel: dispatch and combine all-to-all per MoE layer of this stage (MTP modules on
        # the last), exposed or overlapped with another micro-batch's computation (estimate.moe).
        ep_s = np.zeros_like(tp_s)
        a2a: Num = 0.0
        ep_tax: Num = 0.0
        if arch.moe is not None:
            moe_layers = layers - stage.dense_layers + stage.lm_head * arch.moe.mtp_layers
            recomputed_moe_layers = (moe_layers if recompute_modules.moe_layer_recomputed(arch, job)
                                     else moe_layers * stage.recomputed_layers / np.maximum(layers, 1.0))
            a2a = moe_layers * layer.a2a_per_layer + recomputed_moe_layers * layer.a2a_recompute_per_layer
            ep_s, ep_tax = moe.exposed_all_to_all_s(job, a2a, compute)
        tax = tp_tax + cp_tax + ep_tax
        compute = compute + tax
        stream_s = compute + tp_s + cp_s + ep_s
        if hf_experts.experts_implementation(job) is not None:  # a transformers model's experts (estimate.hf_experts)
            host = hf_experts.host_timing(arch, job, gpu, ep, stream_s, tokens=rates.tokens, lm_head=stage.lm_head,
                                          layers=stage.layers, dense_layers=stage.dense_layers, kernels=rates.kernels,
                                          recomputed_layers=stage.recomputed_layers,
                                          expert_forward_s=timed.expert_forward_s, zero=layout.zero)
        else:
            host = moe_host.host_timing(arch, job, gpu, ep, stream_s, lm_head=stage.lm_head, layers=stage.layers,
                                        dense_layers=stage.dense_layers, kernels=rates.kernels,
                                        recomputed_layers=stage.recomputed_layers,
                                        experts_s=(timed.expert_forward_s, ep_s))
        return {"compute": compute, "backward": backward, "tp": tp_s, "cp": cp_s, "ep": ep_s, "host": host.exposed_s,
                "host_load": host.load,
                "tp_total": tp_total, "cp_total": cp_total, "ep_total": a2a + 0.0 * tp_s, "tax": tax,
                "layers": layers, "rank": stage.rank, "expert_forward": timed.expert_forward_s + 0.0 * tp_s}

    if work is None:
        work = pace_work(arch, job, layout, tp=tp, pp=pp, vpp=vpp, cp=cp, micro_batch=mb)
    return PaceTerms(ranks=tuple(stage_terms(shape, flops) for shape, flops in zip(work.shapes, work.flops,
                                                                                      strict=True)))


def pace_lower_bound_s(pace: PaceTerms, *, global_batch: Num, pp: Num, vpp: Num, dp: Num, micro_batch: Num) -> Num:
    """A lower bound of step_time's step_time_s for the same rows, from their pace terms alone.

    step = m·t_mb + (pp - 1)/vpp·t_mb + data-parallel terms + optimizer step, where t_mb, the slowest
    rank's micro-batch, adds pipeline send/recv, FSDP traffic and their overlap tax to that rank's
    compute + tp + cp + ep + host seconds; none of those is negative, so
    step >= (m + (pp - 1)/vpp) · max over the candidate ranks of (compute + tp + cp + ep + host).
    """
    m = np.maximum(np.asarray(global_batch, dtype=np.float64) / (np.asarray(micro_batch) * np.asarray(dp)), 1.0)
    slowest = functools.reduce(np.maximum, [c["compute"] + c["tp"] + c["cp"] + c["ep"] + c["host"]
                                            for c in pace.ranks])
    return (m + (np.asarray(pp) - 1.0) / np.asarray(vpp)) * slowest
