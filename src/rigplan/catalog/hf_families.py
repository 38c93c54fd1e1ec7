"""One reader per Hugging Face `model_type`: its config keys mapped to Architecture fields, with the family's
defaults where a key is absent (e.g. GPT-2 ties its embeddings, Llama does not). Each returns the fields
and notes on what it assumed (hf_config.py adds the attention windows and builds the Architecture)."""

from __future__ import annotations

from typing import Any

from rigplan.catalog.hf_reader import ConfigReader, Reader, moe_layer_split, standard
from rigplan.domain.model import MLA, MoE


def _llama(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields = standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, mlp_bias=r.flag("mlp_bias", False))
    return fields, []


def _mistral(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    return standard(r, tie_default=False), []


EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts")
"""The routed-expert count under either name: transformers' configs alias one to the other (attribute_map) and
save the one their class keeps, so a checkpoint saved by transformers 5 may name it differently from the hub's
(Qwen3MoeConfig reads num_experts and writes num_local_experts)."""


def routed_every_layer(r: ConfigReader, experts_key: str, *, qk_norm: bool = False,
                       norm: str = "rmsnorm", router: str = "softmax") -> dict[str, Any]:
    """Llama-style fields with every layer's MLP routed: experts_key experts (or the other EXPERT_COUNT_KEYS name)
    of intermediate_size, top num_experts_per_tok, no shared expert; attention_bias on the q/k/v and output
    projections."""
    fields = standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, qk_norm=qk_norm, norm=norm,
                  norm_bias=norm == "layernorm")
    fields["moe"] = MoE(num_experts=r.req_int(experts_key, *EXPERT_COUNT_KEYS), top_k=r.req_int("num_experts_per_tok"),
                        expert_ffn=fields["ffn"], router=router)
    return fields


