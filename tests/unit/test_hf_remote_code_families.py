"""config.json readers of the families whose modeling code ships with the checkpoint (trust_remote_code): ChatGLM
(GLM-4-9B, ChatGLM3-6B), InternLM 2.5 and InternLM 3. Their published shapes count to the weights the modeling code
builds (the sums are written out) and to the publishers' sizes; their keys fail as one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hf_files import write_config

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES, architecture_from_hf_config
from rigplan.errors import InvalidSpec
from rigplan.estimate.params import count_params

GLM4_9B = {  # THUDM/glm-4-9b config.json (ChatGLMConfig); the card: 9B, the Hub's safetensors 9.40B
    "model_type": "chatglm", "num_layers": 40, "padded_vocab_size": 151552, "hidden_size": 4096,
    "ffn_hidden_size": 13696, "kv_channels": 128, "num_attention_heads": 32, "seq_length": 8192, "rmsnorm": True,
    "add_qkv_bias": True, "add_bias_linear": False, "multi_query_attention": True, "multi_query_group_num": 2,
    "post_layer_norm": True,
}
GLM4_9B_TOTAL = 40 * (4096 * (4096 + 2 * 2 * 128) + (4096 + 2 * 2 * 128)  # query_key_value with its bias
                      + 4096 * 4096  # dense (output projection)
                      + 4096 * 2 * 13696 + 13696 * 4096  # dense_h_to_4h (SwiGLU: two halves), dense_4h_to_h
                      + 2 * 4096) + 2 * 151552 * 4096 + 4096  # two RMSNorms; embedding and output layer; final norm
CHATGLM3_6B = {**GLM4_9B, "num_layers": 28, "padded_vocab_size": 65024}  # THUDM/chatglm3-6b config.json: 6.24B
INTERNLM25_7B = {  # internlm/internlm2_5-7b config.json (InternLM2Config); the Hub: 7.74B
    "model_type": "internlm2", "vocab_size": 92544, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "bias": False,
    "tie_word_embeddings": False, "max_position_embeddings": 32768,
}
INTERNLM25_TOTAL = 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096) + 2 * 92544 * 4096 + 4096
INTERNLM3_8B = {  # internlm/internlm3-8b-instruct config.json (InternLM3Config); the Hub: 8.8B
    "model_type": "internlm3", "bias": False, "head_dim": 128, "hidden_size": 4096, "intermediate_size": 10240,
    "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "qkv_bias": False, "tie_word_embeddings": False, "vocab_size": 128512,
    "rope_scaling": {"factor": 6.0, "rope_type": "dynamic"}, "rope_theta": 50000000,
}
INTERNLM3_TOTAL = 48 * (4096 * 4096 + 2 * 4096 * 256 + 4096 * 4096 + 3 * 4096 * 10240 + 2 * 4096) \
    + 2 * 128512 * 4096 + 4096


@pytest.mark.parametrize("model_type", ["chatglm", "internlm2", "internlm3"])
def test_remote_code_types_are_supported(model_type: str) -> None:
    assert model_type in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize(("cfg", "total", "published"), [
    (GLM4_9B, GLM4_9B_TOTAL, 9.40e9), (CHATGLM3_6B, None, 6.24e9), (INTERNLM25_7B, INTERNLM25_TOTAL, 7.74e9),
    (INTERNLM3_8B, INTERNLM3_TOTAL, 8.80e9),
], ids=["glm-4-9b", "chatglm3-6b", "internlm2.5-7b", "internlm3-8b"])
def test_counts_are_the_modeling_codes_weights(tmp_path: Path, cfg: dict[str, Any], total: int | None,
                                               published: float) -> None:
    counts = count_params(architecture_from_hf_config(write_config(tmp_path, cfg)))
    if total is not None:
        assert counts.total == total
    assert counts.total == pytest.approx(published, abs=0.005e9)  # the published size, to its last digit


def test_chatglm_reads_its_own_key_names(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(write_config(tmp_path, GLM4_9B))
    assert (arch.num_layers, arch.num_kv_heads, arch.head_dim, arch.ffn, arch.vocab) == (40, 2, 128, 13696, 151552)
    assert arch.qkv_bias and not arch.attn_out_bias and not arch.tied_embeddings and arch.fused_projections
    mha = architecture_from_hf_config(write_config(tmp_path, {**GLM4_9B, "multi_query_attention": False}))
    assert mha.num_kv_heads == 32
    layernorm = architecture_from_hf_config(write_config(tmp_path, {**GLM4_9B, "rmsnorm": False}))
    assert (layernorm.norm, layernorm.norm_bias) == ("layernorm", True)


def test_internlm_biases_follow_their_flags(tmp_path: Path) -> None:
    two = architecture_from_hf_config(write_config(tmp_path, {**INTERNLM25_7B, "bias": True}))
    assert two.qkv_bias and two.attn_out_bias and not two.mlp_bias
    three = architecture_from_hf_config(write_config(tmp_path, {**INTERNLM3_8B, "qkv_bias": True}))
    assert three.qkv_bias and three.attn_out_bias and not three.mlp_bias


@pytest.mark.parametrize(("cfg", "drop", "key"), [
    (GLM4_9B, "ffn_hidden_size", "ffn_hidden_size"), (GLM4_9B, "padded_vocab_size", "padded_vocab_size"),
    (INTERNLM25_7B, "intermediate_size", "intermediate_size"), (INTERNLM3_8B, "num_hidden_layers", "num_hidden_layers"),
])
def test_a_missing_key_fails_as_one_line(tmp_path: Path, cfg: dict[str, Any], drop: str, key: str) -> None:
    with pytest.raises(InvalidSpec, match=key) as err:
        architecture_from_hf_config(write_config(tmp_path, {k: v for k, v in cfg.items() if k != drop}))
    assert "\n" not in str(err.value)


def test_a_mistyped_flag_fails_as_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidSpec, match="add_qkv_bias' must be true or false"):
        architecture_from_hf_config(write_config(tmp_path, {**GLM4_9B, "add_qkv_bias": "yes"}))
