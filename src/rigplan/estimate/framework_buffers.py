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
- fp8_transpose_cache (TransformerEngine fp8 on Hopper): wgrad/dgrad GEMMs need the fp8 weight
  transposed, which TE caches beside the fp8 copy: +1 B/param of weights.
- fused_swiglu (Megatron-Core bias_swiglu / TE): the fused SwiGLU saves its 2f input and
  recomputes silu(gate)·up in backward; with fc2's f input, 3f instead of 4f per token.
- nvls_buffers (NCCL 2.18-2.19 on NVSwitch systems, NVLS on by default): each communicator over
  more than 2 GPUs of a node allocates nChannels·2·(buffSize + align)·nHeads, with 16 NVLS
  channels on Hopper, the 4 MiB SIMPLE buffer and nHeads = local ranks: 1 GiB per communicator
  at 8 GPUs (NVIDIA/nccl src/transport/nvls.cc, ncclNvlsSetup). NCCL 2.20+ sizes the buffer by
  NCCL_NVLS_CHUNKSIZE (128 KiB x 8 steps), a quarter of that; NCCL_NVLS_ENABLE=0 removes it.

Left out: TP/SP userbuffer communication overlap (Megatron --tp-comm-overlap), DeepSpeed's
contiguous gradient and bucket buffers (set by its reduce_bucket_size), fp8 scale/amax histories.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.estimate import arrays as xp
from rigplan.estimate.arrays import scalar_or_array as _out
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
