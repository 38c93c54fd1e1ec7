"""Reading one Hugging Face config.json: typed, bounded access to its keys, each problem one line naming the
file and the key (hf_config.py reads the file, hf_families.py maps each model_type's keys)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rigplan.bounds import check
from rigplan.errors import InvalidSpec

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
    "num_nextn_predict_layers": "mtp_layers", "moe_num_experts": "experts", "moe_k": "top_k", "moe_topk": "top_k",
    "moe_num_shared_experts": "shared_experts", "num_shared_expert": "shared_experts",
    "num_shared_experts": "shared_experts", "kv_n_heads": "kv_heads", "ffn_hidden_size": "ffn", "moe_top_k": "top_k",
    "linear_num_key_heads": "heads", "linear_num_value_heads": "heads", "linear_key_head_dim": "head_dim",
    "linear_value_head_dim": "head_dim", "mtp_num_hidden_layers": "mtp_layers", "model_max_length": "context",
    "num_experts_per_token": "top_k", "num_heads": "heads", "linear_num_heads": "heads", "linear_head_dim": "head_dim",
}
"""config.json keys checked against the same bounds as the shape flags (rigplan.bounds)."""
ZERO_MEANS_NONE = frozenset({"experts", "top_k", "expert_ffn", "shared_experts", "head_dim"})
"""Bounds whose 0 in a config.json means "none" (a dense model's num_experts: 0)."""
MAX_CONFIG_INT = 1 << 31
"""Any other whole number in a config.json (a window size, a layer index) is at most 2^31."""


class ConfigReader:
    """Typed access to one config dict; every error names the file and the key."""

    def __init__(self, cfg: Config, path: Path, model_type: str, prefix: str = "") -> None:
        self.cfg = cfg
        self.path = path
        self.model_type = model_type
        self.prefix = prefix
        """Dotted path of a nested section, e.g. 'attn_config.', shown in messages."""

    def nested(self, key: str) -> ConfigReader:
        """A reader for the JSON object under `key` (empty when absent)."""
        return ConfigReader(self.section(key), self.path, self.model_type, f"{self.prefix}{key}.")

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

    def uniform_int(self, key: str, default: int = 0) -> int:
        """A whole number that some configs give per layer as a list (Hunyuan's num_experts): the one value of a
        uniform list; a list whose values differ is an error."""
        value = self.cfg.get(key)
        if not isinstance(value, list):
            return self.opt_int(key, default=default)
        values = {self._as_int(key, v) for v in value}
        if len(values) != 1:
            raise self.fail(f"key '{self.prefix}{key}' varies by layer ({sorted(values)}); rigplan takes one value "
                            "for every layer")
        return values.pop()

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


def moe_layer_split(num_layers: int, dense: list[int]) -> tuple[int, list[str]]:
    """Number of dense layers, and a note when they are not all leading (counted as if they were)."""
    dense_set = sorted({i for i in dense if 0 <= i < num_layers})
    notes = []
    if dense_set and dense_set != list(range(len(dense_set))):
        notes.append(
            f"dense MLP layers at positions {dense_set} are counted as leading dense layers "
            "(same parameter count; placement differs)"
        )
    return len(dense_set), notes


def standard(r: ConfigReader, *, tie_default: bool) -> dict[str, Any]:
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


Reader = Callable[[ConfigReader], tuple[dict[str, Any], list[str]]]
"""A model_type's reader: the Architecture fields and notes on what it assumed."""


def whole_projection_qk_norm_gap(fields: dict[str, Any]) -> int:
    """Parameters a layer's q and k norms hold beyond rigplan's per-head count (2 x head_dim) where the family's norms
    span every head ((heads + kv heads) x head_dim: OLMo 2 and 3, FlexOlmo, Command R+)."""
    head_dim = fields["head_dim"] or fields["hidden"] // fields["num_heads"]
    return (fields["num_heads"] + fields["num_kv_heads"] - 2) * head_dim
