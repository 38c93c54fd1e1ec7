"""config.json readers of the dense families in hf_dense_families.py (GLM-4-0414, OLMo 2 and 3, Command R / R7B / A,
Granite 3, Seed-OSS, EXAONE 4.0, SmolLM3, Apertus, ERNIE 4.5 dense, Hunyuan dense): published shapes give the
publishers' parameter counts, or the sum of their weight shapes where the publisher gives only a name, and a bad key of
each family fails as one clear line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hf_files import config_error, read_config, without

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES
from rigplan.errors import InvalidSpec
from rigplan.estimate.params import count_params

DENSE_TYPES = ("apertus", "cohere", "cohere2", "ernie4_5", "exaone4", "glm4", "granite", "hunyuan_v1_dense", "olmo2",
               "olmo3", "seed_oss", "smollm3")

GLM4_9B = {  # zai-org/GLM-4-9B-0414's shape: transformers Glm4Config's defaults (its docstring: "a glm4-4-9b-chat style
    # configuration", the shape GLM-4-9B-0414 keeps); the Hub lists 9.4B parameters, Z.ai's card says 9B
    "model_type": "glm4", "vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 13696,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "attention_bias": True, "partial_rotary_factor": 0.5, "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}
OLMO2_7B = {  # allenai/OLMo-2-1124-7B config.json (as Megatron-Bridge's OLMo 2 bridge tests mirror it); card: 7.30B
    "model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 32, "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_theta": 500000.0,
    "tie_word_embeddings": False, "use_cache": True, "vocab_size": 100352,
}
OLMO3_LAYERS = ["sliding_attention"] * 3 + ["full_attention"]
OLMO3_7B = {  # allenai/Olmo-3-1025-7B's config.json keys as public converters quote them (a llama.cpp-style loader's
    # Olmo 3 test: heads, window, layer_types, YaRN; vLLM's NCP-Olmo3 contract: 32 layers, 11008, vocab 100278,
    # 65536 positions); AllenAI names it 7B
    "model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100278,
    "max_position_embeddings": 65536, "rope_theta": 500000, "sliding_window": 4096, "layer_types": OLMO3_LAYERS * 8,
    "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32.0, "beta_slow": 1.0, "factor": 8.0,
                     "original_max_position_embeddings": 8192, "rope_type": "yarn"},
    "tie_word_embeddings": False,
}
COMMAND_R = {  # CohereForAI/c4ai-command-r-v01 config.json (as a public Rust port's Command R test quotes it); card:
    # "a 35 billion parameter" model
    "model_type": "cohere", "architectures": ["CohereForCausalLM"], "hidden_size": 8192, "num_attention_heads": 64,
    "num_key_value_heads": 64, "num_hidden_layers": 40, "intermediate_size": 22528, "vocab_size": 256000,
    "max_position_embeddings": 8192, "layer_norm_eps": 1e-5, "rope_theta": 8000000.0, "logit_scale": 0.0625,
    "tie_word_embeddings": True,
}
COMMAND_A = {  # CohereLabs/c4ai-command-a-03-2025 (a public port's Cohere2 table of its config.json: 64 layers, 96
    # heads, 8 kv heads, 36864, window 4096 on 3 layers in 4, tied); card: 111 billion parameters
    "model_type": "cohere2", "architectures": ["Cohere2ForCausalLM"], "vocab_size": 256000, "hidden_size": 12288,
    "num_hidden_layers": 64, "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 36864, "sliding_window": 4096, "sliding_window_pattern": 4, "layer_norm_eps": 1e-5,
    "rope_theta": 50000.0, "logit_scale": 0.25, "tie_word_embeddings": True,
}
COMMAND_R7B = {  # CohereLabs/c4ai-command-r7b-12-2024 (the same table): Command A's layer at 4096 wide, 32 layers
    **COMMAND_A, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 14336,
}
GRANITE_8B = {  # an IBM Granite 3.x 8B instruct config.json as a public shape dump prints it (GraniteForCausalLM,
    # vocab 49159); a public parameter table gives 8,170,864,640 for the shape ("same arch as granite-3.3-8b")
    "model_type": "granite", "architectures": ["GraniteForCausalLM"], "attention_bias": False,
    "attention_dropout": 0.0, "attention_multiplier": 0.0078125, "embedding_multiplier": 12.0, "hidden_act": "silu",
    "hidden_size": 4096, "intermediate_size": 12800, "logits_scaling": 16.0, "max_position_embeddings": 131072,
    "mlp_bias": False, "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
    "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000000.0,
    "tie_word_embeddings": True, "vocab_size": 49159,
}
SEED_OSS_36B = {  # ByteDance-Seed/Seed-OSS-36B-Instruct config.json (a public MLX port's test mirrors it, quantization
    # key left out); ByteDance names it 36B
    "model_type": "seed_oss", "attention_bias": True, "attention_out_bias": False, "head_dim": 128,
    "hidden_size": 5120, "intermediate_size": 27648, "max_position_embeddings": 524288, "mlp_bias": False,
    "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
    "rope_scaling": {"rope_type": "default"}, "rope_theta": 10000000.0, "tie_word_embeddings": False,
    "vocab_size": 155136,
}
EXAONE4_1_2B = {  # LGAI-EXAONE/EXAONE-4.0-1.2B config.json keys as Ollama's exaone4 test quotes them (no sliding
    # window: every layer global); card: 1.07B parameters without embeddings
    "model_type": "exaone4", "architectures": ["Exaone4ForCausalLM"], "hidden_size": 2048, "intermediate_size": 4096,
    "num_hidden_layers": 30, "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 65536,
    "rms_norm_eps": 1e-5, "sliding_window_pattern": "LLLG", "rope_theta": 1000000,
    "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "vocab_size": 102400,
}
SMOLLM3_3B = {  # HuggingFaceTB/SmolLM3-3B config.json (as a public C# port's test copies it); the Hub lists 3.08B
    "model_type": "smollm3", "architectures": ["SmolLM3ForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 36,
    "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 11008,
    "vocab_size": 128256, "max_position_embeddings": 65536, "rope_theta": 5000000.0, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True, "no_rope_layer_interval": 4, "no_rope_layers": [1, 1, 1, 0] * 9,
    "use_sliding_window": False, "sliding_window": None,
}
APERTUS_8B = {  # swiss-ai/Apertus-8B-2509 config.json (as Ollama's apertus test quotes it); the Hub lists 8.05B
    "model_type": "apertus", "architectures": ["ApertusForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 21504, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 65536, "rope_theta": 12000000,
    "rope_scaling": {"factor": 8, "high_freq_factor": 4, "low_freq_factor": 1,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3", "type": "llama3"},
    "hidden_act": "xielu", "qk_norm": True, "post_norm": False, "attention_bias": False, "mlp_bias": False,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-5, "vocab_size": 131072,
}
ERNIE_0_3B = {  # baidu/ERNIE-4.5-0.3B-PT's shape: transformers Ernie4_5Config's defaults (its docstring: "a 0.3B style
    # configuration", checkpoint baidu/ERNIE-4.5-0.3B-PT); card: 0.36B
    "model_type": "ernie4_5", "vocab_size": 103424, "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 128,
    "max_position_embeddings": 131072, "tie_word_embeddings": True, "use_bias": False,
}
HUNYUAN_7B = {  # tencent/Hunyuan-7B-Instruct config.json keys as TensorRT-Model-Connect's Hunyuan test quotes them,
    # with tie_word_embeddings true as two other public copies of the 7B-class configs give it (a loader's
    # HUNYUAN_7B_HF table and Hunyuan-MT-7B's config.json in a Swift port); Tencent names it 7B
    "model_type": "hunyuan_v1_dense", "architectures": ["HunYuanDenseV1ForCausalLM"], "num_hidden_layers": 32,
    "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 128167, "max_position_embeddings": 262144, "rms_norm_eps": 1e-5, "use_qk_norm": True,
    "use_cla": False, "rope_theta": 10000, "rope_scaling": {"type": "dynamic", "alpha": 1000, "factor": 1},
    "tie_word_embeddings": True,
}


@pytest.mark.parametrize("model_type", DENSE_TYPES)
def test_the_dense_model_types_are_listed_as_supported(model_type: str) -> None:
    assert model_type in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize(("cfg", "count", "digits", "billions"), [
    (OLMO2_7B, "total", 2, 7.30),  # OLMo 2 7B's card: 7.30B
    (GLM4_9B, "total", 1, 9.4),  # the Hub's 9.4B for GLM-4-9B-0414
    (COMMAND_R, "total", 0, 35),  # "35 billion"
    (COMMAND_A, "total", 0, 111),  # "111 billion"
    (SMOLLM3_3B, "total", 2, 3.08),  # the Hub's 3.08B
    (APERTUS_8B, "total", 2, 8.05),  # the Hub's 8.05B
    (ERNIE_0_3B, "total", 2, 0.36),  # Baidu's card: 0.36B
    (EXAONE4_1_2B, "non_embedding", 2, 1.07),  # LG's card: 1.07B without embeddings
], ids=["olmo2", "glm4", "cohere", "cohere2", "smollm3", "apertus", "ernie4_5", "exaone4"])
def test_published_shapes_give_the_published_sizes(tmp_path: Path, cfg: dict[str, Any], count: str, digits: int,
                                                   billions: float) -> None:
    """Each publisher's figure, to the places it gives."""
    assert round(getattr(count_params(read_config(tmp_path, cfg)), count) / 1e9, digits) == billions


