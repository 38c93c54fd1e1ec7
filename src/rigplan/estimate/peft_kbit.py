"""What a QLoRA layer saves and moves when peft prepared it for k-bit training (kernels='hf', kbit_fp32_upcast).

peft's prepare_model_for_kbit_training (peft/utils/other.py) casts every weight that is not 4-bit to fp32:
embeddings, norms, LM head. The hidden states then stay fp32 through every layer, and bitsandbytes' Linear4bit
casts its input to the bf16 compute dtype and its output back to the input's dtype (bitsandbytes/nn/modules.py,
Linear4bit.forward), so the projections return fp32 too. Per token and dense layer, with LoRA dropout (the
recipes' 0.05), a = heads, d = head dim, q_w = a·d, kv_w = kv_heads·d, f = ffn, r = LoRA rank:

    norms      2·(4·h + 4): the fp32 input saved by pow and mul and the fp32 rsqrt (a frozen norm weight keeps
               no normalized copy); LayerNorm 4·h + 8
    adapters   per adapted linear d_in·(c + 1) + c·r: the dropout output lora_A saves (c = 4 in fp32; under
               torch.autocast lora_A saves its bf16 cast, c = 2), its 1-byte CUDA mask, and lora_A's output
    MLP        12·f gated (gate, up and silu outputs, fp32 from the 4-bit linears), 4·f plain
    attention  under autocast SDPA casts q, k, v to bf16 and a flash kernel runs: 2·(2·q_w + 2·kv_w) + 4·a.
               Without autocast q, k, v reach SDPA in fp32, which no flash kernel takes: PyTorch's
               memory-efficient kernel runs when kv_heads = a (4·(2·q_w + 2·kv_w) + 4·a), and under GQA, which
               that kernel does not take (transformers passes enable_gqa), the math path does: the scaled q,
               k and v expanded to a heads and the fp32 probabilities, 4·(3·q_w + a·s), its output not kept
    q/k norm   Qwen3's per-head RMSNorm on fp32 q and k: 4·(q_w + kv_w) + 4·(a + kv_heads)

Measured exactly with saved_tensors_hooks (rigplan.measure.saved_tensors) on an H200 (torch 2.11, transformers
5.17, peft 0.21, bitsandbytes 0.50; docs/measurements/h200-2026-12/qlora_second.json): Llama (GQA) and Qwen2
(MHA) layers, LoRA on q,v and on every linear, with and without autocast, match to the byte but for the
autocast weight casts of the adapters (r·(d_in + d_out)·2 bytes per adapter and layer, not per token; left out).
Without autocast a QLoRA layer of Llama 3.1 8B at 4,096 tokens saves 4.4x what rigplan counted before (the
probabilities alone 2.1 GB); the Hugging Face Trainer's bf16=True runs under autocast.
Left out: LoRA dropout 0 (each adapter then reads the shared fp32 input instead of its own copy), eager
attention and padding masks (transformers then expands k and v itself and the memory-efficient kernel runs),
MoE and MLA layers' saved bytes (the general count is used; an MoE layer's traffic is moe_layer_kbit_traffic's),
and models with linear-attention layers (the general count and no k-bit traffic).

The same fp32 layer moves more bytes than the bf16 element-wise count of estimate.elementwise (kbit_traffic:
casts, adapters, fp32 activation, per-pass dequantization), which estimate.stage_time adds to the step.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import peft_experts
from rigplan.estimate.params import mlp_lora_shapes

Num = Any

FP32_BYTES = 4
CUDA_MASK_BYTES = 1


def applies(arch: Architecture, job: Job, moe_layer: bool) -> bool:
    """A dense, non-MLA layer of a peft-prepared QLoRA model on Hugging Face modules with SDPA attention, in a model
    without linear-attention layers (whose mixers' fp32 path is not modelled: the general count applies there)."""
    return (job.kernels == "hf" and job.method == "qlora" and job.kbit_fp32_upcast and not moe_layer
            and arch.mla is None and job.attention != "eager" and arch.linear_attention is None)


def adapted_targets(arch: Architecture, job: Job) -> set[str]:
    """The adapted linears, fused projections merged: one adapter on qkv_proj ('q'), one on gate_up_proj ('gate'); the
    MLP ones only where they reach nn.Linear modules (peft_experts.module_mlp_targets)."""
    targets = set(peft_experts.module_mlp_targets(arch, job))
    if arch.fused_projections:
        merged = ({"q"} if targets & {"q", "k", "v"} else set()) | ({"gate"} if targets & {"gate", "up"} else set())
        targets = merged | (targets & {"o", "down"})
    return targets


def _widths(arch: Architecture) -> dict[str, tuple[int, int]]:
    """(input, output) width of each projection; 'q' and 'gate' are the fused ones where the model fuses them."""
    h = arch.hidden
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    f = arch.ffn
    fused = arch.fused_projections
    q_out = 2 * q_w if arch.attention_output_gate else q_w  # q_proj also produces the output gate (Qwen3-Next)
    return {"q": (h, q_out + 2 * kv_w if fused else q_out), "k": (h, kv_w), "v": (h, kv_w), "o": (q_w, h),
            "gate": (h, 2 * f if fused else f), "up": (h, f), "down": (f, h)}


def adapter_inputs(arch: Architecture, job: Job) -> tuple[list[int], list[int]]:
    """Input widths of the adapted linears: (column-parallel ones, row-parallel ones), fused projections merged."""
    widths = _widths(arch)
    targets = sorted(adapted_targets(arch, job))
    return ([widths[t][0] for t in targets if t not in ("o", "down")],
            [widths[t][0] for t in targets if t in ("o", "down")])


def kbit_layer_parts(arch: Architecture, job: Job, dropout: bool = True) -> tuple[float, float, float]:
    """Per token: (replicated under TP, split by TP, attention core) bytes of one layer (module docstring)."""
    h = arch.hidden
    a = arch.num_heads
    q_w = a * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    cast = job.compute_dtype_bytes if job.autocast else FP32_BYTES
    mask = CUDA_MASK_BYTES if dropout else 0
    norm = FP32_BYTES * h + (4 if arch.norm != "layernorm" else 8)
    column, row = adapter_inputs(arch, job)
    column_bytes = sum(width * (cast + mask) + cast * job.lora_rank for width in column)
    row_bytes = sum(width * (cast + mask) + cast * job.lora_rank for width in row)
    mlp = FP32_BYTES * (3 if arch.mlp == "gated" else 1) * arch.ffn
    if job.autocast:
        attention = job.compute_dtype_bytes * (2 * q_w + 2 * kv_w)
        core = 4.0 * a
    elif arch.kv_heads == a:
        attention = FP32_BYTES * (2 * q_w + 2 * kv_w)
        core = 4.0 * a
    else:
        attention = FP32_BYTES * 3 * q_w
        core = float(FP32_BYTES * a * job.seq_len)
    if arch.qk_norm:
        attention += FP32_BYTES * (q_w + kv_w) + 4 * (a + arch.kv_heads)
    return 2 * norm + column_bytes, attention + mlp + row_bytes, core


NF4_DEQUANT_BYTES_PER_PARAM = 0.5 + 2.0 + 0.25 / 8
"""bitsandbytes' dequantize_4bit, per base weight and pass: reads the packed 4-bit code (0.5 B), writes the bf16
weight the GEMM then reads (2 B), and reads the block constants (one 8-bit absmax per 64 weights plus one fp32 per
256 of those with double quantization, about 0.25/8 B; Dettmers et al. 2023, Sec. 3)."""


def _base_linears(arch: Architecture) -> list[tuple[int, int]]:
    """(input width, output width) of every base linear of a dense layer, each a Linear4bit of its own."""
    widths = _widths(arch)
    names = ["q", "o", "gate", "down"] if arch.fused_projections else ["q", "k", "v", "o", "gate", "up", "down"]
    if arch.mlp != "gated":
        names = [n for n in names if n != "up"]
    return [widths[n] for n in names]


def kbit_traffic(arch: Architecture, job: Job) -> tuple[float, float, float]:
    """What a peft-prepared QLoRA layer moves through HBM beyond rigplan's bf16 element-wise count, per forward
    pass: (bytes per token, bytes per layer independent of tokens, kernels per layer).

    Per token: each Linear4bit casts its fp32 input to bf16 and its bf16 output back (read 4 + write 2 per
    element each way: 6·(d_in + d_out)); each adapter's dropout over its fp32 input (read 4, write 4, 1-byte
    mask: 9·d_in), under autocast lora_A's cast of it to bf16 (6·d_in), the scaling multiply and the add into the
    fp32 result (autocast: 4 + 10 per d_out; fp32: 8 + 12); the gated MLP's silu and product in fp32 (20·f
    against the 10·f of the bf16 count). Per layer: each 4-bit weight dequantized (NF4_DEQUANT_BYTES_PER_PARAM).
    Kernels: cast in, dequantize and cast out per base linear; dropout, cast, lora_A, lora_B, scale and add per
    adapter. Backward moves about the same bytes once more (a cast's gradient is a cast, dropout's a masked
    copy), and a recomputed layer once more again; estimate.stage_time applies the passes.
    """
    linears = _base_linears(arch)
    casts = sum(6.0 * (d_in + d_out) for d_in, d_out in linears)
    widths = _widths(arch)
    targets = adapted_targets(arch, job)
    in_per_adapter = 9.0 + (6.0 if job.autocast else 0.0)
    out_per_adapter = 14.0 if job.autocast else 20.0
    adapters = sum(in_per_adapter * widths[t][0] + out_per_adapter * widths[t][1] for t in targets)
    activation = 10.0 * arch.ffn if arch.mlp == "gated" else 4.0 * arch.ffn
    weights = float(sum(d_in * d_out for d_in, d_out in linears)) * NF4_DEQUANT_BYTES_PER_PARAM
    kernels = 3.0 * len(linears) + 6.0 * len(targets)
    return casts + adapters + activation, weights, kernels


def moe_layer_kbit_traffic(arch: Architecture, job: Job, *, tokens: Num, copies: Num, experts_hit: Num,
                           quantized_experts: bool) -> tuple[Num, Num]:
    """kbit_traffic for an MoE layer of a peft-prepared QLoRA model on Hugging Face modules, per forward pass: (bytes,
    kernels) of the micro-batch's `tokens` and the routed `copies` (T·k, the busiest rank's share), with
    `experts_hit` experts reached. Its attention's Linear4bit modules and adapters as a dense layer's; where the
    experts are Linear4bit modules (transformers 4's per-expert nn.Linear, `quantized_experts`), each routed copy's
    three casts in and out and its adapters, the fp32 activation's extra 10·f, and each expert hit's three weights
    dequantized. transformers 5's unquantized experts (peft_experts.experts_left_unquantized) add nothing here."""
    assert arch.moe is not None
    widths = _widths(arch)
    attention = [widths[n] for n in (("q", "o") if arch.fused_projections else ("q", "k", "v", "o"))]
    targets = adapted_targets(arch, job)
    in_per_adapter = 9.0 + (6.0 if job.autocast else 0.0)
    out_per_adapter = 14.0 if job.autocast else 20.0
    per_token = sum(6.0 * (d_in + d_out) for d_in, d_out in attention) + sum(
        in_per_adapter * widths[t][0] + out_per_adapter * widths[t][1] for t in targets if t in ("q", "k", "v", "o"))
    kernels = 3.0 * len(attention) + 6.0 * len(targets & {"q", "k", "v", "o"})
    if not quantized_experts:
        return per_token * tokens, kernels
    h, f = arch.expert_hidden, arch.moe.expert_ffn
    experts = [(h, f), (h, f), (f, h)] if arch.mlp == "gated" else [(h, f), (f, h)]
    expert_targets = mlp_lora_shapes(arch, job.lora_targets, h, f)
    per_copy = (sum(6.0 * (d_in + d_out) for d_in, d_out in experts) + (10.0 if arch.mlp == "gated" else 4.0) * f
                + sum(in_per_adapter * d_in + out_per_adapter * d_out for d_in, d_out in expert_targets))
    dequantized = experts_hit * float(sum(d_in * d_out for d_in, d_out in experts)) * NF4_DEQUANT_BYTES_PER_PARAM
    kernels += experts_hit * (3.0 * len(experts) + 6.0 * len(expert_targets))
    return per_token * tokens + per_copy * copies + dequantized, kernels


def kbit_parts(arch: Architecture, job: Job, *, tokens: Num, ep: Num, load: Num) -> tuple[Num, ...] | None:
    """Where peft prepared the QLoRA model (applies), kbit_traffic's (bytes per token, bytes per layer, kernels) of a
    dense layer, then an MoE layer's (bytes, kernels) from moe_layer_kbit_traffic (0 for a dense model): a rank's
    tokens, its busiest expert rank's load·k routed copies each, and its E/ep experts reached by them
    (hf_experts.experts_hit); None elsewhere."""
    if not applies(arch, job, moe_layer=False):
        return None
    dense = kbit_traffic(arch, job)
    if arch.moe is None:
        return (*dense, 0.0, 0.0)
    from rigplan.estimate import hf_experts, peft_experts  # here: a dense model needs no MoE model

    moe = moe_layer_kbit_traffic(arch, job, tokens=tokens, copies=tokens * arch.moe.top_k * load,
                                 experts_hit=hf_experts.experts_hit(arch, tokens, ep),
                                 quantized_experts=not peft_experts.experts_left_unquantized(arch, job))
    return (*dense, *moe)
