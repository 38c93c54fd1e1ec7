"""Framework buffers that some stacks hold and others do not, each a Job switch.

- main_grads_fp32 (Megatron-LM / NeMo): gradients accumulate in a contiguous fp32 main-grad buffer
  (`accumulate_allreduce_grads_in_fp32`, which Megatron-LM's arguments.py turns on for bf16), so
  gradients take 4 B/param instead of 2; with the distributed optimizer the buffer is still whole
  on every rank (the optimizer states, not the grads, are sharded: ZeRO-1).
- ddp_grad_copy (PyTorch DDP with gradient_as_bucket_view=False, its default): the all-reduce
  buckets are a second copy of every gradient ("gradient_as_bucket_view ... the saved memory size
  will be equal to the total gradients size", torch.nn.parallel.DistributedDataParallel docs).
  Only with zero 0 and dp > 1.
- fsdp_prefetch (FSDP/FSDP2): units all-gathered ahead of the one computing; FSDP2's default
  forward prefetch is 1 (torch.distributed.fsdp.fully_shard, implicit prefetching), so the
  all-gather working set is (1 + prefetch) units.
- fsdp_flat_params (FSDP1, FullyShardedDataParallel with use_orig_params=True, which Lightning Fabric's
  FSDPStrategy sets by default and lit-gpt's 2023 finetune scripts ran): each wrapped unit is one flat
  parameter that requires a gradient when any of its parameters does, so a LoRA block's gradient covers
  every element of the block, frozen base included, and the root unit (embedding, final norm, head, no
  adapter) gets none. After a synchronised backward the unit keeps its reduce-scattered shard, 1/dp of
  the unit; under no_sync() (Fabric's no_backward_sync, which lit-gpt enters for every micro-batch but
  the last of an optimizer step) the gradient is not reduce-scattered and the unit keeps it unsharded
  until the step ("FSDP will accumulate the full model gradients (instead of gradient shards) until the
  eventual sync", FullyShardedDataParallel.no_sync docs). Per GPU, with F the elements of the units that
  hold a trainable parameter (this GPU's tp/pp share) and g the gradient bytes per element:
      accumulating (global batch > micro_batch · dp):  F · g
      otherwise:                                       F · g / (dp · cp)
  in place of the trainable parameters' sharded gradients. Checked exactly on a CPU with gloo, torch 2.13
  (tests/validation/test_fsdp_flat_grads.py): two LoRA blocks of 2,368 elements each on 2 ranks hold a
  2,368-element gradient per block after a no_sync backward and a 1,184-element one after a synchronised
  backward, kept through optimizer.step() and zero_grad() until the next forward.
  Gathered parameters: FSDP1 does not reshard the root unit after forward ("Do not free the root's
  parameters in the post-forward for FULL_SHARD", torch/distributed/fsdp/_runtime_utils.py
  _post_forward_reshard), so with the blocks wrapped (lit-gpt's auto_wrap_policy={Block}) the root unit
  (embedding, final norm and head together) stays gathered from the forward through the backward, beside
  the block computing and the one prefetched: root + (1 + prefetch) blocks, where FSDP2 and rigplan's
  default count (1 + prefetch) of the largest unit. The block's new unsharded flat gradient (its backward's
  output, before it is reduce-scattered or added to the one held under no_sync) is one block of g bytes
  per element, frozen elements included, where rigplan's default counts only trainable elements.
- fp8_transpose_cache (TransformerEngine fp8 on Hopper): wgrad/dgrad GEMMs need the fp8 weight
  transposed, which TE caches beside the fp8 copy: +1 B/param of weights.
- fused_swiglu (Megatron-Core bias_swiglu / TE): the fused SwiGLU saves its 2f input and
  recomputes silu(gate)·up in backward; with fc2's f input, 3f instead of 4f per token.
- nvls_buffers (NCCL 2.18-2.19 on NVSwitch systems, NVLS on by default): each communicator over
  more than 2 GPUs of a node allocates nChannels·2·(buffSize + align)·nHeads, with 16 NVLS
  channels on Hopper, the 4 MiB SIMPLE buffer and nHeads = local ranks: 1 GiB per communicator
  at 8 GPUs (NVIDIA/nccl src/transport/nvls.cc, ncclNvlsSetup). NCCL 2.20+ sizes the buffer by
  NCCL_NVLS_CHUNKSIZE (128 KiB x 8 steps), a quarter of that; NCCL_NVLS_ENABLE=0 removes it.

Left out: FSDP1's per-parameter gradients of a unit before they are concatenated into the flat gradient
(one unit, transient), TP/SP userbuffer communication overlap (Megatron --tp-comm-overlap), DeepSpeed's
contiguous gradient and bucket buffers (set by its reduce_bucket_size), fp8 scale/amax histories.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate.arrays import scalar_or_array as _out
from rigplan.estimate.params import count_params
from rigplan.estimate.states import (
    ModelStates,
    expert_tp_of,
    grad_bytes_per_param,
    lora_layer_params,
    stage_layer_counts,
)
from rigplan.units import MiB

Num = Any

NVLS_CHANNELS = 16
"""NCCL_NVLS_NCHANNELS default on Hopper (NCCL 2.18 env documentation)."""
NVLS_BUFFER_BYTES = 4 * MiB
"""NCCL_BUFFSIZE, the SIMPLE protocol buffer (default 4 MiB)."""
NVLINK_NODE_GPUS = 8
"""GPUs behind one NVSwitch domain in HGX/DGX nodes (nHeads of an intra-node NVLS communicator)."""


def ddp_grad_copy_bytes(job: Job, layout: Any, trainable_params: Num, grad_bytes_per_param: float) -> Num:
    """Second copy of the gradients in DDP's buckets (zero 0, dp·cp > 1, gradient_as_bucket_view off)."""
    if not job.ddp_grad_copy:
        return 0.0
    replicated = (xp.asarray(layout.zero) == 0) & (xp.asarray(layout.dp * layout.cp) > 1)
    return _out(xp.where(replicated, trainable_params * grad_bytes_per_param, 0.0))


