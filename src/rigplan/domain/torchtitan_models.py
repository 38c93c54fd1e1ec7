"""The catalog models torchtitan's model registry holds, by torchtitan's own name and flavor: what `rigplan export
--framework torchtitan` writes as [model] name and flavor, and what a torchtitan job TOML read back is compared with
(flow.torchtitan_config).
"""

from __future__ import annotations

FLAVORS = {
    "llama-3.1-8b": ("llama3", "8B"), "llama-3-8b": ("llama3", "8B"),
    "llama-3.1-70b": ("llama3", "70B"), "llama-3-70b": ("llama3", "70B"),
    "llama-3.1-405b": ("llama3", "405B"),
    "deepseek-v3": ("deepseek_v3", "671B"),
    "qwen3-8b": ("qwen3", "8B"),
    "qwen3-30b-a3b": ("qwen3", "30B-A3B"), "qwen3-235b-a22b": ("qwen3", "235B-A22B"),
    "gpt-oss-20b": ("gpt_oss", "20b"), "gpt-oss-120b": ("gpt_oss", "120b"),
    "llama-4-scout": ("llama4", "17bx16e"), "llama-4-maverick": ("llama4", "17bx128e"),
}
"""rigplan catalog id -> (torchtitan model name, flavor), same shapes as torchtitan's registry (0.2.2: models/qwen3,
gpt_oss and llama4 __init__.py). Llama 4 maps to the flavors with full causal attention on every layer, as rigplan
estimates it, not the _irope ones (NoPE every fourth layer, chunked attention)."""
