"""Text models of the vision-language and omni configs (Qwen2-VL and Qwen2.5-VL with their keys at the top level or
under text_config, Qwen3-VL, Mistral Small 3.1's mistral3, Qwen3-Omni's thinker): each counts as the catalog's language
model of the same shape, the wrapper's tie_word_embeddings decides the output head, and a note says the other towers
are not counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hf_files import config_error, read_config

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES
from rigplan.catalog.load import load_catalog
from rigplan.estimate.params import count_params

QWEN25_VL_7B = {  # Qwen/Qwen2.5-VL-7B-Instruct config.json (text keys at the top level, as the checkpoint ships them)
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "vocab_size": 152064, "max_position_embeddings": 128000, "max_window_layers": 28, "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "sliding_window": 32768,
    "use_sliding_window": False, "tie_word_embeddings": False,
    "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 3584},
}
QWEN3_VL_8B_TEXT = {  # Qwen/Qwen3-VL-8B-Instruct config.json's text_config (no tie_word_embeddings of its own)
    "model_type": "qwen3_vl_text", "attention_bias": False, "head_dim": 128, "hidden_size": 4096,
    "intermediate_size": 12288, "max_position_embeddings": 262144, "num_attention_heads": 32, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20],
                                                "rope_type": "default"},
    "rope_theta": 5000000, "vocab_size": 151936,
}
QWEN3_VL_8B = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
               "text_config": QWEN3_VL_8B_TEXT, "tie_word_embeddings": False,
               "vision_config": {"depth": 27, "hidden_size": 1152, "out_hidden_size": 4096}}
QWEN3_VL_4B = {  # Qwen/Qwen3-VL-4B-Instruct: the same keys at Qwen3-4B's shape, its embeddings tied
    **QWEN3_VL_8B, "tie_word_embeddings": True,
    "text_config": {**QWEN3_VL_8B_TEXT, "hidden_size": 2560, "intermediate_size": 9728, "tie_word_embeddings": True},
}
MISTRAL_SMALL_31 = {  # mistralai/Mistral-Small-3.1-24B-Instruct-2503 config.json (model_type mistral3)
    "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
    "text_config": {"head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768, "max_position_embeddings": 131072,
                    "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40,
                    "num_key_value_heads": 8, "rope_theta": 1000000000.0, "sliding_window": None,
                    "vocab_size": 131072},
    "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24, "model_type": "pixtral"},
}


QWEN3_OMNI_TEXT = {  # Qwen/Qwen3-Omni-30B-A3B-Instruct config.json: thinker_config.text_config (transformers 4.57)
    "model_type": "qwen3_omni_moe_text", "attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128,
    "hidden_size": 2048, "intermediate_size": 768, "max_position_embeddings": 65536, "mlp_only_layers": [],
    "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
    "rope_scaling": {"interleaved": True, "mrope_interleaved": True, "mrope_section": [24, 20, 20], "type": "default"},
    "shared_expert_intermediate_size": 0, "sliding_window": None, "vocab_size": 152064,
}
QWEN3_OMNI = {"architectures": ["Qwen3OmniMoeForConditionalGeneration"], "model_type": "qwen3_omni_moe",
              "thinker_config": {"model_type": "qwen3_omni_moe_thinker", "tie_word_embeddings": False,
                                 "text_config": QWEN3_OMNI_TEXT, "audio_config": {"d_model": 1280},
                                 "vision_config": {"depth": 27, "hidden_size": 1152}},
              "talker_config": {"text_config": {"hidden_size": 1024, "num_hidden_layers": 20}}}


@pytest.mark.parametrize("model_type", ["qwen2_vl_text", "qwen2_5_vl_text", "qwen3_vl_text", "qwen3_omni_moe_text"])
def test_the_text_model_types_are_supported(model_type: str) -> None:
    assert model_type in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize(("cfg", "model_id"), [
    (QWEN25_VL_7B, "qwen2.5-7b"),
    ({**QWEN25_VL_7B, "model_type": "qwen2_vl"}, "qwen2.5-7b"),
    ({"model_type": "qwen2_5_vl", "tie_word_embeddings": False,
      "text_config": {k: v for k, v in QWEN25_VL_7B.items() if k not in ("vision_config", "architectures")}
      | {"model_type": "qwen2_5_vl_text"}}, "qwen2.5-7b"),
    (QWEN3_VL_8B, "qwen3-8b"),
    (QWEN3_VL_4B, "qwen3-4b"),
    (MISTRAL_SMALL_31, "mistral-small-24b"),
], ids=["qwen2.5-vl-flat", "qwen2-vl-flat", "qwen2.5-vl-text_config", "qwen3-vl-8b", "qwen3-vl-4b", "mistral3"])
def test_text_model_counts_as_the_catalog_language_model(tmp_path: Path, cfg: dict[str, Any], model_id: str) -> None:
    arch = read_config(tmp_path, cfg)
    counts, record = count_params(arch), count_params(load_catalog().model(model_id).to_domain())
    assert counts.total == record.total
    assert any("not counted" in note for note in arch.notes)


def test_the_omni_thinker_is_qwen3_30b_a3b_with_its_wider_vocabulary(tmp_path: Path) -> None:
    """The thinker's language model has Qwen3-30B-A3B's layers over a vocabulary of 152,064 (151,936 in the text
    model): 128 more rows in the embedding and in the untied output head, 2 x 128 x 2,048 parameters."""
    arch = read_config(tmp_path, QWEN3_OMNI)
    counts = count_params(arch)
    record = count_params(load_catalog().model("qwen3-30b-a3b").to_domain())
    assert counts.total - record.total == 2 * 128 * 2048
    assert counts.active_published - record.active_published == 2 * 128 * 2048
    assert arch.moe is not None and (arch.moe.num_experts, arch.moe.top_k) == (128, 8) and not arch.tied_embeddings
    assert any("talker" in note for note in arch.notes)
    untyped = {**QWEN3_OMNI, "thinker_config": {**QWEN3_OMNI["thinker_config"], "text_config": {
        k: v for k, v in QWEN3_OMNI_TEXT.items() if k != "model_type"}}}  # the thinker's text config by default
    assert count_params(read_config(tmp_path, untyped)).total == counts.total


def test_the_thinker_names_its_keys_in_errors(tmp_path: Path) -> None:
    broken = {**QWEN3_OMNI, "thinker_config": {**QWEN3_OMNI["thinker_config"], "text_config": {
        **QWEN3_OMNI_TEXT, "num_experts_per_tok": "eight"}}}
    assert "thinker_config.text_config.num_experts_per_tok" in config_error(tmp_path, broken)


def test_the_wrapper_decides_the_output_head(tmp_path: Path) -> None:
    tied = read_config(tmp_path, {**QWEN3_VL_8B, "tie_word_embeddings": True})
    untied = read_config(tmp_path, QWEN3_VL_8B)
    assert tied.tied_embeddings and not untied.tied_embeddings
    assert count_params(untied).total - count_params(tied).total == 151936 * 4096


def test_a_window_switched_off_stays_off(tmp_path: Path) -> None:
    assert read_config(tmp_path, QWEN25_VL_7B).attention_windows == ()
    on = read_config(tmp_path, {**QWEN25_VL_7B, "use_sliding_window": True, "max_window_layers": 14})
    assert on.window_counts == {0: 14, 32768: 14}
