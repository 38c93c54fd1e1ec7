"""config.json readers for the MoE families that reuse another family's layout with their own keys: MiniMax-M2, ERNIE
4.5 MoE, Hunyuan-A13B, DeepSeek-V3.2 and GLM-5 (DeepSeek Sparse Attention), dots.llm1, DBRX, Ling 2.0 (model_type
bailing_moe), the Gated DeltaNet hybrids Qwen3-Next and Qwen3.5 MoE (and the dense Qwen3.5, which shares their
mixers), the Kimi Delta Attention and MLA hybrid Kimi Linear, and the text models of Qwen3-VL-MoE, GLM-4.5V, Qwen3.5
and Qwen3.5 MoE (qwen3_vl_moe_text, glm4v_moe_text, qwen3_5_text, qwen3_5_moe_text; hf_config.py reads them out of
their multimodal config, the vision tower not counted). Each returns the fields and notes on what it assumed, as the
readers of hf_families.py do; hf_config.py joins the two tables."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rigplan.catalog.hf_families import FAMILIES as BASE_FAMILIES
from rigplan.catalog.hf_families import (
    deepseek_fields,
    group_limited_routing,
    mla_fields,
    qwen_sparse_layers,
    routed_every_layer,
)
from rigplan.catalog.hf_reader import ConfigReader, Reader, moe_layer_split, standard
from rigplan.domain.model import LinearAttention, MoE, SparseAttention


def _minimax_m2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """MiniMax-M2 (transformers MiniMaxM2Config): every layer routed over num_local_experts experts of
    intermediate_size, sigmoid scores with a selection bias (MiniMaxM2TopKRouter), QK norm; active parameters
    counted without the input embedding, as the catalog record of MiniMax-M2 does."""
    fields = routed_every_layer(r, "num_local_experts", qk_norm=True, router="sigmoid")
    fields["active_excludes_input_embedding"] = True
    return fields, ["q and k norms counted per head (MiniMax-M2 normalises the whole projection: a few thousand "
                    "parameters more a layer)", "router e_score_correction_bias not counted"]


def _ernie4_5_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """ERNIE 4.5 MoE (Baidu; transformers Ernie4_5_MoeConfig): layer i is routed when (i + 1) %
    moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last layer), the
    others keep a dense MLP of intermediate_size; moe_num_experts routed experts of moe_intermediate_size, top
    moe_k, and moe_num_shared_experts shared experts of the same width; use_bias puts a bias on every
    projection."""
    fields = standard(r, tie_default=True)
    bias = r.flag("use_bias", False)
    fields.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias)
    layers = fields["num_layers"]
    start = r.opt_int("moe_layer_start_index", default=1)
    end_raw = r.cfg.get("moe_layer_end_index", -1)
    end = layers - 1 if end_raw == -1 else r.opt_int("moe_layer_end_index")
    interval = r.opt_int("moe_layer_interval", default=1)
    if interval < 1:
        raise r.fail(f"key 'moe_layer_interval' must be >= 1, got {interval}")
    routed = [i for i in range(layers) if (i + 1) % interval == 0 and start <= i <= end]
    if not routed:
        raise r.fail(f"keys 'moe_layer_start_index' ({start}), 'moe_layer_end_index' ({end_raw}) and "
                     f"'moe_layer_interval' ({interval}) leave no MoE layer among {layers}")
    dense, notes = moe_layer_split(layers, [i for i in range(layers) if i not in routed])
    expert_ffn = r.req_int("moe_intermediate_size")
    shared = r.opt_int("moe_num_shared_experts")
    fields["moe"] = MoE(num_experts=r.req_int("moe_num_experts"), top_k=r.req_int("moe_k"), expert_ffn=expert_ffn,
                        num_shared_experts=shared, shared_expert_ffn=expert_ffn if shared else 0,
                        first_dense_layers=dense)
    return fields, [*notes, "router e_score_correction_bias (moe_statics) not counted"]


def _hunyuan_v1_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Hunyuan MoE (Tencent Hunyuan-A13B; transformers HunYuanMoEV1Config): every layer routed over num_experts
    experts with one shared MLP beside them, all of intermediate_size (moe_intermediate_size when the config
    gives it), top moe_topk; q and k RMSNorms per head. num_experts, moe_topk, moe_intermediate_size and
    num_shared_expert may be per-layer lists; rigplan takes them when uniform."""
    fields = standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, qk_norm=True)
    expert_ffn = r.uniform_int("moe_intermediate_size", fields["ffn"])
    shared = r.uniform_int("num_shared_expert", 1)
    fields["moe"] = MoE(num_experts=r.uniform_int("num_experts", 0) or r.req_int("num_experts"),
                        top_k=r.uniform_int("moe_topk", 0) or r.req_int("moe_topk"), expert_ffn=expert_ffn,
                        num_shared_experts=shared, shared_expert_ffn=expert_ffn if shared else 0)
    return fields, []


