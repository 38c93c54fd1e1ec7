"""config.json readers of dense families that keep a Llama-style decoder layer and change its norms, biases or MLP:
GLM-4-0414 (glm4), OLMo 2 and OLMo 3 (olmo2, olmo3), Command R, Command R7B and Command A (cohere, cohere2), Granite 3
dense (granite), Seed-OSS (seed_oss), EXAONE 4.0 (exaone4), SmolLM3 (smollm3), Apertus (apertus), ERNIE 4.5 dense
(ernie4_5), Hunyuan dense (hunyuan_v1_dense) and the text models of Qwen2-VL, Qwen2.5-VL and Qwen3-VL. Each returns the
fields and notes on what it assumed, as the readers of hf_families.py do; hf_config.py joins the tables and reads the
sliding windows (sliding_window with layer_types or sliding_window_pattern) itself."""

from __future__ import annotations

from typing import Any

from rigplan.catalog.hf_families import FAMILIES as BASE_FAMILIES
from rigplan.catalog.hf_reader import ConfigReader, Reader, standard, whole_projection_qk_norm_gap


def _dense(r: ConfigReader, *, tie: bool, head_dim: int = 0, bias_key: str = "attention_bias",
           mlp_bias_key: str = "", **layout: Any) -> dict[str, Any]:
    """Llama-style fields (hf_reader.standard) under a family's defaults: `tie` where tie_word_embeddings is absent;
    `head_dim` where the head_dim key is absent (0: hidden_size / num_attention_heads, as a null head_dim is too);
    `bias_key` (default false; '' for none) puts a bias on the q, k, v and output projections, `mlp_bias_key` on the
    MLP's projections; `layout` sets any field after those."""
    fields = standard(r, tie_default=tie)
    if "head_dim" not in r.cfg:
        fields["head_dim"] = head_dim
    bias = r.flag(bias_key, False) if bias_key else False
    fields.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=r.flag(mlp_bias_key, False) if mlp_bias_key else False)
    fields.update(layout)
    return fields


def _qk_norm_gap(fields: dict[str, Any], family: str, how: str) -> str:
    """The note on q and k norms that rigplan counts per head (2 x head_dim a layer) where the family's weights span
    every head: (heads + kv heads) x head_dim a layer."""
    return (f"q and k norms counted per head ({family} {how}: {whole_projection_qk_norm_gap(fields):,} parameters more "
            "a layer)")


