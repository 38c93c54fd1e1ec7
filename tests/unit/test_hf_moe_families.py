"""config.json readers of MiniMax-M2, ERNIE 4.5 MoE, Hunyuan-A13B, DeepSeek-V3.2, dots.llm1, DBRX, Ling 2.0, Qwen3-Next,
Kimi Linear and the text models of Qwen3-VL-MoE, GLM-4.5V and Qwen3.5 MoE: their published shapes give the publishers'
parameter counts (or the catalog record of the same model or text model), and their per-family keys fail as one clear
line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES, architecture_from_hf_config
from rigplan.catalog.load import load_catalog
from rigplan.domain.model import MLA, LinearAttention, MoE, SparseAttention
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

DOTS1 = {  # rednote-hilab/dots.llm1.base config.json (its refs/pr/4 revision on the Hub); card: 142B total, 14B active
    "model_type": "dots1", "attention_bias": False, "first_k_dense_replace": 1, "hidden_size": 4096,
    "intermediate_size": 10944, "max_position_embeddings": 32768, "moe_intermediate_size": 1408, "moe_layer_freq": 1,
    "n_routed_experts": 128, "n_shared_experts": 2, "norm_topk_prob": True, "num_attention_heads": 32,
    "num_experts_per_tok": 6, "num_hidden_layers": 62, "num_key_value_heads": 32, "routed_scaling_factor": 2.5,
    "scoring_func": "noaux_tc", "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False,
    "vocab_size": 152064,
}
DBRX = {  # databricks/dbrx-base config.json (as its copies on the Hub give it), the source of the catalog record dbrx
    "model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40, "max_seq_len": 32768, "vocab_size": 100352,
    "tie_word_embeddings": False, "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
    "ffn_config": {"ffn_hidden_size": 10752, "moe_jitter_eps": 0, "moe_loss_weight": 0.05, "moe_num_experts": 16,
                   "moe_top_k": 4},
}
QWEN3_VL_TEXT = {  # Qwen/Qwen3-VL-30B-A3B-Instruct config.json's text_config (no tie_word_embeddings of its own)
    "model_type": "qwen3_vl_moe_text", "attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128,
    "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 262144, "mlp_only_layers": [],
    "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "rope_theta": 5000000,
    "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
    "vocab_size": 151936,
}
QWEN3_VL_30B = {"model_type": "qwen3_vl_moe", "tie_word_embeddings": False, "text_config": QWEN3_VL_TEXT,
                "vision_config": {"depth": 27, "hidden_size": 1152, "out_hidden_size": 2048}}
QWEN3_VL_235B = {  # Qwen/Qwen3-VL-235B-A22B-Instruct: the same text keys at Qwen3-235B-A22B's shape
    **QWEN3_VL_30B, "text_config": {**QWEN3_VL_TEXT, "hidden_size": 4096, "intermediate_size": 12288,
                                    "moe_intermediate_size": 1536, "num_attention_heads": 64, "num_hidden_layers": 94},
}
GLM45V = {  # zai-org/GLM-4.5V: transformers Glm4vMoeTextConfig's defaults (its docstring's checkpoint) with the vocab
    # of 151552 its config.json gives; GLM-4.5-Air's text model (106B total, 12B active)
    "model_type": "glm4v_moe", "tie_word_embeddings": False, "text_config": {
        "model_type": "glm4v_moe_text", "attention_bias": True, "first_k_dense_replace": 1, "head_dim": 128,
        "hidden_size": 4096, "intermediate_size": 10944, "max_position_embeddings": 65536,
        "moe_intermediate_size": 1408, "n_routed_experts": 128, "n_shared_experts": 1, "num_attention_heads": 96,
        "num_experts_per_tok": 8, "num_hidden_layers": 46, "num_key_value_heads": 8, "partial_rotary_factor": 0.5,
        "use_qk_norm": False, "vocab_size": 151552},
}
LING_MINI = {  # inclusionAI/Ling-mini-2.0: BailingMoeV2Config's defaults (the configuration file its checkpoints ship)
    # in the keys of inclusionAI's released Ling 2.0 config.json; card: 16.26B total, 1.43B active (789M non-embedding)
    "model_type": "bailing_moe", "architectures": ["BailingMoeV2ForCausalLM"], "vocab_size": 157184,
    "hidden_size": 2048, "intermediate_size": 5120, "num_hidden_layers": 20, "num_attention_heads": 16,
    "num_key_value_heads": 4, "head_dim": 128, "use_qkv_bias": False, "use_bias": False, "use_qk_norm": True,
    "tie_word_embeddings": False, "max_position_embeddings": 32768, "num_experts": 256, "num_shared_experts": 1,
    "num_experts_per_tok": 8, "moe_intermediate_size": 512, "moe_shared_expert_intermediate_size": 512,
    "first_k_dense_replace": 1, "num_nextn_predict_layers": 0, "partial_rotary_factor": 0.5,
    "score_function": "sigmoid",
}
LING_FLASH = {  # inclusionAI/Ling-flash-2.0: the Ling 2.0 GGUF metadata of Ring-flash-2.0 (the same base model); the
    # Hub counts 102,889,697,280 BF16 weights in its safetensors; card: 100B total, 6.1B active (4.8B non-embedding)
    **LING_MINI, "hidden_size": 4096, "intermediate_size": 9216, "num_hidden_layers": 32, "num_attention_heads": 32,
    "moe_intermediate_size": 1024, "moe_shared_expert_intermediate_size": 1024,
}

LING_LITE = {  # inclusionAI/Ling-lite-base config.json (Ling 1.x, BailingMoeForCausalLM); 16.8B total, 2.75B active
    "model_type": "bailing_moe", "architectures": ["BailingMoeForCausalLM"], "first_k_dense_replace": 0,
    "hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 16384, "moe_intermediate_size": 1408,
    "num_experts": 64, "num_shared_experts": 2, "norm_topk_prob": True, "num_attention_heads": 16,
    "num_experts_per_tok": 6, "num_hidden_layers": 28, "num_key_value_heads": 4, "tie_word_embeddings": False,
    "use_bias": False, "use_qkv_bias": False, "vocab_size": 126464, "norm_head": True,
}
QWEN3_NEXT = {  # Qwen/Qwen3-Next-80B-A3B-Instruct config.json (no attention_bias, layer_types or MTP key)
    "model_type": "qwen3_next", "decoder_sparse_step": 1, "mlp_only_layers": [], "full_attention_interval": 4,
    "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5120, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
    "max_position_embeddings": 262144, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    "norm_topk_prob": True, "num_experts": 512, "num_experts_per_tok": 10, "num_attention_heads": 16,
    "num_hidden_layers": 48, "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 10000000, "tie_word_embeddings": False, "vocab_size": 151936,
}
QWEN35_LAYER_TYPES = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(40)]
QWEN35_TEXT = {  # Qwen/Qwen3.5-35B-A3B config.json's text_config (no intermediate_size, decoder_sparse_step,
    # mlp_only_layers or norm_topk_prob: every layer is MoE)
    "model_type": "qwen3_5_moe_text", "attention_bias": False, "attention_dropout": 0.0, "attn_output_gate": True,
    "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
    "layer_types": QWEN35_LAYER_TYPES, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32", "max_position_embeddings": 262144, "moe_intermediate_size": 512,
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False, "num_attention_heads": 16, "num_experts": 256,
    "num_experts_per_tok": 8, "num_hidden_layers": 40, "num_key_value_heads": 2, "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-6, "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10],
                                              "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                                              "rope_type": "default"},
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "vocab_size": 248320,
}
QWEN35_35B = {"model_type": "qwen3_5_moe", "architectures": ["Qwen3_5MoeForConditionalGeneration"],
              "tie_word_embeddings": False, "text_config": QWEN35_TEXT,
              "vision_config": {"model_type": "qwen3_5_moe", "depth": 27, "hidden_size": 1152,
                                "intermediate_size": 4304, "num_heads": 16, "out_hidden_size": 2048,
                                "deepstack_visual_indexes": []}}

KIMI_KDA_LAYERS = [i for i in range(1, 28) if i not in (4, 8, 12, 16, 20, 24, 27)]
KIMI_LINEAR = {  # moonshotai/Kimi-Linear-48B-A3B-Instruct config.json (Moonshot's spellings, layers listed from 1)
    "model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"], "hidden_size": 2304,
    "intermediate_size": 9216, "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 27,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": 163840, "hidden_act": "silu", "kv_lora_rank": 512,
    "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "mla_use_nope": True,
    "linear_attn_config": {"head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4,
                           "full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "kda_layers": KIMI_KDA_LAYERS},
    "num_experts": 256, "num_experts_per_token": 8, "num_shared_experts": 1, "moe_intermediate_size": 1024,
    "moe_router_activation_func": "sigmoid", "moe_renormalize": True, "routed_scaling_factor": 2.446,
    "use_grouped_topk": True, "num_expert_group": 1, "topk_group": 1, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "num_nextn_predict_layers": 0, "tie_word_embeddings": False, "max_position_embeddings": 1048576,
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


@pytest.mark.parametrize("model_type", ["minimax_m2", "ernie4_5_moe", "hunyuan_v1_moe", "deepseek_v32", "dots1", "dbrx",
                                        "bailing_moe", "qwen3_vl_moe_text", "glm4v_moe_text", "qwen3_next",
                                        "qwen3_5_moe_text", "kimi_linear"])
def test_the_new_model_types_are_listed_as_supported(model_type: str) -> None:
    assert model_type in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize(("cfg", "model_id"), [(MINIMAX_M2, "minimax-m2"), (DEEPSEEK_V32, "deepseek-v3.2"),
                                               (KIMI_LINEAR, "kimi-linear-48b-a3b")],
                         ids=["minimax_m2", "deepseek_v32", "kimi_linear"])
def test_config_counts_as_the_catalog_record_of_the_same_shape(tmp_path: Path, cfg: dict[str, Any],
                                                               model_id: str) -> None:
    """MiniMax-M2's, DeepSeek-V3.2's and Kimi Linear's configs are their catalog records."""
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


