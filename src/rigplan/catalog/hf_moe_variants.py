"""config.json readers for MoE families that vary a supported one: GLM-4.7-Flash (glm4_moe_lite: DeepSeek's latent
attention under GLM's MoE), Granite MoE with a shared expert (granitemoeshared), FlexOlmo (flex_olmo: OLMoE's routed
layers under OLMo 2's norms) and Arcee's AFMoE (afmoe: Trinity Nano, Mini and Large). Each returns the fields and
notes on what it assumed, as the readers of hf_families.py do; hf_config.py joins the tables."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rigplan.catalog.hf_families import FAMILIES as BASE_FAMILIES
from rigplan.catalog.hf_families import deepseek_fields, routed_every_layer
from rigplan.catalog.hf_reader import ConfigReader, Reader, moe_layer_split, standard, whole_projection_qk_norm_gap
from rigplan.domain.model import MoE

GLM_LITE_ROUTER = {"scoring_func": "sigmoid", "topk_method": "noaux_tc"}
"""How Glm4MoeLiteTopkRouter scores and picks experts whatever the config says (its config class has neither key):
sigmoid scores plus e_score_correction_bias, then the n_group / topk_group limit; set so deepseek_fields reads it."""
GLM_LITE_UNREAD = ("first_k_dense_replace", "moe_layer_freq")
"""DeepSeek's dense-layer keys, which Glm4MoeLiteConfig does not read: mlp_layer_types decides (one dense first layer
by default)."""


def _glm_lite_dense_layers(r: ConfigReader, layers: int) -> tuple[int, list[str]]:
    """Dense MLP layers of GLM-4.7-Flash: those mlp_layer_types calls 'dense' (the others 'sparse'), or layer 0 alone
    when the config has no list, as Glm4MoeLiteConfig builds it."""
    kinds = r.cfg.get("mlp_layer_types")
    notes: list[str] = []
    if kinds is None:
        dense = [0]
        first = r.opt_int("first_k_dense_replace", default=1)
        if first != 1:
            notes.append(f"first_k_dense_replace {first} not read: without mlp_layer_types Glm4MoeLiteConfig keeps a "
                         "dense MLP on layer 0 only")
    elif isinstance(kinds, list) and len(kinds) == layers and all(k in ("dense", "sparse") for k in kinds):
        dense = [i for i, kind in enumerate(kinds) if kind == "dense"]
    else:
        raise r.fail(f"key '{r.prefix}mlp_layer_types' must name 'dense' or 'sparse' for each of the {layers} layers, "
                     f"got {kinds!r}")
    if len(dense) >= layers:
        raise r.fail(f"key '{r.prefix}mlp_layer_types' (or its default, a dense layer 0) leaves no MoE layer among "
                     f"{layers}")
    count, split_notes = moe_layer_split(layers, dense)
    return count, [*notes, *split_notes]


def _glm4_moe_lite(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """GLM-4.7-Flash (zai-org; transformers Glm4MoeLiteConfig, model_type glm4_moe_lite): DeepSeek-V2/V3's multi-head
    latent attention (q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; attention_bias on
    q_a_proj, kv_a_proj_with_mqa and o_proj, of which mla_fields counts the last) over GLM's MoE: a dense MLP of
    intermediate_size where mlp_layer_types says 'dense' (layer 0 by default), elsewhere n_routed_experts experts of
    moe_intermediate_size, top num_experts_per_tok, beside one shared MLP of n_shared_experts x moe_intermediate_size
    (default 1). The router scores are sigmoids with a selection bias and the n_group / topk_group limit, though the
    config has no scoring_func (GLM_LITE_ROUTER). num_nextn_predict_layers multi-token-prediction layers ship beside the
    model and are not counted; active parameters leave out the input embedding, as Z.ai counts GLM-4.5's."""
    layers = r.req_int("num_hidden_layers")
    if not r.req_int("n_routed_experts"):
        raise r.fail(f"key '{r.prefix}n_routed_experts' must be >= 1: every glm4_moe_lite layer but the dense ones "
                     "routes")
    given = {k: v for k, v in r.cfg.items() if v is not None and k not in GLM_LITE_UNREAD}
    as_v3 = ConfigReader({"n_shared_experts": 1, **given, **GLM_LITE_ROUTER}, r.path, r.model_type, r.prefix)
    fields, notes = deepseek_fields(as_v3)
    dense, dense_notes = _glm_lite_dense_layers(r, layers)
    fields["moe"] = replace(fields["moe"], first_dense_layers=dense)
    return fields, [*notes, *dense_notes]


