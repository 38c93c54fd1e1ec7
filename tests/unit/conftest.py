"""Catalog architectures shared by the unit tests of the MoE memory terms, and transformers' parameter count of a
Nemotron-H config.json."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.model import Architecture


@pytest.fixture(scope="module")
def dsv3() -> Architecture:
    return load_catalog().model("deepseek-v3").to_domain()


@pytest.fixture(scope="module")
def qwen3_moe() -> Architecture:
    return load_catalog().model("qwen3-30b-a3b").to_domain()


@pytest.fixture
def transformers_numel() -> Callable[[dict[str, Any]], int]:
    """Parameters of transformers' causal-LM model for a config.json's keys (its model_type picks the config class),
    built on the meta device (skips without torch or transformers, or where this transformers lacks the type)."""
    pytest.importorskip("torch", reason="torch is not installed: pip install 'rigplan[frameworks]'")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: pip install "
                                       "'rigplan[frameworks]'")
    import torch
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    def numel(cfg: dict[str, Any]) -> int:
        if cfg["model_type"] not in CONFIG_MAPPING_NAMES:
            pytest.skip(f"this transformers has no {cfg['model_type']} model")
        keys = {k: v for k, v in cfg.items() if k != "architectures"}
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**keys))
        return sum(p.numel() for p in model.parameters())

    return numel


@pytest.fixture
def nemotron_h_numel(transformers_numel: Callable[[dict[str, Any]], int]) -> Callable[[dict[str, Any]], int]:
    """Parameters of transformers' NemotronHForCausalLM built on the meta device from config.json keys
    (transformers_numel with the Nemotron-H keys; skips without torch, transformers or its NemotronHConfig)."""
    return transformers_numel
