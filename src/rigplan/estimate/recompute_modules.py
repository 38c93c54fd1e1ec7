"""Megatron-Core's per-module recompute (--recompute-modules): what each module frees and what it reruns.

Megatron-Core (megatron/core/transformer/transformer_config.py, recompute_modules) recomputes chosen
submodules under --recompute-granularity selective: "core_attn" (rigplan's --recompute selective),
"moe_act" (Job.recompute_moe_act, estimate.moe), and the four here:

    mla_up_proj (Job.recompute_mla_up_proj; megatron/core/transformer/multi_latent_attention.py):
        the q and kv up-projections and the rotary embedding run under CheckpointWithoutOutput; the
        query, key and value they produce (a·d_qk, a·d_qk and a·d_v per token, split by tp) are freed
        once core attention has run (qkv_up_checkpoint.discard_output_and_register_recompute) and rebuilt
        from the saved low-rank latents before core attention's backward. Frees p·(2·a·d_qk + a·d_v) per
        token and layer; reruns 2·T·(r_q or h)·a·d_qk + 2·T·r_kv·a·(d_nope + d_v) FLOPs (÷tp) per layer and
        the rotary pass on q_pe and k_pe. MLA models only.
    layernorm (Job.recompute_layernorm; megatron/core/transformer/transformer_layer.py): input_layernorm and
        pre_mlp_layernorm run under CheckpointWithoutOutput when they are modules of their own (not
        IdentityOp); their outputs are freed after the next linear has used them and recomputed before its
        backward. With Transformer Engine layers (megatron/core/models/gpt/gpt_layer_specs.py,
        get_gpt_layer_with_transformer_engine_submodules) the input norm is its own module only under
        MLA (else fused into linear_qkv, TELayerNormColumnParallelLinear) and the pre-MLP norm only in MoE
        layers (else fused into linear_fc1). Frees p·h per such norm and token; reruns the norm (read the
        residual, write h).
    moe (Job.recompute_moe; megatron/core/transformer/moe/moe_layer.py, moe_layer_recompute): the whole MoE
        block (router, token dispatch, routed and shared experts, combine) runs under tensor_parallel.checkpoint,
        which keeps its input only (the pre-MLP norm's output); everything the block saves is freed and the
        block's forward, its two all-to-alls included, runs again before its backward. Frees the routed copies,
        the shared experts' activations, router probabilities and permutation indices; reruns the experts', the
        router's and the shared experts' forward FLOPs, the permutation and activation passes and the forward
        dispatch and combine, and the host issues the block's ops again in backward. MoE layers only; the
        backward's working set holds one MoE block's activations. With it, moe_act changes nothing. Left out:
        the fp8 casts of the experts' inputs, which run again too.
    mlp (Job.recompute_mlp; transformer_layer.py, recompute_mlp is set only when the MLP is not a MoELayer):
        the dense MLP runs under tensor_parallel.checkpoint, which keeps its input only; the MLP's
        activations (fc1 input, fc1 output, activation output: p·(h + inner·f)) are freed and the whole
        MLP (fc1, activation, fc2) runs again before its backward. Dense layers only: DeepSeek's first
        three layers, every layer of a dense model; no effect on MoE layers.

Each applies beside --recompute none or selective (granularity selective); a fully recomputed layer
keeps only its input anyway, and torchtitan's 'op' policy keeps its own set. Left out: "shared_experts"
(checkpoint of the shared experts alone), which no validated recipe sets, and fine-grained activation
offloading (--fine-grained-activation-offloading, which copies chosen activations to host memory: rigplan
has no per-module offload).
"""

from __future__ import annotations

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture


def applies(job: Job) -> bool:
    """Whether per-module recompute changes anything: beside recompute 'none' or 'selective'."""
    return job.recompute in ("none", "selective")


def mla_up_proj_recomputed(arch: Architecture, job: Job) -> bool:
    return job.recompute_mla_up_proj and arch.mla is not None and applies(job)


def layernorm_recomputed(job: Job) -> bool:
    # Megatron-Core's CheckpointWithoutOutput norms are Transformer Engine / Megatron modules ('fused')
    return job.recompute_layernorm and job.kernels == "fused" and applies(job)


def moe_layer_recomputed(arch: Architecture, job: Job) -> bool:
    return job.recompute_moe and arch.moe is not None and applies(job)


def dense_mlp_recomputed(job: Job) -> bool:
    return job.recompute_mlp and applies(job)


def mla_up_proj_freed_bytes_per_token(arch: Architecture, job: Job) -> float:
    """Bytes per token and layer, split by tp, that mla_up_proj frees: the query, key and value."""
    if arch.mla is None:
        return 0.0
    q_w = arch.num_heads * arch.mla.qk_head_dim
    v_w = arch.num_heads * arch.mla.v_head_dim
    return float(job.compute_dtype_bytes * (2 * q_w + v_w))


def mla_up_proj_flop_per_token(arch: Architecture) -> float:
    """Forward FLOPs per token and layer (before tp) mla_up_proj runs again: the q and kv up-projections."""
    if arch.mla is None:
        return 0.0
    m = arch.mla
    a = arch.num_heads
    return 2.0 * ((m.q_lora_rank or arch.hidden) * a * m.qk_head_dim
                  + m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim))


def mla_up_proj_rope_bytes_per_token(arch: Architecture, job: Job) -> float:
    """HBM traffic per token and layer (split by tp) of the rotary pass mla_up_proj reruns: read and write
    q_pe (a·d_rope) and k_pe (d_rope, shared by the heads)."""
    if arch.mla is None:
        return 0.0
    return float(2 * job.compute_dtype_bytes * (arch.num_heads + 1) * arch.mla.qk_rope_head_dim)


def separate_norms(arch: Architecture, moe_layer: bool) -> tuple[int, int]:
    """(attention side, MLP side): 1 where the norm is a module of its own under Transformer Engine layers
    (the input norm with MLA, the pre-MLP norm in MoE layers), 0 where it is fused into the next linear."""
    return (1 if arch.mla is not None else 0), (1 if moe_layer and arch.moe is not None else 0)


def layernorm_bytes_per_token(arch: Architecture, job: Job) -> float:
    """HBM traffic per token of one recomputed norm (replicated under tp without sequence parallelism):
    read the residual (h) and write its output (h), in the compute dtype."""
    return float(2 * job.compute_dtype_bytes * arch.hidden)


def dense_mlp_activation_bytes_per_token(arch: Architecture, job: Job) -> float:
    """HBM traffic per token (split by tp) of the dense MLP's activation when the MLP is rerun: gated read 2f,
    write f; plain read and write f (on the model's mean: times Architecture.ffn_blocks_per_layer)."""
    per = (3.0 if arch.mlp == "gated" else 2.0) * arch.ffn * arch.ffn_blocks_per_layer
    return per * float(job.compute_dtype_bytes)
