"""Peak training memory of one GPU: model states, activations, logits, transients and overheads.

Peak = max over the two phases of a step (forward/backward and optimizer step) of what is live:

    forward/backward:  weights + grads + optimizer + activations (micro-batches in flight)
                       + logits (last stage) + working set (recomputed layer, ZeRO-3 gathers)
    optimizer step:    weights + grads + optimizer + the step's temporaries

That is the allocator's "allocated" peak. PyTorch's caching allocator reserves more than it
allocates (fragmentation), and the process also holds the CUDA context and NCCL buffers, which
torch.cuda.max_memory_reserved() does not show but nvidia-smi and the out-of-memory limit do.
Each overhead is its own named part with its source below.

Worst pipeline stage: every rank is evaluated (the first holds the embedding and the most
micro-batches in flight, the last holds the LM head and the logits) and the heaviest is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.params import count_params
from rigplan.estimate.states import ModelStates, model_states, stage_params
from rigplan.units import MiB

CUDA_CONTEXT_BYTES = 512 * MiB
"""CUDA context with lazy module loading (~300 MB, pytorch/pytorch#107667) plus cuBLAS/cuDNN
handles and workspaces; not visible to torch.cuda memory statistics."""
NCCL_BYTES_PAIR = 544e6
"""NCCL buffers of one communicator of 2 ranks, A100 (NVIDIA/nccl#964)."""
NCCL_BYTES_GROUP = 688e6
"""NCCL buffers of one communicator of more than 2 ranks, A100 (NVIDIA/nccl#964)."""
FRAGMENTATION_FRACTION = 0.08
"""Reserved/allocated - 1 for PyTorch's caching allocator in steady training. The published
fine-tuning rows put reserved 5-15% above allocated (shared/validation README-finetune.md);
0.08 is calibrated on the torchtitan peak-memory rows (docs/methodology/memory.md)."""
LOSS_BYTES_PER_LOGIT = {"unfused": 2 + 4 + 4, "fused": 4, "chunked": 2 + (4 + 4) / 8}
"""Live bytes per logit at the loss: bf16 logits, their fp32 upcast and its fp32 gradient
(unfused); one fp32 copy (Megatron's fused vocab-parallel cross-entropy, Korthikanti 2022 Sec.
4.1: 4·s·b·v/t); bf16 logits plus one of 8 fp32 chunks (torchtune CEWithChunkedOutputLoss)."""


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
    fragmentation_bytes: float
    host_bytes: float
    """Host RAM this GPU's process needs for offloaded states and activations."""
    stage: int
    """Pipeline rank this breakdown belongs to (the heaviest one)."""
    micro_batches_in_flight: float

    @property
    def allocated_bytes(self) -> float:
        """Peak of torch.cuda.max_memory_allocated()."""
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes
                + self.logits_bytes + self.transient_bytes)

    @property
    def reserved_bytes(self) -> float:
        """Peak of torch.cuda.max_memory_reserved()."""
        return self.allocated_bytes + self.fragmentation_bytes

    @property
    def overhead_bytes(self) -> float:
        return self.cuda_context_bytes + self.nccl_bytes + self.fragmentation_bytes

    @property
    def total_bytes(self) -> float:
        """What the process holds on the device (nvidia-smi), the quantity that must fit."""
        return self.allocated_bytes + self.overhead_bytes


UNBOUNDED_MICRO_BATCHES = 1 << 30


def micro_batches_per_step(job: Job, layout: Layout) -> int:
    """m = global batch / (micro-batch · dp); unbounded (a full pipeline) when no global batch is given."""
    if job.global_batch:
        return max(job.global_batch // (job.micro_batch * layout.dp), 1)
    return UNBOUNDED_MICRO_BATCHES


def in_flight_layers_fraction(layout: Layout, rank: int, num_micro: int) -> float:
    """Micro-batches of this rank's layers held at the peak.

    1F1B (Narayanan et al. 2021): rank r holds min(pp - r, m). Interleaved with v chunks: rank r
    holds 2·(pp - r - 1) + (v - 1)·pp + 1 chunks of L/(pp·v) layers (Megatron's warm-up count),
    which for r = 0 is Korthikanti's L·(1 + (pp - 1)/(pp·v)).
    """
    if layout.pp == 1:
        return 1.0
    if layout.vpp == 1:
        return float(min(layout.pp - rank, num_micro))
    chunks = 2 * (layout.pp - rank - 1) + (layout.vpp - 1) * layout.pp + 1
    return min(chunks, num_micro * layout.vpp) / layout.vpp


def communicator_count(layout: Layout) -> tuple[int, int]:
    """(pairs, groups): NCCL communicators of 2 ranks and of more, one per parallel axis in use."""
    pairs = groups = 0
    for degree in (layout.tp, layout.dp * layout.cp, layout.cp, layout.ep):
        if degree == 2:
            pairs += 1
        elif degree > 2:
            groups += 1
    if layout.pp > 1:
        pairs += 1
    return pairs, groups


def _activation_bytes(arch: Architecture, job: Job, layout: Layout, rank: int) -> tuple[float, float, float]:
    """(saved activations, one layer's full working set, in-flight micro-batches) for a rank."""
    counts = count_params(arch)
    stage = stage_params(arch, counts, layout, rank)
    dense = layer_activation_bytes(arch, job, layout, moe_layer=False, dropout=job.dropout)
    moe = layer_activation_bytes(arch, job, layout, moe_layer=True, dropout=job.dropout) if arch.moe else dense
    moe_layers = stage.layers - stage.dense_layers
    saved_stage = dense.saved_bytes * stage.dense_layers + moe.saved_bytes * moe_layers
    in_flight = in_flight_layers_fraction(layout, rank, micro_batches_per_step(job, layout))
    working = 0.0 if job.recompute == "none" else max(dense.full_bytes, moe.full_bytes if moe_layers else 0.0)
    saved = saved_stage * in_flight
    if job.activation_offload:
        per_layer = saved_stage / max(stage.layers, 1)
        saved = min(saved, 2 * per_layer)
    return saved, working, in_flight


def _logits_bytes(arch: Architecture, job: Job, layout: Layout) -> float:
    tokens = job.micro_batch * job.seq_len / layout.cp
    logits = tokens * arch.vocab / layout.tp * LOSS_BYTES_PER_LOGIT[job.loss]
    head_inputs = tokens * 2 * arch.hidden * job.compute_dtype_bytes
    if layout.sequence_parallel:
        head_inputs /= layout.tp
    return logits + head_inputs


def _transient_bytes(job: Job, layout: Layout, states: ModelStates, working: float, fb_live: float) -> float:
    """Working set at the peak beyond saved activations and logits.

    ZeRO-3/FSDP gathers the current and the prefetched unit (a layer, or the embedding/head) in the
    compute dtype (FSDP forward/backward prefetch); ZeRO-2/3 hold one unit's unsharded gradient
    before its reduce-scatter. Neither can exceed what sharding saved, so a higher stage never needs
    more memory than a lower one. The optimizer step's temporaries (torch AdamW foreach builds one
    copy of sqrt(v)) count only when they outgrow the freed activations.
    """
    shards = layout.dp * layout.cp
    gathered = grad_bucket = 0.0
    unit = states.largest_unit_params
    stored_bytes_per_param = states.unsharded_weight_bytes / max(states.local_params, 1.0)
    two_units = 2 * unit * stored_bytes_per_param
    if job.offload == "all":
        gathered = min(two_units, states.unsharded_weight_bytes)
    elif layout.zero == 3:
        gathered = min(two_units, states.unsharded_weight_bytes * (1 - 1 / shards))
    if layout.zero >= 2 and job.offload == "none":
        grad_bucket = min(unit, states.trainable_params * (1 - 1 / shards)) * job.compute_dtype_bytes
    step_temp = 0.0
    if job.optimizer == "adamw" and not job.optimizer_in_backward and job.offload == "none":
        divisor = shards if layout.zero >= 1 else 1
        step_temp = states.trainable_params / divisor * (2 if job.precision == "bf16-true" else 4)
    return max(working + gathered + grad_bucket, step_temp - fb_live)


def rank_memory(arch: Architecture, job: Job, layout: Layout, rank: int) -> MemoryBreakdown:
    """Peak memory of one GPU on pipeline rank `rank`."""
    states = model_states(arch, job, layout, rank)
    activations, working, in_flight = _activation_bytes(arch, job, layout, rank)
    logits = _logits_bytes(arch, job, layout) if rank == layout.pp - 1 else 0.0
    host = states.host_bytes
    if job.activation_offload:
        full, _, _ = _activation_bytes(arch, replace(job, activation_offload=False), layout, rank)
        host += max(full - activations, 0.0)
    transient = _transient_bytes(job, layout, states, working, activations + logits)
    allocated = (states.weights_bytes + states.gradients_bytes + states.optimizer_bytes + activations + logits
                 + transient)
    pairs, groups = communicator_count(layout)
    return MemoryBreakdown(
        weights_bytes=states.weights_bytes,
        gradients_bytes=states.gradients_bytes,
        optimizer_bytes=states.optimizer_bytes,
        activations_bytes=activations,
        logits_bytes=logits,
        transient_bytes=transient,
        cuda_context_bytes=CUDA_CONTEXT_BYTES,
        nccl_bytes=pairs * NCCL_BYTES_PAIR + groups * NCCL_BYTES_GROUP,
        fragmentation_bytes=allocated * FRAGMENTATION_FRACTION,
        host_bytes=host,
        stage=rank,
        micro_batches_in_flight=in_flight,
    )


def peak_memory(arch: Architecture, job: Job, layout: Layout) -> MemoryBreakdown:
    """The heaviest pipeline rank's peak memory (all ranks are evaluated)."""
    ranks = range(layout.pp)
    return max((rank_memory(arch, job, layout, r) for r in ranks), key=lambda m: m.total_bytes)


def fits(breakdown: MemoryBreakdown, gpu: Gpu, ecc: bool | None = None) -> bool:
    return breakdown.total_bytes <= gpu.usable_bytes(ecc)
