"""Every key of every published config.json the reader tests hold (and tests/data/hf's files), left out or replaced by
a hostile value (null, a negative, zero, a string, a huge number, a list, an object, a bool, a fraction), reads as an
Architecture rigplan can count or fails as one InvalidSpec line: never another exception."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from hf_files import write_config

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.errors import RigplanError
from rigplan.estimate.params import count_params

MODULES = ("published_configs", "test_hf_dense_families", "test_hf_remote_code_families", "test_hf_granite_hybrid",
           "test_hf_moe_variants", "test_hf_moe_families", "test_nemotron_h", "test_nemotron_h_dense",
           "test_hf_vl_text_models")
DATA = Path(__file__).resolve().parents[1] / "data" / "hf"
"""The config.json files of tests/data/hf (Llama, Mistral, Qwen, Gemma 2, GPT-2, BLOOM, MPT, OPT, Phi-3, Mixtral,
DeepSeek-V3, gpt-oss...)."""
HOSTILE: tuple[Any, ...] = (None, -1, 0, 1, "x", 1e30, [], {}, True, 2.5, "auto", [1, 2], 10**12)


def _configs() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for name in MODULES:
        for attr, value in vars(importlib.import_module(name)).items():
            if isinstance(value, dict) and isinstance(value.get("model_type"), str):
                found.setdefault(value["model_type"] + ":" + attr, value)
    for path in sorted(DATA.glob("*/config.json")):
        if path.parent.name == "malformed":  # not JSON, on purpose (test_hf.py)
            continue
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict) and isinstance(value.get("model_type"), str):
            found.setdefault(value["model_type"] + ":" + path.parent.name, value)
    return found


CONFIGS = _configs()


def _read_or_refuse(folder: Path, cfg: dict[str, Any]) -> None:
    try:
        count_params(architecture_from_hf_config(write_config(folder, cfg)))
    except RigplanError as err:
        assert "\n" not in str(err), str(err)


def test_the_sweep_covers_the_readers() -> None:
    assert len({name.split(":")[0] for name in CONFIGS}) >= 45


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_key_left_out_or_hostile_reads_or_fails_as_one_line(tmp_path: Path, name: str) -> None:
    cfg = CONFIGS[name]
    for key in cfg:
        if key == "model_type":
            continue
        _read_or_refuse(tmp_path, {k: v for k, v in cfg.items() if k != key})
        for value in HOSTILE:
            _read_or_refuse(tmp_path, {**cfg, key: value})