@pytest.mark.parametrize(("cfg", "total"), [
    # embeddings 2 x 151552 x 4096 = 1,241,513,984; a layer: q and o 2 x 4096 x 4096, k and v 2 x 4096 x 256
    # (35,651,584), q/k/v biases 4096 + 2 x 256, gate_up and down 3 x 4096 x 13696 (168,296,448), four norms 16,384:
    # 203,969,024 x 40 = 8,158,760,960; final norm 4096
    (GLM4_9B, 9_400_279_040),
    # embeddings 2 x 100278 x 4096 = 821,477,376; a layer: q, k, v, o 4 x 4096^2 (67,108,864), MLP 3 x 4096 x 11008
    # (135,266,304), two post-norms 8192, q/k norms counted per head 2 x 128: 202,383,616 x 32; final norm 4096
    # (transformers' whole-projection q/k norms hold 32 x 7,936 = 253,952 more)
    (OLMO3_7B, 7_297_757_184),
    # tied embeddings 256000 x 4096 = 1,048,576,000; a layer: q, o 2 x 4096^2, k, v 2 x 4096 x 1024 (41,943,040),
    # MLP 3 x 4096 x 14336 (176,160,768), one LayerNorm 4096: 218,107,904 x 32; final norm 4096
    (COMMAND_R7B, 8_028_033_024),
    # tied embeddings 49159 x 4096 = 201,355,264; a layer: attention 41,943,040, MLP 3 x 4096 x 12800 (157,286,400),
    # two norms 8192: 199,237,632 x 40 = 7,969,505,280; final norm 4096
    (GRANITE_8B, 8_170_864_640),
    # embeddings 2 x 155136 x 5120 = 1,588,592,640; a layer: q, o 2 x 5120 x 10240, k, v 2 x 5120 x 1024
    # (115,343,360), q/k/v biases 10240 + 2 x 1024, MLP 3 x 5120 x 27648 (424,673,280), two norms 10,240:
    # 540,039,168 x 64 = 34,562,506,752; final norm 5120
    (SEED_OSS_36B, 36_151_104_512),
    # tied embeddings 128167 x 4096 = 524,972,032; a layer: attention 41,943,040, MLP 176,160,768, two norms 8192,
    # query/key layernorms 2 x 128: 218,112,256 x 32 = 6,979,592,192; final norm 4096
    (HUNYUAN_7B, 7_504_568_320),
    # embeddings 2 x 131072 x 4096 = 1,073,741,824; a layer: attention 41,943,040, up and down 2 x 4096 x 21504
    # (176,160,768), two norms 8192, q/k norms 256: 218,112,256 x 32; final norm 4096 (xIELU's 64 scalars left out)
    (APERTUS_8B, 8_053_338_112),
], ids=["glm4", "olmo3", "cohere2_r7b", "granite", "seed_oss", "hunyuan_v1_dense", "apertus"])
def test_counts_are_the_sums_of_the_weight_shapes(tmp_path: Path, cfg: dict[str, Any], total: int) -> None:
    """Where the publisher gives only a name (9B, 7B, 36B...), the sum of the modeling file's weight shapes."""
    assert count_params(read_config(tmp_path, cfg)).total == total


