"""Hugging Face config.json reader: published configs map to the catalog shapes; bad input is one clear line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES, architecture_from_hf_config
from rigplan.catalog.load import BUILTIN_DIR
from rigplan.catalog.schema import ModelRecord
from rigplan.errors import InvalidSpec, RigplanError
from rigplan.estimate.params import count_params

HF_DIR = Path(__file__).resolve().parents[1] / "data" / "hf"

# fixture folder -> catalog record of the same model
SAME_MODEL = {
    "bloom": "bloom-176b",
    "deepseek-v3": "deepseek-v3",
    "gemma-2-9b": "gemma-2-9b",
    "gpt-neox-20b": "gpt-neox-20b",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt2": "gpt2-124m",
    "llama-3.1-8b": "llama-3.1-8b",
    "mixtral-8x7b": "mixtral-8x7b",
    "mpt-7b": "mpt-7b",
    "phi-3-mini": "phi-3-mini",
    "qwen2.5-7b": "qwen2.5-7b",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
}


def _catalog_record(model_id: str) -> ModelRecord:
    import yaml

    path = BUILTIN_DIR / "models" / f"{model_id}.yaml"
    return ModelRecord.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def _fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF_DIR / name / "config.json").read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, cfg: Any, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def test_every_fixture_folder_is_covered() -> None:
    folders = {p.name for p in HF_DIR.iterdir() if p.is_dir()}
    assert folders == {*SAME_MODEL, "opt-6.7b", "malformed"}


@pytest.mark.parametrize("folder", sorted(SAME_MODEL))
def test_fixture_matches_catalog_record(folder: str) -> None:
    arch = architecture_from_hf_config(HF_DIR / folder)
    ref = _catalog_record(SAME_MODEL[folder]).to_domain()
    counts, ref_counts = count_params(arch), count_params(ref)
    assert counts.total == pytest.approx(ref_counts.total, rel=1e-3)
    assert counts.active == pytest.approx(ref_counts.active, rel=1e-3)
    for field in ("num_layers", "hidden", "num_heads", "vocab", "tied_embeddings", "positions", "mlp", "norm"):
        assert getattr(arch, field) == getattr(ref, field), f"{folder}: {field}"
    assert arch.kv_heads == ref.kv_heads
    assert arch.window_counts == ref.window_counts, f"{folder}: sliding windows"
    assert arch.rope_attention_factor == pytest.approx(ref.rope_attention_factor, abs=1e-4), f"{folder}: YaRN"
    assert (arch.moe is None) == (ref.moe is None)
    assert (arch.mla is None) == (ref.mla is None)


def test_folder_and_file_give_the_same_architecture() -> None:
    a = architecture_from_hf_config(HF_DIR / "llama-3.1-8b")
    b = architecture_from_hf_config(str(HF_DIR / "llama-3.1-8b" / "config.json"))
    assert a == b


def test_id_defaults_to_the_folder_name_and_can_be_given() -> None:
    assert architecture_from_hf_config(HF_DIR / "gpt2").id == "gpt2"
    assert architecture_from_hf_config(HF_DIR / "gpt2", model_id="my-gpt2").id == "my-gpt2"


def test_published_counts_are_unknown_for_a_config() -> None:
    arch = architecture_from_hf_config(HF_DIR / "qwen2.5-7b")
    assert arch.official_params == 0.0
    assert arch.context_length == 131072


def test_opt_fixture_hand_count() -> None:
    """facebook/opt-6.7b: 32 layers, h 4096, ffn 16384, vocab 50272, 2048 + 2 learned positions, tied.

    embedding   50272*4096 + 2050*4096                       =   214,310,912
    per layer   attention 4*4096^2 + 4*4096 (q,k,v,o biases) =    67,125,248
                MLP 2*4096*16384 + 16384 + 4096              =   134,238,208
                two LayerNorms 2*(2*4096)                    =        16,384
                                                             =   201,379,840 x 32 = 6,444,154,880
    final LayerNorm                                          =         8,192
    total                                                    = 6,658,473,984
    """
    arch = architecture_from_hf_config(HF_DIR / "opt-6.7b")
    assert arch.max_positions == 2050
    assert arch.context_length == 2048
    assert count_params(arch).total == 6_658_473_984


def test_qwen3_moe_fixture_fields() -> None:
    arch = architecture_from_hf_config(HF_DIR / "qwen3-30b-a3b")
    assert arch.head_dim == 128  # not hidden / heads (= 64)
    assert arch.qk_norm
    assert arch.moe is not None
    assert (arch.moe.num_experts, arch.moe.top_k, arch.moe.expert_ffn) == (128, 8, 768)
    assert arch.num_moe_layers == 48


def test_deepseek_v3_fixture_fields() -> None:
    arch = architecture_from_hf_config(HF_DIR / "deepseek-v3")
    assert arch.mla is not None and arch.moe is not None
    assert (arch.mla.q_lora_rank, arch.mla.kv_lora_rank) == (1536, 512)
    assert (arch.moe.num_shared_experts, arch.moe.first_dense_layers, arch.moe.top_k) == (1, 3, 8)
    assert any("multi-token-prediction" in note for note in arch.notes)


def test_gpt_oss_fixture_fields() -> None:
    arch = architecture_from_hf_config(HF_DIR / "gpt-oss-20b")
    assert arch.moe is not None
    assert arch.moe.top_k == 4 and arch.moe.expert_bias and arch.moe.router_bias
    assert arch.moe.expert_act_clamp == 7.0  # swiglu_limit
    assert arch.attention_sinks and arch.qkv_bias and arch.attn_out_bias
    assert arch.head_dim == 64


def test_family_quirks() -> None:
    bloom = architecture_from_hf_config(HF_DIR / "bloom")
    assert (bloom.positions, bloom.embedding_norm, bloom.ffn, bloom.norm_bias) == ("alibi", True, 4 * 14336, True)
    mpt = architecture_from_hf_config(HF_DIR / "mpt-7b")
    assert (mpt.positions, mpt.norm, mpt.norm_bias, mpt.qkv_bias, mpt.tied_embeddings) == (
        "alibi", "layernorm", False, False, True,
    )
    neox = architecture_from_hf_config(HF_DIR / "gpt-neox-20b")
    assert not neox.tied_embeddings and neox.mlp_bias and neox.positions == "rope"
    gemma = architecture_from_hf_config(HF_DIR / "gemma-2-9b")
    assert (gemma.norms_per_layer, gemma.head_dim, gemma.tied_embeddings) == (4, 256, True)
    gpt2 = architecture_from_hf_config(HF_DIR / "gpt2")
    assert (gpt2.ffn, gpt2.max_positions, gpt2.tied_embeddings) == (3072, 1024, True)
    qwen = architecture_from_hf_config(HF_DIR / "qwen2.5-7b")
    assert qwen.qkv_bias and not qwen.attn_out_bias


def test_tie_defaults_per_family(tmp_path: Path) -> None:
    for folder, tied in (("llama-3.1-8b", False), ("gemma-2-9b", True), ("gpt2", True), ("gpt-neox-20b", False)):
        cfg = _fixture(folder)
        cfg.pop("tie_word_embeddings", None)
        path = _write(tmp_path, cfg, f"{folder}.json")
        assert architecture_from_hf_config(path).tied_embeddings is tied, folder


def test_qwen_moe_dense_layers(tmp_path: Path) -> None:
    base = count_params(architecture_from_hf_config(HF_DIR / "qwen3-30b-a3b"))
    cfg = _fixture("qwen3-30b-a3b") | {"mlp_only_layers": [0, 1]}
    arch = architecture_from_hf_config(_write(tmp_path, cfg, "config.json"))
    assert arch.moe is not None and arch.moe.first_dense_layers == 2
    # each dense layer swaps 128 experts + router for one 2048 x 6144 gated MLP
    moe_mlp = 128 * 3 * 2048 * 768 + 2048 * 128
    dense_mlp = 3 * 2048 * 6144
    assert count_params(arch).total == base.total + 2 * (dense_mlp - moe_mlp)

    cfg = _fixture("qwen3-30b-a3b") | {"decoder_sparse_step": 2, "mlp_only_layers": []}
    arch = architecture_from_hf_config(_write(tmp_path, cfg, "step2.json"))
    assert arch.num_moe_layers == 24
    assert any("counted as leading dense layers" in note for note in arch.notes)


@pytest.mark.parametrize("folder", ["qwen3-30b-a3b", "mixtral-8x7b"])
def test_expert_count_under_either_name(folder: str, tmp_path: Path) -> None:
    """transformers 5 saves Qwen3MoeConfig's expert count as num_local_experts (its attribute_map aliases
    num_experts to it), Mixtral's hub name; a config saved either way reads the same model."""
    hub = _fixture(folder)
    key = "num_experts" if "num_experts" in hub else "num_local_experts"
    other = "num_local_experts" if key == "num_experts" else "num_experts"
    renamed = {other if k == key else k: v for k, v in hub.items()}
    arch = architecture_from_hf_config(_write(tmp_path, renamed))
    hub_arch = architecture_from_hf_config(HF_DIR / folder)
    assert arch.moe == hub_arch.moe and count_params(arch) == count_params(hub_arch)


