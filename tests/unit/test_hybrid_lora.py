"""LoRA on hybrid models (estimate.linear_attention.lora_linears): the targets each mixer takes, what resolve keeps
and refuses, the exported peft target modules, and the config.json forms of the dense Qwen3.5 and of Nemotron-H as
transformers 5 writes it. Exact counts against peft are in tests/validation/test_hf_hybrid_lora.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec
from rigplan.estimate import linear_attention
from rigplan.estimate.flops import adapter_forward_flop
from rigplan.estimate.params import count_params
from rigplan.estimate.states import lora_layer_params
from rigplan.export.hf_trainer import hf_training_file
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup

QWEN35_27B_TEXT = {  # the text_config of Qwen/Qwen3.5-27B's config.json (the keys that shape the model)
    "model_type": "qwen3_5_text", "attention_bias": False, "attn_output_gate": True, "full_attention_interval": 4,
    "head_dim": 256, "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 17408,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 48,
    "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mtp_num_hidden_layers": 1,
    "num_attention_heads": 24, "num_hidden_layers": 64, "num_key_value_heads": 4, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False, "vocab_size": 248320,
}
QWEN35_27B = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
              "tie_word_embeddings": False, "text_config": QWEN35_27B_TEXT}


def _model(model_id: str) -> Architecture:
    return load_catalog().model(model_id).to_domain()


def _setup(model: str, targets: str, framework: str | None = "hf", method: str = "lora") -> Any:
    extra = {"framework": framework} if framework else {}
    return build_setup(EstimateRequest(model=model, method=method, lora_targets=targets, seq=2048, **extra))


def test_dense_qwen3_5_config_reads_as_the_catalog_model(tmp_path: Path) -> None:
    """Qwen3.5-27B's wrapper config: its text model, four input projections, 26,895,998,464 parameters (transformers'
    Qwen3_5ForCausalLM built from the shape), the same as the catalog record."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN35_27B), encoding="utf-8")
    arch = architecture_from_hf_config(path)
    assert arch.linear_attention is not None and arch.linear_attention.input_projections == 4
    assert arch.num_linear_attention_layers == 48 and arch.moe is None and not arch.tied_embeddings
    assert count_params(arch).total == count_params(_model("qwen3.5-27b")).total == 26_895_998_464
    assert any("1 multi-token-prediction layer(s) not counted or trained" in note for note in arch.notes)


def test_transformers_5_nemotron_h_config_reads_as_the_pattern(tmp_path: Path) -> None:
    """transformers 5's NemotronHConfig saves its blocks as layers_block_type (linear_attention for Mamba-2,
    full_attention for attention) without num_hidden_layers: read as hybrid_override_pattern."""
    base = {"model_type": "nemotron_h", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 64, "mamba_num_heads": 8, "mamba_head_dim": 32, "n_groups": 2,
            "ssm_state_size": 16, "chunk_size": 32, "vocab_size": 512, "max_position_embeddings": 4096}
    listed = {**base, "layers_block_type": ["linear_attention", "mlp", "linear_attention", "full_attention",
                                            "linear_attention", "mlp"]}
    pattern = {**base, "hybrid_override_pattern": "M-M*M-", "num_hidden_layers": 6}
    read = []
    for name, cfg in (("listed", listed), ("pattern", pattern)):
        path = tmp_path / name / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(cfg), encoding="utf-8")
        read.append(architecture_from_hf_config(path))
    assert read[0].num_layers == read[1].num_layers == 4
    assert count_params(read[0]).total == count_params(read[1]).total


def test_mixer_targets_by_kind() -> None:
    """in_proj: transformers' input projection modules (Qwen3.5 four, Qwen3-Next two, Megatron-Core one, Mamba-2
    one); out_proj: v -> h; Kimi Delta Attention answers to q, k, v and o."""
    qwen35, next_, nano, kimi = (_model(m) for m in ("qwen3.5-35b-a3b", "qwen3-next-80b-a3b",
                                                     "nemotron-3-nano-30b-a3b", "kimi-linear-48b-a3b"))
    every = ("q", "k", "v", "o", "in_proj", "out_proj")
    assert len(linear_attention.lora_linears(qwen35, every, True)[0]) == 4
    assert len(linear_attention.lora_linears(next_, every, True)[0]) == 2
    assert len(linear_attention.lora_linears(next_, every, False)[0]) == 1
    column, row = linear_attention.lora_linears(nano, every, True)
    assert len(column) == 1 and len(row) == 1  # out_proj: resolve drops it where peft refuses it
    la = next_.linear_attention
    assert la is not None
    assert sum(d_out for _, d_out in linear_attention.lora_linears(next_, every, True)[0]) == sum(
        d_out for _, d_out in linear_attention.lora_linears(next_, every, False)[0]) == (
        2 * la.key_dim + 2 * la.value_dim + 2 * la.num_value_heads)
    kimi_column, kimi_row = linear_attention.lora_linears(kimi, ("q", "o", "in_proj", "out_proj"), True)
    assert len(kimi_column) == 1 and len(kimi_row) == 1


