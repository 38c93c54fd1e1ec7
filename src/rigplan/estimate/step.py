"""Step time of a training job on a cluster: compute roofline, communication and pipeline bubble.

Per GPU of the busiest pipeline stage, one micro-batch takes

    t_mb = compute (GEMMs at shape-dependent efficiency, attention kernels, element-wise traffic)
         + the exposed part of each axis' communication: tensor-parallel collectives, ring attention
           (cp), expert all-to-all, pipeline point-to-point, ZeRO-3/FSDP gathers and reduce-scatters
         + the compute slowdown of whatever is overlapped (estimate.overlap)

and a step of m = global_batch / (micro_batch · dp) micro-batches takes

    step = (m + (pp - 1)/vpp) · t_mb + exposed data-parallel gradient sync + optimizer step + loop overhead

The bubble (pp - 1)/vpp · t_mb is the 1F1B / interleaved 1F1B bubble of Narayanan et al. 2021
(arXiv 2104.04473, Sec. 2.2). Each axis' overlap is a switch of the job (estimate.overlap gives the
formula, the SM share each overlap takes and its source): TP collectives hide behind the GEMMs of the
same layer (tp_comm_overlap), ring attention behind the attention core (cp_comm_overlap), pipeline
send/recv behind the micro-batch's compute (pp_comm_overlap, interleaved schedules), the expert
all-to-all behind another micro-batch (a2a_overlap, estimate.moe), gradient sync behind the last
micro-batch's backward (overlap_grad_reduce: DDP buckets, Megatron --overlap-grad-reduce; the last bucket, one
layer's share or Job.grad_bucket_params, stays exposed, as the first one of the all-gather does), ZeRO-1/2's
parameter all-gather behind the next forward (overlap_param_gather), FSDP's gathers and
reduce-scatters behind the micro-batch that uses them (prefetch). Every term is returned, per axis
as total, hidden and exposed seconds, so that the report shows where time goes.

The loop overhead is Job.step_overhead_s, once per step whatever the number of micro-batches: the time
the GPU waits on the training loop's host work between steps (host synchronisations, issuing the optimizer
step, loss reduction, logging; the Megatron-Core presets set MEGATRON_STEP_OVERHEAD_MS, domain.frameworks).
It is reported with the host-paced time (host_s).

MoE stages add the time the GPU waits for the host to issue each pass (the per-layer host sync of
dropless routing, estimate.moe_host.host_paced_s); without a pipeline, the one micro-batch a step that
Megatron-Core's 1F1B EP overlap cannot pair runs its all-to-all exposed (estimate.moe.unpaired_all_to_all_s).
Left out: per-micro-batch host overhead of dense models (large for tiny ones), stragglers, network
congestion from other jobs, dataloader stalls, and checkpointing (reliability is a separate estimate).
Arguments that are counts may be numpy arrays of layouts.

One micro-batch on one pipeline rank (compute, tp/cp/ep traffic, host time: the first and third lines
of t_mb) is estimate.stage_time's; this module adds pipeline, FSDP and data-parallel terms, the
bubble and the optimizer step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate import comm, moe, muon, offload, overlap
from rigplan.estimate.arrays import first_argmax, select
from rigplan.estimate.attention_core import attention_core_efficiency as attention_core_efficiency
from rigplan.estimate.calibration import Calibration, calibrated_efficiency, calibrated_tiers
from rigplan.estimate.efficiency import gemm_clock_fraction, gemm_efficiency
from rigplan.estimate.elementwise import elementwise_bytes_per_token as elementwise_bytes_per_token
from rigplan.estimate.elementwise import fp8_cast_bytes_per_token as fp8_cast_bytes_per_token
from rigplan.estimate.flops import causal_fraction_for, micro_batch_flops
from rigplan.estimate.params import count_params
from rigplan.estimate.recompute import whole_model_recompute_fraction
from rigplan.estimate.stage_time import PaceTerms as PaceTerms
from rigplan.estimate.stage_time import StageShape as StageShape
from rigplan.estimate.stage_time import _expert_tp, degree, pace_terms
from rigplan.estimate.stage_time import pace_candidates as pace_candidates
from rigplan.estimate.stage_time import pace_lower_bound_s as pace_lower_bound_s
from rigplan.estimate.stage_time import scale_up_domain as scale_up_domain
from rigplan.estimate.states import stage_lora_params

Num = Any

OPTIMIZER_BYTES_TOUCHED = {"adamw": 16.0 + 12.0, "paged-adamw": 16.0 + 12.0,
                           "adamw-8bit": 6.0 + 6.0, "paged-adamw-8bit": 6.0 + 6.0,
                           "sgd": 8.0 + 4.0, "sgd-momentum": 12.0 + 8.0, "adafactor": 10.0 + 6.0,
                           "muon": 12.0 + 8.0}
"""Bytes read + written per trainable parameter by one optimizer step in mixed precision (AdamW:
read grad, master, m, v; write master, m, v, bf16 weight copy). bf16-true halves the state terms. Muon moves
SGD-momentum's bytes; its Newton-Schulz GEMMs are timed apart (estimate.muon)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StepBreakdown:
    """Seconds per optimizer step on one GPU, by cause, and the FLOPs behind them."""

    step_time_s: Num
    compute_s: Num
    """All micro-batches' compute, bubble excluded."""
    bubble_s: Num
    exposed_comm_s: Num
    tp_comm_s: Num
    cp_comm_s: Num
    ep_comm_s: Num
    pp_comm_s: Num
    dp_comm_s: Num
    """Exposed data-parallel traffic: gradient sync, ZeRO gathers."""
    optimizer_s: Num
    micro_batches: Num
    host_s: Num = 0.0
    """All micro-batches' time the GPU waits for the host to issue work (MoE host sync, estimate.moe), and the
    training loop's overhead once per step (Job.step_overhead_s)."""
    offload_s: Num = 0.0
    """CPU offload: the host optimizer step and its copies, and the weight shards brought over the host link for
    each micro-batch beyond what its computation hides (estimate.offload)."""
    tokens_per_step: Num
    model_flop_per_step: Num
    hardware_flop_per_step: Num
    peak_flop_per_s: float
    pace_stage: Num = 0
    """Pipeline rank whose micro-batch is slowest: it sets the pace and the bubble."""
    pace_stage_layers: Num = 0
    """Decoder layers on that rank."""
    comm_total_s: dict[str, Num] | None = None
    """Per axis ('tp', 'cp', 'ep', 'pp', 'dp'): all communication seconds of a step, hidden or not;
    hidden = total - the exposed *_comm_s."""
    overlap_tax_s: Num = 0.0
    """Compute slowdown from communication kernels running beside it (in compute_s; estimate.overlap)."""
    host_load: Num = 0.0
    """On the pacing rank, the host's time to issue one micro-batch's MoE ops over that micro-batch's GPU time
    (estimate.moe_host.HostTiming.load; 0 where the host issues none)."""