def test_qwen2_moe_shared_expert(tmp_path: Path) -> None:
    cfg = {
        "model_type": "qwen2_moe", "num_hidden_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 16, "intermediate_size": 5632, "vocab_size": 151936,
        "max_position_embeddings": 8192, "num_experts": 60, "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "tie_word_embeddings": False,
    }
    arch = architecture_from_hf_config(_write(tmp_path, cfg, "config.json"))
    assert arch.moe is not None
    assert (arch.moe.num_shared_experts, arch.moe.shared_ffn, arch.moe.shared_expert_gate) == (1, 5632, True)
    assert arch.qkv_bias


def test_deepseek_null_q_lora_rank(tmp_path: Path) -> None:
    cfg = _fixture("deepseek-v3") | {"q_lora_rank": None}
    arch = architecture_from_hf_config(_write(tmp_path, cfg, "config.json"))
    assert arch.mla is not None and arch.mla.q_lora_rank == 0


def test_mpt_grouped_query_attention(tmp_path: Path) -> None:
    cfg = _fixture("mpt-7b")
    cfg["attn_config"] = cfg["attn_config"] | {"attn_type": "grouped_query_attention", "kv_n_heads": 8}
    assert architecture_from_hf_config(_write(tmp_path, cfg)).kv_heads == 8