def _indexer_layers(r: ConfigReader, layers: int) -> list[int]:
    """The 0-based layers that run their own DSA indexer: indexer_types ('full' or 'shared' per layer), else
    index_topk_pattern ('F'/'S' per layer), else index_topk_freq and index_skip_topk_offset (layer i runs one when
    max(i - offset + 1, 0) % freq == 0: transformers' GlmMoeDsaConfig and Megatron-Core's is_dsa_skip_topk_layer);
    every layer when none is given."""
    kinds = r.cfg.get("indexer_types")
    pattern = r.cfg.get("index_topk_pattern")
    if kinds is None and isinstance(pattern, str):
        kinds = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern]
    if kinds is not None:
        key = "indexer_types" if r.cfg.get("indexer_types") is not None else "index_topk_pattern"
        if (not isinstance(kinds, list) or len(kinds) != layers or any(k not in ("full", "shared") for k in kinds)
                or kinds[0] != "full"):
            raise r.fail(f"key '{r.prefix}{key}' must give 'full' or 'shared' for each of the {layers} layers, the "
                         f"first 'full'")
        return [i for i, kind in enumerate(kinds) if kind == "full"]
    freq = r.opt_int("index_topk_freq", default=1)
    if freq < 1:
        raise r.fail(f"key '{r.prefix}index_topk_freq' must be >= 1, got {freq}")
    offset = r.opt_int("index_skip_topk_offset", default=2)
    return [i for i in range(layers) if max(i - offset + 1, 0) % freq == 0]


def dsa_fields(r: ConfigReader, fields: dict[str, Any]) -> list[str]:
    """DeepSeek Sparse Attention from index_topk, index_n_heads and index_head_dim (with _indexer_layers), set on
    `fields`; notes on what it assumed."""
    layers = fields["num_layers"]
    full = _indexer_layers(r, layers)
    fields["sparse_attention"] = SparseAttention(
        topk=r.req_int("index_topk"), indexer_heads=r.req_int("index_n_heads"),
        indexer_head_dim=r.req_int("index_head_dim"), indexer_layers=() if len(full) == layers else tuple(full))
    notes = ["DeepSeek Sparse Attention timed in its sparse training stage (the indexer trained on its KL loss "
             "beside the model); on a stack without sparse kernels (transformers) attention runs dense"]
    if len(full) < layers:
        notes.append(f"{len(full)} of {layers} layers run their own indexer; the others reuse its top-k")
    return notes