def _granitemoeshared(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Granite MoE with a shared expert (IBM; transformers GraniteMoeSharedConfig, model_type granitemoeshared):
    granitemoe's layers and keys (every layer routed over num_local_experts experts of intermediate_size, top
    num_experts_per_tok, softmax over the chosen logits) with one gated shared MLP of shared_intermediate_size beside
    the experts on every layer, ungated in its output (none when that size is 0, the class default). Its embedding,
    attention, residual and logit multipliers scale activations, not parameters."""
    fields, notes = BASE_FAMILIES["granitemoe"](r)
    shared = r.opt_int("shared_intermediate_size")
    fields["moe"] = replace(fields["moe"], num_shared_experts=1 if shared else 0, shared_expert_ffn=shared)
    if not shared:
        notes = [*notes, "shared_intermediate_size 0 (GraniteMoeSharedConfig's default): no shared expert, the "
                         "layers of granitemoe"]
    return fields, notes


def _flex_olmo(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """FlexOlmo (AllenAI FlexOlmo-7x7B-1T; transformers FlexOlmoConfig, model_type flex_olmo): OLMoE's layers (every
    layer routed over num_experts experts of intermediate_size, top num_experts_per_tok, softmax router without bias,
    no shared expert; attention_bias on q, k, v and o) under OLMo 2's norms: an RMSNorm after attention and one after
    the MoE block, none before them (two a layer, as counted), and q and k RMSNorms over the whole projections,
    num_attention_heads x head_dim and num_key_value_heads x head_dim wide, which rigplan counts per head."""
    fields = routed_every_layer(r, "num_experts", qk_norm=True)
    d = fields["head_dim"] or fields["hidden"] // fields["num_heads"]
    missing = fields["num_layers"] * whole_projection_qk_norm_gap(fields)
    return fields, ["norms after attention and after the MoE block (OLMo 2's placement), two a layer: the same count",
                    f"q and k norms counted per head ({2 * d} a layer); FlexOlmo's span the whole projections: "
                    f"{missing:,} parameters more in all"]


AFMOE_DEFAULTS = {"num_dense_layers": 1, "num_shared_experts": 2, "head_dim": 128}
"""transformers AfmoeConfig's defaults for the keys its config.json may leave out (its window and full-attention period
are hf_config.py's WINDOW_DEFAULT and FULL_EVERY_DEFAULT)."""


def _afmoe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """AFMoE (Arcee Trinity Nano, Mini and Large; transformers AfmoeConfig and modeling_afmoe.py, model_type afmoe):
    GQA of head_dim (default 128) with per-head q and k RMSNorms and a sigmoid output gate (gate_proj, as wide as
    q_proj, without bias); attention_bias on q, k, v and o. Four RMSNorms a layer (before and after attention and the
    MLP). The first num_dense_layers layers (default 1) keep a dense MLP of intermediate_size, the others route over
    num_experts experts of moe_intermediate_size (top num_experts_per_tok, sigmoid scores, a selection bias) beside one
    shared MLP of num_shared_experts x moe_intermediate_size (default 2). Local layers attend to a sliding_window with
    rotary positions, every global_attn_every_n_layers-th layer (or as layer_types says) attends fully without them
    (hf_config.py reads the windows, with AfmoeConfig's defaults: a 1,024-token window, full attention on every 4th
    layer)."""
    fields = standard(r, tie_default=False)
    layers = fields["num_layers"]
    bias = r.flag("attention_bias", False)
    fields.update(head_dim=r.opt_int("head_dim", default=AFMOE_DEFAULTS["head_dim"]), qkv_bias=bias,
                  attn_out_bias=bias, qk_norm=True, attention_output_gate=True, norms_per_layer=4)
    dense = r.opt_int("num_dense_layers", default=AFMOE_DEFAULTS["num_dense_layers"])
    if dense >= layers:
        raise r.fail(f"key '{r.prefix}num_dense_layers' ({dense}) leaves no MoE layer among {layers}")
    expert_ffn = r.req_int("moe_intermediate_size")
    shared = r.opt_int("num_shared_experts", default=AFMOE_DEFAULTS["num_shared_experts"])
    fields["moe"] = MoE(num_experts=r.req_int("num_experts"), top_k=r.req_int("num_experts_per_tok"),
                        expert_ffn=expert_ffn, num_shared_experts=1 if shared else 0,
                        shared_expert_ffn=expert_ffn * shared, first_dense_layers=dense, router="sigmoid")
    notes = ["router expert_bias (num_experts values per MoE layer, a parameter without gradient) not counted",
             "full-attention layers use no rotary embedding: no parameters either way"]
    if bias:
        notes.append("attention_bias: the output gate's projection has none, counted with one (heads x head_dim "
                     "parameters a layer too many)")
    if r.flag("mup_enabled", False):
        notes.append("mup_enabled scales the input embeddings by sqrt(hidden_size): no parameters")
    return fields, notes


def _qwen3_omni_moe_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of Qwen3-Omni's thinker (transformers Qwen3OmniMoeTextConfig, model_type qwen3_omni_moe_text):
    Qwen3-MoE's layers and keys (num_experts of moe_intermediate_size, decoder_sparse_step, mlp_only_layers, per-head
    q and k norms); its multimodal rotary sections carry no parameters; the thinker's tie_word_embeddings decides the
    output head (hf_config.OUTER_TIE_TYPES)."""
    fields, notes = BASE_FAMILIES["qwen3_moe"](r)
    if r.opt_int("shared_expert_intermediate_size"):
        notes = [*notes, "shared_expert_intermediate_size not counted (the released thinker has none)"]
    return fields, notes


MOE_VARIANT_FAMILIES: dict[str, Reader] = {
    "afmoe": _afmoe,
    "flex_olmo": _flex_olmo,
    "glm4_moe_lite": _glm4_moe_lite,
    "granitemoeshared": _granitemoeshared,
    "qwen3_omni_moe_text": _qwen3_omni_moe_text,
}