@pytest.mark.parametrize(("cfg", "tied"), [
    (GLM4_9B, False), (OLMO2_7B, False), (OLMO3_7B, False), (COMMAND_R, True), (COMMAND_A, True), (GRANITE_8B, False),
    (SEED_OSS_36B, False), (EXAONE4_1_2B, False), (SMOLLM3_3B, True), (APERTUS_8B, False), (ERNIE_0_3B, True),
    (HUNYUAN_7B, False),
], ids=["glm4", "olmo2", "olmo3", "cohere", "cohere2", "granite", "seed_oss", "exaone4", "smollm3", "apertus",
        "ernie4_5", "hunyuan_v1_dense"])
def test_embeddings_tie_by_the_config_class_default(tmp_path: Path, cfg: dict[str, Any], tied: bool) -> None:
    """Without tie_word_embeddings, each family's transformers config class decides (CohereConfig, Cohere2Config,
    SmolLM3Config and Ernie4_5Config tie; the others do not)."""
    assert read_config(tmp_path, without(cfg, "tie_word_embeddings")).tied_embeddings is tied


def test_glm4_norms_and_biases(tmp_path: Path) -> None:
    arch = read_config(tmp_path, GLM4_9B)
    assert (arch.norms_per_layer, arch.qkv_bias, arch.attn_out_bias, arch.tied_embeddings) == (4, True, False, False)
    bare = read_config(tmp_path, {**without(without(GLM4_9B, "attention_bias"), "head_dim"), "hidden_size": 2048})
    assert bare.qkv_bias and bare.dim_per_head == 128  # Glm4Config: attention_bias true, head_dim 128 by default
    assert not read_config(tmp_path, {**GLM4_9B, "attention_bias": False}).qkv_bias