def _deepseek_v32(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """DeepSeek-V3.2 (transformers DeepseekV32Config): DeepSeek-V3's layers (MLA, routed and shared experts, MTP) with
    DeepSeek Sparse Attention, a lightning indexer on every layer that picks index_topk keys for each query."""
    fields, notes = deepseek_fields(r)
    return fields, [*notes, *dsa_fields(r, fields)]


def _glm_moe_dsa(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """GLM-5 (zai-org; transformers GlmMoeDsaConfig, model_type glm_moe_dsa): DeepSeek-V3.2's layout and keys (MLA,
    first_k_dense_replace dense layers then n_routed_experts routed experts and n_shared_experts shared ones of
    moe_intermediate_size, sigmoid router, DSA) at its own sizes; mlp_layer_types, when given, names the dense
    layers, and indexer_types (or the index_topk_freq schedule) the layers with their own indexer."""
    fields, notes = deepseek_fields(r)
    kinds = r.cfg.get("mlp_layer_types")
    if kinds is not None and fields.get("moe") is not None:
        if not isinstance(kinds, list) or len(kinds) != fields["num_layers"] or any(
                k not in ("dense", "sparse") for k in kinds):
            raise r.fail(f"key '{r.prefix}mlp_layer_types' must give 'dense' or 'sparse' for each of the "
                         f"{fields['num_layers']} layers")
        dense, split_notes = moe_layer_split(len(kinds), [i for i, k in enumerate(kinds) if k == "dense"])
        fields["moe"] = replace(fields["moe"], first_dense_layers=dense)
        notes = [*notes, *split_notes]
    return fields, [*notes, *dsa_fields(r, fields)]


def _dots1(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """dots.llm1 (rednote-hilab; transformers Dots1Config, whose modeling takes Qwen3's attention and DeepSeek-V3's
    MoE): GQA/MHA heads with per-head q and k RMSNorms and attention_bias on q, k, v and o (no MLA); the first
    first_k_dense_replace layers keep a dense MLP of intermediate_size, the others route over n_routed_experts
    experts of moe_intermediate_size (top num_experts_per_tok, sigmoid scores with a selection bias whatever
    scoring_func says) beside n_shared_experts shared experts of the same width, fused into one MLP."""
    fields = standard(r, tie_default=False)
    bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=bias, attn_out_bias=bias, qk_norm=True)
    layers = fields["num_layers"]
    first_dense = r.opt_int("first_k_dense_replace")
    if first_dense >= layers:
        raise r.fail(f"key '{r.prefix}first_k_dense_replace' ({first_dense}) leaves no MoE layer among {layers}")
    fields["moe"] = MoE(num_experts=r.req_int("n_routed_experts"), top_k=r.req_int("num_experts_per_tok"),
                        expert_ffn=r.req_int("moe_intermediate_size"), num_shared_experts=r.opt_int("n_shared_experts"),
                        first_dense_layers=first_dense, router="sigmoid")
    return fields, ["router e_score_correction_bias not counted"]


def _dbrx(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """DBRX (Databricks; transformers DbrxConfig): d_model, n_heads, n_layers, vocab_size and max_seq_len at the top,
    attn_config {kv_n_heads, clip_qkv, rope_theta} and ffn_config {ffn_hidden_size, moe_num_experts, moe_top_k}.
    Every layer routes over moe_num_experts GLU experts of ffn_hidden_size (softmax router without bias, no shared
    expert); LayerNorms without bias, no projection bias; the fused Wqkv projection is counted as q, k and v (the
    same weights). The embeddings are never tied (DbrxConfig refuses tie_word_embeddings)."""
    attn, ffn = r.nested("attn_config"), r.nested("ffn_config")
    if r.flag("tie_word_embeddings", False):
        raise r.fail(f"key '{r.prefix}tie_word_embeddings' is true, but DBRX never ties its embeddings")
    notes = []
    if attn.cfg.get("kv_n_heads") is None:
        notes.append("attn_config.kv_n_heads absent: DbrxAttentionConfig's default of 1 key/value head")
    clip = attn.number("clip_qkv", 0.0)
    if clip:
        notes.append(f"q, k and v clamped to +-{clip:g} (clip_qkv): no parameters")
    expert_ffn = ffn.req_int("ffn_hidden_size")
    return {
        "num_layers": r.req_int("n_layers"),
        "hidden": r.req_int("d_model"),
        "num_heads": r.req_int("n_heads"),
        "num_kv_heads": attn.opt_int("kv_n_heads", default=1),
        "ffn": expert_ffn,
        "vocab": r.req_int("vocab_size"),
        "context_length": r.opt_int("max_seq_len", default=2048),
        "tied_embeddings": False,
        "norm": "layernorm",
        "norm_bias": False,
        "moe": MoE(num_experts=ffn.req_int("moe_num_experts"), top_k=ffn.req_int("moe_top_k"), expert_ffn=expert_ffn),
    }, notes


def _qwen3_vl_moe_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of Qwen3-VL-MoE (Qwen3-VL-30B-A3B, Qwen3-VL-235B-A22B; transformers Qwen3VLMoeTextConfig): Qwen3-MoE's
    layers and keys (num_experts of moe_intermediate_size, decoder_sparse_step, mlp_only_layers, per-head q and k
    norms, no shared expert). Its interleaved M-RoPE (rope_scaling mrope_section) has no parameters and the config
    class drops sliding_window; the wrapper's tie_word_embeddings decides the output head (hf_config.py)."""
    fields, notes = BASE_FAMILIES["qwen3_moe"](r)
    return fields, [*notes, "DeepStack visual features added to the first layers: no parameters of the text model"]


def _glm4v_moe_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of GLM-4.5V (zai-org; transformers Glm4vMoeTextConfig): GLM-4.5's layers and keys (q/k/v biases,
    leading dense layers by first_k_dense_replace, n_routed_experts and n_shared_experts of moe_intermediate_size,
    sigmoid router), but its attention (Glm4Attention) has no q/k norm, so use_qk_norm is not read."""
    fields, notes = BASE_FAMILIES["glm4_moe"](r)
    fields["qk_norm"] = False
    return fields, notes


def _bailing_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Ling 2.0 (inclusionAI Ling-mini-2.0, Ling-flash-2.0; BailingMoeV2Config and modeling_bailing_moe_v2.py, the
    remote code its checkpoints ship under model_type bailing_moe): one fused query_key_value projection (bias
    use_qkv_bias, counted as q, k and v) and a dense output projection (bias use_bias), per-head q and k RMSNorms when
    use_qk_norm; the first first_k_dense_replace layers keep a dense MLP of intermediate_size, the others route over
    num_experts experts of moe_intermediate_size (top num_experts_per_tok) beside num_shared_experts shared ones of
    the same width. The last num_nextn_predict_layers of num_hidden_layers are multi-token-prediction layers (0 in
    the released checkpoints). The router scores are sigmoids in BailingMoeV2 (architectures names it, or
    score_function says so), whose use_qk_norm defaults to true; Ling 1.x configs (BailingMoeForCausalLM) share the
    model_type and these keys, with a softmax router and no q/k norms."""
    fields = standard(r, tie_default=False)
    mtp = r.opt_int("num_nextn_predict_layers")
    layers = fields["num_layers"] - mtp
    first_dense = r.opt_int("first_k_dense_replace")
    if first_dense >= layers:
        raise r.fail(f"keys '{r.prefix}first_k_dense_replace' ({first_dense}) and '{r.prefix}num_nextn_predict_layers' "
                     f"({mtp}) leave no MoE layer among num_hidden_layers={fields['num_layers']}")
    architectures = r.cfg.get("architectures")
    v2 = isinstance(architectures, list) and "BailingMoeV2ForCausalLM" in architectures
    fields.update(num_layers=layers, qkv_bias=r.flag("use_qkv_bias", False), attn_out_bias=r.flag("use_bias", False),
                  qk_norm=r.flag("use_qk_norm", v2))
    expert_ffn = r.req_int("moe_intermediate_size")
    expert_bias = v2 or r.flag("moe_router_enable_expert_bias", False)
    notes = ["router expert_bias (a buffer) not counted"] if expert_bias else []
    shared_ffn = r.opt_int("moe_shared_expert_intermediate_size", default=expert_ffn)
    if shared_ffn != expert_ffn:
        notes.append(f"shared experts counted {expert_ffn} wide as modeling_bailing_moe_v2.py builds them, not "
                     f"moe_shared_expert_intermediate_size ({shared_ffn})")
    fields["moe"] = MoE(num_experts=r.req_int("num_experts"), top_k=r.req_int("num_experts_per_tok"),
                        expert_ffn=expert_ffn, num_shared_experts=r.opt_int("num_shared_experts"),
                        first_dense_layers=first_dense,
                        router="sigmoid" if v2 or r.cfg.get("score_function") == "sigmoid" else "softmax",
                        mtp_layers=mtp, **group_limited_routing(r))
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) of num_hidden_layers not counted")
    return fields, notes


LAYER_KINDS = {"linear_attention": False, "full_attention": True, "mamba": False, "attention": True}
"""The layer_types of a linear-attention hybrid, True for full attention, with the legacy names transformers'
remap_legacy_layer_types maps ('mamba' to linear_attention, 'attention' to full_attention)."""


def listed_full_layers(r: ConfigReader, num_layers: int) -> list[int]:
    """The 0-based full-attention layers of a hybrid's layer_types (one linear_attention or full_attention per
    layer, or their legacy names); anything else is one line."""
    kinds = r.cfg.get("layer_types")
    if not isinstance(kinds, list) or len(kinds) != num_layers or not all(isinstance(k, str) for k in kinds):
        raise r.fail(f"key '{r.prefix}layer_types' must list one attention kind per layer ({num_layers}), "
                     f"got {kinds!r}")
    other = sorted({k for k in kinds if k not in LAYER_KINDS})
    if other:
        raise r.fail(f"key '{r.prefix}layer_types' names {', '.join(other)}; rigplan reads linear_attention and "
                     "full_attention layers only")
    return [i for i, kind in enumerate(kinds) if LAYER_KINDS[kind]]


def hybrid_layout(r: ConfigReader, key: str, full: list[int], num_layers: int) -> tuple[int, tuple[int, ...]]:
    """LinearAttention's (full_attention_interval, full_attention_layers) for the 0-based full-attention layers
    `full`: the interval n when they are every n-th layer (i with (i + 1) % n == 0, n >= 2) and no list, else the
    list (the interval then unused). A hybrid needs a layer of each kind: otherwise one line naming `key`."""
    if not full or len(full) == num_layers:
        raise r.fail(f"key '{r.prefix}{key}' gives {len(full)} full-attention and {num_layers - len(full)} "
                     "linear-attention layers; rigplan reads a hybrid with at least one of each")
    period = full[0] + 1
    if period >= 2 and full == list(range(period - 1, num_layers, period)):
        return period, ()
    return 4, tuple(full)


def _full_attention_layout(r: ConfigReader, num_layers: int) -> tuple[int, tuple[int, ...], list[str]]:
    """Which layers of a Qwen3-Next / Qwen3.5 hybrid keep full attention, the others Gated DeltaNet: from
    layer_types when the config lists them (transformers then ignores full_attention_interval), else every
    full_attention_interval-th layer (default 4, as Qwen3NextConfig builds layer_types). A layer_types that is not
    every n-th layer is read as its list of full-attention layers."""
    interval = r.opt_int("full_attention_interval", default=4)
    if r.cfg.get("layer_types") is None:
        if interval < 2:
            raise r.fail(f"key '{r.prefix}full_attention_interval' must be >= 2 (full attention on one layer in that "
                         f"many, linear attention on the others), got {interval}")
        return interval, (), []
    period, layers = hybrid_layout(r, "layer_types", listed_full_layers(r, num_layers), num_layers)
    if layers:
        return period, layers, [f"layer_types puts full attention on layers {list(layers)} (from 0), not on every "
                                "n-th layer: read as that list"]
    if r.cfg.get("full_attention_interval") is not None and interval != period:
        return period, (), [f"full_attention_interval {interval} not used: layer_types puts full attention on one "
                            f"layer in {period}, as transformers builds the model"]
    return period, (), []


def _gated_deltanet_attention(r: ConfigReader, fields: dict[str, Any]) -> list[str]:
    """The token mixers of Qwen3-Next and Qwen3.5 (transformers Qwen3NextGatedDeltaNet and Qwen3NextAttention) into
    `fields`: Gated DeltaNet on all layers but the full-attention ones (_full_attention_layout; linear_num_key_heads
    and linear_num_value_heads heads of linear_key_head_dim and linear_value_head_dim, a causal convolution of
    linear_conv_kernel_dim taps), full attention on those: GQA of head_dim with per-head q and k RMSNorms,
    attention_bias on q, k, v and o, and a sigmoid output gate that doubles q_proj (attn_output_gate, true unless
    the config says false, as vLLM reads it; transformers always builds the gate)."""
    interval, layers, notes = _full_attention_layout(r, fields["num_layers"])
    bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=bias, attn_out_bias=bias, qk_norm=True,
                  attention_output_gate=r.flag("attn_output_gate", True))
    fields["linear_attention"] = LinearAttention(
        num_key_heads=r.req_int("linear_num_key_heads"), num_value_heads=r.req_int("linear_num_value_heads"),
        key_head_dim=r.req_int("linear_key_head_dim"), value_head_dim=r.req_int("linear_value_head_dim"),
        conv_kernel=r.opt_int("linear_conv_kernel_dim", default=4), full_attention_interval=interval,
        full_attention_layers=layers)
    return notes


