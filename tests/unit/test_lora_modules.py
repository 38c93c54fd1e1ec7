"""The modules LoRA's targets name (params.attention_linears, dense_mlp_linears) and the MLP targets peft cannot
reach on transformers 5's converted MoE model types (peft_experts.module_mlp_targets), with the peft arguments
`rigplan export --framework hf-trainer` writes for them. Exact counts against peft: tests/validation/
test_hf_lora_targets.py."""

from __future__ import annotations

from typing import Any

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import peft_experts
from rigplan.estimate.params import attention_linears
from rigplan.estimate.states import lora_layer_params
from rigplan.export.hf_trainer import export_hf_trainer, hf_training_file
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup

MLP = ("gate", "up", "down")


def _model(model_id: str) -> Architecture:
    return load_catalog().model(model_id).to_domain()


def _lora(targets: tuple[str, ...], rank: int = 16) -> Job:
    return Job(kernels="hf", method="lora", lora_rank=rank, lora_targets=targets)


def _setup(model: str, targets: str) -> Any:
    return build_setup(EstimateRequest(model=model, method="lora", lora_targets=targets, seq=2048, framework="hf"))


def test_mla_query_path_and_shared_latent_projections() -> None:
    """DeepSeek-V3: 'q' adapts q_a_proj (h -> 1,536) and q_b_proj (1,536 -> 128 x 192); 'k' and 'v' each adapt the
    shared kv_a_proj_with_mqa (h -> 512 + 64) and kv_b_proj (512 -> 128 x 256), once when both are given."""
    arch, r, h = _model("deepseek-v3"), 16, 7168
    assert [lin.module for lin in attention_linears(arch)] == ["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa",
                                                               "kv_b_proj", "o_proj"]
    query = r * ((h + 1536) + (1536 + 128 * 192))
    latent = r * ((h + 576) + (512 + 128 * 256))
    assert lora_layer_params(arch, _lora(("q",)), moe_layer=False)[0] == query
    assert lora_layer_params(arch, _lora(("k",)), moe_layer=False)[0] == latent
    assert lora_layer_params(arch, _lora(("k", "v")), moe_layer=False)[0] == latent
    no_query_rank = _model("deepseek-v2-lite")
    assert attention_linears(no_query_rank)[0].module == "q_proj"


def test_fused_projections_take_one_adapter_each() -> None:
    """Phi-3: one adapter on qkv_proj for any of q, k, v, one on gate_up_proj for gate or up."""
    arch, r = _model("phi-3-mini"), 16
    h, f = arch.hidden, arch.ffn
    qkv = r * (h + arch.num_heads * arch.dim_per_head + 2 * arch.kv_heads * arch.dim_per_head)
    assert lora_layer_params(arch, _lora(("q", "v")), moe_layer=False)[0] == qkv
    assert lora_layer_params(arch, _lora(("gate", "up")), moe_layer=False)[0] == r * (h + 2 * f)
    assert hf_training_file(_setup("phi-3-mini", "q,k,v,o,gate,up,down"))["peft"]["target_modules"] == [
        "qkv_proj", "o_proj", "gate_up_proj", "down_proj"]


def test_converted_moe_types_keep_mlp_targets_off_the_dense_mlps_and_shared_experts() -> None:
    """DeepSeek-V3 on transformers 5: peft rewrites MLP module names onto the routed experts, so rigplan counts no
    adapter on its three dense layers' MLPs or its shared expert, and the export names the experts' parameters
    only; gpt-oss is not converted (its own MoE module), so nothing changes there."""
    deepseek = _model("deepseek-v3")
    every = ("q", "k", "v", "o", *MLP)
    assert peft_experts.module_mlp_targets(deepseek, _lora(every)) == ("q", "k", "v", "o")
    attention_only = lora_layer_params(deepseek, _lora(("q", "k", "v", "o")), moe_layer=False)[0]
    assert lora_layer_params(deepseek, _lora(every), moe_layer=False)[0] == attention_only
    own, routed = lora_layer_params(deepseek, _lora(every), moe_layer=True)
    assert own == attention_only and routed > 0
    setup = _setup("deepseek-v3", "q,k,v,o,gate,up,down")
    peft_arguments = hf_training_file(setup)["peft"]
    assert not {"gate_proj", "up_proj", "down_proj"} & set(peft_arguments["target_modules"])
    assert peft_arguments["target_parameters"] == ["experts.gate_up_proj", "experts.down_proj"]
    assert any("peft issue #3711" in note for note in export_hf_trainer(setup).notes)
    gpt_oss = _model("gpt-oss-20b")
    assert gpt_oss.family == "gpt_oss"
    assert peft_experts.module_mlp_targets(gpt_oss, _lora(every)) == every


def test_eager_experts_keep_module_adapters() -> None:
    """--experts-implementation eager is transformers 4's per-expert nn.Linear layout, which peft does not rewrite."""
    arch = _model("qwen3-30b-a3b")
    job = Job(kernels="hf", method="lora", lora_rank=16, lora_targets=MLP, experts_implementation="eager")
    assert peft_experts.module_mlp_targets(arch, job) == MLP


@pytest.mark.parametrize("model", ["deepseek-v3", "qwen3-30b-a3b", "glm-4.5", "kimi-k2"])
def test_catalog_models_carry_their_model_type(model: str) -> None:
    record = load_catalog().model(model)
    assert _model(model).family == record.family
