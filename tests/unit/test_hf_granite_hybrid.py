"""Granite 4.0 config.json (model_type granitemoehybrid): Mamba-2 and attention mixers each with routed experts and a
shared MLP, the dense variants (no routed experts; all attention), counted as IBM's card states and exactly as
transformers' GraniteMoeHybridForCausalLM builds them, and refused as one line where a key is wrong."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hf_files import write_config
from published_configs import H_SMALL

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES, architecture_from_hf_config
from rigplan.errors import InvalidSpec
from rigplan.estimate.params import count_params
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest

DENSE_HYBRID = {**H_SMALL, "num_local_experts": 0, "hidden_size": 2048, "num_attention_heads": 16,
                "num_key_value_heads": 4, "shared_intermediate_size": 8192, "mamba_n_heads": 64, "mamba_d_head": "auto"}
ALL_ATTENTION = {**DENSE_HYBRID, "layer_types": ["attention"] * 40, "position_embedding_type": "rope"}


def test_granitemoehybrid_is_supported() -> None:
    assert "granitemoehybrid" in SUPPORTED_MODEL_TYPES


def test_h_small_counts_as_its_card(tmp_path: Path) -> None:
    """32B total and 9B active, as IBM rounds them (rigplan: 32.21B and 8.80B)."""
    arch = architecture_from_hf_config(write_config(tmp_path, H_SMALL))
    counts = count_params(arch)
    assert 31.5e9 <= counts.total < 32.5e9
    assert 8.5e9 <= counts.active_published < 9.5e9
    assert arch.moe is not None and (arch.moe.num_shared_experts, arch.moe.shared_expert_ffn) == (1, 1536)
    assert arch.linear_attention is not None and arch.linear_attention.full_attention_layers == (5, 15, 25, 35)
    assert arch.positions == "none"


@pytest.mark.parametrize("cfg", [H_SMALL, DENSE_HYBRID, ALL_ATTENTION], ids=["h-small", "dense-hybrid", "attention"])
def test_counts_equal_transformers_modules(tmp_path: Path, cfg: dict[str, Any],
                                           transformers_numel: Callable[[dict[str, Any]], int]) -> None:
    assert count_params(architecture_from_hf_config(write_config(tmp_path, cfg))).total == transformers_numel(cfg)


def test_dense_variants_have_no_experts_and_all_attention_no_mamba(tmp_path: Path) -> None:
    dense = architecture_from_hf_config(write_config(tmp_path, DENSE_HYBRID))
    assert dense.moe is None and dense.ffn == 8192
    assert dense.linear_attention is not None and dense.linear_attention.value_head_dim == 64  # 2 x 2048 / 64
    plain = architecture_from_hf_config(write_config(tmp_path, ALL_ATTENTION))
    assert plain.linear_attention is None and plain.positions == "rope"


@pytest.mark.parametrize(("changes", "expected"), [
    ({"layer_types": ["mamba", "conv"] * 20}, "layer_types' must name mamba or attention"),
    ({"layer_types": ["mamba"] * 40}, "0 full-attention and 40 linear-attention layers"),
    ({"mamba_d_head": "auto", "mamba_n_heads": 100}, "'mamba_n_heads' (100) must divide"),
    ({"num_experts_per_tok": "ten"}, "num_experts_per_tok"),
])
def test_bad_keys_fail_as_one_line(tmp_path: Path, changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidSpec, match=r"config\.json") as err:
        architecture_from_hf_config(write_config(tmp_path, {**H_SMALL, **changes}))
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_h_small_runs_through_the_estimators(tmp_path: Path) -> None:
    result = estimate(EstimateRequest(model=str(write_config(tmp_path, H_SMALL)), gpu="h100-sxm", gpus=32, ep=8,
                                      micro_batch=1, global_batch=64, seq=4096, zero=1,
                                      recompute="full"))
    assert result.memory.fits and 0 < float(result.step.step_time_s) < 60