def _gated_shared_moe(r: ConfigReader, *, first_dense_layers: int, mtp_layers: int) -> MoE:
    """Qwen3NextSparseMoeBlock: num_experts routed experts of moe_intermediate_size (softmax router, top
    num_experts_per_tok) and one shared expert of shared_expert_intermediate_size behind a sigmoid gate (none
    when that size is 0)."""
    shared_ffn = r.req_int("shared_expert_intermediate_size")
    return MoE(num_experts=r.req_int("num_experts"), top_k=r.req_int("num_experts_per_tok"),
               expert_ffn=r.req_int("moe_intermediate_size"), num_shared_experts=1 if shared_ffn else 0,
               shared_expert_ffn=shared_ffn, first_dense_layers=first_dense_layers,
               shared_expert_gate=bool(shared_ffn), mtp_layers=mtp_layers)


def _qwen3_next(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Qwen3-Next (Qwen3-Next-80B-A3B; transformers Qwen3NextConfig and modeling_qwen3_next.py): Gated DeltaNet and
    gated full attention (_gated_deltanet_attention), Qwen2-MoE's MLP layers (decoder_sparse_step and
    mlp_only_layers leave dense MLPs of intermediate_size, the others _gated_shared_moe). Its zero-centred RMSNorms
    (1 + weight) hold as many parameters as plain ones. The released config.json declares no multi-token-prediction
    layer; num_nextn_predict_layers or mtp_num_hidden_layers, when given, are read as its count."""
    fields = standard(r, tie_default=False)
    notes = _gated_deltanet_attention(r, fields)
    layers = fields["num_layers"]
    dense, dense_notes = moe_layer_split(layers, qwen_sparse_layers(r, layers))
    mtp = r.opt_int("mtp_num_hidden_layers", "num_nextn_predict_layers")
    fields["moe"] = _gated_shared_moe(r, first_dense_layers=dense, mtp_layers=mtp)
    if mtp:
        mtp_note = f"{mtp} multi-token-prediction layer(s) not counted in the total (the checkpoint's mtp.* weights)"
    else:
        mtp_note = ("config.json declares no multi-token-prediction layer, so none is counted or trained (Qwen's "
                    "Qwen3-Next checkpoints ship one, mtp.*; --mtp-layers 1 trains it)")
    return fields, [*notes, *dense_notes, mtp_note]


def _qwen3_5_moe_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of Qwen3.5 MoE (Qwen3.5-35B-A3B, 122B-A10B, 397B-A17B; transformers Qwen3_5MoeTextConfig, read
    out of a qwen3_5_moe config by hf_config.py): Qwen3-Next's layers and keys, but every layer's MLP routed (the
    config class drops decoder_sparse_step and mlp_only_layers, and intermediate_size, which no module reads: ffn is
    taken as moe_intermediate_size when the config has none), layer_types written out, and mtp_num_hidden_layers
    multi-token-prediction layers (mtp.*) beside the model, not in the total. Its Gated DeltaNet splits in_proj_qkvz
    and in_proj_ba into in_proj_qkv, in_proj_z, in_proj_b and in_proj_a: the same weights. The interleaved M-RoPE
    (rope_parameters mrope_section) has no parameters; the wrapper's tie_word_embeddings decides the output head."""
    expert_ffn = r.req_int("moe_intermediate_size")
    filled = ConfigReader({**r.cfg, "intermediate_size": r.cfg.get("intermediate_size") or expert_ffn},
                          r.path, r.model_type, r.prefix)
    fields = standard(filled, tie_default=False)
    notes = _gated_deltanet_attention(filled, fields)
    fields["linear_attention"] = replace(fields["linear_attention"], input_projections=4)
    mtp = r.opt_int("mtp_num_hidden_layers")
    fields["moe"] = _gated_shared_moe(r, first_dense_layers=0, mtp_layers=mtp)
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted in the total (the checkpoint's mtp.* weights)")
    return fields, notes


def _qwen3_5_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of the dense Qwen3.5 (Qwen3.5-0.8B to 27B; transformers Qwen3_5TextConfig, read out of a qwen3_5
    config by hf_config.py): Qwen3.5 MoE's mixers (Gated DeltaNet with its four input projections, gated full
    attention every full_attention_interval-th layer or as layer_types says) over a dense MLP of intermediate_size.
    Multi-token-prediction layers (mtp_num_hidden_layers, mtp.* beside the model) are not counted or trained: rigplan
    trains an MTP depth on MoE models only."""
    fields = standard(r, tie_default=False)
    notes = _gated_deltanet_attention(r, fields)
    fields["linear_attention"] = replace(fields["linear_attention"], input_projections=4)
    mtp = r.opt_int("mtp_num_hidden_layers")
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted or trained (the checkpoint's mtp.* weights)")
    return fields, notes


def _kimi_full_layers(r: ConfigReader, num_layers: int) -> tuple[list[int], list[str]]:
    """The 0-based MLA layers of Kimi Linear, in transformers' KimiLinearConfig precedence: layer_types when given,
    else linear_attn_config's full_attn_layers and kda_layers (1-based, as Moonshot's config.json writes them;
    both or neither), else every 4th layer from layer 4 (0-based i > 0 with i % 4 == 0, the class default)."""
    if r.cfg.get("layer_types") is not None:
        full = listed_full_layers(r, num_layers)
        return full, [f"MLA on layers {full} (from 0), Kimi Delta Attention on the other {num_layers - len(full)}"]
    la = r.nested("linear_attn_config")
    if la.cfg.get("full_attn_layers") is not None or la.cfg.get("kda_layers") is not None:
        full, kda = la.int_list("full_attn_layers"), la.int_list("kda_layers")
        if sorted(full + kda) != list(range(1, num_layers + 1)):
            raise r.fail(f"key '{r.prefix}linear_attn_config' must split layers 1 to {num_layers} between "
                         f"full_attn_layers and kda_layers (each layer in one list, counted from 1), got {full} "
                         f"and {kda}")
        listed = sorted(i - 1 for i in full)
        return listed, [f"MLA on layers {listed} (from 0), Kimi Delta Attention on the other {len(kda)}"]
    default = [i for i in range(num_layers) if i and i % 4 == 0]
    return default, [f"MLA on layers {default} (from 0; KimiLinearConfig's default without layer_types or "
                     f"linear_attn_config), Kimi Delta Attention on the other {num_layers - len(default)}"]


def _kda_key(r: ConfigReader, la: ConfigReader, nested: str, flat: str, default: int | None = None) -> int:
    """A Kimi Delta Attention shape key: linear_attn_config's when given (Moonshot's config.json), else the flat key
    of transformers' KimiLinearConfig, else `default` (or one line)."""
    if la.cfg.get(nested) is not None:
        return la.req_int(nested)
    if r.cfg.get(flat) is not None or default is not None:
        return r.opt_int(flat, default=default or 0)
    raise r.fail(f"missing key '{la.prefix}{nested}' or '{r.prefix}{flat}' (needed for model_type '{r.model_type}')")


