"""What torchtune's own modules save for backward, per token and layer (kernels='torchtune').

torchtune (pytorch/torchtune) builds its Llama-family models from plain PyTorch modules; three of them save
more than rigplan's eager set, and a frozen base saves less. Per token and layer, p bytes per element,
q_w = a·d, kv_w = kv_heads·d, LoRA targets T (lora_attn_modules, apply_lora_to_mlp), trainable = full training:

    norm       RMSNorm (torchtune/modules/rms_norm.py @ 1b0918f) computes in fp32: x.float() is saved by pow and
               mul (4·h), rsqrt by mul (4 B); the bf16 input itself is saved by nothing; `x_normed * self.scale`
               saves x_normed (p·h) when the scale trains. LayerNorm: the p·h input + fp32 mean and rstd (8 B)
    inputs     a trainable q/k/v (or w1/w3) projection saves the norm's output, once for the three (p·h); a
               frozen one saves nothing; LoRALinear (torchtune/modules/peft/lora.py @ 031d89b) saves x for
               lora_a (the same tensor, once per block: its dropout is nn.Identity at the builders' 0.0) and
               lora_a's output for lora_b (p·r per adapted linear)
    core       MultiHeadAttention (torchtune/modules/attention.py @ 00c242b) ropes q and k in fp32
               (position_embeddings.py @ 01306df; the products save only the cos/sin cache, a buffer) and casts
               back, and expands k and v to num_heads, reshaping them into copies under GQA; SDPA saves q, k, v
               and its output at a heads each, p·4·q_w, plus the fp32 log-sum-exp 4·a. The
               `.transpose(1, 2).contiguous()` before output_proj is a view where the kernel writes (b, s, heads,
               d), as CUDA's flash and memory-efficient kernels and torch's CPU flash kernel do
    MLP        FeedForward (feed_forward.py @ 1e30bc6) w2(silu(w1(x)) * w3(x)): silu's input, its output and
               w3's output, 3·p·f, plus the product p·f when w2 trains or is adapted

Measured: benchmarks/torchtune_saved_tensors.py rebuilds these modules from those files and counts what one
layer saves with saved_tensors_hooks (by storage); tests/validation/test_torchtune_saved_tensors.py checks
this count against it on CPU (MHA and GQA, full and LoRA on q,v or on every linear: exact). Llama 3.2 3B saves
45.4·h per token and layer in full training against the eager set's 34.7·h (Llama 2 7B: 45.5·h, 37.5·h); LoRA
on q and v 34.0·h (34.2·h), a frozen base saving less than the full-training set rigplan used before. The
torchtune README's Llama 3.2 3B packed run (4096 tokens, no checkpointing, no compile) measured 60.0 GiB active:
52.6 GiB predicted with the eager set, 59.6 GiB with this one.

Under full activation checkpointing (torchtune's checkpoint_wrapper on every TransformerSelfAttentionLayer,
non-reentrant) a layer keeps its input only and this count is the working set of the layer being recomputed.
Left out: torch.compile (Inductor fuses the norm and RoPE chains and chooses its own saved set: the eager set
is used), LoRA dropout > 0 (torchtune's builders before late 2024 defaulted to 0.05: each adapted linear then
saves its own dropout output and mask, (p + 1)·d_in, instead of the shared input), packed batches' per-sample
RoPE positions (a gathered cos/sin copy, 4·d per token and call), tensor parallelism's layout (the parts are
split as the general model splits them).
"""

from __future__ import annotations

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture

FP32_BYTES = 4
LSE_BYTES = 4
"""Flash attention's fp32 log-sum-exp per query and head."""
LAYERNORM_STATS_BYTES = 8
"""torch's native layer norm saves fp32 mean and rstd per row."""


def torchtune_token_parts(arch: Architecture, job: Job) -> tuple[float, float, float]:
    """(replicated under tp, split by tp, attention core) bytes one torchtune decoder layer saves per token
    (formula in the module docstring)."""
    p = job.compute_dtype_bytes
    h = arch.hidden
    a = arch.num_heads
    q_w = a * arch.dim_per_head
    f = arch.ffn
    trainable = not job.is_peft
    targets = set(job.lora_targets) if job.is_peft else set()
    rank = job.lora_rank

    if arch.norm == "rmsnorm":
        norm = FP32_BYTES * h + FP32_BYTES + (p * h if trainable else 0)
    else:
        norm = p * h + LAYERNORM_STATS_BYTES
    replicated = arch.norms_per_layer * norm
    attention_inputs = trainable or bool(targets & {"q", "k", "v"})
    mlp_inputs = trainable or bool(targets & {"gate", "up"})
    replicated += p * h * (int(attention_inputs) + int(mlp_inputs))
    split = p * rank * len(targets)  # lora_a outputs, saved by lora_b
    split += p * 4 * q_w  # q, k, v (expanded to a heads) and the output SDPA saves, which output_proj reads
    gated = arch.mlp == "gated"
    split += p * (3 if gated else 1) * f
    if trainable or "down" in targets:
        split += p * f
    return float(replicated), float(split), float(LSE_BYTES * a)


def torchtune_token_bytes(arch: Architecture, job: Job) -> float:
    """Bytes one torchtune decoder layer saves per token on one GPU without tensor parallelism."""
    return sum(torchtune_token_parts(arch, job))
