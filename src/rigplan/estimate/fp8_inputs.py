"""Saved linear inputs under Transformer Engine fp8: the quantized copy, not the bf16 tensor.

Under fp8 autocast, Transformer Engine's Linear, LayerNormLinear and GroupedLinear quantize their input
for the forward GEMM and save that quantized tensor for the weight-gradient GEMM, keeping only the
usage backward needs (transformer_engine/pytorch/module/linear.py: ``inputmat.update_usage(rowwise_usage=False,
columnwise_usage=True)`` then ``saved_inputmat = inputmat``; layernorm_linear.py: ``ln_out.update_usage(
rowwise_usage=False)``, the norm output saved quantized, beside the norm's bf16 input; grouped_linear.py:
the same for each expert's input). One fp8 byte per element either way: per-tensor scaling (delayed or
current) keeps the column-wise (transposed) copy, or the row-wise one where sequence parallelism
all-gathers it in backward (input_quantizer.set_usage(columnwise=False) when the quantizer supports only
row-wise all-gather), plus one fp32 scale per tensor (left out); MXFP8 keeps the column-wise data and one
E8M0 scale byte per 32 elements: 1 + 1/32 bytes. So each saved linear input costs q = FP8_INPUT_BYTES
(+ MXFP8_SCALE_BYTES) instead of p = 2 bytes.

The out-projection's input is the attention kernel's output, which the fused attention saves in bf16
itself. Megatron-Core marks linear_proj save_original_input (it then saves that bf16 tensor, no second
copy) when fp8_recipe is not 'delayed' (megatron/core/transformer/attention.py and
multi_latent_attention.py: set_save_original_input(self.linear_proj), Transformer Engine >= 2.6); under
delayed scaling the fp8 copy is saved beside it: +1 byte per element.

Only the 'fused' kernel stack (Megatron-Core / NeMo on Transformer Engine). torchao's Float8Linear
(torchtitan) saves the high-precision input and weight (torchao/float8/float8_linear.py,
matmul_with_hp_or_float8_args.forward: ctx.save_for_backward(input_hp, weight_hp_t)) and quantizes again
in backward, so its saved set stays at p. Left out: Megatron's save_original_input under layernorm
recompute (the linears after a recomputed norm save a bf16 reference to a freed tensor; rigplan already
drops that norm output) and the fp8 amax history.
"""

from __future__ import annotations

from rigplan.domain.job import Job

FP8_INPUT_BYTES = 1.0
"""One e4m3 byte per element of a quantized GEMM input (Transformer Engine Float8Tensor / MXFP8Tensor data)."""
MXFP8_SCALE_BYTES = 1 / 32
"""MXFP8: one E8M0 scale byte per block of 32 elements (OCP Microscaling spec v1.0; Transformer Engine
MXFP8Quantizer, MXFP8_BLOCK_SCALING_SIZE = 32)."""
BLOCKWISE_ACTIVATION_SCALE_BYTES = 4 / 128
"""Block-scaled fp8 (Float8BlockScaling) activations and gradients: one fp32 scale per 1 x 128 elements (Transformer
Engine, 'FP8 Blockwise Scaling': fp32 block scales, 1-D blocks of 128 for inputs and gradients)."""
BLOCKWISE_WEIGHT_SCALE_BYTES = 4 / (128 * 128)
"""Its weights: one fp32 scale per 128 x 128 block (2-D blocks, so the transposed copy shares the scales' values)."""
NVFP4_DATA_BYTES = 0.5
"""NVFP4: two E2M1 values per byte."""
NVFP4_ACTIVATION_SCALE_BYTES = 1 / 16
"""NVFP4 activations and gradients: one E4M3 scale byte per 16 elements along a row (1D blocks), beside one fp32
scale per tensor (left out) (Transformer Engine NVFP4BlockScaling, NVFP4_BLOCK_SCALING_SIZE = 16; NVIDIA,
'Pretraining Large Language Models with NVFP4', arXiv 2509.25149, 2025)."""
NVFP4_WEIGHT_SCALE_BYTES = 1 / 256
"""NVFP4 weights: one E4M3 scale byte per 16 x 16 block (2D scaling, so the transposed copy shares the scales'
values; the same sources)."""


def quantized_bytes(job: Job, *, weight: bool = False) -> float:
    """Bytes per element of one quantized copy of a GEMM operand under the job's fp8 recipe: 1 (per-tensor
    scaling), 1 + 1/32 (MXFP8; block-scaled fp8's activations and gradients), 1 + 1/4096 (block-scaled fp8's
    weights), 0.5 + 1/16 for NVFP4 activations and gradients, 0.5 + 1/256 for NVFP4 weights."""
    if job.fp8_recipe == "nvfp4":
        return NVFP4_DATA_BYTES + (NVFP4_WEIGHT_SCALE_BYTES if weight else NVFP4_ACTIVATION_SCALE_BYTES)
    if job.fp8_recipe == "blockwise":
        return FP8_INPUT_BYTES + (BLOCKWISE_WEIGHT_SCALE_BYTES if weight else BLOCKWISE_ACTIVATION_SCALE_BYTES)
    return FP8_INPUT_BYTES + (MXFP8_SCALE_BYTES if job.fp8_recipe == "mxfp8" else 0.0)


def applies(job: Job) -> bool:
    """Whether saved linear inputs are Transformer Engine's quantized copies: fp8 on the fused kernel stack."""
    return job.precision == "fp8" and job.kernels == "fused"


def saved_input_bytes(job: Job) -> float:
    """Bytes per element of one saved linear input: q (fp8 under Transformer Engine), else the compute dtype p."""
    if not applies(job):
        return float(job.compute_dtype_bytes)
    return quantized_bytes(job)


def out_proj_extra_bytes(job: Job) -> float:
    """Bytes per element linear_proj saves beside the attention kernel's bf16 output: its fp8 copy under
    delayed scaling, none otherwise (Megatron's save_original_input)."""
    return FP8_INPUT_BYTES if applies(job) and job.fp8_recipe == "delayed" else 0.0