def test_olmo_counts_q_and_k_norms_per_head_and_says_so(tmp_path: Path) -> None:
    arch = read_config(tmp_path, OLMO2_7B)
    assert arch.qk_norm and arch.norms_per_layer == 2 and not arch.qkv_bias
    assert any("7,936 parameters more a layer" in note for note in arch.notes)
    biased = read_config(tmp_path, {**OLMO2_7B, "attention_bias": True})
    assert count_params(biased).total - count_params(arch).total == 32 * (3 * 4096 + 4096)


def test_olmo3_reads_its_sliding_layers(tmp_path: Path) -> None:
    arch = read_config(tmp_path, OLMO3_7B)
    assert arch.window_counts == {4096: 24, 0: 8} and arch.attention_windows[:4] == (4096, 4096, 4096, 0)
    assert arch.rope_attention_factor == pytest.approx(1.2079, abs=1e-4)
    # Olmo3Config's defaults where the file leaves the keys out: every 4th layer full, a 4,096-token window
    assert read_config(tmp_path, without(OLMO3_7B, "layer_types")).attention_windows == arch.attention_windows
    bare = without(without(OLMO3_7B, "layer_types"), "sliding_window")
    assert read_config(tmp_path, bare).attention_windows == arch.attention_windows
    assert read_config(tmp_path, {**OLMO3_7B, "sliding_window": None}).window_counts == {0: 32}


def test_command_layer_is_one_layernorm_without_bias(tmp_path: Path) -> None:
    arch = read_config(tmp_path, COMMAND_R)
    assert (arch.norm, arch.norm_bias, arch.norms_per_layer, arch.tied_embeddings) == ("layernorm", False, 1, True)
    assert not arch.qk_norm and any("parallel attention and MLP" in note for note in arch.notes)
    normed = read_config(tmp_path, {**COMMAND_R, "use_qk_norm": True})
    assert normed.qk_norm and any("16,128 parameters more a layer" in n for n in normed.notes)  # (64 + 64 - 2) x 128


def test_cohere2_windows_and_head_dim(tmp_path: Path) -> None:
    arch = read_config(tmp_path, COMMAND_A)
    assert arch.window_counts == {4096: 48, 0: 16} and arch.kv_heads == 8
    assert read_config(tmp_path, without(COMMAND_A, "head_dim")).dim_per_head == 128  # 12288 / 96
    unwritten = without(without(COMMAND_A, "sliding_window"), "layer_types")  # Cohere2Config's defaults
    assert read_config(tmp_path, unwritten).attention_windows == arch.attention_windows


def test_granite_multipliers_carry_no_parameters(tmp_path: Path) -> None:
    plain = {k: v for k, v in GRANITE_8B.items() if not k.endswith(("multiplier", "scaling"))}
    assert count_params(read_config(tmp_path, plain)).total == count_params(read_config(tmp_path, GRANITE_8B)).total
    biased = read_config(tmp_path, {**GRANITE_8B, "attention_bias": True, "mlp_bias": True})
    assert biased.qkv_bias and biased.attn_out_bias and biased.mlp_bias