def _mixtral(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    return routed_every_layer(r, "num_local_experts"), []



def _olmoe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """OLMoE (AllenAI): every layer routed, q and k RMSNorms."""
    return routed_every_layer(r, "num_experts", qk_norm=True), [
        "q and k norms counted per head (OLMoE normalises the whole projection: a few thousand parameters more "
        "a layer)"]


def _granitemoe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Granite MoE (IBM): every layer routed; its embedding, residual, attention and logit multipliers scale
    activations, not parameters."""
    return routed_every_layer(r, "num_local_experts"), []


def _phimoe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Phi-3.5-MoE (Microsoft): Mixtral's routed layers with LayerNorms (weight and bias); its lm_head bias
    (vocab entries) is not counted."""
    notes = ["lm_head bias not counted"] if r.flag("lm_head_bias", False) else []
    return routed_every_layer(r, "num_local_experts", norm="layernorm"), notes

def _phi3(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields = standard(r, tie_default=False)
    fields["fused_projections"] = True
    notes = ["fused qkv_proj and gate_up_proj counted as separate projections (same total)"]
    if r.flag("attention_bias", False):
        fields.update(qkv_bias=True, attn_out_bias=True)
    return fields, notes


def _gemma(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields = standard(r, tie_default=True)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias)
    return fields, ["GeGLU MLP counted as a gated MLP"]


def _gemma2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields, notes = _gemma(r)
    fields["norms_per_layer"] = 4
    return fields, notes


GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
}
"""transformers' Gemma3TextConfig defaults (configuration_gemma3.py): a Gemma 3 config.json writes only
the keys that differ from them (google/gemma-3-27b-pt's text_config has no vocab_size)."""


def _gemma3_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    absent = sorted(k for k in GEMMA3_TEXT_DEFAULTS if r.cfg.get(k) is None)
    filled = ConfigReader({**GEMMA3_TEXT_DEFAULTS, **{k: v for k, v in r.cfg.items() if v is not None}},
                     r.path, r.model_type, r.prefix)
    fields, notes = _gemma2(filled)
    fields["qk_norm"] = True  # Gemma 3 replaces Gemma 2's soft-capping with q/k RMSNorm
    if absent:
        notes = [*notes, f"Gemma3TextConfig defaults for absent keys: {', '.join(absent)}"]
    return fields, notes


def _qwen2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields = standard(r, tie_default=False)
    fields["qkv_bias"] = True  # Qwen2 q/k/v projections always carry a bias; o_proj does not
    return fields, []


def qwen_sparse_layers(r: ConfigReader, num_layers: int) -> list[int]:
    """Layers with a dense MLP in Qwen2-MoE / Qwen3-MoE / Qwen3-Next (mlp_only_layers, decoder_sparse_step)."""
    step = r.opt_int("decoder_sparse_step", default=1)
    if step < 1:
        raise r.fail(f"key 'decoder_sparse_step' must be >= 1, got {step}")
    only = set(r.int_list("mlp_only_layers"))
    return [i for i in range(num_layers) if i in only or (i + 1) % step != 0]


def _qwen2_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields, notes = _qwen2(r)
    dense, dense_notes = moe_layer_split(fields["num_layers"], qwen_sparse_layers(r, fields["num_layers"]))
    shared_ffn = r.opt_int("shared_expert_intermediate_size")
    fields["moe"] = MoE(
        num_experts=r.req_int("num_experts", *EXPERT_COUNT_KEYS),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=r.req_int("moe_intermediate_size"),
        num_shared_experts=1 if shared_ffn else 0,
        shared_expert_ffn=shared_ffn,
        first_dense_layers=dense,
        shared_expert_gate=bool(shared_ffn),
    )
    return fields, notes + dense_notes


def _qwen3(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields = standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, qk_norm=True)
    return fields, []


def _qwen3_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields, notes = _qwen3(r)
    dense, dense_notes = moe_layer_split(fields["num_layers"], qwen_sparse_layers(r, fields["num_layers"]))
    fields["moe"] = MoE(
        num_experts=r.req_int("num_experts", *EXPERT_COUNT_KEYS),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=r.req_int("moe_intermediate_size"),
        first_dense_layers=dense,
    )
    return fields, notes + dense_notes


def mla_fields(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Llama-style fields with DeepSeek-V2's multi-head latent attention (q_lora_rank, kv_lora_rank,
    qk_nope_head_dim, qk_rope_head_dim, v_head_dim): no kv heads of their own; attention_bias counted on the
    output projection only."""
    fields = standard(r, tie_default=False)
    fields["num_kv_heads"] = 0  # MLA: keys and values come from the shared latent, not from kv heads
    fields["head_dim"] = 0
    notes: list[str] = []
    if r.flag("attention_bias", False):
        fields["attn_out_bias"] = True
        notes.append("attention_bias: only the output-projection bias is counted for MLA")
    fields["mla"] = MLA(
        q_lora_rank=r.opt_int("q_lora_rank"),  # null means a plain query projection (V2-Lite)
        kv_lora_rank=r.req_int("kv_lora_rank"),
        qk_nope_head_dim=r.req_int("qk_nope_head_dim"),
        qk_rope_head_dim=r.req_int("qk_rope_head_dim"),
        v_head_dim=r.req_int("v_head_dim"),
    )
    return fields, notes


def group_limited_routing(r: ConfigReader) -> dict[str, int]:
    """MoE.routing_groups and routing_group_topk from n_group and topk_group (DeepSeek-V2/V3's group-limited router,
    which transformers applies under topk_method 'group_limited_greedy' and 'noaux_tc'; Megatron-Bridge passes the
    same keys on as --moe-router-num-groups / --moe-router-group-topk); 1 and 1 where they are absent or 'greedy'
    routing ignores them (DeepSeek-V2-Lite)."""
    if r.cfg.get("topk_method") == "greedy":
        return {}
    groups = r.opt_int("n_group", default=1) or 1
    kept = r.opt_int("topk_group", default=1) or 1
    return {"routing_groups": groups, "routing_group_topk": kept} if groups > 1 else {}


def deepseek_fields(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields, notes = mla_fields(r)
    routed = r.opt_int("n_routed_experts")
    if routed:
        layers = fields["num_layers"]
        first_dense = r.opt_int("first_k_dense_replace")
        freq = r.opt_int("moe_layer_freq", default=1)
        if freq < 1:
            raise r.fail(f"key 'moe_layer_freq' must be >= 1, got {freq}")
        dense_layers = [i for i in range(layers) if i < first_dense or i % freq != 0]
        dense, dense_notes = moe_layer_split(layers, dense_layers)
        notes += dense_notes
        fields["moe"] = MoE(
            num_experts=routed,
            top_k=r.req_int("num_experts_per_tok"),
            expert_ffn=r.req_int("moe_intermediate_size"),
            num_shared_experts=r.opt_int("n_shared_experts"),
            first_dense_layers=dense,
            router="sigmoid" if r.cfg.get("scoring_func") == "sigmoid" else "softmax",
            mtp_layers=r.opt_int("num_nextn_predict_layers"),
            **group_limited_routing(r),
        )
        fields["active_excludes_input_embedding"] = True  # as DeepSeek and Kimi count active parameters
        if r.cfg.get("topk_method") == "noaux_tc":
            notes.append("router e_score_correction_bias (n_routed_experts values per MoE layer) not counted")
    mtp = r.opt_int("num_nextn_predict_layers")
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted (as in the published totals)")
    return fields, notes


def _gpt_oss(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    fields = standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", True)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, attention_sinks=True,
                  active_excludes_input_embedding=True)  # OpenAI's card: 3.6B / 5.1B active without it
    fields["moe"] = MoE(
        num_experts=r.req_int("num_local_experts"),
        top_k=r.req_int("experts_per_token", "num_experts_per_tok"),
        expert_ffn=fields["ffn"],
        expert_bias=True,
        router_bias=True,
        expert_act_clamp=r.number("swiglu_limit", 7.0),
    )
    return fields, []


def _llama4_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Llama 4 text decoder: MoE every interleave_moe_layer_step-th layer (index i with
    (i + 1) % step == 0, as transformers' Llama4TextModel), one shared expert, a dense MLP of
    intermediate_size_mlp elsewhere; routed experts of intermediate_size."""
    fields = standard(r, tie_default=False)
    expert_ffn = fields["ffn"]
    fields["ffn"] = r.opt_int("intermediate_size_mlp", default=expert_ffn)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias)
    layers = fields["num_layers"]
    step = r.opt_int("interleave_moe_layer_step", default=1)
    if step < 1:
        raise r.fail(f"key 'interleave_moe_layer_step' must be >= 1, got {step}")
    stepped = {i for i in range(layers) if (i + 1) % step == 0}
    moe_layers = set(r.int_list("moe_layers")) or stepped
    if moe_layers == stepped:
        dense, notes = 0, []
    else:
        dense, notes = moe_layer_split(layers, [i for i in range(layers) if i not in moe_layers])
        step = 1
    fields["moe"] = MoE(
        num_experts=r.req_int("num_local_experts"),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=expert_ffn,
        num_shared_experts=1,
        first_dense_layers=dense,
        moe_layer_step=step,
        router="sigmoid",
    )
    return fields, [*notes, "use_qk_norm is a weightless L2 norm (no parameters)"]