def test_deepseek_v32_reads_its_sparse_attention(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(_write(tmp_path, DEEPSEEK_V32))
    assert arch.sparse_attention == SparseAttention(topk=2048, indexer_heads=64, indexer_head_dim=128)
    notes = " ".join(arch.notes)
    assert "sparse training stage" in notes and "attention runs dense" in notes
    v3 = count_params(architecture_from_hf_config(_write(tmp_path, {**DEEPSEEK_V32, "model_type": "deepseek_v3"})))
    # 61 indexers of wq_b 1536 x 64·128, wk 7168 x 128, k_norm 2·128, weights_proj 7168 x 64
    assert count_params(arch).total - v3.total == 61 * (1536 * 64 * 128 + 7168 * 128 + 256 + 7168 * 64)


def test_top_k_beyond_the_experts_is_one_line(tmp_path: Path) -> None:
    message = _error(tmp_path, {**ERNIE_21B_A3B, "moe_k": 65})
    assert "top" in message.lower()


def test_readme_counts_the_model_types_read() -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"read for (\d+) `model_type`s", readme)
    assert match is not None and int(match.group(1)) == len(SUPPORTED_MODEL_TYPES)


@pytest.mark.parametrize(("cfg", "model_id", "text_model"),
                         [(DBRX, "dbrx", ""), (QWEN3_VL_30B, "qwen3-30b-a3b", "qwen3_vl_moe_text"),
                          (QWEN3_VL_235B, "qwen3-235b-a22b", "qwen3_vl_moe_text"),
                          (GLM45V, "glm-4.5-air", "glm4v_moe_text"),
                          (QWEN35_35B, "qwen3.5-35b-a3b", "qwen3_5_moe_text")],
                         ids=["dbrx", "qwen3_vl_moe_30b", "qwen3_vl_moe_235b", "glm4v_moe", "qwen3_5_moe_35b"])
