"""What lit-gpt's own modules (2023) save for backward, per token and layer (kernels='litgpt').

lit-gpt (Lightning-AI/lit-gpt, late 2023: lit_gpt/model.py, lit_gpt/lora.py, lit_gpt/rmsnorm.py,
finetune/lora.py) writes its blocks in plain PyTorch, but three of its choices make it save more than
rigplan's eager set, and a frozen base saves less. Per token and layer, p bytes per element, q_w = a·d,
LoRA targets T (lit-gpt's to_query/to_key/to_value/to_projection/to_mlp), trainable = full training:

    norm       RMSNorm computes in fp32 (x.float() before x*x): the fp32 input 4·h + rsqrt 4 B, and with a
               trainable weight its fp32 normalised output 4·h too; LayerNorm: the p·h input + fp32 mean, rstd
               (8 B); a parallel-residual block whose two norms read the same input saves it twice here
               (GPT-NeoX / StableLM: rigplan has no parallel-residual flag), about 2·h high
    qkv        one merged linear; v stays a view of its output, so with MHA the whole p·(q_w + 2·kv_w) output
               is held, plus the roped q and k (torch.cat copies): p·5·q_w; GQA expands k and v to a heads
               and reshapes them into copies: p·3·q_w
    core       SDPA (flash): its output p·q_w and the fp32 log-sum-exp 4·a
    linears    a trainable linear saves its input; a frozen one saves nothing (proj's input, the attention
               output reshaped to (B, T, h), is counted as a copy: it is one on CPU, where SDPA writes
               (B, heads, T, d); where the kernel writes (B, T, heads, d) it is a view, 2·h less)
    LoRA       each adapted linear's branch saves dropout(x) and its bool mask, (p + 1)·d_in (finetune/lora.py's
               lora_dropout = 0.05), one branch for the merged qkv; when q, k and v are not all adapted,
               zero_pad's index_copy saves its source, p·(widths of the adapted ones)
    MLP        LLaMAMLP proj(silu(fc_1(x)) * fc_2(x)): silu's input, its output and fc_2's output, 3·p·f,
               plus the product p·f when proj is trainable; GptNeoxMLP: gelu's input p·f, plus its output when
               proj is trainable

Measured: benchmarks/litgpt_lora_peak.py rebuilds these modules at full size on a GPU (H200, torch 2.11):
Llama 2 7B LoRA (q, v; r 8) at 1,304 tokens saves 43.2·h per token and layer and peaks at 21.45 GB
(micro-batch 1) and 29.05 GB (2), against lit-gpt's published 21.30 and 29.07 GB; with a bf16 RMSNorm
the peaks are 20.58 and 27.53 GB, so the 2023-10 runs had the fp32 norm. phi-1.5 and StableLM 3B save
29.1·h. tests/validation/test_litgpt_saved_tensors.py checks this count against the same modules on CPU.

Left out: recompute other than none (lit-gpt's single-device scripts do not checkpoint; the general set
is used), tensor parallelism (lit-gpt has none), adapter and adapter-v2 methods, the tiny LoRA A outputs.
"""

from __future__ import annotations

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture

LORA_DROPOUT_MASK_BYTES = 1
"""torch's native_dropout on CUDA keeps a bool mask: 1 byte per element."""
FP32_BYTES = 4
LSE_BYTES = 4
"""Flash attention's fp32 log-sum-exp per query and head."""


def _lora_branch(p: int, width: int) -> float:
    """A LoRA branch's saved input: dropout(x) in p bytes and its bool mask."""
    return (p + LORA_DROPOUT_MASK_BYTES) * width


def litgpt_token_bytes(arch: Architecture, job: Job) -> float:
    """Bytes one lit-gpt block saves per token for backward (formula in the module docstring)."""
    p = job.compute_dtype_bytes
    h = arch.hidden
    a = arch.num_heads
    q_w = a * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    f = arch.ffn
    trainable = not job.is_peft
    targets = set(job.lora_targets) if job.is_peft else set()

    if arch.norm == "rmsnorm":
        norm = FP32_BYTES * h + FP32_BYTES + (FP32_BYTES * h if trainable else 0)
    else:
        norm = p * h + 2 * FP32_BYTES
    total: float = arch.norms_per_layer * norm

    adapted = [t for t in ("q", "k", "v") if t in targets]
    if trainable:
        total += p * h  # the merged qkv linear's input
    elif adapted:
        total += _lora_branch(p, h)
        if len(adapted) < 3:
            total += p * sum(q_w if t == "q" else kv_w for t in adapted)
    total += p * 5 * q_w if kv_w == q_w else p * 3 * q_w
    total += p * q_w + LSE_BYTES * a
    if trainable:
        total += p * q_w  # proj's input: the attention output reshaped to (B, T, h), a copy
    if "o" in targets:
        total += _lora_branch(p, q_w)

    shared_input = arch.norms_per_layer == 1  # one norm output feeds qkv and the MLP
    if arch.mlp == "gated":
        total += p * 3 * f
        if trainable:
            total += p * f + (0 if shared_input else p * h)
        total += sum(_lora_branch(p, h) for t in ("gate", "up") if t in targets)
    else:
        total += p * f
        if trainable:
            total += p * f + (0 if shared_input else p * h)
        total += _lora_branch(p, h) if "up" in targets else 0.0
    if "down" in targets:
        total += _lora_branch(p, f)
    return float(total)