def nvls_bytes(job: Job, layout: Any) -> Num:
    """NVLS buffers of the communicators over more than 2 GPUs of a node."""
    if not job.nvls_buffers:
        return 0.0
    total: Num = 0.0
    for degree in (layout.tp, layout.dp * layout.cp, layout.cp, layout.ep):
        local = xp.minimum(xp.asarray(degree), NVLINK_NODE_GPUS)
        total = total + xp.where(local > 2, NVLS_CHANNELS * 2 * NVLS_BUFFER_BYTES * local, 0.0)
    return _out(total)


def fsdp_flat_grad_elements(arch: Architecture, job: Job, layout: Any, rank: Num, states: ModelStates) -> Num:
    """F: elements of this GPU's FSDP1 units that hold a trainable parameter (before sharding).

    Full training: every parameter. LoRA/QLoRA (adapters in the transformer blocks): the blocks whole, frozen
    base included, plus their adapters; the root unit (embedding, final norm, head) holds no adapter.
    """
    if not job.is_peft:
        return states.local_params
    counts = count_params(arch)
    layers, dense_layers = stage_layer_counts(arch, layout, rank)
    elements = counts.dense_layer_mean * dense_layers / layout.tp
    if counts.moe_layer is not None:
        moe_layers = layers - dense_layers
        experts = counts.moe_layer.experts
        elements = elements + moe_layers * ((counts.moe_layer.total - experts) / layout.tp
                                            + experts / (layout.ep * expert_tp_of(layout)))
    return _out(elements + states.trainable_params)


def fsdp_flat_grad_extra_bytes(arch: Architecture, job: Job, layout: Any, rank: Num, states: ModelStates) -> Num:
    """Gradient bytes FSDP1's flat parameters hold beyond the trainable parameters' own gradients (module
    docstring): F·g unsharded while accumulating under no_sync, F·g/(dp·cp) otherwise; ZeRO-3 only."""
    if not job.fsdp_flat_params:
        return 0.0
    shards = xp.asarray(layout.dp * layout.cp)
    accumulating = xp.asarray(job.global_batch) > job.micro_batch * xp.asarray(layout.dp)
    flat = fsdp_flat_grad_elements(arch, job, layout, rank, states) * grad_bytes_per_param(job)
    held = xp.where(accumulating, flat, flat / shards)
    extra = xp.maximum(held - states.gradients_bytes, 0.0)
    return _out(xp.where(xp.asarray(layout.zero) == 3, extra, 0.0))


def fsdp1_block_params(arch: Architecture, job: Job, layout: Any) -> Num:
    """Elements of the largest wrapped block on one GPU (its tp/ep share, LoRA adapters included): one FSDP1
    unit."""
    counts = count_params(arch)
    block = counts.largest_dense_layer / layout.tp
    if counts.moe_layer is not None:
        experts = counts.moe_layer.experts
        block = xp.maximum(block, (counts.moe_layer.total - experts) / layout.tp
                           + experts / (layout.ep * expert_tp_of(layout)))
    if job.is_peft:
        dense, _ = lora_layer_params(arch, job, moe_layer=False)
        own, routed = lora_layer_params(arch, job, moe_layer=counts.moe_layer is not None)
        block = block + xp.maximum(dense, own) / layout.tp + routed / (layout.ep * expert_tp_of(layout))
    return _out(block)


def fsdp1_gathered_params(arch: Architecture, job: Job, layout: Any, rank: Num) -> Num:
    """Parameters gathered at once under FSDP1 with the blocks wrapped: the root unit (this rank's embedding,
    final norm and head, held from forward through backward) plus (1 + prefetch) of the largest block."""
    counts = count_params(arch)
    rank_a = xp.asarray(rank)
    last = rank_a == xp.asarray(layout.pp) - 1
    root = xp.where(rank_a == 0, counts.embedding, 0) + xp.where(last, counts.final_norm + counts.lm_head, 0)
    return _out(root / layout.tp + (1 + job.fsdp_prefetch) * fsdp1_block_params(arch, job, layout))