def test_config_counts_as_the_catalog_record_of_its_text_model(tmp_path: Path, cfg: dict[str, Any], model_id: str,
                                                                text_model: str) -> None:
    """DBRX's config is its catalog record; Qwen3-VL-MoE's and GLM-4.5V's text models are Qwen3-30B-A3B's,
    Qwen3-235B-A22B's and GLM-4.5-Air's shapes, their vision towers not counted."""
    arch = architecture_from_hf_config(_write(tmp_path, cfg))
    counts, record = count_params(arch), count_params(load_catalog().model(model_id).to_domain())
    assert (counts.total, counts.active_published) == (record.total, record.active_published)
    if text_model:
        assert any(f"text model ({text_model})" in note and "other towers not counted" in note for note in arch.notes)


def test_dots1_gives_the_cards_counts_cut_to_whole_billions(tmp_path: Path) -> None:
    """dots.llm1's card says 142B total and 14B active: its shape counts 142.77B and 14.02B (with both embeddings),
    the card's figures cut to whole billions."""
    arch = architecture_from_hf_config(_write(tmp_path, DOTS1))
    counts = count_params(arch)
    assert (counts.total // 10**9, counts.active_published // 10**9) == (142, 14)
    assert arch.moe is not None and arch.qk_norm and not arch.mla and arch.kv_heads == 32
    assert (arch.moe.first_dense_layers, arch.moe.num_shared_experts, arch.moe.router) == (1, 2, "sigmoid")


def test_dots1_sliding_window_starts_at_max_window_layers(tmp_path: Path) -> None:
    """Dots1Config slides only the layers from max_window_layers on (default 62: none of dots.llm1's)."""
    assert architecture_from_hf_config(_write(tmp_path, {**DOTS1, "sliding_window": 4096})).attention_windows == ()
    arch = architecture_from_hf_config(_write(tmp_path, {**DOTS1, "sliding_window": 4096, "max_window_layers": 60}))
    assert arch.attention_windows == (0,) * 60 + (4096, 4096)


def test_ling_2_gives_the_cards_counts(tmp_path: Path) -> None:
    """Ling-mini-2.0: 16.26B total, 1.43B active of which 789M outside the embeddings; Ling-flash-2.0: exactly the
    Hub's safetensors count, and 6.1B active (cut to a tenth), both embeddings counted as active."""
    arch = architecture_from_hf_config(_write(tmp_path, LING_MINI))
    assert arch.moe is not None and arch.qk_norm and arch.moe.router == "sigmoid" and arch.moe.first_dense_layers == 1
    mini = count_params(arch)
    assert (round(mini.total / 1e9, 2), round(mini.active_published / 1e9, 2)) == (16.26, 1.43)
    assert (mini.active_published - mini.embedding - mini.lm_head) // 10**6 == 789
    flash = count_params(architecture_from_hf_config(_write(tmp_path, LING_FLASH)))
    assert flash.total == 102_889_697_280
    assert flash.active_published // 10**8 == 61


def test_ling_1_configs_read_the_same_keys(tmp_path: Path) -> None:
    """Ling-lite (Ling 1.x, same model_type): 16.8B total and 2.75B active, no q/k norm, a softmax router."""
    arch = architecture_from_hf_config(_write(tmp_path, LING_LITE))
    counts = count_params(arch)
    assert (round(counts.total / 1e9, 1), round(counts.active_published / 1e9, 2)) == (16.8, 2.75)
    assert arch.moe is not None and not arch.qk_norm and arch.moe.router == "softmax"


def test_ling_multi_token_prediction_layers_are_the_last_layers(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(_write(tmp_path, {**LING_MINI, "num_nextn_predict_layers": 1}))
    assert arch.num_layers == 19 and arch.moe is not None and arch.moe.mtp_layers == 1
    assert any("multi-token-prediction" in note for note in arch.notes)


def test_the_wrappers_tie_flag_decides_the_output_head(tmp_path: Path) -> None:
    """A Qwen3-VL-MoE text config re-saved with its class default tie_word_embeddings true stays untied: transformers
    ties the wrapper's lm_head by the outer flag."""
    resaved = {**QWEN3_VL_30B, "text_config": {**QWEN3_VL_TEXT, "tie_word_embeddings": True}}
    assert not architecture_from_hf_config(_write(tmp_path, resaved)).tied_embeddings
    tied = {**resaved, "tie_word_embeddings": True}
    assert architecture_from_hf_config(_write(tmp_path, tied)).tied_embeddings


def test_dbrx_says_what_it_assumes(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(_write(tmp_path, DBRX))
    assert arch.norm == "layernorm" and not arch.norm_bias and arch.kv_heads == 8 and arch.context_length == 32768
    assert any("clip_qkv" in note for note in arch.notes)
    no_kv = architecture_from_hf_config(_write(tmp_path, {**DBRX, "attn_config": {"clip_qkv": 8}}))
    assert no_kv.kv_heads == 1 and any("kv_n_heads absent" in note for note in no_kv.notes)


@pytest.mark.parametrize(("cfg", "expected"), [
    ({**DOTS1, "first_k_dense_replace": 62}, "first_k_dense_replace"),
    ({**DBRX, "ffn_config": [10752, 16, 4]}, "'ffn_config' must be a JSON object"),
    ({**DBRX, "tie_word_embeddings": True}, "never ties"),
    ({**QWEN3_VL_30B, "text_config": {**QWEN3_VL_TEXT, "mlp_only_layers": "all"}}, "'text_config.mlp_only_layers'"),
    ({**GLM45V, "text_config": {k: v for k, v in GLM45V["text_config"].items() if k != "n_routed_experts"}},
     "missing key 'text_config.n_routed_experts'"),
    ({**LING_MINI, "num_nextn_predict_layers": 19}, "leave no MoE layer"),
], ids=["dots1", "dbrx_ffn_config", "dbrx_tied", "qwen3_vl_moe", "glm4v_moe", "bailing_moe"])
def test_a_bad_key_of_the_new_families_is_one_line(tmp_path: Path, cfg: dict[str, Any], expected: str) -> None:
    assert expected in _error(tmp_path, cfg)


def test_qwen3_next_reads_its_hybrid_layers_and_counts_the_catalog_total(tmp_path: Path) -> None:
    """Qwen3-Next-80B-A3B: 36 Gated DeltaNet and 12 gated full-attention layers, every one with a 512-expert MoE and a
    gated shared expert; 79,674,391,296 parameters without the MTP layer its config.json does not declare (the
    released checkpoint's 81,324,862,720 less 1,650,471,424), as the catalog record counts."""
    arch = architecture_from_hf_config(_write(tmp_path, QWEN3_NEXT))
    assert arch.linear_attention == LinearAttention(num_key_heads=16, num_value_heads=32, key_head_dim=128,
                                                    value_head_dim=128, conv_kernel=4, full_attention_interval=4)
    assert arch.attention_output_gate and arch.qk_norm and not arch.qkv_bias and not arch.tied_embeddings
    assert (arch.num_linear_attention_layers, arch.kv_heads, arch.head_dim, arch.ffn) == (36, 2, 256, 5120)
    assert arch.moe == MoE(num_experts=512, top_k=10, expert_ffn=512, num_shared_experts=1, shared_expert_ffn=512,
                           shared_expert_gate=True)
    assert any("declares no multi-token-prediction layer" in note for note in arch.notes)
    counts = count_params(arch)
    assert counts.total == 79_674_391_296
    assert counts.total == count_params(load_catalog().model("qwen3-next-80b-a3b").to_domain()).total


def test_qwen3_next_layer_types_give_the_interval(tmp_path: Path) -> None:
    """layer_types wins over full_attention_interval, as in transformers; legacy names read as theirs."""
    every_third = ["full_attention" if (i + 1) % 3 == 0 else "linear_attention" for i in range(48)]
    arch = architecture_from_hf_config(_write(tmp_path, {**QWEN3_NEXT, "layer_types": every_third}))
    assert arch.linear_attention is not None and arch.linear_attention.full_attention_interval == 3
    assert arch.num_linear_attention_layers == 32
    assert any("full_attention_interval 4 not used" in note for note in arch.notes)
    legacy = ["attention" if (i + 1) % 4 == 0 else "mamba" for i in range(48)]
    arch = architecture_from_hf_config(_write(tmp_path, {**QWEN3_NEXT, "layer_types": legacy}))
    assert arch.linear_attention is not None and arch.linear_attention.full_attention_interval == 4
    sparse = architecture_from_hf_config(_write(tmp_path, {**QWEN3_NEXT, "mlp_only_layers": [0, 1]}))
    assert sparse.moe is not None and sparse.moe.first_dense_layers == 2


def test_qwen3_next_reads_any_layer_list(tmp_path: Path) -> None:
    """A layer_types whose full-attention layers are not every n-th is read as their list, with a note; one whose
    layers are every n-th still gives the interval and no list."""
    late = ["linear_attention"] * 44 + ["full_attention"] * 4
    arch = architecture_from_hf_config(_write(tmp_path, {**QWEN3_NEXT, "layer_types": late}))
    assert arch.linear_attention is not None and arch.linear_attention.full_attention_layers == (44, 45, 46, 47)
    assert arch.num_linear_attention_layers == 44
    assert any("layer_types puts full attention on layers [44, 45, 46, 47] (from 0)" in note for note in arch.notes)
    shifted = [*QWEN35_LAYER_TYPES[1:], "linear_attention"]
    text = architecture_from_hf_config(_write(tmp_path, {**QWEN35_35B, "text_config": {**QWEN35_TEXT,
                                                                                          "layer_types": shifted}}))
    assert text.linear_attention is not None
    assert text.linear_attention.full_attention_layers == tuple(range(2, 40, 4))
    last = ["linear_attention"] * 47 + ["full_attention"]
    arch = architecture_from_hf_config(_write(tmp_path, {**QWEN3_NEXT, "layer_types": last}))
    assert arch.linear_attention is not None and arch.linear_attention.full_attention_layers == ()
    assert arch.linear_attention.full_attention_interval == 48


def test_qwen3_5_moe_text_tower_counts_the_language_model(tmp_path: Path) -> None:
    """Qwen3.5-35B-A3B: the checkpoint's 35,951,822,704 parameters are its language model (34,660,610,688), one MTP
    layer (844,640,768) and the vision tower (446,571,248); rigplan counts the language model only."""
    arch = architecture_from_hf_config(_write(tmp_path, QWEN35_35B))
    assert any("text model (qwen3_5_moe_text)" in note and "other towers not counted" in note for note in arch.notes)
    assert arch.linear_attention == LinearAttention(num_key_heads=16, num_value_heads=32, key_head_dim=128,
                                                    value_head_dim=128, conv_kernel=4, full_attention_interval=4,
                                                    input_projections=4)
    assert arch.attention_output_gate and arch.qk_norm and not arch.tied_embeddings and arch.rope_attention_factor == 1
    assert arch.moe == MoE(num_experts=256, top_k=8, expert_ffn=512, num_shared_experts=1, shared_expert_ffn=512,
                           shared_expert_gate=True, mtp_layers=1)
    assert arch.num_moe_layers == 40 and arch.num_linear_attention_layers == 30
    assert count_params(arch).total == 34_660_610_688
    assert any("1 multi-token-prediction layer(s) not counted" in note for note in arch.notes)


def test_qwen3_5_moe_wrapper_tie_flag_decides_the_output_head(tmp_path: Path) -> None:
    tied = {**QWEN35_35B, "tie_word_embeddings": True}
    assert architecture_from_hf_config(_write(tmp_path, tied)).tied_embeddings


@pytest.mark.parametrize(("cfg", "expected"), [
    ({**QWEN3_NEXT, "layer_types": ["full_attention"] * 48},
     "key 'layer_types' gives 48 full-attention and 0 linear-attention layers; rigplan reads a hybrid with at least "
     "one of each"),
    ({**QWEN3_NEXT, "layer_types": ["linear_attention"] * 48},
     "key 'layer_types' gives 0 full-attention and 48 linear-attention layers"),
    ({**QWEN3_NEXT, "layer_types": ["sliding_attention"] * 48}, "names sliding_attention"),
    ({**QWEN3_NEXT, "layer_types": ["full_attention"] * 4}, "must list one attention kind per layer (48)"),
    ({**QWEN3_NEXT, "full_attention_interval": 1}, "key 'full_attention_interval' must be >= 2"),
    ({**QWEN3_NEXT, "linear_num_value_heads": 24}, "value heads (24) must be a multiple of its key heads (16)"),
    ({k: v for k, v in QWEN3_NEXT.items() if k != "linear_key_head_dim"}, "missing key 'linear_key_head_dim'"),
    ({**QWEN35_35B, "text_config": {**QWEN35_TEXT, "layer_types": ["attention"] * 40}},
     "key 'text_config.layer_types' gives 40 full-attention and 0 linear-attention layers"),
    ({**QWEN35_35B, "text_config": {**QWEN35_TEXT, "linear_num_key_heads": 0}}, "'text_config.linear_num_key_heads'"),
], ids=["no_linear_layer", "no_full_layer", "other_kind", "short_list", "interval_1", "value_heads", "missing_key",
        "qwen3_5_no_linear_layer", "qwen3_5_zero_heads"])
def test_a_bad_hybrid_key_is_one_line(tmp_path: Path, cfg: dict[str, Any], expected: str) -> None:
    assert expected in _error(tmp_path, cfg)


def test_kimi_linear_reads_its_hybrid_layers_and_counts_the_catalog_total(tmp_path: Path) -> None:
    """Kimi-Linear-48B-A3B: MLA on 7 layers (full_attn_layers 4, 8, ..., 24 and 27, counted from 1), Kimi Delta
    Attention on the other 20, a dense first layer and 26 layers of 256 experts beside one shared expert:
    49,122,675,072 parameters (transformers' KimiLinearForCausalLM built from this config counts the same) and
    3,106,965,888 active without the input embedding."""
    arch = architecture_from_hf_config(_write(tmp_path, KIMI_LINEAR))
    full = (3, 7, 11, 15, 19, 23, 26)
    assert arch.linear_attention == LinearAttention(kind="kimi_delta", num_key_heads=32, num_value_heads=32,
                                                    key_head_dim=128, value_head_dim=128, conv_kernel=4,
                                                    full_attention_layers=full)
    assert arch.linear_attention.full_layers(27) == full
    assert arch.num_linear_attention_layers == 20 and arch.attention_kind == "MLA + KDA"
    assert arch.mla == MLA(q_lora_rank=0, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    assert arch.moe == MoE(num_experts=256, top_k=8, expert_ffn=1024, num_shared_experts=1, shared_expert_ffn=1024,
                           first_dense_layers=1, router="sigmoid")
    assert (arch.ffn, arch.vocab, arch.context_length, arch.tied_embeddings) == (9216, 163840, 1048576, False)
    assert not arch.qk_norm and not arch.qkv_bias and not arch.attn_out_bias and arch.active_excludes_input_embedding
    assert any("MLA on layers [3, 7, 11, 15, 19, 23, 26] (from 0), Kimi Delta Attention on the other 20" in note
               for note in arch.notes)
    counts = count_params(arch)
    assert (counts.total, counts.active_published) == (49_122_675_072, 3_106_965_888)


def _kimi_layer_types(full: tuple[int, ...], layers: int = 27) -> list[str]:
    return ["full_attention" if i in full else "linear_attention" for i in range(layers)]


def test_kimi_linear_takes_the_transformers_spellings(tmp_path: Path) -> None:
    """KimiLinearConfig's own keys (num_local_experts, num_experts_per_tok, n_shared_experts, linear_num_heads,
    linear_head_dim, linear_conv_kernel_dim, layer_types, mlp_layer_types, model_max_length) read as Moonshot's."""
    moonshot = {"num_experts", "num_experts_per_token", "num_shared_experts", "linear_attn_config",
                "first_k_dense_replace", "max_position_embeddings"}
    renamed = {k: v for k, v in KIMI_LINEAR.items() if k not in moonshot}
    renamed.update(num_local_experts=256, num_experts_per_tok=8, n_shared_experts=1, linear_num_heads=32,
                   linear_head_dim=128, linear_conv_kernel_dim=4, model_max_length=1048576,
                   layer_types=_kimi_layer_types((3, 7, 11, 15, 19, 23, 26)),
                   mlp_layer_types=["dense"] + ["sparse"] * 26)
    ours = architecture_from_hf_config(_write(tmp_path, renamed))
    theirs = architecture_from_hf_config(_write(tmp_path, KIMI_LINEAR))
    assert (ours.linear_attention, ours.moe, ours.mla, ours.context_length) == (
        theirs.linear_attention, theirs.moe, theirs.mla, theirs.context_length)
    assert count_params(ours) == count_params(theirs)


def test_kimi_linear_layer_precedence_and_shared_experts(tmp_path: Path) -> None:
    """layer_types wins over linear_attn_config's lists; without either, KimiLinearConfig's default puts MLA on every
    4th layer from layer 4 (0-based). num_shared_experts widens the one shared MLP."""
    listed = architecture_from_hf_config(_write(tmp_path, {**KIMI_LINEAR, "layer_types": _kimi_layer_types((0, 26))}))
    assert listed.linear_attention is not None and listed.linear_attention.full_attention_layers == (0, 26)
    no_lists = {**KIMI_LINEAR, "linear_attn_config": {"head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4}}
    default = architecture_from_hf_config(_write(tmp_path, no_lists))
    assert default.linear_attention is not None
    assert default.linear_attention.full_attention_layers == (4, 8, 12, 16, 20, 24)
    assert any("KimiLinearConfig's default" in note for note in default.notes)
    shared = architecture_from_hf_config(_write(tmp_path, {**KIMI_LINEAR, "num_shared_experts": 2}))
    assert shared.moe is not None and (shared.moe.num_shared_experts, shared.moe.shared_expert_ffn) == (1, 2048)


@pytest.mark.parametrize(("cfg", "expected"), [
    ({**KIMI_LINEAR, "linear_attn_config": {**KIMI_LINEAR["linear_attn_config"], "kda_layers": KIMI_KDA_LAYERS[1:]}},
     "key 'linear_attn_config' must split layers 1 to 27 between full_attn_layers and kda_layers"),
    ({**KIMI_LINEAR, "linear_attn_config": {"full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
                                            "kda_layers": KIMI_KDA_LAYERS}},
     "missing key 'linear_attn_config.num_heads' or 'linear_num_heads'"),
    ({**KIMI_LINEAR, "linear_attn_config": [4, 8]}, "key 'linear_attn_config' must be a JSON object"),
    ({**KIMI_LINEAR, "layer_types": ["linear_attention"] * 27},
     "key 'layer_types' gives 0 full-attention and 27 linear-attention layers"),
    ({**KIMI_LINEAR, "linear_attn_config": {**KIMI_LINEAR["linear_attn_config"], "full_attn_layers": list(range(1, 28)),
                                            "kda_layers": []}},
     "key 'linear_attn_config' gives 27 full-attention and 0 linear-attention layers"),
    ({**KIMI_LINEAR, "mlp_layer_types": ["moe"] * 27}, "key 'mlp_layer_types' must list dense or sparse for each"),
    ({**KIMI_LINEAR, "mlp_layer_types": ["dense"] * 27}, "key 'mlp_layer_types' leaves no MoE layer among 27"),
    ({**KIMI_LINEAR, "first_k_dense_replace": 27}, "key 'first_k_dense_replace' leaves no MoE layer among 27"),
    ({k: v for k, v in KIMI_LINEAR.items() if k != "num_experts"}, "missing key 'num_experts' or 'num_local_experts'"),
], ids=["kda_list_short", "no_heads", "not_an_object", "no_full_layer", "no_linear_layer", "mlp_kind", "all_dense",
        "first_dense_all", "no_experts"])
def test_a_bad_kimi_linear_key_is_one_line(tmp_path: Path, cfg: dict[str, Any], expected: str) -> None:
    assert expected in _error(tmp_path, cfg)


KIMI_8_LAYERS = {"full_attn_layers": [4, 8], "kda_layers": [1, 2, 3, 5, 6, 7]}
"""KIMI_LINEAR's layer lists cut to 8 layers: MLA on every 4th (an interval)."""
KIMI_SPELLED_AS_TRANSFORMERS = {  # KimiLinearConfig's own keys, the MLA on 0-based 1, 2 and 6 (no interval)
    **{k: v for k, v in KIMI_LINEAR.items() if k not in ("num_experts_per_token", "num_shared_experts",
                                                         "linear_attn_config")},
    "num_experts_per_tok": 3, "n_shared_experts": 2, "linear_num_heads": 8, "linear_head_dim": 64,
    "linear_conv_kernel_dim": 3, "layer_types": _kimi_layer_types((1, 2, 6), 8), "q_lora_rank": 256,
}


@pytest.mark.parametrize(("config_class", "cfg"), [
    ("Qwen3NextConfig", QWEN3_NEXT),
    ("Qwen3_5MoeTextConfig", QWEN35_TEXT),
    ("Qwen3NextConfig", {**QWEN3_NEXT, "attention_bias": True, "full_attention_interval": 3,
                         "linear_num_value_heads": 16, "mlp_only_layers": [0, 5]}),
    ("Qwen3NextConfig", {**QWEN3_NEXT, "layer_types": _kimi_layer_types((1, 5, 6), 8)}),
    ("KimiLinearConfig", {**KIMI_LINEAR, "linear_attn_config": {**KIMI_LINEAR["linear_attn_config"], **KIMI_8_LAYERS}}),
    ("KimiLinearConfig", {**KIMI_LINEAR, "num_shared_experts": 2, "first_k_dense_replace": 2, "linear_attn_config": {
        **KIMI_LINEAR["linear_attn_config"], "full_attn_layers": [2, 3, 8], "kda_layers": [1, 4, 5, 6, 7]}}),
    ("KimiLinearConfig", KIMI_SPELLED_AS_TRANSFORMERS),
    ("KimiLinearConfig", {**KIMI_LINEAR, "linear_attn_config": {"head_dim": 128, "num_heads": 32,
                                                                "short_conv_kernel_size": 4}}),
], ids=["qwen3_next", "qwen3_5_moe_text", "qwen3_next_bias_interval_3", "qwen3_next_listed_layers",
        "kimi_linear", "kimi_linear_listed_layers", "kimi_linear_transformers_keys", "kimi_linear_default_layers"])
def test_hybrid_counts_equal_transformers_modules(tmp_path: Path, config_class: str, cfg: dict[str, Any]) -> None:
    """transformers builds the model on the meta device from the same config (48, 40 or 27 layers cut to 8, 512 or
    256 experts to 16, the vocabulary to 1024) and counts its parameters; rigplan's count of config.json must be the
    same to the unit."""
    pytest.importorskip("torch", reason="torch is not installed: pip install 'rigplan[frameworks]'")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: pip install "
                                       "'rigplan[frameworks]'")
    if not hasattr(transformers, config_class):
        pytest.skip(f"this transformers has no {config_class}")
    import torch

    small = {**cfg, "num_hidden_layers": 8, "num_experts": 16, "vocab_size": 1024}
    if "layer_types" in small:
        small["layer_types"] = small["layer_types"][:8]
    keys = {k: v for k, v in small.items() if k not in ("model_type", "architectures")}
    keys.update(pad_token_id=None, bos_token_id=None, eos_token_id=None)  # KimiLinearConfig's lie beyond 1024
    config = getattr(transformers, config_class)(**keys)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    counted = sum(p.numel() for p in model.parameters())
    assert count_params(architecture_from_hf_config(_write(tmp_path, small))).total == counted