def test_seed_oss_bias_keys(tmp_path: Path) -> None:
    arch = read_config(tmp_path, SEED_OSS_36B)
    assert (arch.qkv_bias, arch.attn_out_bias, arch.mlp_bias, arch.dim_per_head) == (True, False, False, 128)
    flipped = read_config(tmp_path, {**SEED_OSS_36B, "attention_bias": False, "attention_out_bias": True,
                                     "mlp_bias": True})
    assert (flipped.qkv_bias, flipped.attn_out_bias, flipped.mlp_bias) == (False, True, True)
    bare = read_config(tmp_path, without(without(without(SEED_OSS_36B, "attention_bias"), "attention_out_bias"),
                                    "mlp_bias"))
    assert (bare.qkv_bias, bare.attn_out_bias, bare.mlp_bias) == (True, False, False)  # SeedOssConfig's defaults
    assert read_config(tmp_path, {**SEED_OSS_36B, "head_dim": None}).dim_per_head == 64  # null: 5120 / 80


def test_exaone4_has_no_bias_and_per_head_norms(tmp_path: Path) -> None:
    arch = read_config(tmp_path, EXAONE4_1_2B)
    assert arch.qk_norm and not arch.qkv_bias and arch.dim_per_head == 64 and arch.window_counts == {0: 30}
    assert not read_config(tmp_path, {**EXAONE4_1_2B, "attention_bias": True}).qkv_bias  # the modeling file has none
    windowed = read_config(tmp_path, {**EXAONE4_1_2B, "sliding_window": 4096, "layer_types": OLMO3_LAYERS * 7
                                + ["sliding_attention", "full_attention"]})
    assert windowed.window_counts == {4096: 22, 0: 8}
    lettered = read_config(tmp_path, {**EXAONE4_1_2B, "sliding_window": 4096})  # 'LLLG': three local layers, one global
    assert lettered.attention_windows[:8] == (4096, 4096, 4096, 0) * 2 and lettered.window_counts == {4096: 23, 0: 7}
    with pytest.raises(InvalidSpec, match=r"letters L \(local\) and G \(global\), got 'LLXG'"):
        read_config(tmp_path, {**EXAONE4_1_2B, "sliding_window": 4096, "sliding_window_pattern": "LLXG"})


def test_smollm3_counts_its_layers_without_rope(tmp_path: Path) -> None:
    arch = read_config(tmp_path, SMOLLM3_3B)
    assert arch.tied_embeddings and any("9 of 36 layers without rotary embedding" in n for n in arch.notes)
    by_interval = read_config(tmp_path, {**without(SMOLLM3_3B, "no_rope_layers"), "no_rope_layer_interval": 6})
    assert any("6 of 36 layers" in n for n in by_interval.notes)


def test_apertus_mlp_is_two_matrices(tmp_path: Path) -> None:
    arch = read_config(tmp_path, APERTUS_8B)
    assert arch.mlp == "plain" and arch.qk_norm and any("xIELU" in note for note in arch.notes)
    assert not any("xIELU" in note for note in read_config(tmp_path, {**APERTUS_8B, "hidden_act": "gelu"}).notes)


def test_ernie_use_bias_and_head_dim(tmp_path: Path) -> None:
    arch = read_config(tmp_path, ERNIE_0_3B)
    assert arch.tied_embeddings and not arch.mlp_bias and arch.dim_per_head == 128
    biased = read_config(tmp_path, {**ERNIE_0_3B, "use_bias": True})
    assert biased.qkv_bias and biased.attn_out_bias and biased.mlp_bias
    assert read_config(tmp_path, without(ERNIE_0_3B, "head_dim")).dim_per_head == 128  # Ernie4_5Config's default
    assert read_config(tmp_path, {**ERNIE_0_3B, "head_dim": None}).dim_per_head == 64  # null: 1024 / 16


def test_hunyuan_dense_norms_q_and_k(tmp_path: Path) -> None:
    arch = read_config(tmp_path, HUNYUAN_7B)
    assert arch.qk_norm and arch.tied_embeddings and arch.kv_heads == 8 and not arch.mlp_bias


@pytest.mark.parametrize(("cfg", "expected"), [
    (without(GLM4_9B, "num_hidden_layers"), "missing key 'num_hidden_layers'"),
    ({**OLMO2_7B, "attention_bias": "no"}, "'attention_bias' must be true or false"),
    ({**OLMO3_7B, "num_key_value_heads": 7.5}, "'num_key_value_heads' must be a whole number"),
    ({**COMMAND_R, "use_qk_norm": "yes"}, "'use_qk_norm' must be true or false"),
    (without(COMMAND_A, "intermediate_size"), "missing key 'intermediate_size'"),
    ({**GRANITE_8B, "embedding_multiplier": "12"}, "'embedding_multiplier' must be a finite number"),
    ({**SEED_OSS_36B, "attention_out_bias": 1}, "'attention_out_bias' must be true or false"),
    (without(EXAONE4_1_2B, "vocab_size"), "missing key 'vocab_size'"),
    ({**SMOLLM3_3B, "no_rope_layers": "every 4th"}, "'no_rope_layers' must be a list"),
    ({**APERTUS_8B, "hidden_size": "4096"}, "'hidden_size' must be a whole number"),
    ({**ERNIE_0_3B, "use_bias": "false"}, "'use_bias' must be true or false"),
    (without(HUNYUAN_7B, "num_attention_heads"), "missing key 'num_attention_heads'"),
], ids=["glm4", "olmo2", "olmo3", "cohere", "cohere2", "granite", "seed_oss", "exaone4", "smollm3", "apertus",
        "ernie4_5", "hunyuan_v1_dense"])
