"""What LoRA changes in a layer's saved activations, per token, against full training (negative deltas): peft on
Hugging Face modules (peft_lora_token_bytes, dense and MoE layers) and the fused Megatron-Core / Transformer Engine
stack (fused_lora_token_bytes). Used by estimate.activations."""

from __future__ import annotations

from dataclasses import replace

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import fp8_inputs, peft_experts, peft_kbit
from rigplan.estimate.params import mlp_lora_shapes
from rigplan.estimate.token_activation import MASK_BYTES, TokenActivation, residual_bytes

PEFT_ADAPTER_BYTES = 4
"""peft keeps LoRA weights in fp32 over a bf16 base (LoraConfig autocast_adapter_dtype=True) and casts the
adapter's input to them (LoraLayer._cast_input_dtype), so lora_A saves an fp32 input."""
PEFT_LORA_DROPOUT = True
"""LoRA dropout before lora_A, as the fine-tuning recipes set it (TRL and axolotl examples: 0.05; peft's own
default is 0.0): CUDA's native_dropout saves a 1-byte mask per element."""


def peft_lora_token_bytes(arch: Architecture, job: Job, moe_layer: bool = False) -> TokenActivation:
    """Per token: Hugging Face modules under peft LoRA/QLoRA minus the full-training set (a negative delta).

    A frozen base saves less: the weight multiply of a frozen RMSNorm keeps no normalized copy (r·h per
    norm), a frozen linear keeps no input (the qkv and gate/up input h, the down input f; the output
    projection's input stays, the attention kernel saves it as its output), and a frozen q/k norm keeps no
    bf16 result. Each adapted linear adds its adapter's branch: the fp32 input lora_A saves (4·d_in), the
    dropout mask (1·d_in) and lora_A's fp32 output that lora_B saves (4·r). Measured exactly with
    saved_tensors_hooks on an H200 and on a CPU for Llama, Qwen2, Qwen3 and Phi-3 modules with peft 0.21
    (docs/measurements/h200-2026-12/saved.json; tests/validation/test_hf_saved_tensors.py): the layers
    after the first match to the byte. The first layer saves less again (its input needs no gradient);
    left out.

    An MoE layer's frozen experts keep neither the routed copies' gathered input (h_e each) nor the down
    projection's (f_e), load·k copies (the frozen router keeps no input either: the norm output's h above);
    its shared experts keep no down input. peft's parameter adapters on the routed experts
    (estimate.peft_experts) give the wrapped linears' weights a gradient, so their inputs are saved again; their
    rebuilt weights are a per-layer term (peft_experts.layer_memory_bytes). transformers 4's per-expert modules
    (the eager loop) carry a module adapter on each routed copy. Measured on a CPU for transformers 5's Qwen3-MoE
    modules, full training, module LoRA and parameter adapters each within 1.5% a layer
    (tests/validation/test_hf_moe_lora.py).
    """
    p = job.compute_dtype_bytes
    r = residual_bytes(job)
    h = arch.hidden
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    mask = MASK_BYTES if PEFT_LORA_DROPOUT else 0

    def adapter(width: int) -> float:
        return width * (PEFT_ADAPTER_BYTES + mask) + PEFT_ADAPTER_BYTES * job.lora_rank

    moe = arch.moe if moe_layer else None
    mlp_targets = {"gate", "up", "down"} & set(job.lora_targets)
    # input widths of the adapted linears; fused projections take one adapter each (qkv_proj, gate_up_proj); an MoE
    # layer's attention ones here, its experts' below
    attention = job.lora_targets if moe is None else tuple(t for t in job.lora_targets if t not in mlp_targets)
    column_widths, row_widths = (peft_kbit.adapter_inputs(arch, job if moe is None else replace(
        job, lora_targets=attention)) if attention else ([], []))
    column = sum(adapter(w) for w in column_widths)
    row = sum(adapter(w) for w in row_widths)
    frozen_replicated = 2 * r * h + 2 * p * h
    frozen_split = p * (q_w + kv_w) if arch.qk_norm else 0.0
    if moe is None:
        return TokenActivation(replicated_under_tp=column - frozen_replicated,
                               split_by_tp=row - frozen_split - p * arch.ffn, attention_core=0.0)
    from rigplan.estimate.moe import load_factor  # here: a dense model needs no MoE model

    copies = load_factor(job) * moe.top_k
    w, f_e, f_sh = arch.expert_hidden, moe.expert_ffn, moe.shared_ffn
    wrapped = {t for t in mlp_targets if peft_experts.applies(arch, job)}
    fc1_wrapped, fc2_wrapped = bool(wrapped & {"gate", "up"}), "down" in wrapped
    routed_frozen = copies * ((0 if fc1_wrapped else w) + (0 if fc2_wrapped else f_e))
    shared_adapters = moe.num_shared_experts * sum(
        adapter(d_in) for d_in, _ in mlp_lora_shapes(arch, job.lora_targets, h, f_sh))
    routed_adapters = 0.0 if wrapped else copies * sum(
        adapter(d_in) for d_in, _ in mlp_lora_shapes(arch, job.lora_targets, w, f_e))
    frozen_split += p * (routed_frozen + moe.num_shared_experts * f_sh)
    return TokenActivation(replicated_under_tp=column - frozen_replicated,
                           split_by_tp=row + shared_adapters + routed_adapters - frozen_split, attention_core=0.0)


def fused_lora_token_bytes(arch: Architecture, job: Job) -> TokenActivation:
    """Per token: the fused (Megatron-Core / Transformer Engine) stack under LoRA minus the full-training set
    (a negative delta), for a dense layer with standard attention.

    Transformer Engine's Linear and LayerNormLinear save their input only when the weight needs a gradient
    (backward_needs_input = is_grad_enabled and weight.requires_grad, transformer_engine/pytorch/module/
    linear.py and layernorm_linear.py), so a frozen base saves none of the linear inputs the full set counts
    (the qkv and fc1 inputs s·h, the fc2 input s·f, and the out-projection's fp8 copy under delayed scaling;
    s is the saved input's bytes, fp8 or the compute dtype). An adapter on a module saves its own input in the
    compute dtype for lora_A's weight gradient (p·h on the qkv or fc1 input, p·f on fc2's; on the output
    projection it is the attention kernel's output, saved already) and lora_A's output p·r for lora_B's.
    Left out: an adapter dropout's mask (NeMo's LoRA takes dropout 0 unless set).
    """
    p = job.compute_dtype_bytes
    saved = fp8_inputs.saved_input_bytes(job)
    h, f, rank = arch.hidden, arch.ffn, job.lora_rank
    q_w = arch.num_heads * arch.dim_per_head
    targets = set(job.lora_targets)
    qkv, fc1, fc2 = bool(targets & {"q", "k", "v"}), bool(targets & {"gate", "up"}), "down" in targets
    adapters = sum((qkv, "o" in targets, fc1, fc2))
    replicated = ((p if qkv else 0.0) + (p if fc1 else 0.0) - 2 * saved) * h
    split = ((p if fc2 else 0.0) - saved) * f - fp8_inputs.out_proj_extra_bytes(job) * q_w + p * rank * adapters
    return TokenActivation(replicated_under_tp=replicated, split_by_tp=split, attention_core=0.0)