def _glm4_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """GLM-4.5: GQA with q/k/v biases and optional QK norm, leading dense layers
    (first_k_dense_replace), routed and shared experts of moe_intermediate_size."""
    fields = standard(r, tie_default=False)
    fields.update(qkv_bias=r.flag("attention_bias", True), qk_norm=r.flag("use_qk_norm", False),
                  active_excludes_input_embedding=True)  # Z.ai's card: 32B / 12B active without it
    layers = fields["num_layers"]
    dense, notes = moe_layer_split(layers, list(range(min(r.opt_int("first_k_dense_replace"), layers))))
    fields["moe"] = MoE(
        num_experts=r.req_int("n_routed_experts"),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=r.req_int("moe_intermediate_size"),
        num_shared_experts=r.opt_int("n_shared_experts"),
        first_dense_layers=dense,
        router="sigmoid",
        mtp_layers=r.opt_int("num_nextn_predict_layers"),
    )
    notes.append("router e_score_correction_bias not counted")
    mtp = r.opt_int("num_nextn_predict_layers")
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted (as in the published totals)")
    return fields, notes


def _gpt2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    hidden = r.req_int("n_embd", "hidden_size")
    positions = r.req_int("n_positions", "max_position_embeddings")
    return {
        "num_layers": r.req_int("n_layer", "num_hidden_layers"),
        "hidden": hidden,
        "num_heads": r.req_int("n_head", "num_attention_heads"),
        "ffn": r.opt_int("n_inner", default=4 * hidden),
        "vocab": r.req_int("vocab_size"),
        "mlp": "plain",
        "positions": "learned",
        "max_positions": positions,
        "context_length": positions,
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "norm": "layernorm",
        "norm_bias": True,
        "qkv_bias": True,
        "attn_out_bias": True,
        "mlp_bias": True,
    }, []


