"""Memory peaks outside the training step: loading the checkpoint and quantizing the base at load.

torch.cuda.max_memory_allocated() and max_memory_reserved() count from process start, and the
caching allocator keeps what it reserved while loading, so a run's reported peak is

    max(load/setup peak, training-step peak)

Load peak on one GPU (before the optimizer allocates its states: torch.optim creates them lazily
at the first step(), so they are part of the step, not of loading):

    sharded load   W                                          each rank reads its own shard
                                                              (torch.distributed.checkpoint,
                                                              Megatron dist-ckpt): never above the step
    full load      W + P_local · c                            the full checkpoint (this GPU's tp/pp
                                                              share, in the compute dtype c) is
                                                              materialised on every rank before FSDP
                                                              shards it (FSDP1 FULL_STATE_DICT load,
                                                              lit-gpt 2023, torchtune 2024-04 recipes)
    QLoRA          W + workspace(n_max)                       each linear is quantized on the GPU as
                                                              it is created or loaded

Quantization workspace for a tensor of n elements:
  - bitsandbytes quantize_4bit (CUDA kernel): the bf16/fp16 source on the GPU, 2·n bytes, written
    straight into the packed 4-bit output (bitsandbytes/functional.py quantize_4bit).
  - torchao NF4Tensor before chunking (2024-H1, used by torchtune's QLoRA recipes): to_nf4 casts to
    bf16 (2n), scales the blocks (2n) and quantize_tensor_nearest builds (value - nf4).abs() over the
    16 NF4 levels: two (n, 16) bf16 tensors live together, 64n. Total 68·n bytes
    (torchao/dtypes/nf4tensor.py, convert_to_norm_float_weight / quantize_tensor_nearest).
Reserved at load: the caching allocator does not merge freed blocks of a smaller size class into a
larger request, so the workspaces of the two linear shapes quantized in turn (attention projection,
then MLP) stay reserved side by side until training reuses them (PyTorch CUDACachingAllocator:
cached blocks are released only when a cudaMalloc fails or empty_cache() is called).

Left out: CPU-side loading (host RAM), checkpoints stored in a dtype other than the compute dtype,
optimizer-state loading when resuming (the states are then part of the load peak as well).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigplan.domain.job import LORA_TARGET_NAMES, Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate import linear_attention
from rigplan.estimate.arrays import scalar_or_array as _out
from rigplan.estimate.params import attention_linears, dense_mlp_linears
from rigplan.estimate.states import ModelStates

Num = Any

NF4_WORKSPACE_BYTES_PER_ELEMENT = {"bitsandbytes": 2.0, "bitsandbytes-legacy": 2.0, "torchao-unchunked": 68.0}
"""Transient bytes per element of the tensor being quantized (module docstring)."""


def quantized_linear_sizes(arch: Architecture, tp: Num) -> tuple[Num, Num]:
    """(largest, attention) linear-layer element counts on one GPU (after the tp split)."""
    attention = max(lin.d_in * lin.d_out for lin in attention_linears(arch))
    largest = max([attention] + [lin.d_in * lin.d_out for lin in dense_mlp_linears(arch)])
    if arch.linear_attention is not None:  # a linear-attention mixer's linears, as transformers splits them
        column, row = linear_attention.lora_linears(arch, (*LORA_TARGET_NAMES,), transformers_modules=True)
        largest = max([largest] + [d_in * d_out for d_in, d_out in column + row])
    return largest / xp.asarray(tp), attention / xp.asarray(tp)


def dequantized_copy_bytes(arch: Architecture, job: Job, layout: Any) -> Num:
    """QLoRA: the bf16 copy of the linear being computed (forward and backward).

    bitsandbytes MatMul4Bit and torchao linear_nf4 both run F.linear on weight dequantized to the
    input dtype; the copy lives for one matmul, so the largest linear sets the working set.
    """
    if job.method != "qlora":
        return 0.0
    largest, _ = quantized_linear_sizes(arch, layout.tp)
    return _out(largest * job.compute_dtype_bytes)


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadPeak:
    allocated_bytes: Num
    """Peak allocated while loading (torch.cuda.max_memory_allocated during setup)."""
    reserved_extra_bytes: Num
    """Blocks kept reserved at load beyond the allocated peak (a second quantization size class)."""


def load_peak(arch: Architecture, job: Job, layout: Any, states: ModelStates) -> LoadPeak:
    """Peak bytes on one GPU while the checkpoint is loaded (formulas in the module docstring)."""
    weights = states.weights_bytes
    allocated: Num = weights
    extra: Num = 0.0
    if job.checkpoint_load == "full":
        checkpoint_dtype_bytes = job.compute_dtype_bytes
        full_copy = states.local_params * checkpoint_dtype_bytes
        sharded = xp.asarray(layout.zero) == 3
        allocated = weights + xp.where(sharded, full_copy, 0.0)
    if job.method == "qlora":
        largest, attention = quantized_linear_sizes(arch, layout.tp)
        per_element = NF4_WORKSPACE_BYTES_PER_ELEMENT[job.nf4_quantizer]
        allocated = xp.maximum(allocated, weights + largest * per_element)
        extra = xp.where(attention < largest, attention * per_element, 0.0)
    return LoadPeak(allocated_bytes=_out(allocated), reserved_extra_bytes=_out(extra))