def test_text_config_of_a_multimodal_wrapper(tmp_path: Path) -> None:
    cfg = {"model_type": "some_vlm", "text_config": _fixture("llama-3.1-8b"), "vision_config": {}}
    arch = architecture_from_hf_config(_write(tmp_path, cfg, "config.json"))
    assert count_params(arch).total == count_params(architecture_from_hf_config(HF_DIR / "llama-3.1-8b")).total


# ---- errors: InvalidSpec, one line naming the file and the problem --------------------------------------


def _error(path: Path) -> str:
    with pytest.raises(InvalidSpec) as info:
        architecture_from_hf_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert isinstance(info.value, RigplanError)
    return message


def test_malformed_json() -> None:
    message = _error(HF_DIR / "malformed")
    assert "malformed" in message and "config.json" in message
    assert "not valid JSON" in message and "line 7" in message


def test_missing_file(tmp_path: Path) -> None:
    message = _error(tmp_path / "nowhere" / "config.json")
    assert "nowhere" in message and "no such file" in message
    assert "no such file" in _error(tmp_path)  # a folder without a config.json


def test_not_an_object(tmp_path: Path) -> None:
    assert "JSON object" in _error(_write(tmp_path, [1, 2, 3]))


def test_missing_model_type(tmp_path: Path) -> None:
    cfg = _fixture("llama-3.1-8b")
    del cfg["model_type"]
    path = _write(tmp_path, cfg)
    message = _error(path)
    assert str(path) in message and "'model_type'" in message


