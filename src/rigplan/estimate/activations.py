"""Activation memory saved for the backward pass, per layer and per GPU.

Generalises Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models" (arXiv 2205.05198, Sec. 4, Table 2) from the GPT block it analyses to the architectures
rigplan reads. Per token and layer, in bytes, with p bytes per element (2 for bf16/fp16) and
1-byte dropout masks:

    attention  p·(h_norm_in + h_qkv_in + q_w + 2·kv_w + q_w) [+ h mask]
               + eager core: p·a·s (softmax) [+ a·s mask + p·a·s dropout out]
               + flash core: 4·a (fp32 log-sum-exp)
               [+ 2·p·q_w: an output gate's sigmoid and the gated output (Qwen3-Next)]
    hybrid     the layer-mean of the attention mixer above and a linear-attention mixer's
               (estimate.linear_attention.saved_split_bytes) by their shares of the layers
    MLP        p·(h_norm_in + h_fc1_in + 2f (plain) | 4f (gated: gate, silu(gate), up, product)) [+ h mask]
    MoE MLP    p·(h_norm_in + h_router_in + load·k·(h + 4·f_e [+ h]) + shared·4·f_s) + 4·E (router probs)
               + 8·k (int32 permutation index and fp32 routing weight per copy); load is the busiest
               rank's share over the mean (estimate.moe.load_factor: imbalance or capacity factor);
               Megatron's moe_act recompute keeps only fc1's output of a routed copy (2·f_e gated, f_e plain);
               [+ h]: the expert's output, kept where the routing weight scales it after fc2 (eager and
               Hugging Face stacks), not where the weight scales the activation before fc2 (fused stack)

Under Transformer Engine fp8 (estimate.fp8_inputs: fp8 on the fused stack) every saved linear input
(qkv / fc1 input = norm output, MLA's latent up-projection inputs, fc2 input, each routed copy's fc1 and fc2
input, the shared experts' inputs) is a quantized copy of q = 1 byte (+1/32 MXFP8 scales) per element in
place of p; MLA's q_down/kv_down keep two copies of the norm output (2·q = p); the out-projection adds its
fp8 copy (1 byte) beside the kernel's bf16 output under delayed scaling only. Megatron-Core's fp8 activation store
(Job.fp8_activation_store, fp8_store_saving) keeps the fused gated activation's 2f input at 1 byte an element, in
the dense MLP, the shared experts and each routed copy (not under moe_act recompute, whose checkpoint holds it).

Megatron's other per-module recomputes (estimate.recompute_modules): mla_up_proj drops p·(2·a·d_qk + a·d_v)
(the query, key and value), layernorm drops p·h per norm that is a module of its own (the input norm with
MLA, the pre-MLP norm of MoE layers), mlp leaves a dense layer's MLP its input r·h (and the dropout mask).

For the GPT case (q_w = kv_w = h, plain MLP f = 4h, eager, dropout) this is exactly the paper's
s·b·h·(34 + 5·a·s/h). Tensor parallelism without sequence parallelism leaves the norm inputs, the
inputs of the column-parallel linears and the dropout masks replicated (10·s·b·h in the GPT case)
and splits the rest by t; with sequence parallelism everything is split by t (paper Table 2).
Context parallelism splits every per-token tensor by cp. Selective recompute drops the
attention-core terms; full recompute keeps only each layer's input.

The norm inputs are the residual stream, in r bytes (residual_bytes: 4 under torch.autocast over fp32
weights and under PEFT's k-bit preparation, else p), as is the layer input full recompute keeps.

The fused stack under LoRA (fused_lora_token_bytes): Transformer Engine saves no frozen linear's input, and each
adapter saves its own input and lora_A's output. Otherwise LoRA/QLoRA use the full-training set. PyTorch does
not save a frozen linear's input (autograd saves mm's mat1 only when the weight needs a gradient), so that set
holds p·(h_qkv_in + q_w + h_fc1_in + f) per token that a frozen base does not, which stands in for what the
stacks' adapters and norms add; kernels='hf' counts peft's adapters on Hugging Face modules exactly instead
(peft_lora_token_bytes),
kernels='litgpt' lit-gpt's own modules (estimate/litgpt.py: fp32 RMSNorm, the merged qkv output held by
v, LoRA dropout and index_copy source; 43.2·h on Llama 2 7B), and kernels='torchtune' torchtune's
(estimate/torchtune.py: fp32 RMSNorm, k and v expanded under GQA, frozen linears saving nothing), also as
the working set a fully recomputed layer rebuilds.
bitsandbytes before 0.43.2 (MatMul4Bit
saved (A, B) for every 4-bit linear; PR #1270 removed A, CHANGELOG 0.43.2) adds those inputs again
(`bnb_saved_inputs`): measured on a Hugging Face Llama with SDPA, +2·(2h + f) bytes per token and layer
(tests/validation/test_bnb_saved_inputs.py); the lit-gpt NF4 rows hold 0.79, 1.48, 2.18 and 3.25 GiB
more than their bf16 twins after the weights (phi-1.5, StableLM 3B, Llama 2 7B and 13B), against 0.57,
0.76, 1.49 and 2.34 GiB from this term; the rest is not identified (lit-gpt also quantizes its LM head,
whose bf16 copy exists during the head's matmuls: 0.2-0.4 GiB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate import (
    fp8_inputs,
    hf_experts,
    linear_attention,
    lora_activations,
    peft_experts,
    peft_kbit,
    recompute_modules,
    sparse_attention,
)
from rigplan.estimate.litgpt import litgpt_token_bytes
from rigplan.estimate.lora_activations import fused_lora_token_bytes, peft_lora_token_bytes
from rigplan.estimate.states import expert_tp_of
from rigplan.estimate.token_activation import (
    LSE_BYTES,
    MASK_BYTES,
    TokenActivation,
    hf_fp32_router_input_bytes,
    residual_bytes,
)
from rigplan.estimate.torchtune import torchtune_token_parts


def attention_token_bytes(arch: Architecture, job: Job, dropout: bool) -> TokenActivation:
    """Per-token saved bytes of one attention block (formula in the module docstring)."""
    p = job.compute_dtype_bytes
    r = residual_bytes(job)
    h = arch.hidden
    a = arch.num_heads
    mask = MASK_BYTES * h if dropout else 0
    if arch.mla is not None:
        mla = arch.mla
        q_w = a * mla.qk_head_dim
        v_w = a * mla.v_head_dim
        # the q/kv up-projections' norm inputs and rotary key at p, their (norm output) linear inputs at q
        latents = mla.q_lora_rank + mla.kv_lora_rank
        low_rank = p * (latents + mla.qk_rope_head_dim) + fp8_inputs.saved_input_bytes(job) * latents
        # Q, K, V kept for the core; the out-projection input (the kernel's output) and its fp8 copy if any
        split: float = p * (q_w + q_w + v_w + v_w) + fp8_inputs.out_proj_extra_bytes(job) * v_w
        # the input norm's output p·h: read by q_down and kv_down, two fp8 copies under Transformer Engine (2·q = p)
        replicated: float = r * h + p * h + low_rank + mask
        if recompute_modules.mla_up_proj_recomputed(arch, job):
            split = split - recompute_modules.mla_up_proj_freed_bytes_per_token(arch, job)
        if recompute_modules.layernorm_recomputed(job):
            replicated = replicated - p * h * recompute_modules.separate_norms(arch, moe_layer=False)[0]
    else:
        q_w = a * arch.dim_per_head
        kv_w = arch.kv_heads * arch.dim_per_head
        split = p * (q_w + 2 * kv_w + q_w) + fp8_inputs.out_proj_extra_bytes(job) * q_w
        replicated = r * h + fp8_inputs.saved_input_bytes(job) * h + mask  # norm input, qkv input (norm output)
    s = job.seq_len
    core = p * a * s + ((MASK_BYTES + p) * a * s if dropout else 0) if job.attention == "eager" else LSE_BYTES * a
    if job.kernels == "hf":
        replicated = replicated + hf_norm_extra_bytes(arch)
        if job.attention == "eager" and arch.mla is None:
            # eager_attention_forward: q, repeat_kv copies of k and v (a heads each), o_proj input;
            # softmax(dtype=float32) saves its fp32 result and the matmul with v its bf16 cast.
            split = p * 4 * a * arch.dim_per_head
            core = (4 + p) * a * s
        if job.attention != "eager" and arch.mla is None:
            extra_replicated, extra_split = hf_sdpa_input_bytes(arch, job)
            replicated = replicated + extra_replicated
            split = split + extra_split
        if arch.qk_norm and arch.mla is None:
            # Qwen3RMSNorm on q and k per head: fp32 copy (4), rsqrt per head (4 B), the weight-multiplied
            # bf16 result (p) (tests/validation/test_hf_saved_tensors.py, qwen3).
            split = split + (HF_RMSNORM_EXTRA_BYTES_PER_HIDDEN + p) * (q_w + kv_w) + 4 * (a + arch.kv_heads)
    if arch.attention_output_gate and arch.mla is None:
        split = split + 2 * p * a * arch.dim_per_head  # sigmoid(gate) and the gated output, out_proj's input
    if arch.linear_attention is not None:  # the layer-mean of full-attention and linear-attention mixers
        out_proj_input = p + fp8_inputs.out_proj_extra_bytes(job)
        split = linear_attention.blend(arch, split, linear_attention.saved_split_bytes(arch, p, out_proj_input))
        core = linear_attention.blend(arch, core, 0.0)
    return TokenActivation(replicated_under_tp=replicated, split_by_tp=split, attention_core=core)


HF_SDPA_MASK_BYTES = 2
"""Bytes per element of the additive mask SDPA keeps when transformers hands it an explicit boolean mask:
scaled_dot_product_attention turns it into a mask of the query's dtype on every call (convert_boolean_attn_mask,
aten/src/ATen/native/transformers/attention.cpp: at::where(mask, 0, -inf) of query.dtype), and the kernel saves that
copy for backward, so each layer keeps its own (B, 1, s, s) bf16 tensor: 2·s bytes per token and layer. Measured on
an H200 (docs/measurements/h200-2026-12/window.json: +1.33·h at s = 2048, +2.67·h at 4096 for h = 3072) and on a CPU
(tests/validation/test_hf_saved_tensors.py)."""


def hf_sdpa_mask_share(arch: Architecture, job: Job) -> float:
    """Share of the layers whose SDPA call gets an explicit mask from transformers (0 to 1).

    transformers' masking_utils drops the mask and lets SDPA run is_causal only when nothing but causality is to
    be masked (_ignore_causal_mask_sdpa): no padding, and no sliding window that reaches into the sequence
    (kv_length < window). So: every layer when batches are padded (job.varying_lengths: an attention_mask with
    padding), else each layer whose window w > 0 has seq_len >= w (Phi-3-mini's 2047 at 2,047 tokens and more,
    Mistral 7B v0.1's 4096 from 4,096 tokens). Measured on a CPU with transformers 5.25 (window 64: no mask at 63
    tokens, a mask at 64 and 65) and on the H200 with 5.17 (window.json, window 2047: a mask at 2,047 tokens).
    """
    if job.varying_lengths:
        return 1.0
    windows = arch.attention_windows
    if not windows:
        return 0.0
    return sum(1 for w in windows if w and job.seq_len >= w) / len(windows)


def hf_sdpa_input_bytes(arch: Architecture, job: Job) -> tuple[float, float]:
    """Per token, averaged over the layers: what SDPA under transformers keeps beyond q, k, v of their own widths.

    Returns (replicated under tp, split by tp). Every SDPA kernel (CUDA flash and memory-efficient, the CPU flash
    kernel) saves its query, key and value as it receives them (their backward formulas in
    tools/autograd/derivatives.yaml take the inputs, and the wrappers copy nothing when the last dimension is
    contiguous and the head dim a multiple of 8), so what counts is what transformers hands it:
    - the explicit mask's bf16 copy, HF_SDPA_MASK_BYTES·s, on the layers of hf_sdpa_mask_share;
    - under GQA with a mask, repeat_kv's expanded copies of k and v (transformers' use_gqa_in_sdpa passes
      enable_gqa only without a mask): 2·p·(q_w - kv_w) more; with one kv head (MQA) repeat_kv's reshape of the
      expanded tensor is a view (stride 0 over the heads) and copies nothing (measured: a CPU, Mistral modules
      with one kv head);
    - with fused projections (Phi-3's qkv_proj) and no such copy, v is a strided view of the qkv output, and the
      saved view holds that whole storage: p·(q_w + 2·kv_w) where v alone is p·kv_w, so p·(q_w + kv_w) more
      (4·h on Phi-3-mini: window.json, LoRA and full training, 2,047 to 4,096 tokens, and a CPU at h = 256 and
      3072; the 2.96 GiB the Phi-3-mini LoRA run in families.json held beyond the count);
    - with transformers' Phi3 modules (fused_projections: Phi-3, Phi-4) in full training, the output projection's
      input is a copy, p·q_w more: their apply_rotary_pos_emb builds q with torch.cat, a new (B, heads, s, d)
      tensor, the kernels lay their output out as the query is, and transpose(1, 2).contiguous() then copies it
      for o_proj, whose input autograd keeps when its weight trains (2·h per token on the H200 and a CPU; where
      q comes from an element-wise rotary on the view, as in Llama, the output is already (B, s, heads, d)).
    Assumes the model runs without its KV cache (config.use_cache = False, as training recipes set it and every
    measured run did): with use_cache on, DynamicCache.update concatenates k and v into new tensors, SDPA gets
    contiguous copies and the view term is 0 (measured on a CPU: 40.84 -> 36.84·h for Phi-3 LoRA at h = 256).
    Leaves out: the eager path (its matmul reshapes v into a copy; its mask is one float tensor for all layers),
    the math kernel, and the memory-efficient kernel's padding of a mask whose length is not a multiple of 8.
    """
    p = job.compute_dtype_bytes
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    share = hf_sdpa_mask_share(arch, job)
    grouped = 1 < arch.kv_heads < arch.num_heads
    view = p * (q_w + kv_w) if arch.fused_projections else 0.0
    masked_split = 2 * p * (q_w - kv_w) if grouped else view
    out_copy = p * q_w if arch.fused_projections and not job.is_peft else 0.0
    replicated = share * HF_SDPA_MASK_BYTES * job.seq_len
    return replicated, share * masked_split + (1.0 - share) * view + out_copy


HF_RMSNORM_EXTRA_BYTES_PER_HIDDEN = 4
"""Hugging Face RMSNorm modules (LlamaRMSNorm, Qwen2RMSNorm, MistralRMSNorm) compute in fp32:
hidden_states.to(float32) is saved by pow and mul (4·h), rsqrt by mul (4 B), and the cast back by the
weight multiply (p·h, the norm input rigplan already counts). Measured with saved_tensors_hooks in
tests/validation/test_hf_saved_tensors.py."""


def hf_norm_extra_bytes(arch: Architecture) -> float:
    """Per token, one norm: what a Hugging Face norm module saves beyond the p·h norm input.

    RMSNorm: fp32 input copy 4·h + fp32 rsqrt 4 B. LayerNorm (torch.nn.LayerNorm, GPT-2): the
    native kernel saves the input plus fp32 mean and rstd, 8 B.
    """
    if arch.norm == "layernorm":
        return 8.0
    return HF_RMSNORM_EXTRA_BYTES_PER_HIDDEN * arch.hidden + 4.0


def expert_output_saved(job: Job) -> int:
    """1 when each routed copy's fc2 output is kept for backward, 0 when it is not.

    The routing weight's gradient needs what it multiplied. Megatron-Core scales the activation before fc2
    (TEGroupedMLP's weighted_bias_swiglu_impl with permuted_probs, its default 'FC2-input' placement) and so
    does NeMo AutoModel (nemo_automodel/components/moe/experts.py: activation_fn(output1, permuted_probs)), so
    the fused stack keeps fc1's output, not fc2's. torchtitan multiplies fc2's output in its token combine and
    transformers' MoE blocks multiply each expert's output, which keeps that output (pytorch/torchtitan#4095
    proposes moving the multiply before W2 for this reason)."""
    return 0 if job.kernels == "fused" else 1


def fp8_store_saving(arch: Architecture, job: Job) -> float:
    """Bytes per element the fp8 activation store takes off the fused gated activation's saved 2f input: p - 1
    (Job.fp8_activation_store: Megatron-Core saves input.to(torch.float8_e4m3fn) in bias_swiglu_impl and the routed
    experts' weighted_bias_swiglu_impl), 0 for a plain MLP or without the store. Under Transformer Engine's fused
    grouped MLP (Job.moe_fused_grouped_mlp) the routed experts' activation is in the GEMM epilogue, not these
    functions: the caller leaves their saving out."""
    if not job.fp8_activation_store or arch.mlp != "gated":
        return 0.0
    return float(job.compute_dtype_bytes - 1)


def mlp_token_bytes(arch: Architecture, job: Job, dropout: bool, moe_layer: bool) -> TokenActivation:
    """Per-token saved bytes of one MLP or MoE block (formula in the module docstring)."""
    p = job.compute_dtype_bytes
    r = residual_bytes(job)
    h = arch.hidden
    mask = MASK_BYTES * h if dropout else 0
    inner_per_ffn = (3 if job.fused_swiglu else 4) if arch.mlp == "gated" else 2
    if moe_layer and arch.moe is not None and recompute_modules.moe_layer_recomputed(arch, job):
        # Megatron 'moe': tensor_parallel.checkpoint keeps the block's input (the pre-MLP norm's output, freed too
        # under layernorm recompute) and the residual; routed copies, shared experts, router probabilities and
        # permutation are rebuilt in backward.
        norm_out = 0 if recompute_modules.layernorm_recomputed(job) else p * h
        return TokenActivation(replicated_under_tp=r * h + norm_out + mask, split_by_tp=0.0, attention_core=0.0)
    if moe_layer and arch.moe is not None:
        from rigplan.estimate.moe import act_recomputed, load_factor  # here: a dense model needs no MoE model

        moe = arch.moe
        # The busiest expert rank holds load x the mean of the k routed copies (estimate.moe). With the
        # activation recomputed (moe_act) only fc1's output stays (2f gated, f plain): the activation's
        # output and, unfused, its intermediates are rebuilt from it.
        # Under Transformer Engine fp8 (estimate.fp8_inputs) fc1's input and fc2's input are saved as
        # quantized copies, q bytes per element (fc2's only where the activation is not recomputed).
        q = fp8_inputs.saved_input_bytes(job)
        recomputed = act_recomputed(job)
        routed_inner = (2 if arch.mlp == "gated" else 1) if recomputed else inner_per_ffn
        fc2_in = 0 if recomputed else moe.expert_ffn
        # The fp8 activation store halves the gated activation's 2f input (fp8_store_saving, p-element units here);
        # under moe_act recompute the checkpoint holds fc1's output in the compute dtype instead.
        store = fp8_store_saving(arch, job) / p
        routed_store = 0.0 if recomputed or job.moe_fused_grouped_mlp else 2 * store * moe.expert_ffn
        w = arch.expert_hidden  # the routed copies' width: a latent MoE's latent size
        routed = load_factor(job) * moe.top_k * (
            w + expert_output_saved(job) * w + routed_inner * moe.expert_ffn - (1 - q / p) * (w + fc2_in)
            - routed_store)
        shared = moe.num_shared_experts * moe.shared_ffn * (inner_per_ffn - (1 - q / p) - 2 * store)
        # a latent MoE's up-projection keeps its input, the combined output (l); the down-projection reads the
        # norm output the router keeps
        shared += moe.latent_size
        # the shared experts' fc1 saves its own fp8 copy of the norm output (the router keeps the bf16 one)
        shared_in = q * h if moe.num_shared_experts and fp8_inputs.applies(job) else 0.0
        router_probs = 4 * moe.num_experts + hf_fp32_router_input_bytes(arch, job)
        # Permutation: an int32 row index and the fp32 routing weight of each of the k copies.
        permutation = moe.top_k * (4 + 4)
        # layernorm recompute: the pre-MLP norm of a MoE layer is a module of its own, its output freed
        norm_out = 0 if recompute_modules.layernorm_recomputed(job) else p * h
        return TokenActivation(
            replicated_under_tp=r * h + norm_out + shared_in + mask + router_probs + permutation
            + (hf_norm_extra_bytes(arch) if job.kernels == "hf" else 0.0),
            split_by_tp=p * (routed + shared),
            attention_core=0.0,
        )
    norm_extra = hf_norm_extra_bytes(arch) if job.kernels == "hf" else 0.0
    if recompute_modules.dense_mlp_recomputed(job):
        # Megatron 'mlp': tensor_parallel.checkpoint keeps the MLP's input (the residual its fused norm
        # reads); the norm output, fc1 output and activation are rebuilt in backward. The dropout mask
        # belongs to bias-dropout-add, outside the checkpoint.
        return TokenActivation(replicated_under_tp=r * h + mask, split_by_tp=0.0, attention_core=0.0)
    q = fp8_inputs.saved_input_bytes(job)  # fc1's input (the norm output) and fc2's: q under TE fp8, else p
    return TokenActivation(
        replicated_under_tp=(r + q) * h + mask + norm_extra,
        split_by_tp=(p * (inner_per_ffn - 1) + q - 2 * fp8_store_saving(arch, job)) * arch.ffn,
        attention_core=0.0,
    )


def bnb_saved_inputs(arch: Architecture, job: Job, moe_layer: bool) -> TokenActivation:
    """Per token: what bitsandbytes before 0.43.2 saves for backward in a QLoRA layer beyond the weights.

    Its MatMul4Bit kept the input A of every 4-bit linear (ctx.tensors = (A, B)). Distinct inputs per
    layer not saved already: the attention input (shared by q, k and v), the MLP input (shared by gate and
    up) and the down projection's input; on MoE layers each routed copy's input and down input, and the
    shared experts'. The output projection's input is the flash/SDPA kernel's output, which the kernel
    saves anyway; with eager attention it is a separate copy and counts too. Zero for other quantizers and
    methods. tests/validation/test_bnb_saved_inputs.py measures it on a Hugging Face Llama.
    """
    if job.method != "qlora" or job.nf4_quantizer != "bitsandbytes-legacy":
        return TokenActivation(replicated_under_tp=0.0, split_by_tp=0.0, attention_core=0.0)
    p = job.compute_dtype_bytes
    h = arch.hidden
    o_in = arch.num_heads * (arch.mla.v_head_dim if arch.mla else arch.dim_per_head) if job.attention == "eager" else 0
    if moe_layer and arch.moe is not None:
        from rigplan.estimate.moe import load_factor

        moe = arch.moe
        mlp = (load_factor(job) * moe.top_k * (arch.expert_hidden + moe.expert_ffn)
               + moe.num_shared_experts * moe.shared_ffn + moe.latent_size)
        return TokenActivation(replicated_under_tp=p * 2 * h, split_by_tp=p * (o_in + mlp), attention_core=0.0)
    return TokenActivation(replicated_under_tp=p * 2 * h, split_by_tp=p * (o_in + arch.ffn), attention_core=0.0)


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerActivations:
    """Saved bytes of one layer for one micro-batch on one GPU."""

    saved_bytes: float
    """What stays in memory until this layer's backward (after recompute choices)."""
    full_bytes: float
    """What the layer holds when nothing is recomputed (the working set while recomputing)."""


def layer_activation_bytes(
    arch: Architecture, job: Job, layout: Layout, *, moe_layer: bool, dropout: bool = False
) -> LayerActivations:
    """Saved activation bytes of one layer per micro-batch per GPU.

    recompute='none': attention + MLP terms; 'selective': without the attention core
    (Korthikanti Sec. 5, 34·s·b·h/t with SP); 'full': the layer input only, p·s·b·h (split by t
    under SP). Tokens per GPU = micro_batch · seq_len / cp. An MoE layer's routed copies are the busiest
    expert rank's (estimate.moe.load_factor) where ep > 1, the mean where one rank holds every expert.
    """
    if not moe_layer or arch.moe is None:
        return _layer_activation_bytes(arch, job, layout, moe_layer=moe_layer, dropout=dropout)
    from rigplan.estimate.moe import by_expert_ranks

    def both(j: Job) -> tuple[Any, Any]:
        layer = _layer_activation_bytes(arch, j, layout, moe_layer=True, dropout=dropout)
        return layer.saved_bytes, layer.full_bytes

    saved, full = by_expert_ranks(layout.ep, job, both)
    return LayerActivations(saved_bytes=saved, full_bytes=full)


def _layer_activation_bytes(
    arch: Architecture, job: Job, layout: Layout, *, moe_layer: bool, dropout: bool = False
) -> LayerActivations:
    tokens = job.micro_batch * job.seq_len / layout.cp
    attention = attention_token_bytes(arch, job, dropout)
    mlp = mlp_token_bytes(arch, job, dropout, moe_layer)
    tp, sp = layout.tp, layout.sequence_parallel
    legacy = bnb_saved_inputs(arch, job, moe_layer).per_gpu(tp, sp)
    if job.kernels == "litgpt" and job.recompute == "none" and not moe_layer and arch.mla is None:
        own = (litgpt_token_bytes(arch, job) + legacy) * tokens
        return LayerActivations(saved_bytes=own, full_bytes=own)
    kv_replicas = linear_attention.blend(arch, kv_replica_token_bytes(arch, job, tp), 0.0)
    if arch.sparse_attention is not None:  # the indexer's saved tensors, whole on every tensor-parallel rank
        kv_replicas = kv_replicas + sparse_attention.indexer_share(arch) * sparse_attention.saved_bytes_per_token(
            arch, job)
    ffn_share = 1.0 if moe_layer else arch.ffn_blocks_per_layer  # a dense model's mixer-only layers save no MLP block
    full_per_token = attention.per_gpu(tp, sp) + ffn_share * mlp.per_gpu(tp, sp) + legacy + kv_replicas
    if moe_layer and arch.moe is not None:  # the einsum dispatcher's masks, kept for its einsums' backward
        from rigplan.estimate.moe import dispatch_mask_bytes_per_token, gate_shard

        masks = dispatch_mask_bytes_per_token(arch, job, gate_shard(tp, layout.cp, bool(sp)))
        full_per_token = full_per_token + (masks / tp if sp else masks)
    if job.kernels == "hf" and job.is_peft:
        full_per_token = full_per_token + peft_lora_token_bytes(arch, job, moe_layer).per_gpu(tp, sp)
    if job.kernels == "fused" and job.method == "lora" and not moe_layer and arch.mla is None:
        full_per_token = full_per_token + fused_lora_token_bytes(arch, job).per_gpu(tp, sp)
    if peft_kbit.applies(arch, job, moe_layer):
        replicated, split, core = peft_kbit.kbit_layer_parts(arch, job, dropout=lora_activations.PEFT_LORA_DROPOUT)
        stack = TokenActivation(replicated_under_tp=replicated, split_by_tp=split, attention_core=core)
        full_per_token = stack.per_gpu(tp, sp) + legacy
        attention = stack
    if job.kernels == "torchtune" and not job.compile and not moe_layer and arch.mla is None:
        replicated, split, core = torchtune_token_parts(arch, job)
        stack = TokenActivation(replicated_under_tp=replicated, split_by_tp=split, attention_core=core)
        full_per_token = stack.per_gpu(tp, sp) + legacy
    core_per_token = attention.attention_core / tp
    if job.recompute == "op":
        saved_per_token = op_checkpoint_token_bytes(arch, job, moe_layer).per_gpu(tp, sp) + legacy
    elif job.recompute == "full":
        input_bytes = residual_bytes(job) * arch.hidden
        saved_per_token = input_bytes / tp if sp else input_bytes
    elif job.recompute == "selective":
        saved_per_token = full_per_token - core_per_token
    else:
        saved_per_token = full_per_token
    etp = expert_tp_of(layout)
    # peft's parameter adapters on the routed experts: the rebuilt weights W' and their gradient (peft_experts)
    fp32 = hf_experts.expert_weights_fp32(job, layout.zero)
    rebuilt, gradient = peft_experts.layer_memory_bytes(arch, job, layout.ep, etp, fp32) if moe_layer else (0.0, 0.0)
    kept = 0.0 if job.recompute == "full" else rebuilt
    return LayerActivations(saved_bytes=saved_per_token * tokens + kept,
                            full_bytes=full_per_token * tokens + rebuilt + gradient)


def kv_replica_token_bytes(arch: Architecture, job: Job, tp: Any) -> Any:
    """Per-token bytes a tensor-parallel rank keeps beyond its 1/tp share of the keys and values when tp exceeds the
    kv heads: it holds a whole kv head (a head is not split; the r = tp/kv ranks of a group share it, Megatron-Core
    0.16 and later, estimate.tensor_parallel.kv_replica_gather_s), so attention saves d of k and d of v where the
    share counts 2·kv_w/tp: 2·p·kv_w·(1/kv - 1/tp), 0 where tp divides the kv heads. MLA models share no kv heads."""
    tp_a = xp.asfloat(tp)
    if arch.mla is not None:
        return 0.0 * tp_a
    kv_w = arch.kv_heads * arch.dim_per_head
    return 2.0 * job.compute_dtype_bytes * kv_w * xp.maximum(1.0 / arch.kv_heads - 1.0 / tp_a, 0.0)


def _layer_matmul_widths(arch: Architecture, moe_layer: bool) -> list[tuple[int, bool]]:
    """Output width of each forward matmul of a layer, in order, and whether it is split by tp."""
    h = arch.hidden
    a = arch.num_heads
    if arch.mla is not None:
        mla = arch.mla
        attn = [(mla.q_lora_rank, False)] if mla.q_lora_rank else []
        attn += [(a * mla.qk_head_dim, True), (mla.kv_lora_rank + mla.qk_rope_head_dim, False),
                 (a * (mla.qk_nope_head_dim + mla.v_head_dim), True), (h, False)]
    else:
        q_w = a * arch.dim_per_head
        kv_w = arch.kv_heads * arch.dim_per_head
        attn = [(q_w, True), (kv_w, True), (kv_w, True), (h, False)]
    if moe_layer and arch.moe is not None:
        # torchtitan: the routed experts run torch._grouped_mm and the router gate is force-recomputed (flops.
        # ROUTED_EXPERTS_OP_RECOMPUTED), so only the shared experts' matmuls take part
        f = arch.moe.num_shared_experts * arch.moe.shared_ffn
        mlp = [(f, True), (f, True), (h, False)] if arch.mlp == "gated" else [(f, True), (h, False)]
        mlp = mlp if f else []
    else:
        f = arch.ffn
        mlp = [(f, True), (f, True), (h, False)] if arch.mlp == "gated" else [(f, True), (h, False)]
    return attn + mlp


def op_checkpoint_token_bytes(arch: Architecture, job: Job, moe_layer: bool) -> TokenActivation:
    """Per-token bytes kept by torchtitan's per-op selective activation checkpointing ('op').

    torchtitan (torchtitan/models/llama/parallelize_llama.py, _save_list policy, 2024-12) saves the
    outputs of matmuls except every second one, the attention kernel's output, and the layer input;
    elementwise ops and norms are recomputed. So: p·(h + q_w + sum of odd-numbered matmul outputs).
    An MoE layer keeps none of its routed experts' activations (their grouped GEMMs are not in the save
    list, flops.ROUTED_EXPERTS_OP_RECOMPUTED), unless Job.op_save_grouped_mm adds them: then each of the
    busiest rank's load·k routed copies keeps fc1's output (2·f_e gated, f_e plain) and fc2's (h), which is
    what Lambda's torchtitan fork predicts for its save_grouped_mm (12.7 GiB a sequence on gpt-oss-20b, 11.80
    measured; Job.op_save_grouped_mm). Left out: with ep > 1 the saved all-to-all outputs.
    """
    p = job.compute_dtype_bytes
    h = arch.hidden
    replicated = residual_bytes(job) * h
    split = 0.0
    for index, (width, is_split) in enumerate(_layer_matmul_widths(arch, moe_layer)):
        if index % 2 == 0:  # 1st, 3rd, 5th ... matmul saved, every second one recomputed
            if is_split:
                split += p * width
            else:
                replicated += p * width
    v_width = arch.num_heads * (arch.mla.v_head_dim if arch.mla else arch.dim_per_head)
    split += p * v_width
    if moe_layer and arch.moe is not None and job.op_save_grouped_mm:
        from rigplan.estimate.moe import load_factor  # here: a dense model needs no MoE model

        fc1_out = (2 if arch.mlp == "gated" else 1) * arch.moe.expert_ffn
        split += p * load_factor(job) * arch.moe.top_k * (fc1_out + arch.expert_hidden)
    return TokenActivation(replicated_under_tp=replicated, split_by_tp=split, attention_core=LSE_BYTES * arch.num_heads)


def korthikanti_layer_bytes(
    seq_len: int, micro_batch: int, hidden: int, heads: int, *, tp: int = 1, sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """The paper's closed forms (Table 2) for one GPT layer, used to check the general model.

    none: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with SP: s·b·h/t·(34 + 5·a·s/h);
    selective: drops the 5·a·s/h term; full: 2·s·b·h (÷t with SP).
    """
    sbh = seq_len * micro_batch * hidden
    quad = 5 * heads * seq_len / hidden
    if recompute == "full":
        return 2 * sbh / (tp if sequence_parallel else 1)
    if recompute == "selective":
        quad = 0.0
    if sequence_parallel:
        return sbh / tp * (34 + quad)
    return sbh * (10 + 24 / tp + quad / tp)
