"""Helpers of the config.json reader tests: a config written into a test's folder, the Architecture read from it, and
the one-line error it fails with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec


def write_config(folder: Path, cfg: dict[str, Any]) -> Path:
    path = folder / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def read_config(folder: Path, cfg: dict[str, Any]) -> Architecture:
    return architecture_from_hf_config(write_config(folder, cfg))


def config_error(folder: Path, cfg: dict[str, Any]) -> str:
    """The message a config fails with, checked to be one line naming the file."""
    with pytest.raises(InvalidSpec) as info:
        read_config(folder, cfg)
    message = str(info.value)
    assert "\n" not in message and "config.json" in message
    return message


def without(cfg: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k != key}