def step_time(arch: Architecture, job: Job, layout: Layout, gpu: Gpu, *, global_batch: Num,
              tp: Num | None = None, pp: Num | None = None, dp: Num | None = None, cp: Num | None = None,
              ep: Num | None = None, vpp: Num | None = None, micro_batch: Num | None = None,
              zero: Num | None = None, calibration: Calibration | None = None,
              etp: Num | None = None, pace: PaceTerms | None = None) -> StepBreakdown:
    """Seconds per optimizer step (formula in the module docstring). Degrees default to the layout's
    and may be numpy arrays; `global_batch` is in sequences and must be a multiple of micro_batch·dp.
    A calibration for this GPU replaces the efficiency and link parameters it measured. `pace`: these
    rows' pace_terms, when the caller has them already (the same values pace_terms would return)."""
    tp = degree(tp, layout.tp)
    pp = degree(pp, layout.pp)
    dp = degree(dp, layout.dp)
    cp = degree(cp, layout.cp)
    ep = degree(ep, layout.ep)
    vpp = degree(vpp, layout.vpp)
    etp = _expert_tp(tp, etp, layout)
    mb = degree(micro_batch, job.micro_batch)
    zero = degree(zero, layout.zero)
    eff = calibrated_efficiency(gpu, calibration)
    p = job.compute_dtype_bytes
    seq = float(job.seq_len)
    tokens = mb * seq / cp
    m = np.maximum(np.asarray(global_batch, dtype=np.float64) / (mb * dp), 1.0)
    intra, inter = calibrated_tiers(gpu, calibration)
    domain = scale_up_domain(gpu)
    one_link = comm.scaled_tier(intra, comm.mesh_share(gpu.link, 2))  # a point-to-point peer in a full mesh

    if pace is None:
        pace = pace_terms(arch, job, layout, gpu, tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, micro_batch=mb,
                          calibration=calibration)
    candidates = [dict(c) for c in pace.ranks]
    most_layers = functools.reduce(np.maximum, [np.asarray(c["layers"]) for c in candidates])

    # Pipeline: activations forward and gradients backward across each stage boundary, per chunk.
    pp_place = comm.place_group(gpu, pp, stride=tp * cp * dp, domain_size=domain, intra=intra, inter=inter)
    boundary = tokens * arch.hidden * p / (tp if layout.sequence_parallel else 1.0)
    hop = np.where(pp_place.per_node >= pp, 1.0, 0.0)
    p2p = hop * comm.p2p_s(boundary, pp, one_link) + (1.0 - hop) * comm.p2p_s(boundary, pp, inter)
    pp_total = np.where(pp > 1, 2.0 * vpp * p2p, 0.0)

    # Data parallel over dp·cp (stride tp): gradient sync and ZeRO traffic.
    # Expert weights sync over their own expert-dp group (tp*cp*dp/(ep*etp) ranks, stride ep*etp).
    counts = count_params(arch)
    non_expert = counts.total - counts.routed_experts_total
    dense_local = non_expert / tp / pp
    expert_local = counts.routed_experts_total / (etp * ep) / pp
    local_params = dense_local + expert_local
    peft = job.is_peft
    # adapters of the busiest rank's layers, each taken as an MoE layer where the model has experts (an upper bound)
    own, routed = stage_lora_params(arch, job, layers=most_layers, dense_layers=0.0 if arch.moe else most_layers,
                                    tp=tp, ep=ep, etp=etp) if peft else (0.0, 0.0)
    trainable = own + routed if peft else dense_local
    group = dp * cp
    dp_place = comm.place_group(gpu, group, stride=tp, domain_size=domain, intra=intra, inter=inter)
    edp = np.maximum(tp * cp * dp / (ep * etp), 1.0)
    edp_place = comm.place_group(gpu, edp, stride=ep * etp, domain_size=domain, intra=intra, inter=inter)

    # Without GPUDirect RDMA (GeForce) the network phase is staged through host memory after the
    # node-local phase instead of streaming beside it (comm.hierarchical_*: pipelined=False). Where the
    # vendor publishes nothing either way (None), the staged path is taken: no capability without a source.
    staged = gpu.gpudirect_rdma is not True

    def sync(fn: Any, dense_bytes: Num, expert_bytes: Num) -> Num:
        dense_s = fn(dense_bytes, group, dp_place.per_node, intra, inter, pipelined=not staged)
        if peft or arch.moe is None:
            return dense_s
        return dense_s + np.where(edp > 1, fn(expert_bytes, edp, edp_place.per_node, intra, inter,
                                              pipelined=not staged), 0.0)

    g = overlap.grad_reduce_bytes_per_param(job)
    sync_ar = sync(comm.hierarchical_all_reduce_s, trainable * g, expert_local * g)
    gather_on = overlap.param_gather_overlapped(job, zero)
    prefetch = bool(job.fsdp_prefetch > 0) if job.overlap_param_gather is None else job.overlap_param_gather
    # under ZeRO-3, where the FSDP terms apply, gather_on is this one switch
    reduce_on = job.overlap_grad_reduce
    sync_rs = sync(comm.hierarchical_reduce_scatter_s, trainable * g, expert_local * g)
    w = 1.0 if job.fp8_param_gather else p  # Megatron --fp8-param-gather all-gathers the fp8 weights
    gather = sync(comm.hierarchical_all_gather_s, dense_local * w, expert_local * w)
    # ZeRO-1/2 all-gather what the optimizer updated: under LoRA the adapters alone, in the compute dtype
    # (the frozen base is replicated, never re-gathered)
    updated_gather = sync(comm.hierarchical_all_gather_s, trainable * p, 0.0) if peft else gather
    # With buckets (Megatron --ddp-bucket-size), the last bucket's reduction and the first bucket's all-gather
    # of a step have nothing to hide behind: a bucket of B parameters is min(1, B / buffer) of each buffer
    # (dense and expert parameters sit in buffers of their own, megatron/core/distributed/param_and_grad_buffer.py).
    bucket_tail: Num = 0.0
    bucket_gather: Num = 0.0
    if job.grad_bucket_params > 0:
        dense_share = np.minimum(1.0, job.grad_bucket_params / np.maximum(trainable, 1.0))
        expert_share = np.minimum(1.0, job.grad_bucket_params / np.maximum(expert_local, 1.0))
        bucket_tail = np.where(zero >= 1, sync(comm.hierarchical_reduce_scatter_s, trainable * g * dense_share,
                                               expert_local * g * expert_share),
                               sync(comm.hierarchical_all_reduce_s, trainable * g * dense_share,
                                    expert_local * g * expert_share))
        gathered = trainable * p if peft else dense_local * w
        bucket_gather = sync(comm.hierarchical_all_gather_s, gathered * dense_share,
                             0.0 if peft else expert_local * w * expert_share)
    if not peft:
        trainable = local_params
    # ZeRO-0: all-reduce; ZeRO-1/2: reduce-scatter, then the updated weights all-gathered;
    # ZeRO-3/FSDP: per micro-batch gather forward and backward + reduce-scatter, overlapped with compute
    # layer by layer (prefetch), except the first layer's forward gather and the last layer's
    # reduce-scatter, which have no compute to hide behind: at least (gather + reduce-scatter)/layers.
    # Pipeline send/recv hides behind the micro-batch's compute when pp_comm_overlap, in an interleaved
    # schedule only: in plain 1F1B each receive feeds the very next computation, so nothing can run beside
    # it (Megatron turns overlap_p2p_comm off without interleaving: "non-interleaved schedule does not
    # support overlapping p2p communication", megatron/training/arguments.py).
    # The pace of the pipeline is its slowest rank's micro-batch (domain.stages sizes each rank).
    sharded = (zero >= 3) & (group > 1)
    per_rank_mb = []
    for c in candidates:
        layers_c = np.maximum(c["layers"], 1.0)
        hideable = (2.0 * gather if prefetch else 0.0) + (sync_rs if reduce_on else 0.0)
        fixed = (0.0 if prefetch else 2.0 * gather) + (0.0 if reduce_on else sync_rs)
        edge = ((gather if prefetch else 0.0) + (sync_rs if reduce_on else 0.0)) / layers_c
        hid_exposed, _, fsdp_tax = overlap.hide(hideable, c["compute"], overlap.DP_OVERLAP_SM_SHARE, on=True,
                                                floor_s=edge)
        c["fsdp"] = np.where(sharded, hid_exposed + fixed, 0.0)
        c["fsdp_total"] = np.where(sharded, 2.0 * gather + sync_rs, 0.0)
        pp_exposed, _, pp_tax = overlap.hide(pp_total, c["compute"], overlap.P2P_OVERLAP_SM_SHARE,
                                             on=(vpp > 1) if job.pp_comm_overlap else False)
        c["pp"] = pp_exposed
        c["tax"] = c["tax"] + np.where(sharded, fsdp_tax, 0.0) + pp_tax
        c["compute"] = c["compute"] + np.where(sharded, fsdp_tax, 0.0) + pp_tax
        # the host keeps issuing while the exposed ZeRO-3 gathers and pipeline sends run: it paces the
        # micro-batch only beyond them too (moe_host.exposed_host_s measures it against compute, tp, cp, ep)
        c["host"] = np.maximum(c["host"] - c["fsdp"] - c["pp"], 0.0)
        per_rank_mb.append(c["compute"] + c["tp"] + c["cp"] + c["ep"] + c["host"] + c["pp"] + c["fsdp"])
    slowest = first_argmax(np.broadcast_arrays(*per_rank_mb))

    def pick(key: str) -> Num:
        return select(slowest, np.broadcast_arrays(*[np.asarray(c[key], dtype=np.float64) for c in candidates]))

    compute_mb, backward_mb = pick("compute"), pick("backward")
    tp_mb, cp_mb, ep_mb, fsdp_mb, host_mb = pick("tp"), pick("cp"), pick("ep"), pick("fsdp"), pick("host")
    pp_mb = pick("pp")
    pace_layers, pace_rank, host_load = pick("layers"), pick("rank"), pick("host_load")
    # Gradient sync after the last micro-batch hides behind its backward, all but the last layer's
    # bucket; ZeRO-1/2's all-gather of the updated weights behind the next step's first forward. A host-paced
    # MoE pass (host_mb, split as its GPU time) adds idle GPU time to either window, in which the rest hides
    # without slowing compute (overlap.hidden_in_idle).
    backward_host = host_mb * backward_mb / np.maximum(compute_mb, 1e-30)
    tail = np.where(zero >= 3, 0.0, np.where(zero >= 1, sync_rs, sync_ar))
    tail_floor = np.maximum(tail / np.maximum(pace_layers, 1.0), bucket_tail)
    tail_exposed, _, tail_tax = overlap.hide(tail, backward_mb, overlap.DP_OVERLAP_SM_SHARE, on=reduce_on,
                                             floor_s=tail_floor)
    tail_exposed = overlap.hidden_in_idle(tail_exposed, tail, tail_floor, backward_host, reduce_on)
    zero12_gather = np.where((zero >= 1) & (zero < 3), updated_gather, 0.0)
    first_gather = np.maximum(zero12_gather / np.maximum(pace_layers, 1.0), bucket_gather)
    gather_exposed, _, gather_tax = overlap.hide(zero12_gather, compute_mb - backward_mb, overlap.DP_OVERLAP_SM_SHARE,
                                                 on=gather_on, floor_s=first_gather)
    gather_exposed = overlap.hidden_in_idle(gather_exposed, zero12_gather, first_gather, host_mb - backward_host,
                                            gather_on)
    dp_exposed = np.where(group > 1, tail_exposed + gather_exposed, 0.0)
    dp_tax = np.where(group > 1, tail_tax + gather_tax, 0.0)
    dp_step_total = np.where(group > 1, tail + zero12_gather, 0.0)

    expert_trainable = 0.0 if peft else expert_local
    updated = np.where(zero >= 1, (trainable - expert_trainable) / group + expert_trainable / edp, trainable)
    # --offload all: the weight shards cross the host link for every micro-batch (estimate.offload)
    shard = np.where(zero >= 3, local_params / group, local_params)
    param_offload_mb = offload.parameter_offload_s(job, gpu, shard, compute_mb)
    t_mb = compute_mb + tp_mb + cp_mb + ep_mb + pp_mb + fsdp_mb + host_mb + param_offload_mb
    bubble = (pp - 1.0) / vpp * t_mb
    if job.offload in ("optimizer", "all"):  # the optimizer runs on the host (estimate.offload)
        optimizer_s = 0.0 * updated
        host_optimizer_s = offload.optimizer_offload_s(job, gpu, updated, m * backward_mb)
    else:
        touched = OPTIMIZER_BYTES_TOUCHED[job.optimizer] * (0.5 if job.precision == "bf16-true" else 1.0)
        optimizer_s = updated * touched / (gpu.memory_bandwidth_bytes_per_s * eff.hbm)
        if job.optimizer == "muon":  # Newton-Schulz on the rank's share of the matrices (estimate.muon)
            optimizer_s = optimizer_s + updated * muon.newton_schulz_s_per_param(
                arch, gpu.peak("bf16") * gemm_clock_fraction(gpu), lambda dim: float(gemm_efficiency(eff, dim)))
        host_optimizer_s = 0.0 * updated
    offload_s = host_optimizer_s + m * param_offload_mb
    loop_s = job.step_overhead_s + 0.0 * m
    unpaired_ep = 0.0 * m
    if arch.moe is not None:  # one micro-batch a step has no 1F1B EP overlap partner (moe.unpaired_all_to_all_s)
        unpaired_ep = np.where(pp == 1, moe.unpaired_all_to_all_s(job, pick("ep_total"), ep_mb), 0.0)
    step = m * t_mb + bubble + dp_exposed + dp_tax + optimizer_s + host_optimizer_s + loop_s + unpaired_ep

    whole = micro_batch_flops(arch, job, micro_batch=mb, causal_fraction=causal_fraction_for(job.attention),
                              recompute_fraction=whole_model_recompute_fraction(arch, job, layout, pp, vpp))
    sequences = m * mb * dp
    peak = gpu.peak(job.matmul_precision)
    ep_total = m * pick("ep_total") if arch.moe is not None else 0.0 * m
    totals = {"tp": m * pick("tp_total"), "cp": m * pick("cp_total"), "ep": ep_total,
              "pp": m * pp_total, "dp": m * pick("fsdp_total") + dp_step_total}
    return StepBreakdown(
        step_time_s=step, compute_s=m * compute_mb + dp_tax, bubble_s=bubble,
        exposed_comm_s=m * (tp_mb + cp_mb + ep_mb + pp_mb + fsdp_mb) + dp_exposed + unpaired_ep,
        tp_comm_s=m * tp_mb, cp_comm_s=m * cp_mb, ep_comm_s=m * ep_mb + unpaired_ep, pp_comm_s=m * pp_mb,
        dp_comm_s=m * fsdp_mb + dp_exposed, optimizer_s=optimizer_s, host_s=m * host_mb + loop_s, offload_s=offload_s,
        micro_batches=m,
        tokens_per_step=sequences * seq,
        model_flop_per_step=whole.model_flop / mb * sequences,
        hardware_flop_per_step=whole.hardware_flop / mb * sequences,
        peak_flop_per_s=peak, pace_stage=pace_rank, pace_stage_layers=pace_layers,
        comm_total_s=totals, overlap_tax_s=m * pick("tax") + dp_tax, host_load=host_load,
    )


def with_network(gpu: Gpu, *, gpus_per_node: int | None = None, nic_gbit_per_s: float | None = None,
                 nics_per_node: int | None = None) -> Gpu:
    """The GPU with its default node replaced: node size and scale-out bandwidth per GPU."""
    per_node = gpus_per_node or gpu.gpus_per_node
    nic_bits = gpu.nic_bits_per_s
    if nic_gbit_per_s is not None:
        nics = nics_per_node if nics_per_node is not None else per_node
        nic_bits = nic_gbit_per_s * 1e9 * nics / per_node
    elif nics_per_node is not None:
        nic_bits = gpu.nic_bits_per_s * nics_per_node / per_node
    return replace(gpu, gpus_per_node=per_node, nic_bits_per_s=nic_bits)
