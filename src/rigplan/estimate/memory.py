"""Peak training memory of one GPU: model states, activations, logits, transients and overheads.

Peak = max over the two phases of a step (forward/backward and optimizer step) of what is live:

    forward/backward:  weights + grads + optimizer + activations (micro-batches in flight)
                       + logits (last stage) + working set (recomputed layer, ZeRO-3 gathers)
    optimizer step:    weights + grads + optimizer + the step's temporaries

That is the allocator's "allocated" peak. PyTorch's caching allocator reserves more than it
allocates, and part of that cache cannot be given back when the device runs out (estimate/allocator.py:
both as fractions of the step's churn); the process also holds the CUDA context and NCCL buffers, which
torch.cuda.max_memory_reserved() does not show but nvidia-smi and the out-of-memory limit do.
Each overhead is its own named part with its source below.

Worst pipeline stage: every rank is evaluated (the first holds the embedding and the most
micro-batches in flight, the last holds the LM head and the logits) and the heaviest is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.domain.stages import DEFAULT_SPLIT, chunk_layer_counts, moe_heaviest_middle_rank
from rigplan.estimate import arrays as xp
from rigplan.estimate import recompute, recompute_modules
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.allocator import reserved_overhead_bytes, unreleasable_overhead_bytes
from rigplan.estimate.arrays import distinct_rows, first_argmax, select
from rigplan.estimate.arrays import scalar_or_array as _out
from rigplan.estimate.ep_buffers import deepep_buffer_bytes
from rigplan.estimate.framework_buffers import (
    ddp_grad_copy_bytes,
    fsdp1_block_params,
    fsdp1_gathered_params,
    fsdp_flat_grad_extra_bytes,
    nvls_bytes,
)
from rigplan.estimate.logits import logits_bytes
from rigplan.estimate.moe_allgather import allgather_buffer_bytes
from rigplan.estimate.params import count_params
from rigplan.estimate.setup_peaks import dequantized_copy_bytes, load_peak
from rigplan.estimate.states import (
    ModelStates,
    first_dense_layers,
    grad_bytes_per_param,
    model_states,
    stage_params,
)
from rigplan.units import MiB

CUDA_CONTEXT_BYTES = 685 * MiB
"""CUDA context with lazy module loading plus cuBLAS handles and workspaces, the part not visible to torch.cuda
memory statistics: measured on an H200 (CUDA 13.0, torch 2.11) as 783 MiB used in nvidia-smi after the first bf16
GEMM less the 98 MiB PyTorch had reserved (621 MiB after the first allocation alone;
docs/measurements/h200-2026-12.md, section 6). pytorch/pytorch#107667 reports ~300 MB for the bare context."""
NCCL_BYTES_PAIR = 544e6
"""NCCL buffers of one communicator of 2 ranks, A100 (NVIDIA/nccl#964)."""
NCCL_BYTES_GROUP = 688e6
"""NCCL buffers of one communicator of more than 2 ranks, A100 (NVIDIA/nccl#964)."""
@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryBreakdown:
    """Peak bytes on one GPU by part. total_bytes is what must fit in the GPU."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    logits_bytes: float
    transient_bytes: float
    """Working set at the peak: a recomputed layer, ZeRO-3 gathered layers, or the optimizer step's temporaries."""
    cuda_context_bytes: float
    nccl_bytes: float
    fragmentation_bytes: Num
    """Reserved beyond allocated at the step's peak: the caching allocator's cache (estimate/allocator.py)."""
    host_bytes: float
    """Host RAM this GPU's process needs for offloaded states and activations."""
    stage: int
    """Pipeline rank this breakdown belongs to (the heaviest one)."""
    micro_batches_in_flight: float
    phase: str = "forward/loss"
    """Which phase of the step holds the peak: 'forward/loss', 'end of backward' or 'optimizer step'."""
    phase_index: Num = 0.0
    """The same as an index into PHASES (an array in batch mode)."""
    model_gradients_bytes: float = 0.0
    """All gradients of this GPU's share, whether or not they are live at the peak."""
    load_bytes: Num = 0.0
    """Allocated while the checkpoint is loaded and the base quantized (estimate/setup_peaks.py)."""
    load_reserved_bytes: Num = 0.0
    """Reserved by the caching allocator at the load peak."""
    unreleasable_bytes: Num = 0.0
    """Part of the step's cache an out-of-memory retry cannot give back (estimate/allocator.py)."""
    load_unreleasable_bytes: Num = 0.0
    """The same at the load peak."""

    @property
    def step_allocated_bytes(self) -> Num:
        """Allocated at the training step's peak (the parts above)."""
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes
                + self.logits_bytes + self.transient_bytes)

    @property
    def step_reserved_bytes(self) -> Num:
        return self.step_allocated_bytes + self.fragmentation_bytes

    @property
    def allocated_bytes(self) -> Num:
        """Peak of torch.cuda.max_memory_allocated() since process start: the step or the load."""
        return _out(xp.maximum(self.step_allocated_bytes, self.load_bytes))

    @property
    def reserved_bytes(self) -> Num:
        """Peak of torch.cuda.max_memory_reserved(): the allocator keeps what loading reserved."""
        return _out(xp.maximum(self.step_reserved_bytes, self.load_reserved_bytes))

    @property
    def load_dominates(self) -> Num:
        return xp.asarray(self.load_reserved_bytes) > xp.asarray(self.step_reserved_bytes)

    @property
    def peak_phase(self) -> str:
        """'load' when loading the checkpoint holds more than the step, else the step's phase."""
        return "load" if xp.ndim(self.load_dominates) == 0 and bool(self.load_dominates) else self.phase

    @property
    def overhead_bytes(self) -> Num:
        """What the total adds to the step's tensors: CUDA context, NCCL and the cache a retry cannot release."""
        return self.cuda_context_bytes + self.nccl_bytes + self.unreleasable_bytes

    @property
    def needed_bytes(self) -> Num:
        """What PyTorch must hold to run: the allocated peak plus the cache an out-of-memory retry cannot
        release (the caching allocator gives every segment with no live block back and retries)."""
        return _out(xp.maximum(self.step_allocated_bytes + self.unreleasable_bytes,
                               self.load_bytes + self.load_unreleasable_bytes))

    @property
    def total_bytes(self) -> Num:
        """The quantity that must fit in the GPU: what PyTorch needs plus the CUDA context and NCCL
        buffers (nvidia-smi shows reserved + context + NCCL while the cache is not under pressure)."""
        return self.needed_bytes + self.cuda_context_bytes + self.nccl_bytes