def _glm4(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """GLM-4-0414 (Z.ai GLM-4-9B-0414, GLM-4-32B-0414; transformers Glm4Config): four RMSNorms a layer (before and
    after attention, before and after the MLP), biases on q, k and v only (attention_bias, default true; none on the
    output projection), head_dim 128 where absent, untied embeddings by default. Its MLP is one gate_up_proj linear,
    counted as a gate and an up projection (the same weights; for LoRA transformers adapts it as one module)."""
    fields = _dense(r, tie=False, head_dim=128, bias_key="", qkv_bias=r.flag("attention_bias", True),
                    norms_per_layer=4)
    return fields, ["fused gate_up_proj counted as separate gate and up projections (same total)"]


def _olmo(r: ConfigReader, family: str) -> tuple[dict[str, Any], list[str]]:
    """OLMo 2's layer: no norm before attention or the MLP but an RMSNorm after each (two a layer), q and k RMSNorms
    over the whole projection, attention_bias on all four attention projections, untied embeddings by default."""
    fields = _dense(r, tie=False, qk_norm=True)
    return fields, [_qk_norm_gap(fields, family, "normalises the whole projection")]


def _olmo2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """OLMo 2 (AllenAI OLMo-2-1124-7B / 13B, OLMo-2-0325-32B; transformers Olmo2Config): _olmo's layer."""
    return _olmo(r, "OLMo 2")


def _olmo3(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """OLMo 3 (AllenAI Olmo-3-1025-7B, Olmo-3-1125-32B; transformers Olmo3Config): OLMo 2's layer (_olmo); the
    layers layer_types names sliding_attention attend to a sliding_window-token window (hf_config; Olmo3Config's
    defaults where the file has neither: 4,096 tokens on three layers in four)."""
    return _olmo(r, "OLMo 3")


def _command(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """The Command layer: attention and the MLP side by side on one LayerNorm (a weight, no bias), attention_bias on
    all four attention projections, tied embeddings by default; logit_scale scales the logits (no parameter)."""
    fields = _dense(r, tie=True, norm="layernorm", norm_bias=False, norms_per_layer=1)
    return fields, ["parallel attention and MLP on one LayerNorm a layer; tensor-parallel traffic counted as for a "
                    "sequential block (an upper bound)"]


def _cohere(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Command R / R+ and Aya 23 (Cohere; transformers CohereConfig): _command's layer; use_qk_norm (default false)
    adds LayerNorms on q and k with a weight per head and channel (heads x head_dim and kv heads x head_dim)."""
    fields, notes = _command(r)
    if r.flag("use_qk_norm", False):
        fields["qk_norm"] = True
        notes.append(_qk_norm_gap(fields, "Command R", "has a weight for every head"))
    return fields, notes


def _cohere2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Command R7B and Command A (Cohere; transformers Cohere2Config): _command's layer without q/k norms (head_dim
    hidden_size / num_attention_heads unless the file gives one); sliding windows on three layers in four
    (layer_types, or sliding_window_pattern, default 4; a 4,096-token window by default), the others full attention
    without RoPE (hf_config)."""
    return _command(r)


GRANITE_MULTIPLIERS = ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling")
"""Granite's scalars on the embeddings, the residual branches, the attention scores and the logits."""


def _granite(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Granite 3.x dense (IBM granite-3.x-2b / 8b; transformers GraniteConfig): Llama's layer, attention_bias on all
    four attention projections and mlp_bias on the MLP's three, untied embeddings where tie_word_embeddings is absent;
    GRANITE_MULTIPLIERS scale activations and carry no parameters (each read only to check it is a number)."""
    for key in GRANITE_MULTIPLIERS:
        r.number(key, 1.0)
    return _dense(r, tie=False, mlp_bias_key="mlp_bias"), []


def _seed_oss(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Seed-OSS (ByteDance Seed-OSS-36B; transformers SeedOssConfig): Llama's layer with biases on q, k and v
    (attention_bias, default true), on the output projection (attention_out_bias, default false) and on the MLP
    (mlp_bias, default false); head_dim 128 where absent; untied embeddings by default."""
    return _dense(r, tie=False, head_dim=128, bias_key="", mlp_bias_key="mlp_bias",
                  qkv_bias=r.flag("attention_bias", True), attn_out_bias=r.flag("attention_out_bias", False)), []


def _exaone4(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """EXAONE 4.0 (LG AI Research EXAONE-4.0-1.2B / 32B; transformers Exaone4Config): OLMo 2's post-norm layer (an
    RMSNorm after attention and one after the MLP) with q and k RMSNorms per head (exact), no bias anywhere (the
    modeling file has none), untied embeddings by default; sliding windows through layer_types or an integer
    sliding_window_pattern (hf_config; Exaone4Config's defaults: 4,096 tokens, every 4th layer full)."""
    return _dense(r, tie=False, bias_key="", qk_norm=True), []


def _smollm3(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """SmolLM3 (Hugging Face SmolLM3-3B; transformers SmolLM3Config): Llama's layer (attention_bias, mlp_bias), tied
    embeddings by default; its layers without RoPE (no_rope_layers 0, by default every 4th: no_rope_layer_interval)
    have the same weights as the others."""
    fields = _dense(r, tie=True, mlp_bias_key="mlp_bias")
    layers = fields["num_layers"]
    flags = r.int_list("no_rope_layers")
    interval = r.opt_int("no_rope_layer_interval", default=4) or 1
    nope = flags.count(0) if flags else sum(1 for i in range(layers) if (i + 1) % interval == 0)
    return fields, [f"{nope} of {layers} layers without rotary embedding (no parameters)"] if nope else []


def _apertus(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Apertus (Swiss AI Apertus-8B / 70B; transformers ApertusConfig): a two-matrix MLP (up and down projections,
    no gate) around the xIELU activation, q and k RMSNorms per head (exact), attention_bias on all four attention
    projections, untied embeddings by default. xIELU learns two scalars a layer (alpha_p, alpha_n), not counted."""
    fields = _dense(r, tie=False, mlp="plain", qk_norm=True)
    xielu = r.cfg.get("hidden_act", "xielu") == "xielu"
    return fields, ["xIELU activation: its two learned scalars a layer not counted"] if xielu else []


def _ernie4_5(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """ERNIE 4.5 dense (Baidu ERNIE-4.5-0.3B; transformers Ernie4_5Config): Llama's layer, use_bias on every
    projection (q, k, v, output and the MLP's three), head_dim 128 where absent, tied embeddings by default."""
    return _dense(r, tie=True, head_dim=128, bias_key="use_bias", mlp_bias_key="use_bias"), []


def _hunyuan_v1_dense(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Hunyuan dense (Tencent Hunyuan-0.5B to 7B; transformers HunYuanDenseV1Config): Llama's layer with q and k
    RMSNorms per head (query_layernorm, key_layernorm: exact), attention_bias on all four attention projections, no
    MLP bias, untied embeddings where tie_word_embeddings is absent."""
    return _dense(r, tie=False, qk_norm=True), []


def _qwen2_vl_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of Qwen2-VL and Qwen2.5-VL (transformers Qwen2VLTextConfig, Qwen2_5_VLTextConfig): Qwen2's layer and
    keys (q, k and v biases); its multimodal rotary sections (rope_scaling mrope_section) carry no parameters."""
    return BASE_FAMILIES["qwen2"](r)


def _qwen3_vl_text(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Text model of Qwen3-VL (transformers Qwen3VLTextConfig): Qwen3's layer and keys (per-head q and k norms,
    head_dim); its interleaved multimodal rotary sections carry no parameters; the wrapper's tie_word_embeddings decides
    the output head (hf_config.OUTER_TIE_TYPES)."""
    return BASE_FAMILIES["qwen3"](r)


DENSE_FAMILIES: dict[str, Reader] = {
    "apertus": _apertus,
    "cohere": _cohere,
    "cohere2": _cohere2,
    "ernie4_5": _ernie4_5,
    "exaone4": _exaone4,
    "glm4": _glm4,
    "granite": _granite,
    "hunyuan_v1_dense": _hunyuan_v1_dense,
    "olmo2": _olmo2,
    "olmo3": _olmo3,
    "qwen2_5_vl_text": _qwen2_vl_text,
    "qwen2_vl_text": _qwen2_vl_text,
    "qwen3_vl_text": _qwen3_vl_text,
    "seed_oss": _seed_oss,
    "smollm3": _smollm3,
}
