"""Read a Hugging Face config.json into an Architecture (offline; no network, no transformers).

Each supported `model_type` has a small mapping from its config keys to the Architecture fields,
with the family's defaults where a key is absent (e.g. GPT-2 ties its embeddings, Llama does not).
Every problem with the input (missing file, bad JSON, unknown model_type, a missing or mistyped
key) raises InvalidSpec with one line that names the file and the key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rigplan.bounds import check
from rigplan.domain.model import MLA, Architecture, MoE, sliding_windows
from rigplan.errors import InvalidSpec
from rigplan.files import load_json, read_text

Config = Mapping[str, Any]

KEY_BOUNDS = {
    "hidden_size": "hidden", "n_embd": "hidden", "d_model": "hidden", "word_embed_proj_dim": "hidden",
    "num_hidden_layers": "layers", "n_layer": "layers", "n_layers": "layers", "num_layers": "layers",
    "num_attention_heads": "heads", "n_head": "heads", "n_heads": "heads",
    "num_key_value_heads": "kv_heads", "head_dim": "head_dim",
    "intermediate_size": "ffn", "n_inner": "ffn", "ffn_dim": "ffn",
    "vocab_size": "vocab", "num_experts": "experts", "num_local_experts": "experts", "n_routed_experts": "experts",
    "num_experts_per_tok": "top_k", "moe_intermediate_size": "expert_ffn", "n_shared_experts": "shared_experts",
    "max_position_embeddings": "context", "n_positions": "context", "max_seq_len": "context",
}
"""config.json keys checked against the same bounds as the shape flags (rigplan.bounds)."""
ZERO_MEANS_NONE = frozenset({"experts", "top_k", "expert_ffn", "shared_experts", "head_dim"})
"""Bounds whose 0 in a config.json means "none" (a dense model's num_experts: 0)."""
MAX_CONFIG_INT = 1 << 31
"""Any other whole number in a config.json (a window size, a layer index) is at most 2^31."""


class _Reader:
    """Typed access to one config dict; every error names the file and the key."""

    def __init__(self, cfg: Config, path: Path, model_type: str, prefix: str = "") -> None:
        self.cfg = cfg
        self.path = path
        self.model_type = model_type
        self.prefix = prefix
        """Dotted path of a nested section, e.g. 'attn_config.', shown in messages."""

    def nested(self, key: str) -> _Reader:
        """A reader for the JSON object under `key` (empty when absent)."""
        return _Reader(self.section(key), self.path, self.model_type, f"{self.prefix}{key}.")

    def fail(self, message: str) -> InvalidSpec:
        return InvalidSpec(f"{self.path}: {message}")

    def _first(self, keys: tuple[str, ...]) -> tuple[str, Any] | None:
        for key in keys:
            if self.cfg.get(key) is not None:
                return key, self.cfg[key]
        return None

    def _as_int(self, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or value != int(value):
            raise self.fail(f"key '{self.prefix}{key}' must be a whole number, got {value!r}")
        name = KEY_BOUNDS.get(key)
        if name is not None and not (value == 0 and name in ZERO_MEANS_NONE):
            check(name, value, label=f"{self.path}: key '{self.prefix}{key}'")
        elif not 0 <= value <= MAX_CONFIG_INT:
            raise self.fail(f"key '{self.prefix}{key}' must be between 0 and {MAX_CONFIG_INT:,}, got {value!r}")
        return int(value)

    def req_int(self, *keys: str) -> int:
        """A required whole number under the first present key."""
        found = self._first(keys)
        if found is None:
            alternatives = " or ".join(f"'{self.prefix}{k}'" for k in keys)
            raise self.fail(f"missing key {alternatives} (needed for model_type '{self.model_type}')")
        return self._as_int(*found)

    def opt_int(self, *keys: str, default: int = 0) -> int:
        found = self._first(keys)
        return default if found is None else self._as_int(*found)

    def number(self, key: str, default: float) -> float:
        value = self.cfg.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(f"key '{self.prefix}{key}' must be a finite number, got {value!r}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"key '{self.prefix}{key}' must be true or false, got {value!r}")
        return value

    def int_list(self, key: str) -> list[int]:
        value = self.cfg.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(f"key '{self.prefix}{key}' must be a list of layer indices, got {value!r}")
        return [self._as_int(key, v) for v in value]

    def section(self, key: str) -> Config:
        value = self.cfg.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"key '{self.prefix}{key}' must be a JSON object, got {value!r}")
        return value


def _moe_layer_split(num_layers: int, dense: list[int]) -> tuple[int, list[str]]:
    """Number of dense layers, and a note when they are not all leading (counted as if they were)."""
    dense_set = sorted({i for i in dense if 0 <= i < num_layers})
    notes = []
    if dense_set and dense_set != list(range(len(dense_set))):
        notes.append(
            f"dense MLP layers at positions {dense_set} are counted as leading dense layers "
            "(same parameter count; placement differs)"
        )
    return len(dense_set), notes


def _standard(r: _Reader, *, tie_default: bool) -> dict[str, Any]:
    """Keys shared by the Llama-style families."""
    heads = r.req_int("num_attention_heads")
    return {
        "num_layers": r.req_int("num_hidden_layers"),
        "hidden": r.req_int("hidden_size"),
        "num_heads": heads,
        "num_kv_heads": r.opt_int("num_key_value_heads", default=heads),
        "head_dim": r.opt_int("head_dim"),
        "ffn": r.req_int("intermediate_size"),
        "vocab": r.req_int("vocab_size"),
        "context_length": r.opt_int("max_position_embeddings"),
        "tied_embeddings": r.flag("tie_word_embeddings", tie_default),
    }


def _llama(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, mlp_bias=r.flag("mlp_bias", False))
    return fields, []


def _mistral(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    return _standard(r, tie_default=False), []


def _mixtral(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
    fields["moe"] = MoE(
        num_experts=r.req_int("num_local_experts"),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=fields["ffn"],
    )
    return fields, []


def _phi3(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
    notes = ["fused qkv_proj and gate_up_proj counted as separate projections (same total)"]
    if r.flag("attention_bias", False):
        fields.update(qkv_bias=True, attn_out_bias=True)
    return fields, notes


def _gemma(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=True)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias)
    return fields, ["GeGLU MLP counted as a gated MLP"]


def _gemma2(r: _Reader) -> tuple[dict[str, Any], list[str]]:
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


def _gemma3_text(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    absent = sorted(k for k in GEMMA3_TEXT_DEFAULTS if r.cfg.get(k) is None)
    filled = _Reader({**GEMMA3_TEXT_DEFAULTS, **{k: v for k, v in r.cfg.items() if v is not None}},
                     r.path, r.model_type, r.prefix)
    fields, notes = _gemma2(filled)
    fields["qk_norm"] = True  # Gemma 3 replaces Gemma 2's soft-capping with q/k RMSNorm
    if absent:
        notes = [*notes, f"Gemma3TextConfig defaults for absent keys: {', '.join(absent)}"]
    return fields, notes


def _qwen2(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
    fields["qkv_bias"] = True  # Qwen2 q/k/v projections always carry a bias; o_proj does not
    return fields, []


def _qwen_sparse_layers(r: _Reader, num_layers: int) -> list[int]:
    """Layers with a dense MLP in Qwen2-MoE / Qwen3-MoE (mlp_only_layers, decoder_sparse_step)."""
    step = r.opt_int("decoder_sparse_step", default=1)
    if step < 1:
        raise r.fail(f"key 'decoder_sparse_step' must be >= 1, got {step}")
    only = set(r.int_list("mlp_only_layers"))
    return [i for i in range(num_layers) if i in only or (i + 1) % step != 0]


def _qwen2_moe(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields, notes = _qwen2(r)
    dense, dense_notes = _moe_layer_split(fields["num_layers"], _qwen_sparse_layers(r, fields["num_layers"]))
    shared_ffn = r.opt_int("shared_expert_intermediate_size")
    fields["moe"] = MoE(
        num_experts=r.req_int("num_experts"),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=r.req_int("moe_intermediate_size"),
        num_shared_experts=1 if shared_ffn else 0,
        shared_expert_ffn=shared_ffn,
        first_dense_layers=dense,
        shared_expert_gate=bool(shared_ffn),
    )
    return fields, notes + dense_notes


def _qwen3(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, qk_norm=True)
    return fields, []


def _qwen3_moe(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields, notes = _qwen3(r)
    dense, dense_notes = _moe_layer_split(fields["num_layers"], _qwen_sparse_layers(r, fields["num_layers"]))
    fields["moe"] = MoE(
        num_experts=r.req_int("num_experts"),
        top_k=r.req_int("num_experts_per_tok"),
        expert_ffn=r.req_int("moe_intermediate_size"),
        first_dense_layers=dense,
    )
    return fields, notes + dense_notes


def _deepseek(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
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
    routed = r.opt_int("n_routed_experts")
    if routed:
        layers = fields["num_layers"]
        first_dense = r.opt_int("first_k_dense_replace")
        freq = r.opt_int("moe_layer_freq", default=1)
        if freq < 1:
            raise r.fail(f"key 'moe_layer_freq' must be >= 1, got {freq}")
        dense_layers = [i for i in range(layers) if i < first_dense or i % freq != 0]
        dense, dense_notes = _moe_layer_split(layers, dense_layers)
        notes += dense_notes
        fields["moe"] = MoE(
            num_experts=routed,
            top_k=r.req_int("num_experts_per_tok"),
            expert_ffn=r.req_int("moe_intermediate_size"),
            num_shared_experts=r.opt_int("n_shared_experts"),
            first_dense_layers=dense,
            router="sigmoid" if r.cfg.get("scoring_func") == "sigmoid" else "softmax",
            mtp_layers=r.opt_int("num_nextn_predict_layers"),
        )
        if r.cfg.get("topk_method") == "noaux_tc":
            notes.append("router e_score_correction_bias (n_routed_experts values per MoE layer) not counted")
    mtp = r.opt_int("num_nextn_predict_layers")
    if mtp:
        notes.append(f"{mtp} multi-token-prediction layer(s) not counted (as in the published totals)")
    return fields, notes


def _gpt_oss(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    fields = _standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", True)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, attention_sinks=True)
    fields["moe"] = MoE(
        num_experts=r.req_int("num_local_experts"),
        top_k=r.req_int("experts_per_token", "num_experts_per_tok"),
        expert_ffn=fields["ffn"],
        expert_bias=True,
        router_bias=True,
    )
    return fields, []


def _llama4_text(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    """Llama 4 text decoder: MoE every interleave_moe_layer_step-th layer (index i with
    (i + 1) % step == 0, as transformers' Llama4TextModel), one shared expert, a dense MLP of
    intermediate_size_mlp elsewhere; routed experts of intermediate_size."""
    fields = _standard(r, tie_default=False)
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
        dense, notes = _moe_layer_split(layers, [i for i in range(layers) if i not in moe_layers])
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


def _glm4_moe(r: _Reader) -> tuple[dict[str, Any], list[str]]:
    """GLM-4.5: GQA with q/k/v biases and optional QK norm, leading dense layers
    (first_k_dense_replace), routed and shared experts of moe_intermediate_size."""
    fields = _standard(r, tie_default=False)
    fields.update(qkv_bias=r.flag("attention_bias", True), qk_norm=r.flag("use_qk_norm", False))
    layers = fields["num_layers"]
    dense, notes = _moe_layer_split(layers, list(range(min(r.opt_int("first_k_dense_replace"), layers))))
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


def _gpt2(r: _Reader) -> tuple[dict[str, Any], list[str]]:
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


def _gpt_neox(r: _Reader) -> tuple[dict[str, Any], list[str]]:
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


def _opt(r: _Reader) -> tuple[dict[str, Any], list[str]]:
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


def _bloom(r: _Reader) -> tuple[dict[str, Any], list[str]]:
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


def _mpt(r: _Reader) -> tuple[dict[str, Any], list[str]]:
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


FULL_EVERY_DEFAULT = {"gemma2": 2, "gemma3_text": 6, "gpt_oss": 2}
"""Period of the full-attention layers when a config.json gives sliding_window without layer_types: Hugging
Face's Gemma2 (every other layer, layer 0 local), Gemma3 (sliding_window_pattern, default 6) and gpt-oss
modules; the other families apply the window to every layer (Mistral)."""
WINDOW_SWITCH = {"qwen2": "use_sliding_window", "qwen2_moe": "use_sliding_window", "qwen3": "use_sliding_window",
                 "qwen3_moe": "use_sliding_window"}
"""Families whose sliding_window applies only when this flag is true (Qwen configs carry a window but off)."""


def attention_windows(r: _Reader, model_type: str, num_layers: int) -> tuple[tuple[int, ...], list[str]]:
    """Per-layer attention windows (0 = full) from sliding_window and layer_types / sliding_window_pattern.

    layer_types ("sliding_attention" / "full_attention", transformers >= 4.53) wins when present; Qwen's
    max_window_layers keeps the layers below it full. Other layer kinds (Llama 4's chunked attention) are
    counted as full attention, and a note says so.
    """
    window = r.opt_int("sliding_window")
    switch = WINDOW_SWITCH.get(model_type)
    if not window or (switch and not r.flag(switch, False)):
        return (), []
    kinds = r.cfg.get("layer_types")
    notes: list[str] = []
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != num_layers or not all(isinstance(k, str) for k in kinds):
            raise r.fail(f"key '{r.prefix}layer_types' must list one attention kind per layer ({num_layers}), "
                         f"got {kinds!r}")
        other = sorted({k for k in kinds if k not in ("sliding_attention", "full_attention")})
        if other:
            notes.append(f"layer kinds {', '.join(other)} counted as full attention")
        windows = tuple(window if k == "sliding_attention" else 0 for k in kinds)
    elif switch:
        first_local = r.opt_int("max_window_layers", default=0)
        windows = tuple(window if i >= first_local else 0 for i in range(num_layers))
    else:
        every = r.opt_int("sliding_window_pattern", default=FULL_EVERY_DEFAULT.get(model_type, 0))
        windows = sliding_windows(num_layers, window, every)
    local = sum(1 for w in windows if w)
    if not local:
        return (), notes
    return windows, [*notes, f"{local} of {num_layers} layers attend to a {window}-token sliding window"]


_FAMILIES: dict[str, Callable[[_Reader], tuple[dict[str, Any], list[str]]]] = {
    "bloom": _bloom,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "glm4_moe": _glm4_moe,
    "gpt_oss": _gpt_oss,
    "kimi_k2": _deepseek,
    "llama": _llama,
    "llama4_text": _llama4_text,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "mpt": _mpt,
    "opt": _opt,
    "phi3": _phi3,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
}

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(_FAMILIES))

TEXT_TOWER_TYPES = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
"""The text model of a multimodal config whose text_config does not name its own model_type (transformers'
Gemma3Config and Llama4Config build their text_config as Gemma3TextConfig / Llama4TextConfig)."""


def _load_json(path: str | Path) -> tuple[Path, dict[str, Any]]:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.exists():
        raise InvalidSpec(f"{p}: no such file; give a Hugging Face config.json or a folder holding one")
    raw = load_json(read_text(p, "MODEL"), str(p))
    if not isinstance(raw, dict):
        raise InvalidSpec(f"{p}: a config.json must hold a JSON object, not {type(raw).__name__}")
    return p, raw


def architecture_from_hf_config(path: str | Path, model_id: str | None = None) -> Architecture:
    """The Architecture described by a Hugging Face config.json (or a folder holding one).

    `model_id` names the result; by default the folder name (or the file name without .json).
    Published parameter counts are unknown here, so official_params stays 0.
    """
    file, raw = _load_json(path)
    cfg: Config = raw
    notes = [f"read from {file}"]
    model_type = cfg.get("model_type")
    if model_type is None:
        raise InvalidSpec(f"{file}: missing key 'model_type'")
    if not isinstance(model_type, str):
        raise InvalidSpec(f"{file}: key 'model_type' must be a string, got {model_type!r}")
    if model_type not in _FAMILIES and isinstance(cfg.get("text_config"), dict):
        inner = cfg["text_config"].get("model_type") or TEXT_TOWER_TYPES.get(model_type)
        if isinstance(inner, str) and inner in _FAMILIES:
            notes.append(f"text model ({inner}) of a '{model_type}' config; other towers not counted")
            cfg, model_type = cfg["text_config"], inner
    if model_type not in _FAMILIES:
        supported = ", ".join(SUPPORTED_MODEL_TYPES)
        raise InvalidSpec(f"{file}: model_type {model_type!r} is not supported; supported: {supported}")
    reader = _Reader(cfg, file, model_type)
    fields, family_notes = _FAMILIES[model_type](reader)
    fields["attention_windows"], window_notes = attention_windows(reader, model_type, fields["num_layers"])
    family_notes = [*family_notes, *window_notes]
    default_id = file.parent.name if file.name == "config.json" and file.parent.name else file.stem
    arch_id = model_id or default_id
    name = raw.get("_name_or_path") if isinstance(raw.get("_name_or_path"), str) else None
    try:
        return Architecture(
            id=arch_id,
            name=name or arch_id,
            notes=(*notes, f"model_type {model_type}", *family_notes),
            **fields,
        )
    except InvalidSpec as exc:
        raise InvalidSpec(f"{file}: {exc}") from exc