UNBOUNDED_MICRO_BATCHES = 1 << 30
PHASES = ("forward/loss", "end of backward", "optimizer step")
Num = Any
"""A float, or a numpy array when many layouts are evaluated at once."""


def micro_batches_per_step(job: Job, layout: Any) -> Num:
    """m = global batch / (micro-batch · dp); unbounded (a full pipeline) when no global batch is given."""
    if job.global_batch:
        return xp.maximum(job.global_batch // (job.micro_batch * xp.asarray(layout.dp)), 1)
    return UNBOUNDED_MICRO_BATCHES


def in_flight_layers_fraction(layout: Any, rank: Num, num_micro: Num) -> Num:
    """Micro-batches of this rank's layers held at the peak.

    1F1B (Narayanan et al. 2021): rank r holds min(pp - r, m). Interleaved with v chunks: rank r
    holds 2·(pp - r - 1) + (v - 1)·pp + 1 chunks of L/(pp·v) layers (Megatron's warm-up count),
    which for r = 0 is Korthikanti's L·(1 + (pp - 1)/(pp·v)).
    """
    pp, vpp, r = xp.asarray(layout.pp), xp.asarray(layout.vpp), xp.asarray(rank)
    plain = xp.minimum(pp - r, num_micro)
    chunks = 2 * (pp - r - 1) + (vpp - 1) * pp + 1
    interleaved = xp.minimum(chunks, num_micro * vpp) / vpp
    return _out(xp.where(pp == 1, 1.0, xp.where(vpp == 1, plain, interleaved)))


def communicator_count(layout: Any) -> tuple[Num, Num]:
    """(pairs, groups): NCCL communicators of 2 ranks and of more, one per parallel axis in use."""
    pairs: Num = xp.where(xp.asarray(layout.pp) > 1, 1, 0)
    groups: Num = 0
    for degree in (layout.tp, layout.dp * layout.cp, layout.cp, layout.ep):
        d = xp.asarray(degree)
        pairs = pairs + xp.where(d == 2, 1, 0)
        groups = groups + xp.where(d > 2, 1, 0)
    return _out(pairs), _out(groups)


def communication_buffer_bytes(arch: Architecture, job: Job, layout: Any) -> Num:
    """Bytes outside PyTorch's allocator for communication: NCCL's buffers per communicator (communicator_count),
    NVLS's (nvls_bytes) and DeepEP's (estimate.ep_buffers); the breakdown's nccl_bytes."""
    pairs, groups = communicator_count(layout)
    return pairs * NCCL_BYTES_PAIR + groups * NCCL_BYTES_GROUP + nvls_bytes(job, layout) + deepep_buffer_bytes(
        arch, job, layout)



def chunk_micro_batches_in_flight(layout: Any, rank: Num, num_micro: Num, chunk: int) -> Num:
    """Micro-batches whose activations model chunk `chunk` of rank `rank` holds at the peak.

    1F1B: min(pp - r, m) on the rank's only chunk. Interleaved (v chunks): Megatron's warm-up runs
    N = min(2·(pp - r - 1) + (v - 1)·pp + 1, m·v) forward chunk-passes before the first backward, in
    groups of pp micro-batches per chunk (chunk 0 for micro-batches 0..pp-1, then chunk 1, ...,
    wrapping to chunk 0): chunk c holds the passes u < N with (u // pp) mod v = c. Summed over
    chunks this is in_flight_layers_fraction's count.
    """
    pp, vpp, r = xp.asarray(layout.pp), xp.asarray(layout.vpp), xp.asarray(rank)
    plain = (xp.where(pp == 1, 1.0, xp.minimum(pp - r, num_micro)) if chunk == 0
             else xp.zeros(xp.shape(pp + r)))
    passes = xp.minimum(2 * (pp - r - 1) + (vpp - 1) * pp + 1, num_micro * vpp)
    cycle = pp * vpp
    held = passes // cycle * pp + xp.clip(passes % cycle - chunk * pp, 0, pp)
    interleaved = xp.where(chunk < vpp, held, 0.0)
    return _out(xp.where(vpp == 1, plain, interleaved))


@dataclass(frozen=True, slots=True)
class StageChunks:
    """What stage_activation_bytes reads that does not depend on the recompute choice: the rank's
    parameters (states.stage_params) and, per model chunk, (layers, dense layers, micro-batches held)."""

    stage: Any
    chunks: tuple[tuple[Num, Num, Num], ...]


def stage_chunks(arch: Architecture, job: Job, layout: Any, rank: Num) -> StageChunks:
    """StageChunks of a rank (job: its micro-batch and global batch only)."""
    num_micro = micro_batches_per_step(job, layout)
    split = getattr(layout, "split", DEFAULT_SPLIT)
    chunks = []
    for c in range(int(xp.largest(xp.asarray(layout.vpp)))):
        layers_c, dense_c = chunk_layer_counts(split, arch.num_layers, first_dense_layers(arch), layout.pp,
                                               layout.vpp, rank, c)
        chunks.append((layers_c, dense_c, chunk_micro_batches_in_flight(layout, rank, num_micro, c)))
    return StageChunks(stage=stage_params(arch, count_params(arch), layout, rank), chunks=tuple(chunks))


def stage_activation_bytes(arch: Architecture, job: Job, layout: Any, rank: Num,
                           chunks: StageChunks | None = None) -> tuple[Num, Num, Num]:
    """(saved activations, one layer's full working set, in-flight micro-batches) for a rank.

    saved = Σ over the rank's chunks of (micro-batches that chunk holds) x (its dense and MoE layers'
    saved bytes); with uneven stages (domain.stages) each chunk counts its own layers. The third
    value is the layer-weighted mean of micro-batches in flight. Partial full recompute
    (estimate.recompute): a chunk saves the inputs of its recomputed layers and everything of the
    others; the working set is the group of layers recomputed at once. `chunks`: the rank's
    stage_chunks, when the caller has them (the same for every recompute choice).
    """
    chunks = stage_chunks(arch, job, layout, rank) if chunks is None else chunks
    stage = chunks.stage
    dense = layer_activation_bytes(arch, job, layout, moe_layer=False, dropout=job.dropout)
    moe = layer_activation_bytes(arch, job, layout, moe_layer=True, dropout=job.dropout) if arch.moe else dense
    moe_layers = stage.layers - stage.dense_layers
    saved_stage = dense.saved_bytes * stage.dense_layers + moe.saved_bytes * moe_layers
    granular = recompute.is_granular(job)
    if granular:
        kept_job = replace(job, recompute="none", recompute_method="uniform", recompute_layers=1)
        dense_kept = layer_activation_bytes(arch, kept_job, layout, moe_layer=False, dropout=job.dropout)
        moe_kept = (layer_activation_bytes(arch, kept_job, layout, moe_layer=True, dropout=job.dropout)
                    if arch.moe else dense_kept)
    saved: Num = 0.0
    held_layers: Num = 0.0
    group: Num = 1.0
    for layers_c, dense_c, held in chunks.chunks:
        chunk_bytes = dense.saved_bytes * dense_c + moe.saved_bytes * (layers_c - dense_c)
        if granular:
            redone = recompute.recomputed_layers(job, layers_c, stage.layers)
            kept_share = (layers_c - redone) / xp.maximum(layers_c, 1)
            kept_bytes = dense_kept.saved_bytes * dense_c + moe_kept.saved_bytes * (layers_c - dense_c)
            inputs = recompute.saved_inputs(job, layers_c, stage.layers)
            chunk_bytes = inputs * dense.saved_bytes + kept_share * kept_bytes
            group = xp.maximum(group, recompute.working_layers(job, layers_c))
        saved = saved + held * chunk_bytes
        held_layers = held_layers + held * layers_c
    in_flight = _out(held_layers / xp.maximum(stage.layers, 1))
    if job.recompute == "none":  # what a layer's backward holds beyond its saved bytes (peft_experts' W' gradient)
        working: Num = xp.where(xp.asarray(moe_layers) > 0, xp.maximum(moe.full_bytes - moe.saved_bytes, 0.0),
                                0.0) * (1.0 + 0.0 * saved_stage)
    else:
        working = xp.maximum(dense.full_bytes, xp.where(xp.asarray(moe_layers) > 0, moe.full_bytes, 0.0)) * group
    if recompute_modules.moe_layer_recomputed(arch, job):  # one MoE block's activations, rebuilt in backward
        kept = layer_activation_bytes(arch, replace(job, recompute_moe=False), layout, moe_layer=True,
                                      dropout=job.dropout)
        working = xp.maximum(working, xp.where(xp.asarray(moe_layers) > 0, kept.saved_bytes - moe.saved_bytes, 0.0))
    if job.activation_offload:
        per_layer = saved_stage / xp.maximum(stage.layers, 1)
        saved = xp.minimum(saved, 2 * per_layer)
    return _out(saved), _out(working), in_flight


@dataclass(frozen=True, kw_only=True, slots=True)
class _Transients:
    gathered: Num
    """ZeRO-3/FSDP: current and job.fsdp_prefetch prefetched units gathered (stored dtype); and the allgather MoE
    dispatcher's gathered tokens and unpermuted output (estimate.moe_allgather.allgather_buffer_bytes)."""
    grad_bucket: Num
    """ZeRO-2/3: one unit's unsharded gradient before its reduce-scatter."""
    step_temp: Num
    """torch.optim.AdamW with foreach=True (its default on CUDA when fused is not asked for) builds
    one temporary the size of the local moments (sqrt(v)); fused AdamW (Megatron, DeepSpeed,
    torchtune, torchtitan) builds none."""


FP32_BYTES = 4.0


def _transients(job: Job, layout: Any, states: ModelStates, fsdp1: tuple[Num, Num] | None = None) -> _Transients:
    """Working buffers that exist only in some phases of the step.

    The gradient bucket is one unit's unsharded gradient in the compute dtype; reduced in fp32 without fp32 main
    gradients (FSDP2's MixedPrecisionPolicy reduce_dtype float32: torchtitan, NeMo AutoModel) the reduce-scatter
    input is an fp32 copy of it beside it (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce:
    reduce_scatter_input is allocated in reduce_dtype and filled by foreach_reduce_scatter_copy_in before the
    unsharded gradients are freed), 4 more bytes a parameter.

    Neither ZeRO buffer can exceed what sharding saved, so a higher ZeRO stage never needs more
    memory than a lower one. `fsdp1` (job.fsdp_flat_params): the parameters FSDP1 holds gathered at once
    and the elements of one block's flat gradient (framework_buffers), in place of (1 + prefetch) of the
    largest unit and of the trainable share of one unit.
    """
    shards = xp.asarray(layout.dp * layout.cp)
    zero = xp.asarray(layout.zero)
    unit = states.largest_unit_params
    stored_bytes_per_param = states.unsharded_weight_bytes / xp.maximum(states.local_params, 1.0)
    gathered_params = (1 + job.fsdp_prefetch) * unit if fsdp1 is None else fsdp1[0]
    two_units = gathered_params * stored_bytes_per_param
    if job.offload == "all":
        gathered: Num = xp.minimum(two_units, states.unsharded_weight_bytes)
    else:
        gathered = xp.where(zero == 3, xp.minimum(two_units, states.unsharded_weight_bytes * (1 - 1 / shards)), 0.0)
    grad_bucket: Num = 0.0
    if job.offload == "none":
        bucket_params = xp.minimum(unit, states.trainable_params * (1 - 1 / shards))
        bucket = bucket_params * job.compute_dtype_bytes
        if job.grad_reduce_dtype == "fp32" and not job.main_grads_fp32 and job.compute_dtype_bytes < 4:
            bucket = bucket + bucket_params * FP32_BYTES
        if fsdp1 is not None:
            bucket = fsdp1[1] * grad_bytes_per_param(job)
        grad_bucket = xp.where(zero >= 2, bucket, 0.0)
    step_temp: Num = 0.0
    if job.optimizer_foreach and job.optimizer == "adamw" and not job.optimizer_in_backward and job.offload == "none":
        divisor = xp.where(zero >= 1, shards, 1)
        step_temp = states.trainable_params / divisor * (2 if job.precision == "bf16-true" else 4)
    return _Transients(gathered=_out(gathered), grad_bucket=_out(grad_bucket), step_temp=_out(step_temp))


def gradients_persist(job: Job, layout: Any) -> Num:
    """Whether gradient memory is held through the forward pass.

    Megatron-style stacks keep a contiguous gradient buffer (fused kernels); PyTorch DDP keeps its
    gradient buckets (zero 0, dp > 1); gradient accumulation keeps gradients between micro-batches.
    Otherwise PyTorch frees gradients after each step (zero_grad(set_to_none=True), the default
    since torch 2.0) and they are created during backward as activations are freed.
    """
    accumulating = xp.asarray(micro_batches_per_step(job, layout) > 1) & bool(job.global_batch)
    ddp_buckets = (xp.asarray(layout.zero) == 0) & (xp.asarray(layout.dp * layout.cp) > 1)
    return (job.kernels == "fused") | accumulating | ddp_buckets


@dataclass(frozen=True, slots=True)
class _RankShared:
    """The parts of rank_memory that do not depend on the recompute choice."""

    states: ModelStates
    logits: Num
    transients: _Transients
    dequantized: Num
    persist: Num
    grads: Num
    base: Num
    nccl: Num
    load: Any


def _rank_shared(arch: Architecture, job: Job, layout: Any, rank: Num, states: ModelStates | None = None,
                 nccl: Num | None = None) -> _RankShared:
    states = model_states(arch, job, layout, rank) if states is None else states
    logits = _out(xp.where(xp.asarray(rank) == xp.asarray(layout.pp) - 1, logits_bytes(arch, job, layout), 0.0))
    grads = (states.gradients_bytes
             + ddp_grad_copy_bytes(job, layout, states.trainable_params, grad_bytes_per_param(job))
             + fsdp_flat_grad_extra_bytes(arch, job, layout, rank, states))
    fsdp1 = ((fsdp1_gathered_params(arch, job, layout, rank), fsdp1_block_params(arch, job, layout))
             if job.fsdp_flat_params else None)
    if nccl is None:
        nccl = communication_buffer_bytes(arch, job, layout)
    transients = _transients(job, layout, states, fsdp1)
    if job.moe_dispatcher == "allgather":  # its buffers live in the same phases as the ZeRO-3 gathers
        dispatch = allgather_buffer_bytes(arch, job, layout)
        transients = replace(transients, gathered=_out(transients.gathered + dispatch))
    return _RankShared(states=states, logits=logits, transients=transients,
                       dequantized=dequantized_copy_bytes(arch, job, layout), persist=gradients_persist(job, layout),
                       grads=grads, base=states.weights_bytes + states.optimizer_bytes, nccl=nccl,
                       load=load_peak(arch, job, layout, states))


def _live_parts(shared: _RankShared, activations: Num, working: Num) -> tuple[Any, tuple[Num, Num, Num, Num]]:
    """(phase index, (gradients, activations, logits, transient) live at the heaviest phase); `working`
    already holds the dequantized copy (rank_memory's docstring gives the phases)."""
    t, persist, grads, logits = shared.transients, shared.persist, shared.grads, shared.logits
    recompute_dominates = xp.asarray(working) > xp.asarray(logits)
    phase_parts = [  # (gradients, activations, logits, transient) live in each phase
        (xp.where(persist, grads, 0.0), activations, xp.where(recompute_dominates, 0.0, logits),
         xp.where(recompute_dominates, working, 0.0) + t.gathered + xp.where(persist, t.grad_bucket, 0.0)),
        (grads, 0.0, 0.0, working + t.gathered + t.grad_bucket),
        (grads, 0.0, 0.0, t.step_temp),
    ]
    shape = xp.shape(shared.base)
    which = first_argmax([xp.broadcast_to(xp.asfloat(sum(p)), shape) for p in phase_parts])

    def pick(index: int) -> Num:
        values = [xp.broadcast_to(xp.asfloat(p[index]), shape) for p in phase_parts]
        return _out(select(which, values))

    return which, (pick(0), pick(1), pick(2), pick(3))


def _churn(shared: _RankShared, which: Any, allocated: Num) -> tuple[Num, Num]:
    """(step churn, load churn): what the step allocates and frees again (all but weights, optimizer states
    and gradients kept between steps, and the ZeRO gather/reduce buffers, one size per unit, which the
    allocator hands back to the same requests); at load, all but the weights (estimate/allocator.py)."""
    t, persist, grads, base = shared.transients, shared.persist, shared.grads, shared.base
    zero_parts = [t.gathered + xp.where(persist, t.grad_bucket, 0.0), t.gathered + t.grad_bucket, 0.0]
    zero_live = select(which, [xp.broadcast_to(xp.asfloat(z), xp.shape(base)) for z in zero_parts])
    churn = xp.maximum(allocated - base - xp.where(persist, grads, 0.0) - zero_live, 0.0)
    load_churn = xp.maximum(shared.load.allocated_bytes - shared.states.weights_bytes, 0.0)
    return churn, load_churn


def _rank_total_bytes(job: Job, shared: _RankShared, activations: Num, working: Num) -> Num:
    """rank_memory(...).total_bytes with only the numbers it needs, in the same arithmetic."""
    states = shared.states
    which, (g_live, a_live, l_live, transient) = _live_parts(shared, activations, working + shared.dequantized)
    allocated = shared.base + g_live + a_live + l_live + transient
    step_allocated = (states.weights_bytes + g_live + states.optimizer_bytes + a_live + l_live + transient)
    churn, load_churn = _churn(shared, which, allocated)
    needed = xp.maximum(step_allocated + unreleasable_overhead_bytes(job, churn),
                        shared.load.allocated_bytes + unreleasable_overhead_bytes(job, load_churn, load=True))
    return _out(needed) + CUDA_CONTEXT_BYTES + shared.nccl


def rank_memory(arch: Architecture, job: Job, layout: Any, rank: Num, *, states: ModelStates | None = None,
                activations: tuple[Num, Num, Num] | None = None, shared: _RankShared | None = None
                ) -> MemoryBreakdown:
    """Peak memory of one GPU on pipeline rank `rank`: the heaviest of three phases.

    forward/loss:     W + O + (G if gradients persist) + A + max(logits, recompute working set)
                      + ZeRO-3 gathers (+ the ZeRO-2/3 gradient bucket if gradients persist)
    end of backward:  W + O + G + recompute working set + ZeRO buffers (activations freed)
    optimizer step:   W + O + G + the step's temporaries
    QLoRA adds the bf16 copy of the linear being computed to the working set. The load peak
    (estimate/setup_peaks.py) is kept next to these; allocated/reserved/total take the larger.
    The logits exist at the loss, before any layer is recomputed, so the two do not add up.
    `shared` (the parts that do not depend on the recompute choice) and `activations` may be given
    when the caller has them already.
    """
    if shared is None:
        shared = _rank_shared(arch, job, layout, rank, states)
    states = shared.states
    if activations is None:
        activations = stage_activation_bytes(arch, job, layout, rank)
    activations, working, in_flight = activations
    host = states.host_bytes
    if job.activation_offload:
        full, _, _ = stage_activation_bytes(arch, replace(job, activation_offload=False), layout, rank)
        host = host + xp.maximum(full - activations, 0.0)
    working = working + shared.dequantized
    grads = shared.grads
    base = shared.base
    which, (g_live, a_live, l_live, transient) = _live_parts(shared, activations, working)
    allocated = base + g_live + a_live + l_live + transient
    load = shared.load
    churn, load_churn = _churn(shared, which, allocated)
    return MemoryBreakdown(
        weights_bytes=states.weights_bytes,
        gradients_bytes=g_live,
        optimizer_bytes=states.optimizer_bytes,
        activations_bytes=a_live,
        logits_bytes=l_live,
        transient_bytes=transient,
        cuda_context_bytes=CUDA_CONTEXT_BYTES,
        nccl_bytes=shared.nccl,
        fragmentation_bytes=_out(reserved_overhead_bytes(job, churn)),
        host_bytes=host,
        stage=rank,
        micro_batches_in_flight=in_flight,
        phase=PHASES[int(which)] if xp.ndim(which) == 0 else PHASES[0],
        phase_index=_out(which),
        model_gradients_bytes=grads,
        load_bytes=load.allocated_bytes,
        load_reserved_bytes=_out(load.allocated_bytes + reserved_overhead_bytes(job, load_churn, load=True)
                                 + load.reserved_extra_bytes),
        unreleasable_bytes=_out(unreleasable_overhead_bytes(job, churn)),
        load_unreleasable_bytes=_out(unreleasable_overhead_bytes(job, load_churn, load=True)),
    )


def peak_memory(arch: Architecture, job: Job, layout: Layout) -> MemoryBreakdown:
    """The heaviest pipeline rank's peak memory (every rank is evaluated; the first of equally heavy
    ranks is reported)."""
    breakdowns = [rank_memory(arch, job, layout, rank) for rank in range(layout.pp)]
    return breakdowns[int(first_argmax([b.total_bytes for b in breakdowns]))]


def peak_total_bytes_batch(arch: Architecture, job: Job, layout: Any) -> Num:
    """Peak device bytes for many layouts at once (layout degrees as numpy arrays).

    Evaluates the first and the last pipeline rank, which hold the embedding and the most
    micro-batches in flight, or the LM head and the logits, and rank 1: under rigplan's uneven
    default split (domain.stages) it can hold one layer more than rank 0 with one micro-batch less,
    and no later middle rank holds more layers or micro-batches. `peak_memory` evaluates every rank
    of one layout.
    """
    return peak_total_bytes_choices(arch, job, layout, (job.recompute,))[0]


def peak_total_bytes_choices(arch: Architecture, job: Job, layout: Any, choices: tuple[str, ...]) -> Any:
    """peak_total_bytes_batch for each recompute choice, shape (len(choices), layouts).

    The model states do not depend on the recompute choice, so each rank's are computed once; the
    activations depend on the layout only through tp, cp, pp, vpp, ep, etp and the micro-batches in
    flight (never more than 2·pp·vpp + pp of the step's m), so they are computed once per distinct
    combination of those and spread over the layouts (the same numbers, fewer of them).
    """
    np = xp.numpy()
    pp = np.asarray(layout.pp)
    totals = np.full((len(choices), pp.size), -np.inf)
    chosen = [replace(job, recompute=choice) for choice in choices]  # type: ignore[arg-type]
    nccl = np.broadcast_to(communication_buffer_bytes(arch, job, layout), pp.shape)
    # rank 1 differs from rank 0 or the last only with pp >= 3, the last from rank 0 only with pp >= 2; the middle
    # rank with the most expert layers differs from rank 1 only where dense-first layers fill rank 1
    heavy = np.asarray(moe_heaviest_middle_rank(getattr(layout, "split", DEFAULT_SPLIT), arch.num_layers,
                                                first_dense_layers(arch), pp, np.asarray(layout.vpp)))
    passes: list[tuple[int, Any]] = [(0, None), (1, np.flatnonzero(pp >= 3)), (2, np.flatnonzero(pp >= 2))]
    if arch.moe is not None:
        passes.append((3, np.flatnonzero((pp >= 4) & (np.broadcast_to(heavy, pp.shape) != 1))))
    for which, rows in passes:
        part = layout if rows is None or not hasattr(layout, "take") else layout.take(rows)
        if rows is not None and not hasattr(layout, "take"):
            if which == 3 and not np.asarray(rows).size:
                continue
            rows = None
        part_pp = np.asarray(part.pp)
        if not part_pp.size:
            continue
        part_heavy = heavy if rows is None else np.broadcast_to(heavy, pp.shape)[rows]
        rank = (np.zeros_like(part_pp), np.minimum(1, part_pp - 1), part_pp - 1, part_heavy)[which]
        num_micro = np.minimum(micro_batches_per_step(job, part), 2 * part_pp * np.asarray(part.vpp) + part_pp)
        first, row = distinct_rows(part.tp, part.cp, part_pp, part.vpp, part.ep, getattr(part, "etp", part.tp),
                                   num_micro)
        distinct = _DistinctLayout(part, first, num_micro)
        shared = _rank_shared(arch, job, part, rank, nccl=nccl if rows is None else nccl[rows])
        chunks = stage_chunks(arch, job, distinct, rank[first])
        for k in range(len(choices)):
            saved, working, in_flight = stage_activation_bytes(arch, chosen[k], distinct, rank[first], chunks)
            spread = (np.take(saved, row), np.take(np.broadcast_to(working, np.shape(saved)), row),
                      np.take(in_flight, row))
            if job.activation_offload:
                total = rank_memory(arch, chosen[k], part, rank, activations=spread, shared=shared).total_bytes
            else:
                total = _rank_total_bytes(chosen[k], shared, spread[0], spread[1])
            if rows is None:
                totals[k] = np.maximum(totals[k], total)
            else:
                totals[k, rows] = np.maximum(totals[k, rows], total)
    return totals


@dataclass(frozen=True)
class _DistinctLayout:
    """The distinct rows of a layout batch as stage_activation_bytes reads them: degrees taken at
    `first`, and the micro-batches per step replaced by the (capped) count in flight."""

    source: Any
    first: Any
    num_micro: Any

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.source, name)
        return xp.asarray(value)[self.first] if xp.ndim(value) else value


def fits(breakdown: MemoryBreakdown, gpu: Gpu, ecc: bool | None = None) -> bool:
    return bool(breakdown.total_bytes <= gpu.usable_bytes(ecc))
