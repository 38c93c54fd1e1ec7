"""config.json readers of MiniMax-M2, ERNIE 4.5 MoE, Hunyuan-A13B and DeepSeek-V3.2: their published shapes give
the publishers' parameter counts (or the catalog record of the same model), and their per-family keys fail as one
clear line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES, architecture_from_hf_config
from rigplan.catalog.load import load_catalog
from rigplan.errors import InvalidSpec
from rigplan.estimate.params import count_params

MINIMAX_M2 = {  # transformers MiniMaxM2Config defaults, which its docstring gives as MiniMaxAI/MiniMax-M2's
    "model_type": "minimax_m2", "vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536,
    "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 196608, "tie_word_embeddings": False, "num_experts_per_tok": 8,
    "num_local_experts": 256, "rotary_dim": 64,
}
ERNIE_21B_A3B = {  # transformers Ernie4_5_MoeConfig defaults ("similar to baidu/ERNIE-4.5-21B-A3B-PT"); 21B / 3B
    "model_type": "ernie4_5_moe", "vocab_size": 103424, "hidden_size": 2560, "intermediate_size": 12288,
    "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4, "tie_word_embeddings": True,
    "use_bias": False, "moe_intermediate_size": 1536, "moe_k": 6, "moe_num_experts": 64, "moe_num_shared_experts": 2,
    "moe_layer_start_index": 1, "moe_layer_end_index": -1, "moe_layer_interval": 1,
}
HUNYUAN_A13B = {  # tencent/Hunyuan-A13B-Instruct config.json shape; its card: 80B total, 13B active
    "model_type": "hunyuan_v1_moe", "vocab_size": 128167, "hidden_size": 4096, "intermediate_size": 3072,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "tie_word_embeddings": True, "num_experts": 64, "moe_topk": [8] * 32, "num_shared_expert": [1] * 32,
}
DEEPSEEK_V32 = {  # deepseek-ai/DeepSeek-V3.2 config.json (as transformers stores it under models/deepseek_v32)
    "model_type": "deepseek_v32", "first_k_dense_replace": 3, "hidden_size": 7168, "index_head_dim": 128,
    "index_n_heads": 64, "index_topk": 2048, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_routed_experts": 256,
    "n_shared_experts": 1, "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
    "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_method": "noaux_tc",
    "v_head_dim": 128, "vocab_size": 129280,
}


def _write(tmp_path: Path, cfg: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def _error(tmp_path: Path, cfg: dict[str, Any]) -> str:
    with pytest.raises(InvalidSpec) as info:
        architecture_from_hf_config(_write(tmp_path, cfg))
    message = str(info.value)
    assert "\n" not in message and "config.json" in message
    return message


@pytest.mark.parametrize("model_type", ["minimax_m2", "ernie4_5_moe", "hunyuan_v1_moe", "deepseek_v32"])
def test_the_new_model_types_are_listed_as_supported(model_type: str) -> None:
    assert model_type in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize(("cfg", "model_id"), [(MINIMAX_M2, "minimax-m2"), (DEEPSEEK_V32, "deepseek-v3")],
                         ids=["minimax_m2", "deepseek_v32"])
def test_config_counts_as_the_catalog_record_of_the_same_shape(tmp_path: Path, cfg: dict[str, Any],
                                                               model_id: str) -> None:
    """MiniMax-M2's config is its catalog record; DeepSeek-V3.2 keeps DeepSeek-V3's weights but the indexer."""
    arch = architecture_from_hf_config(_write(tmp_path, cfg))
    counts, record = count_params(arch), count_params(load_catalog().model(model_id).to_domain())
    assert (counts.total, counts.active_published) == (record.total, record.active_published)
    assert arch.moe is not None and arch.moe.router == "sigmoid"


@pytest.mark.parametrize(("cfg", "total_b", "active_b"), [(ERNIE_21B_A3B, 21.8, 3.4), (HUNYUAN_A13B, 80.4, 12.7)],
                         ids=["ernie4_5_moe", "hunyuan_v1_moe"])
def test_published_shapes_give_the_cards_counts(tmp_path: Path, cfg: dict[str, Any], total_b: float,
                                                active_b: float) -> None:
    """ERNIE-4.5-21B-A3B's card says 21B total and 3B active, Hunyuan-A13B's 80B and 13B (each rounded)."""
    counts = count_params(architecture_from_hf_config(_write(tmp_path, cfg)))
    assert round(counts.total / 1e9, 1) == total_b
    assert round(counts.active_published / 1e9, 1) == active_b


def test_ernie_layer_range_and_shared_experts(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(_write(tmp_path, ERNIE_21B_A3B))
    assert arch.moe is not None
    assert arch.moe.first_dense_layers == 1 and arch.ffn == 12288
    assert (arch.moe.num_shared_experts, arch.moe.shared_expert_ffn) == (2, 1536)
    every_other = architecture_from_hf_config(_write(tmp_path, {**ERNIE_21B_A3B, "moe_layer_interval": 2}))
    assert every_other.moe is not None and every_other.moe.first_dense_layers == 14
    assert any("counted as leading dense layers" in note for note in every_other.notes)


def test_ernie_with_no_moe_layer_is_one_line(tmp_path: Path) -> None:
    message = _error(tmp_path, {**ERNIE_21B_A3B, "moe_layer_start_index": 40})
    assert "moe_layer_start_index" in message and "no MoE layer" in message


def test_hunyuan_per_layer_lists(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(_write(tmp_path, HUNYUAN_A13B))
    assert arch.moe is not None and (arch.moe.top_k, arch.moe.num_shared_experts) == (8, 1) and arch.qk_norm
    message = _error(tmp_path, {**HUNYUAN_A13B, "moe_topk": [8] * 31 + [4]})
    assert "moe_topk" in message and "varies by layer" in message
    assert "missing key 'num_experts'" in _error(tmp_path, {k: v for k, v in HUNYUAN_A13B.items()
                                                           if k != "num_experts"})


def test_deepseek_v32_says_what_it_leaves_out(tmp_path: Path) -> None:
    notes = " ".join(architecture_from_hf_config(_write(tmp_path, DEEPSEEK_V32)).notes)
    assert "lightning indexer (64 heads of 128, about 14M parameters a layer) not counted" in notes
    assert "beyond 2,048 tokens" in notes


def test_top_k_beyond_the_experts_is_one_line(tmp_path: Path) -> None:
    message = _error(tmp_path, {**ERNIE_21B_A3B, "moe_k": 65})
    assert "top" in message.lower()


def test_readme_counts_the_model_types_read() -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"read for (\d+) `model_type`s", readme)
    assert match is not None and int(match.group(1)) == len(SUPPORTED_MODEL_TYPES)