def _kimi_moe(r: ConfigReader, num_layers: int) -> tuple[MoE, list[str]]:
    """Kimi Linear's MLP layers: dense (intermediate_size) where mlp_layer_types says dense, or when the config
    lists none, before first_k_dense_replace (default 1) and off every moe_layer_freq-th layer (Moonshot's
    modeling_kimi.py; transformers ignores the frequency, 1 in the release); the others route over num_experts
    (num_local_experts) experts of moe_intermediate_size, top num_experts_per_token (num_experts_per_tok), beside
    ONE shared MLP of moe_intermediate_size x num_shared_experts (n_shared_experts; default 1). The router scores
    are sigmoids (moe_router_activation_func) with a selection bias, e_score_correction_bias."""
    kinds = r.cfg.get("mlp_layer_types")
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != num_layers or any(k not in ("dense", "sparse") for k in kinds):
            raise r.fail(f"key '{r.prefix}mlp_layer_types' must list dense or sparse for each of the {num_layers} "
                         f"layers, got {kinds!r}")
        dense_layers, named = [i for i, kind in enumerate(kinds) if kind == "dense"], "mlp_layer_types"
    else:
        first_dense = r.opt_int("first_k_dense_replace", default=1)
        freq = r.opt_int("moe_layer_freq", default=1)
        if freq < 1:
            raise r.fail(f"key 'moe_layer_freq' must be >= 1, got {freq}")
        dense_layers = [i for i in range(num_layers) if i < first_dense or i % freq != 0]
        named = "first_k_dense_replace"
    if len(dense_layers) == num_layers:
        raise r.fail(f"key '{r.prefix}{named}' leaves no MoE layer among {num_layers}")
    dense, notes = moe_layer_split(num_layers, dense_layers)
    expert_ffn = r.req_int("moe_intermediate_size")
    shared = r.opt_int("num_shared_experts", "n_shared_experts", default=1)
    mtp = r.opt_int("num_nextn_predict_layers")
    moe = MoE(num_experts=r.req_int("num_experts", "num_local_experts"),
              top_k=r.req_int("num_experts_per_token", "num_experts_per_tok"), expert_ffn=expert_ffn,
              num_shared_experts=1 if shared else 0, shared_expert_ffn=expert_ffn * shared, first_dense_layers=dense,
              router="softmax" if r.cfg.get("moe_router_activation_func") == "softmax" else "sigmoid",
              mtp_layers=mtp)
    notes.append("router e_score_correction_bias not counted")
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted (as in the published totals)")
    return moe, notes


