"""What LoRA changes in a layer's saved activations, per token, against full training (negative deltas): peft on
Hugging Face modules (peft_lora_token_bytes, dense and MoE layers) and the fused Megatron-Core / Transformer Engine
stack (fused_lora_token_bytes). Used by estimate.activations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import fp8_inputs, linear_attention, peft_experts, peft_kbit
from rigplan.estimate.params import attention_linears, mlp_lora_shapes
from rigplan.estimate.token_activation import MASK_BYTES, TokenActivation, hf_fp32_router_input_bytes, residual_bytes

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
    module_targets = peft_experts.module_mlp_targets(arch, job)  # the MLP targets that reach nn.Linear MLPs

    def adapted(names: tuple[str, ...]) -> tuple[float, float]:
        """Bytes of the adapters on these targets' linears, (column-parallel, row-parallel); fused projections take
        one adapter each (qkv_proj, gate_up_proj)."""
        if not names:
            return 0.0, 0.0
        column_widths, row_widths = peft_kbit.adapter_inputs(arch, replace(job, lora_targets=names))
        return sum(adapter(w) for w in column_widths), sum(adapter(w) for w in row_widths)

    if arch.mla is not None:
        column, row = mla_token_bytes(arch, job, adapter)
    else:
        attention_column, attention_row = adapted(tuple(t for t in job.lora_targets if t in ("q", "k", "v", "o")))
        frozen_qk = p * (q_w + kv_w) if arch.qk_norm else 0.0
        column, row = attention_column, attention_row - frozen_qk
    if arch.linear_attention is not None:  # the mean over the layers (linear_mixer_token_bytes)
        linear_column, linear_row = linear_mixer_token_bytes(arch, job, adapter)
        column = linear_attention.blend(arch, column, linear_column)
        row = linear_attention.blend(arch, row, linear_row)
    if moe is None:  # a dense layer's MLP adapters and frozen MLP, per feed-forward block (Nemotron-H's mixer-only
        ffn_share = arch.ffn_blocks_per_layer  # layers have one norm and one frozen linear input less)
        mlp_column, mlp_row = adapted(tuple(t for t in module_targets if t in mlp_targets))
        return TokenActivation(replicated_under_tp=column + ffn_share * mlp_column - (1.0 + ffn_share) * (r + p) * h,
                               split_by_tp=row + ffn_share * (mlp_row - p * arch.ffn), attention_core=0.0)
    # a frozen router keeps neither the norm output nor the fp32 copy some models' routers take of it
    frozen_replicated = 2 * r * h + 2 * p * h + hf_fp32_router_input_bytes(arch, job)
    from rigplan.estimate.moe import load_factor  # here: a dense model needs no MoE model

    copies = load_factor(job) * moe.top_k
    w, f_e, f_sh = arch.expert_hidden, moe.expert_ffn, moe.shared_ffn
    wrapped = {t for t in mlp_targets if peft_experts.applies(arch, job)}
    fc1_wrapped, fc2_wrapped = bool(wrapped & {"gate", "up"}), "down" in wrapped
    routed_frozen = copies * ((0 if fc1_wrapped else w) + (0 if fc2_wrapped else f_e))
    shared_adapters = moe.num_shared_experts * sum(
        adapter(d_in) for d_in, _ in mlp_lora_shapes(arch, module_targets, h, f_sh))
    routed_adapters = 0.0 if wrapped else copies * sum(
        adapter(d_in) for d_in, _ in mlp_lora_shapes(arch, job.lora_targets, w, f_e))
    frozen_split = p * (routed_frozen + moe.num_shared_experts * f_sh)
    return TokenActivation(replicated_under_tp=column - frozen_replicated,
                           split_by_tp=row + shared_adapters + routed_adapters - frozen_split, attention_core=0.0)


def mla_token_bytes(arch: Architecture, job: Job, adapter: Callable[[int], float]) -> tuple[float, float]:
    """Per token, one multi-head latent attention block of transformers' DeepseekV3Attention under peft against full
    training: (replicated under tp, split by tp). Each adapted linear of params.attention_linears adds
    `adapter(d_in)` (o_proj's split, the others' replicated: the latent projections are not split); frozen, the
    latent RMSNorms keep no normalized copy and q_b_proj and kv_b_proj no input (p·r_q twice with a query rank,
    p·r_kv twice), and o_proj no input (p·a·d_v: the attention output is sliced to d_v and reshaped, a copy the
    kernel does not keep). The block's input (the norm output) is in peft_lora_token_bytes' frozen set. Measured
    exactly on CPU, DeepSeek-V2 and V3 layers (tests/validation/test_hf_lora_targets.py)."""
    assert arch.mla is not None
    m, p = arch.mla, job.compute_dtype_bytes
    adapted = [lin for lin in attention_linears(arch) if set(lin.targets) & set(job.lora_targets)]
    latent = 2 * (m.q_lora_rank + m.kv_lora_rank)
    column = sum(adapter(lin.d_in) for lin in adapted if lin.module != "o_proj") - p * latent
    row = sum(adapter(lin.d_in) for lin in adapted if lin.module == "o_proj") - p * arch.num_heads * m.v_head_dim
    return column, row


def linear_mixer_token_bytes(arch: Architecture, job: Job, adapter: Callable[[int], float]) -> tuple[float, float]:
    """Per token, one linear-attention mixer under peft against full training: (its input projections' adapters,
    replicated under tp; its output projection's adapter less that projection's frozen input, split by tp). Each
    adapted linear adds `adapter(d_in)`; the frozen output projection keeps no input, which full training saves
    (linear_attention.saved_split_bytes counts the gated norm's output as out_proj's input; no other op keeps it).
    Its input projections' input is the norm output the attention projections share, already out of the frozen
    set. Not measured (peft_lora_token_bytes' rules carried over from the attention layers)."""
    assert arch.linear_attention is not None
    column, row = linear_attention.job_lora_linears(arch, job)
    la = arch.linear_attention
    out_width = la.key_dim if la.kind == "kimi_delta" else la.value_dim
    return (sum(adapter(d_in) for d_in, _ in column),
            sum(adapter(d_in) for d_in, _ in row) - job.compute_dtype_bytes * out_width)


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

    A hybrid model's linear-attention mixer (Megatron-Core's GatedDeltaNet or MambaMixer) in place of attention, as
    the mean over the layers: its in_proj (a LayerNormColumnParallelLinear, like linear_qkv) saves no input when
    frozen and its adapter p·h; its frozen out_proj saves none either, where full training keeps the gated norm's
    output for it (linear_attention.saved_split_bytes), and its adapter p·v. Not measured.
    """
    p = job.compute_dtype_bytes
    saved = fp8_inputs.saved_input_bytes(job)
    h, f, rank = arch.hidden, arch.ffn, job.lora_rank
    q_w = arch.num_heads * arch.dim_per_head
    targets = set(job.lora_targets)
    qkv, fc1, fc2 = bool(targets & {"q", "k", "v"}), bool(targets & {"gate", "up"}), "down" in targets
    mixer_replicated = p * h if qkv else 0.0
    mixer_split = p * rank * (qkv + ("o" in targets)) - fp8_inputs.out_proj_extra_bytes(job) * q_w
    if arch.linear_attention is not None:
        column, row = linear_attention.job_lora_linears(arch, job)
        out_width = arch.linear_attention.value_dim
        out_input = (p + fp8_inputs.out_proj_extra_bytes(job)) * out_width
        linear_split = p * rank * len(column + row) + sum(p * d_in for d_in, _ in row) - out_input
        mixer_replicated = linear_attention.blend(arch, mixer_replicated, p * h * len(column))
        mixer_split = linear_attention.blend(arch, mixer_split, linear_split)
    ffn_share = arch.ffn_blocks_per_layer  # Nemotron-H's mixer-only layers have no MLP
    replicated = mixer_replicated + (ffn_share * (p if fc1 else 0.0) - (1.0 + ffn_share) * saved) * h
    split = ffn_share * (((p if fc2 else 0.0) - saved) * f + p * rank * (fc1 + fc2)) + mixer_split
    return TokenActivation(replicated_under_tp=replicated, split_by_tp=split, attention_core=0.0)