def test_a_bad_key_of_each_family_is_one_line(tmp_path: Path, cfg: dict[str, Any], expected: str) -> None:
    assert expected in config_error(tmp_path, cfg)


QK_GAP = {"olmo2": lambda c: (c["num_attention_heads"] + c["num_key_value_heads"] - 2) * 64,
          "olmo3": lambda c: (c["num_attention_heads"] + c["num_key_value_heads"] - 2) * 64,
          "cohere": lambda c: (c["num_attention_heads"] + c["num_key_value_heads"] - 2) * 64 if c.get("use_qk_norm")
          else 0,
          "apertus": lambda c: 2 if c.get("hidden_act", "xielu") == "xielu" else 0}
"""What transformers holds a layer beyond rigplan's count (the notes' q/k norms over every head, xIELU's scalars), at
the small shape below (head_dim 512 / 8 = 64)."""


@pytest.mark.parametrize(("config_class", "cfg"), [
    ("Glm4Config", {**GLM4_9B, "head_dim": 64}),
    ("Olmo2Config", {**OLMO2_7B, "attention_bias": True}),
    ("Olmo3Config", OLMO3_7B),
    ("CohereConfig", {**COMMAND_R, "use_qk_norm": True, "attention_bias": True}),
    ("Cohere2Config", {**COMMAND_A, "tie_word_embeddings": False}),
    ("GraniteConfig", {**GRANITE_8B, "mlp_bias": True}),
    ("SeedOssConfig", {**SEED_OSS_36B, "attention_out_bias": True, "head_dim": 32}),
    ("Exaone4Config", {**EXAONE4_1_2B, "sliding_window": 64, "layer_types": OLMO3_LAYERS * 2}),
    ("SmolLM3Config", {**SMOLLM3_3B, "attention_bias": True, "head_dim": 64, "no_rope_layers": [1, 1, 1, 0] * 2}),
    ("ApertusConfig", APERTUS_8B),
    ("Ernie4_5Config", {**ERNIE_0_3B, "use_bias": True}),
    ("HunYuanDenseV1Config", {**HUNYUAN_7B, "head_dim": 64, "attention_bias": True}),
], ids=["glm4", "olmo2", "olmo3", "cohere", "cohere2", "granite", "seed_oss", "exaone4", "smollm3", "apertus",
        "ernie4_5", "hunyuan_v1_dense"])
def test_counts_equal_transformers_modules(tmp_path: Path, config_class: str, cfg: dict[str, Any]) -> None:
    """transformers builds the model on the meta device from the same config cut to 8 layers, 512 wide (8 heads, 2 kv
    heads, MLP 1024) over a 1024-token vocabulary and counts its parameters; rigplan's count of config.json is the same
    but for what its notes say it leaves out (QK_GAP)."""
    pytest.importorskip("torch", reason="torch is not installed: pip install 'rigplan[frameworks]'")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: pip install "
                                       "'rigplan[frameworks]'")
    if not hasattr(transformers, config_class):
        pytest.skip(f"this transformers has no {config_class}")
    import torch

    small = {**cfg, "num_hidden_layers": 8, "vocab_size": 1024, "hidden_size": 512, "intermediate_size": 1024,
             "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 16384}
    if "layer_types" in small:
        small["layer_types"] = (small["layer_types"] * 8)[:8]
    keys = {k: v for k, v in small.items() if k not in ("model_type", "architectures")}
    keys.update(pad_token_id=None, bos_token_id=None, eos_token_id=None)
    config = getattr(transformers, config_class)(**keys)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    counted = sum(p.numel() for p in model.parameters())
    gap = QK_GAP.get(cfg["model_type"], lambda c: 0)(small) * 8
    assert count_params(read_config(tmp_path, small)).total == counted - gap
