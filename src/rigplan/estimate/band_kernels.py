"""Which attention kernels compute only a band of the key blocks: a sliding window's, or DeepSeek Sparse Attention's
selected keys. Kept apart from estimate.flops so that the memory estimators, which need the answer, stay free of
numpy."""

from __future__ import annotations

from rigplan.domain.job import Job

BAND_SKIPPING_KERNELS = ("fa2", "fa3", "cudnn")
"""Kernels that take a window and skip the key blocks outside it: FlashAttention-2 (window_size, flash-attn
2.3), FlashAttention-3, cuDNN fused attention (sliding_window_length, Transformer Engine window_size). PyTorch
SDPA has no window argument: a window reaches it as a dense mask, which its kernels apply to every block
(Hugging Face's sdpa path for Mistral and Gemma), and llm-foundry's Triton kernel has no window either."""


def skips_window_blocks(job: Job) -> bool:
    """Whether the attention kernel of this job computes only the band of a sliding window: flash attention
    with FlashAttention-2/3 or cuDNN, which is what a fused stack runs by default; eager stacks default to
    SDPA (estimate.efficiency), which does not."""
    if job.attention != "flash":
        return False
    kernel = job.attention_kernel or ("cudnn" if job.kernels == "fused" else "sdpa")
    return kernel in BAND_SKIPPING_KERNELS