def _kimi_linear(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Kimi Linear (moonshotai/Kimi-Linear-48B-A3B; transformers KimiLinearConfig and modeling_kimi_linear.py, whose
    config class also takes Moonshot's spellings: num_experts, num_experts_per_token, num_shared_experts,
    model_max_length): MLA (KimiLinearAttention: DeepSeek-V2's latent attention, a plain q_proj when q_lora_rank is
    null; mla_use_nope drops its rotary, not its weights) on the layers of _kimi_full_layers, Kimi Delta Attention
    (KimiLinearDeltaAttention) on the others: linear_attn_config num_heads heads of head_dim (transformers'
    linear_num_heads, linear_head_dim) for q, k and v alike, a causal convolution of short_conv_kernel_size taps
    (linear_conv_kernel_dim, default 4), low-rank forget and output gates; the MLP layers of _kimi_moe."""
    fields, notes = mla_fields(r)
    layers = fields["num_layers"]
    fields["context_length"] = r.opt_int("model_max_length", "max_position_embeddings")
    fields["active_excludes_input_embedding"] = True  # as Moonshot counts Kimi K2's (DeepSeek-V3's convention)
    full, layout_notes = _kimi_full_layers(r, layers)
    interval, listed = hybrid_layout(r, "layer_types" if r.cfg.get("layer_types") is not None
                                     else "linear_attn_config", full, layers)
    la = r.nested("linear_attn_config")
    heads, head_dim = _kda_key(r, la, "num_heads", "linear_num_heads"), _kda_key(r, la, "head_dim", "linear_head_dim")
    fields["linear_attention"] = LinearAttention(
        kind="kimi_delta", num_key_heads=heads, num_value_heads=heads, key_head_dim=head_dim, value_head_dim=head_dim,
        conv_kernel=_kda_key(r, la, "short_conv_kernel_size", "linear_conv_kernel_dim", default=4),
        full_attention_interval=interval, full_attention_layers=listed)
    fields["moe"], moe_notes = _kimi_moe(r, layers)
    if r.flag("mla_use_nope", False):
        notes.append("mla_use_nope: the MLA layers apply no rotary embedding (the same weights)")
    return fields, [*notes, *layout_notes, *moe_notes]


MOE_FAMILIES: dict[str, Reader] = {
    "bailing_moe": _bailing_moe,
    "dbrx": _dbrx,
    "deepseek_v32": _deepseek_v32,
    "glm_moe_dsa": _glm_moe_dsa,
    "dots1": _dots1,
    "ernie4_5_moe": _ernie4_5_moe,
    "glm4v_moe_text": _glm4v_moe_text,
    "hunyuan_v1_moe": _hunyuan_v1_moe,
    "kimi_linear": _kimi_linear,
    "minimax_m2": _minimax_m2,
    "qwen3_5_moe_text": _qwen3_5_moe_text,
    "qwen3_5_text": _qwen3_5_text,
    "qwen3_next": _qwen3_next,
    "qwen3_vl_moe_text": _qwen3_vl_moe_text,
}