def test_model_type_must_be_a_string(tmp_path: Path) -> None:
    assert "'model_type' must be a string" in _error(_write(tmp_path, {"model_type": ["llama"]}))


def test_unknown_model_type_lists_supported(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_type": "rwkv5", "hidden_size": 2560})
    message = _error(path)
    assert str(path) in message and "'rwkv5'" in message and "not supported" in message
    assert "shape flags instead of the file (--layers --hidden --heads --vocab" in message  # the way round it
    for model_type in ("llama", "deepseek_v3", "gpt_oss", "mpt"):
        assert model_type in message
    assert set(SUPPORTED_MODEL_TYPES) >= {
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v3", "gemma2",
        "gpt_oss", "gpt2", "gpt_neox", "opt", "bloom", "mpt", "phi3",
    }


@pytest.mark.parametrize(
    ("folder", "key"),
    [
        ("llama-3.1-8b", "hidden_size"),
        ("llama-3.1-8b", "intermediate_size"),
        ("mixtral-8x7b", "num_local_experts"),
        ("qwen3-30b-a3b", "moe_intermediate_size"),
        ("deepseek-v3", "kv_lora_rank"),
        ("gpt2", "n_embd"),
        ("opt-6.7b", "ffn_dim"),
        ("mpt-7b", "d_model"),
        ("bloom", "n_head"),
    ],
)
def test_missing_key_is_named(tmp_path: Path, folder: str, key: str) -> None:
    cfg = _fixture(folder)
    del cfg[key]
    path = _write(tmp_path, cfg)
    message = _error(path)
    assert str(path) in message and f"'{key}'" in message and "missing key" in message


def test_wrong_type_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, _fixture("llama-3.1-8b") | {"num_hidden_layers": "32"})
    message = _error(path)
    assert "'num_hidden_layers'" in message and "whole number" in message
    path = _write(tmp_path, _fixture("llama-3.1-8b") | {"tie_word_embeddings": "yes"}, "tie.json")
    assert "'tie_word_embeddings'" in _error(path)
    cfg = _fixture("mpt-7b")
    cfg["attn_config"]["alibi"] = "true"
    assert "'attn_config.alibi'" in _error(_write(tmp_path, cfg, "mpt.json"))


def test_inconsistent_shape_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, _fixture("llama-3.1-8b") | {"num_key_value_heads": 7})
    message = _error(path)
    assert str(path) in message and "kv-heads=7" in message



@pytest.mark.parametrize("model_id, cfg", [
    ("glm-4.5", {"model_type": "glm4_moe", "num_hidden_layers": 92, "hidden_size": 5120,
                 "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
                 "intermediate_size": 12288, "vocab_size": 151552, "attention_bias": True,
                 "use_qk_norm": True, "n_routed_experts": 160, "num_experts_per_tok": 8,
                 "moe_intermediate_size": 1536, "n_shared_experts": 1, "first_k_dense_replace": 3,
                 "num_nextn_predict_layers": 1, "tie_word_embeddings": False}),
    ("llama-4-maverick", {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "vocab_size": 202048, "num_local_experts": 128,
        "num_experts_per_tok": 1, "interleave_moe_layer_step": 2}}),
    ("kimi-k2", {"model_type": "kimi_k2", "num_hidden_layers": 61, "hidden_size": 7168,
                 "num_attention_heads": 64, "num_key_value_heads": 64, "intermediate_size": 18432,
                 "vocab_size": 163840, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                 "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 384,
                 "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
                 "first_k_dense_replace": 1}),
])
def test_new_moe_families_match_their_catalog_records(tmp_path: Path, model_id: str, cfg: dict[str, object]) -> None:
    from rigplan.catalog.load import load_catalog

    arch = architecture_from_hf_config(_write(tmp_path, cfg, "config.json"))
    record = load_catalog().model(model_id).to_domain()
    assert count_params(arch).total == count_params(record).total
    assert count_params(arch).active == count_params(record).active