def _gpt_neox(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    heads = r.req_int("num_attention_heads")
    attention_bias = r.flag("attention_bias", True)
    notes = []
    if r.flag("use_parallel_residual", True):
        notes.append("parallel attention and MLP (use_parallel_residual); two LayerNorms per layer")
    rotary_pct = r.number("rotary_pct", 1.0)
    if rotary_pct < 1.0:
        notes.append(f"rotary embedding on {rotary_pct:.0%} of each head")
    return {
        "num_layers": r.req_int("num_hidden_layers"),
        "hidden": r.req_int("hidden_size"),
        "num_heads": heads,
        "ffn": r.req_int("intermediate_size"),
        "vocab": r.req_int("vocab_size"),
        "mlp": "plain",
        "context_length": r.opt_int("max_position_embeddings"),
        "tied_embeddings": r.flag("tie_word_embeddings", False),
        "norm": "layernorm",
        "norm_bias": True,
        "qkv_bias": attention_bias,
        "attn_out_bias": attention_bias,
        "mlp_bias": True,
    }, notes


def _opt(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    hidden = r.req_int("hidden_size")
    positions = r.req_int("max_position_embeddings")
    bias = r.flag("enable_bias", True)
    notes = ["learned position table has max_position_embeddings + 2 rows (OPT offset)"]
    proj = r.opt_int("word_embed_proj_dim", default=hidden)
    if proj != hidden:
        notes.append(
            f"word_embed_proj_dim={proj} differs from hidden_size={hidden}: the embedding is {proj} wide and "
            f"project_in/project_out ({2 * proj * hidden:,} params) are not modelled (count approximate)"
        )
    if not r.flag("layer_norm_elementwise_affine", True):
        notes.append("layer_norm_elementwise_affine=false: LayerNorms have no weights (still counted)")
    if not r.flag("do_layer_norm_before", True):
        notes.append("post-LayerNorm variant (do_layer_norm_before=false); final LayerNorm counted")
    return {
        "num_layers": r.req_int("num_hidden_layers"),
        "hidden": hidden,
        "num_heads": r.req_int("num_attention_heads"),
        "ffn": r.req_int("ffn_dim"),
        "vocab": r.req_int("vocab_size"),
        "mlp": "plain",
        "positions": "learned",
        "max_positions": positions + 2,
        "context_length": positions,
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "norm": "layernorm",
        "norm_bias": True,
        "qkv_bias": bias,
        "attn_out_bias": bias,
        "mlp_bias": bias,
    }, notes


def _bloom(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    hidden = r.req_int("hidden_size", "n_embed")
    context = r.opt_int("seq_length")
    notes = [] if context else ["the config states no trained context length (bigscience/bloom: 2048)"]
    return {
        "num_layers": r.req_int("n_layer", "num_hidden_layers"),
        "hidden": hidden,
        "num_heads": r.req_int("n_head", "num_attention_heads"),
        "ffn": 4 * hidden,
        "vocab": r.req_int("vocab_size"),
        "mlp": "plain",
        "positions": "alibi",
        "context_length": context,
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "norm": "layernorm",
        "norm_bias": True,
        "qkv_bias": True,
        "attn_out_bias": True,
        "mlp_bias": True,
        "embedding_norm": True,
    }, notes


def _mpt(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    hidden = r.req_int("d_model")
    heads = r.req_int("n_heads")
    attn = r.nested("attn_config")
    ffn_config = r.nested("ffn_config")
    notes: list[str] = []
    alibi = attn.flag("alibi", True)
    seq = r.req_int("max_seq_len")
    learned = not alibi and r.flag("learned_pos_emb", True)
    kv_heads = heads
    attn_type = attn.cfg.get("attn_type", "multihead_attention")
    if attn_type == "multiquery_attention":
        kv_heads = 1
    elif attn_type == "grouped_query_attention":
        kv_heads = attn.req_int("kv_n_heads")
    if attn.flag("qk_ln", False):
        notes.append("qk_ln LayerNorms on queries and keys are not counted")
    if ffn_config.cfg.get("ffn_hidden_size") is not None:
        ffn = ffn_config.req_int("ffn_hidden_size")
    else:
        ffn = int(r.number("expansion_ratio", 4.0) * hidden)
    ffn_type = ffn_config.cfg.get("ffn_type", "mptmlp")
    if ffn_type not in ("mptmlp", "te_ln_mlp"):
        notes.append(f"ffn_type {ffn_type!r} counted as a plain two-matrix MLP")
    no_bias = r.flag("no_bias", True)
    return {
        "num_layers": r.req_int("n_layers"),
        "hidden": hidden,
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "ffn": ffn,
        "vocab": r.req_int("vocab_size"),
        "mlp": "plain",
        "positions": "learned" if learned else ("alibi" if alibi else "rope"),
        "max_positions": seq if learned else 0,
        "context_length": seq,
        "tied_embeddings": True,  # MPT's SharedEmbedding always ties the output head
        "norm": "layernorm",
        "norm_bias": not no_bias,
        "qkv_bias": not no_bias,
        "attn_out_bias": not no_bias,
        "mlp_bias": not no_bias,
    }, notes


FAMILIES: dict[str, Reader] = {
    "bloom": _bloom,
    "deepseek_v2": deepseek_fields,
    "deepseek_v3": deepseek_fields,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "glm4_moe": _glm4_moe,
    "gpt_oss": _gpt_oss,
    "granitemoe": _granitemoe,
    "kimi_k2": deepseek_fields,
    "llama": _llama,
    "llama4_text": _llama4_text,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "mpt": _mpt,
    "olmoe": _olmoe,
    "opt": _opt,
    "phi3": _phi3,
    "phimoe": _phimoe,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
}
