"""Read a Hugging Face config.json into an Architecture (offline; no network, no transformers).

Each supported `model_type` has a small mapping from its config keys to the Architecture fields,
with the family's defaults where a key is absent (e.g. GPT-2 ties its embeddings, Llama does not).
Every problem with the input (missing file, bad JSON, unknown model_type, a missing or mistyped
key) raises InvalidSpec with one line that names the file and the key.

hf_reader.py gives typed, bounded access to the keys; the readers, one per model_type, sit in hf_families.py
(Llama-style and the first MoE families), hf_dense_families.py, hf_moe_families.py, hf_moe_variants.py,
hf_hybrid_families.py (Mamba-2 hybrids) and hf_remote_code_families.py (checkpoints that ship their own modeling
code); this module reads the file, the attention windows and builds the Architecture.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rigplan.catalog.hf_dense_families import DENSE_FAMILIES
from rigplan.catalog.hf_families import FAMILIES as BASE_FAMILIES
from rigplan.catalog.hf_hybrid_families import HYBRID_FAMILIES
from rigplan.catalog.hf_moe_families import MOE_FAMILIES
from rigplan.catalog.hf_moe_variants import MOE_VARIANT_FAMILIES
from rigplan.catalog.hf_reader import Config, ConfigReader
from rigplan.catalog.hf_remote_code_families import REMOTE_CODE_FAMILIES
from rigplan.domain.model import Architecture, sliding_windows
from rigplan.errors import InvalidSpec
from rigplan.files import load_json, read_text

FULL_EVERY_DEFAULT = {"gemma2": 2, "gemma3_text": 6, "gpt_oss": 2, "afmoe": 4, "olmo3": 4, "cohere2": 4, "exaone4": 4}
"""Period of the full-attention layers when a config.json gives sliding_window without layer_types: Hugging
Face's Gemma2 (every other layer, layer 0 local), Gemma3 (sliding_window_pattern, default 6), gpt-oss, AFMoE
(global_attn_every_n_layers, default 4), OLMo 3, Command R7B / Command A and EXAONE 4.0 (every 4th layer full) modules;
the other families apply the window to every layer (Mistral)."""
WINDOW_SWITCH = {family: "use_sliding_window" for family in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "smollm3",
                                                              "qwen2_vl_text", "qwen2_5_vl_text", "qwen3_vl_text")}
"""Families whose sliding_window applies only when this flag is true (Qwen and SmolLM3 configs carry a window but
off)."""
WINDOW_DEFAULT = {"afmoe": 1024, "olmo3": 4096, "cohere2": 4096}
"""sliding_window of the families whose config class sets one where config.json leaves the key out (AfmoeConfig,
Olmo3Config, Cohere2Config; an explicit null still means no window). Not EXAONE 4.0's: its 1.2B model attends
globally and config copies of it leave the key out."""
PERIOD_KEY = {"afmoe": "global_attn_every_n_layers"}
"""The key that gives the full-attention period where a family does not call it sliding_window_pattern (AfmoeConfig:
full attention on every n-th layer, n >= 1)."""
FIRST_LOCAL_DEFAULT = {"dots1": 62}
"""Families whose sliding_window applies from layer max_window_layers on, with no switch: transformers' Dots1Config
(max_window_layers defaults to 62, every layer of dots.llm1, so a window it carries stays off by default)."""


def attention_windows(r: ConfigReader, model_type: str, num_layers: int) -> tuple[tuple[int, ...], list[str]]:
    """Per-layer attention windows (0 = full) from sliding_window and layer_types / sliding_window_pattern.

    layer_types ("sliding_attention" / "full_attention", transformers >= 4.53) wins when present; Qwen's
    max_window_layers keeps the layers below it full. Other layer kinds (Llama 4's chunked attention) are
    counted as full attention, and a note says so.
    """
    window = r.opt_int("sliding_window") if "sliding_window" in r.cfg else WINDOW_DEFAULT.get(model_type, 0)
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
    elif switch or model_type in FIRST_LOCAL_DEFAULT:
        first_local = r.opt_int("max_window_layers", default=FIRST_LOCAL_DEFAULT.get(model_type, 0))
        windows = tuple(window if i >= first_local else 0 for i in range(num_layers))
    else:
        windows = _patterned_windows(r, model_type, num_layers, window)
    local = sum(1 for w in windows if w)
    if not local:
        return (), notes
    return windows, [*notes, f"{local} of {num_layers} layers attend to a {window}-token sliding window"]


def _patterned_windows(r: ConfigReader, model_type: str, num_layers: int, window: int) -> tuple[int, ...]:
    """Windows by a repeating period (sliding_window_pattern or the family's PERIOD_KEY: every n-th layer full), or by
    EXAONE's letters ('LLLG': L a local layer, G a global one, repeated over the layers)."""
    key = PERIOD_KEY.get(model_type, "sliding_window_pattern")
    letters = r.cfg.get(key)
    if isinstance(letters, str):
        if not letters or set(letters) - {"L", "G"}:
            raise r.fail(f"key '{r.prefix}{key}' must be a number or letters L (local) and G (global), got {letters!r}")
        return tuple(window if letters[i % len(letters)] == "L" else 0 for i in range(num_layers))
    every = r.opt_int(key, default=FULL_EVERY_DEFAULT.get(model_type, 0))
    if key in PERIOD_KEY.values() and every < 1:
        raise r.fail(f"key '{r.prefix}{key}' must be >= 1, got {every}")
    return sliding_windows(num_layers, window, every)


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude scale 0.1·mscale·ln(scale) + 1 (1 at scale <= 1), as transformers' and Megatron-Core's
    rotary code write it (modeling_rope_utils get_mscale, yarn_rotary_pos_embedding _yarn_get_mscale)."""
    return 1.0 if scale <= 1.0 else 0.1 * mscale * math.log(scale) + 1.0


def rope_attention_factor(r: ConfigReader) -> tuple[float, list[str]]:
    """The factor YaRN puts on the rotary cos and sin (Architecture.rope_attention_factor), read from
    rope_scaling (rope_parameters in transformers 5): attention_factor when given, else mscale / mscale_all_dim
    when both are given (DeepSeek-V3, Kimi K2), else yarn_mscale(factor) (gpt-oss); 1 for other rope types."""
    section_key = "rope_parameters" if isinstance(r.cfg.get("rope_parameters"), dict) else "rope_scaling"
    if not isinstance(r.cfg.get(section_key), dict):
        return 1.0, []
    rope = r.nested(section_key)
    if (rope.cfg.get("rope_type") or rope.cfg.get("type")) != "yarn":
        return 1.0, []
    scale = rope.number("factor", 1.0)
    given = rope.cfg.get("attention_factor")
    if given is not None:
        factor = rope.number("attention_factor", 1.0)
    elif rope.cfg.get("mscale") is not None and rope.cfg.get("mscale_all_dim") is not None:
        factor = yarn_mscale(scale, rope.number("mscale", 1.0)) / yarn_mscale(scale, rope.number("mscale_all_dim", 1.0))
    else:
        factor = yarn_mscale(scale)
    if not 1.0 <= factor <= 10.0:
        raise r.fail(f"key '{section_key}' gives a YaRN attention factor of {factor:.4g}; rigplan takes 1 to 10")
    return factor, ([f"YaRN rotary scaling (factor {scale:g}): cos and sin scaled by {factor:.4f}"]
                    if factor != 1.0 else [])


FAMILIES = {**BASE_FAMILIES, **DENSE_FAMILIES, **MOE_FAMILIES, **MOE_VARIANT_FAMILIES, **HYBRID_FAMILIES,
            **REMOTE_CODE_FAMILIES}
"""Every model_type rigplan reads, and its reader."""
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(FAMILIES))

TEXT_TOWER_TYPES = {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen3_vl_moe": "qwen3_vl_moe_text",
                    "glm4v_moe": "glm4v_moe_text", "qwen3_5_moe": "qwen3_5_moe_text", "qwen3_5": "qwen3_5_text",
                    "qwen3_vl": "qwen3_vl_text", "qwen2_5_vl": "qwen2_5_vl_text", "qwen2_vl": "qwen2_vl_text",
                    "mistral3": "mistral", "qwen3_omni_moe_thinker": "qwen3_omni_moe_text"}
"""The text model of a multimodal config whose text_config does not name its own model_type (transformers'
Gemma3Config, Llama4Config, Qwen3VLMoeConfig, Glm4vMoeConfig, Qwen3_5MoeConfig and Qwen3_5Config build their
text_config as Gemma3TextConfig, Llama4TextConfig, Qwen3VLMoeTextConfig, Glm4vMoeTextConfig, Qwen3_5MoeTextConfig and
Qwen3_5TextConfig; Qwen3VLConfig, Qwen2_5_VLConfig and Qwen2VLConfig as their text configs; Mistral3Config (Mistral
Small 3.1 and later) as MistralConfig; Qwen3OmniMoeThinkerConfig as Qwen3OmniMoeTextConfig)."""
THINKER_TYPES = {"qwen3_omni_moe": "thinker_config"}
"""Omni configs whose trained language model sits one level further down, in the thinker (Qwen3-Omni: thinker_config
holds the text_config beside the audio and vision encoders; the talker and the code-to-wave model are other parts)."""
FLAT_TEXT_TYPES = {"qwen2_vl": "qwen2_vl_text", "qwen2_5_vl": "qwen2_5_vl_text"}
"""Multimodal configs whose text model's keys may sit at the top level, without a text_config: the Qwen2-VL and
Qwen2.5-VL checkpoints written before transformers split the text config out (Qwen2_5_VLConfig still builds its
text_config from them)."""
OUTER_TIE_TYPES = frozenset({"qwen3_vl_moe", "glm4v_moe", "qwen3_5_moe", "qwen3_5", "qwen3_vl", "qwen2_5_vl",
                             "qwen2_vl", "qwen3_omni_moe_thinker"})
"""Multimodal configs whose own tie_word_embeddings decides the output head: transformers ties the wrapper's lm_head
by the outer flag, and the text config's default can disagree (Qwen3VLMoeTextConfig defaults to true where
Qwen3-VL-MoE's checkpoints and the outer Qwen3VLMoeConfig are untied; Qwen3_5MoeConfig is Qwen3VLConfig's kind)."""


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
    prefix = ""
    thinker_key = THINKER_TYPES.get(model_type, "")
    if isinstance(cfg.get(thinker_key), dict):
        notes.append(f"the thinker of a '{model_type}' config; its talker and code-to-wave model not counted")
        cfg, prefix = cfg[thinker_key], f"{thinker_key}."
        model_type = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else f"{model_type}_thinker"
    if model_type in FLAT_TEXT_TYPES and not isinstance(cfg.get("text_config"), dict):
        notes.append(f"text model of a '{model_type}' config (its keys at the top level); the vision tower not counted")
        model_type = FLAT_TEXT_TYPES[model_type]
    if model_type not in FAMILIES and isinstance(cfg.get("text_config"), dict):
        text: Config = cfg["text_config"]
        inner = text.get("model_type") or TEXT_TOWER_TYPES.get(model_type)
        if isinstance(inner, str) and inner in FAMILIES:
            notes.append(f"text model ({inner}) of a '{model_type}' config; other towers not counted")
            outer_tie = cfg.get("tie_word_embeddings")
            if model_type in OUTER_TIE_TYPES and isinstance(outer_tie, bool):
                text = {**text, "tie_word_embeddings": outer_tie}
            cfg, model_type, prefix = text, inner, prefix + "text_config."
    if model_type not in FAMILIES:
        supported = ", ".join(SUPPORTED_MODEL_TYPES)
        raise InvalidSpec(f"{file}: model_type {model_type!r} is not supported; supported: {supported}; or describe "
                          "the model with shape flags instead of the file (--layers --hidden --heads --vocab, and for "
                          "an MoE --experts --top-k --expert-ffn)")
    reader = ConfigReader(cfg, file, model_type, prefix)
    try:
        fields, family_notes = FAMILIES[model_type](reader)
    except InvalidSpec as exc:  # a domain value's own check (MoE top-k above its experts) names no file
        raise exc if str(file) in str(exc) else InvalidSpec(f"{file}: {exc}") from exc
    fields["attention_windows"], window_notes = attention_windows(reader, model_type, fields["num_layers"])
    fields["rope_attention_factor"], rope_notes = rope_attention_factor(reader)
    family_notes = [*family_notes, *window_notes, *rope_notes]
    default_id = file.parent.name if file.name == "config.json" and file.parent.name else file.stem
    arch_id = model_id or default_id
    name = raw.get("_name_or_path") if isinstance(raw.get("_name_or_path"), str) else None
    try:
        return Architecture(
            id=arch_id,
            name=name or arch_id,
            family=model_type,
            notes=(*notes, f"model_type {model_type}", *family_notes),
            **fields,
        )
    except InvalidSpec as exc:
        raise InvalidSpec(f"{file}: {exc}") from exc