def test_sliding_windows_follow_layer_types_and_family_patterns(tmp_path: Path) -> None:
    oss = architecture_from_hf_config(HF_DIR / "gpt-oss-20b")
    assert oss.attention_windows[:4] == (128, 0, 128, 0) and oss.window_counts == {128: 12, 0: 12}
    gemma = architecture_from_hf_config(HF_DIR / "gemma-2-9b")  # no layer_types: Gemma 2 alternates, layer 0 local
    assert gemma.attention_windows[:2] == (4096, 0) and gemma.window_counts == {4096: 21, 0: 21}
    assert architecture_from_hf_config(HF_DIR / "qwen2.5-7b").attention_windows == ()  # use_sliding_window false
    assert architecture_from_hf_config(HF_DIR / "mixtral-8x7b").attention_windows == ()  # sliding_window null
    assert architecture_from_hf_config(HF_DIR / "phi-3-mini").window_counts == {2047: 32}
    gemma3 = {**_fixture("gemma-2-9b"), "model_type": "gemma3_text", "sliding_window": 1024,
              "sliding_window_pattern": 6, "num_hidden_layers": 12}
    arch = architecture_from_hf_config(_write(tmp_path, gemma3))
    assert arch.attention_windows == (1024,) * 5 + (0,) + (1024,) * 5 + (0,)
    assert arch.qk_norm and arch.norms_per_layer == 4
    assert any("10 of 12 layers attend to a 1024-token sliding window" in n for n in arch.notes)
    qwen = {**_fixture("qwen2.5-7b"), "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 20}
    assert architecture_from_hf_config(_write(tmp_path, qwen)).window_counts == {0: 20, 4096: 8}


def test_layer_types_of_the_wrong_length_is_one_clear_error(tmp_path: Path) -> None:
    cfg = {**_fixture("gpt-oss-20b"), "layer_types": ["sliding_attention"] * 3}
    with pytest.raises(InvalidSpec, match="layer_types' must list one attention kind per layer"):
        architecture_from_hf_config(_write(tmp_path, cfg))


def test_llama4_interleave_step_is_kept(tmp_path: Path) -> None:
    cfg = {"model_type": "llama4_text", "num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 32, "intermediate_size_mlp": 128,
           "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2}
    arch = architecture_from_hf_config(_write(tmp_path, cfg, "config.json"))
    assert arch.moe is not None and (arch.moe.first_dense_layers, arch.moe.moe_layer_step) == (0, 2)
    assert arch.num_moe_layers == 4
    # An explicit moe_layers list off the step pattern falls back to leading dense layers, with a note.
    odd = architecture_from_hf_config(_write(tmp_path, {**cfg, "moe_layers": [6, 7]}, "config.json"))
    assert odd.moe is not None and (odd.moe.first_dense_layers, odd.moe.moe_layer_step) == (6, 1)


@pytest.mark.parametrize(("rope", "factor"), [
    ({"rope_type": "yarn", "factor": 32.0}, 0.1 * math.log(32.0) + 1.0),  # gpt-oss: yarn_mscale(32)
    ({"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),  # DeepSeek-V3: the ratio is 1
    ({"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 0.0}, 0.1 * math.log(40) + 1.0),
    ({"rope_type": "yarn", "factor": 4.0, "attention_factor": 1.25}, 1.25),  # given outright
    ({"rope_type": "llama3", "factor": 8.0}, 1.0),  # not YaRN: cos and sin unscaled
    ({"rope_type": "yarn", "factor": 1.0}, 1.0),
])
def test_yarn_attention_factor_from_rope_scaling(tmp_path: Path, rope: dict[str, Any], factor: float) -> None:
    cfg = json.loads((HF_DIR / "llama-3.1-8b" / "config.json").read_text())
    cfg["rope_scaling"] = rope
    arch = architecture_from_hf_config(_write(tmp_path, cfg))
    assert arch.rope_attention_factor == pytest.approx(factor)
    assert any("YaRN" in n for n in arch.notes) == (factor != 1.0)
    cfg.pop("rope_scaling")
    cfg["rope_parameters"] = rope  # transformers 5 spells it rope_parameters
    assert architecture_from_hf_config(_write(tmp_path, cfg)).rope_attention_factor == pytest.approx(factor)


def test_yarn_attention_factor_out_of_range_is_one_line(tmp_path: Path) -> None:
    cfg = json.loads((HF_DIR / "llama-3.1-8b" / "config.json").read_text())
    cfg["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "attention_factor": 0.5}
    message = _error(_write(tmp_path, cfg))
    assert "rope_scaling" in message and "1 to 10" in message


OLMOE_1B_7B = {  # allenai/OLMoE-1B-7B-0924 config.json; the OLMoE paper (arXiv 2409.02060): 6.9B total, 1.3B active
    "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
    "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 64, "num_experts_per_tok": 8,
    "vocab_size": 50304, "max_position_embeddings": 4096, "tie_word_embeddings": False, "attention_bias": False,
}
PHI_35_MOE = {  # microsoft/Phi-3.5-MoE-instruct config.json; its model card: 41.9B total, 6.6B active
    "model_type": "phimoe", "hidden_size": 4096, "intermediate_size": 6400, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 16, "num_experts_per_tok": 2,
    "vocab_size": 32064, "max_position_embeddings": 131072, "sliding_window": 131072, "attention_bias": True,
    "lm_head_bias": True, "tie_word_embeddings": False,
}
GRANITE_3B_A800M = {  # ibm-granite/granite-3.0-3b-a800m-base config.json; its card: 3.3B total, 800M active
    "model_type": "granitemoe", "hidden_size": 1536, "intermediate_size": 512, "num_hidden_layers": 32,
    "num_attention_heads": 24, "num_key_value_heads": 8, "num_local_experts": 40, "num_experts_per_tok": 8,
    "vocab_size": 49155, "max_position_embeddings": 4096, "tie_word_embeddings": True, "attention_bias": False,
    "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
}


@pytest.mark.parametrize(("cfg", "total_b", "active_b"), [
    (OLMOE_1B_7B, 6.9, 1.3), (PHI_35_MOE, 41.9, 6.6),
    # Granite counts its 800M active without the (tied) input embedding: 0.81B of rigplan's 0.88B
    (GRANITE_3B_A800M, 3.3, 0.88),
], ids=["olmoe", "phimoe", "granitemoe"])
def test_more_moe_families_give_their_published_counts(tmp_path: Path, cfg: dict[str, object], total_b: float,
                                                       active_b: float) -> None:
    arch = architecture_from_hf_config(_write(tmp_path, cfg))
    counts = count_params(arch)
    assert arch.moe is not None and arch.moe.expert_ffn == cfg["intermediate_size"]
    assert round(counts.total / 1e9, 1) == total_b
    assert round(counts.active_published / 1e9, 2 if active_b < 1 else 1) == active_b
    if cfg["model_type"] == "phimoe":
        assert arch.norm == "layernorm" and arch.norm_bias and arch.qkv_bias
    if cfg["model_type"] == "olmoe":
        assert arch.qk_norm


@pytest.mark.parametrize("folder", ["gpt-oss-20b", "deepseek-v3"])
def test_active_count_follows_the_publisher_for_a_config(folder: str) -> None:
    """OpenAI and DeepSeek count active parameters without the input embedding (a lookup); a config.json of their
    families is counted as the catalog record of the same model is (gpt-oss-20b 3.61B, DeepSeek-V3 36.6B)."""
    from_config = count_params(architecture_from_hf_config(HF_DIR / folder))
    record = count_params(_catalog_record(SAME_MODEL[folder]).to_domain())
    assert from_config.active_published == record.active_published == from_config.active_matmul