def test_attention_targets_adapt_only_the_full_attention_share() -> None:
    """q,k,v,o on Qwen3.5-27B: the adapters of a gated full-attention layer (q_proj 2·a·d wide), a quarter of the
    layers; the mixer targets add the Gated DeltaNet layers' on the other three quarters."""
    arch = _model("qwen3.5-27b")
    r, h, q_w, kv_w = 16, 5120, 24 * 256, 4 * 256
    attention_layer = r * ((h + 2 * q_w) + 2 * (h + kv_w) + (q_w + h))
    job = Job(method="lora", lora_rank=r, lora_targets=("q", "k", "v", "o"))
    assert lora_layer_params(arch, job, moe_layer=False)[0] == pytest.approx(attention_layer / 4)
    la = arch.linear_attention
    assert la is not None
    mixer_layer = r * (4 * h + 2 * la.key_dim + 2 * la.value_dim + 2 * la.num_value_heads) + r * (la.value_dim + h)
    both = Job(method="lora", lora_rank=r, lora_targets=("q", "k", "v", "o", "in_proj", "out_proj"), kernels="hf")
    assert lora_layer_params(arch, both, moe_layer=False)[0] == pytest.approx(attention_layer / 4
                                                                              + 3 * mixer_layer / 4)
    flop = adapter_forward_flop(arch, seq_len=1, micro_batch=1, rank=r, targets=both.lora_targets, moe=False)
    assert flop == pytest.approx(2 * (attention_layer / 4 + 3 * mixer_layer / 4))


def test_mixer_targets_are_dropped_where_nothing_answers_to_them() -> None:
    setup = _setup("llama-3.1-8b", "all")
    assert setup.job.lora_targets == ("q", "k", "v", "o", "gate", "up", "down")
    assert _setup("qwen3.5-27b", "all").job.lora_targets[-2:] == ("in_proj", "out_proj")
    with pytest.raises(InvalidSpec, match=r"which llama-3\.1-8b does not have"):
        _setup("llama-3.1-8b", "in_proj,out_proj")
    with pytest.raises(InvalidSpec, match="which kimi-linear-48b-a3b does not have"):
        _setup("kimi-linear-48b-a3b", "out_proj")


def test_peft_refused_mamba_out_proj_is_dropped_and_said() -> None:
    hf = _setup("nemotron-nano-9b-v2", "all")
    assert "out_proj" not in hf.job.lora_targets and "in_proj" in hf.job.lora_targets
    assert any("peft refuses it on Mamba models" in line for line in hf.assumptions)
    assert "out_proj" in _setup("nemotron-nano-9b-v2", "all", framework="megatron").job.lora_targets
    assert "out_proj" not in _setup("nemotron-nano-9b-v2", "all", framework="unsloth").job.lora_targets
    assert "out_proj" in _setup("nemotron-3-nano-30b-a3b", "all", framework="automodel").job.lora_targets
    with pytest.raises(InvalidSpec, match="peft refuses LoRA on its out_proj"):
        _setup("nemotron-nano-9b-v2", "out_proj")


@pytest.mark.parametrize(("model", "expected"), [
    ("qwen3.5-27b", ["q_proj", "v_proj", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"]),
    ("qwen3-next-80b-a3b", ["q_proj", "v_proj", "in_proj_qkvz", "in_proj_ba", "out_proj"]),
    ("nemotron-nano-9b-v2", ["q_proj", "v_proj", "in_proj"]),
    ("kimi-linear-48b-a3b", ["q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "v_proj"]),  # MLA's, then KDA's v_proj
])
def test_exported_target_modules_name_the_mixers(model: str, expected: list[str]) -> None:
    setup = _setup(model, "q,v,in_proj,out_proj", framework="megatron")
    assert hf_training_file(setup)["peft"]["target_modules"] == expected
