"""LoRA on a transformers 5 MoE layer, measured exactly on CPU: what autograd saves, and what peft trains.

A tiny random-weight Qwen3-MoE (transformers 5 keeps its routed experts as 3-D gate_up_proj and down_proj
parameters, run by grouped_mm) is trained three ways: full training, peft module LoRA on q and v (frozen experts),
and the same with peft's parameter adapters on the experts (target_parameters, estimate.peft_experts). The bytes
each decoder layer saves (rigplan.measure.saved_tensors) must match rigplan's per-layer count within 1.5%, the
adapters' own share to the byte, and peft's trainable parameters rigplan's adapter count exactly.

Needs torch, transformers and peft (pip install -e '.[frameworks]'); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate import lora_activations, peft_experts
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.states import stage_lora_params
from rigplan.measure.saved_tensors import saved_bytes_per_layer

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -e '.[frameworks]')")
peft = pytest.importorskip("peft", reason="peft is not installed (pip install -e '.[frameworks]')")

if not hasattr(transformers, "Qwen3MoeConfig") or not hasattr(peft.LoraConfig(), "target_parameters"):
    pytest.skip("needs transformers with Qwen3-MoE and peft with target_parameters (peft >= 0.17)",
                allow_module_level=True)

BATCH, SEQ, RANK = 2, 160, 8
TARGETS = {"full": None, "module": ("q", "v"), "experts": ("q", "v", "gate", "up", "down")}


def lora_config(targets: tuple[str, ...]) -> Any:
    expert = {"target_parameters": ["experts.gate_up_proj", "experts.down_proj"]} if "down" in targets else {}
    return peft.LoraConfig(r=RANK, lora_alpha=2 * RANK, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                           **expert)


@pytest.fixture(scope="module")
def moe(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    config = transformers.Qwen3MoeConfig(
        num_hidden_layers=3, vocab_size=512, hidden_size=256, intermediate_size=704, moe_intermediate_size=96,
        num_experts=16, num_experts_per_tok=4, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        max_position_embeddings=4096, use_cache=False, attn_implementation="sdpa", mlp_only_layers=[],
        decoder_sparse_step=1)
    data = config.to_dict()  # as transformers 5 saves it: the expert count under num_local_experts
    data["model_type"] = "qwen3_moe"
    path = tmp_path_factory.mktemp("qwen3_moe") / "config.json"
    path.write_text(json.dumps(data, default=str))
    return config, path


def build(config: Any, targets: tuple[str, ...] | None) -> Any:
    torch.manual_seed(0)
    model = transformers.Qwen3MoeForCausalLM(config).to(torch.bfloat16)
    if targets is not None:
        model = peft.get_peft_model(model, lora_config(targets))
    model.train()
    return model


def measured_layer(config: Any, targets: tuple[str, ...] | None) -> int:
    model = build(config, targets)
    inner = model.base_model.model if targets is not None else model
    per_layer = saved_bytes_per_layer(inner, torch.randint(0, 512, (BATCH, SEQ)))
    assert per_layer[1] == per_layer[2]
    return int(per_layer[1])  # the first layer's input needs no gradient: it saves less (left out)


def predicted_layer(path: Path, targets: tuple[str, ...] | None, monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(lora_activations, "PEFT_LORA_DROPOUT", False)  # the measured adapters run at dropout 0
    arch = architecture_from_hf_config(path)
    lora: dict[str, Any] = {} if targets is None else {"method": "lora", "lora_rank": RANK, "lora_targets": targets}
    job = Job(precision="bf16-true", seq_len=SEQ, micro_batch=BATCH, kernels="hf", **lora)
    return float(layer_activation_bytes(arch, job, Layout(), moe_layer=True).saved_bytes)


@pytest.mark.parametrize("case", sorted(TARGETS))
def test_moe_layer_saved_tensors_match(case: str, moe: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    config, path = moe
    measured = measured_layer(config, TARGETS[case])
    assert predicted_layer(path, TARGETS[case], monkeypatch) == pytest.approx(measured, rel=0.015)


def test_expert_adapters_add_exactly_what_rigplan_counts(moe: tuple[Any, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The parameter adapters' own share, to the byte: the rebuilt expert weights W', the factors' bf16 copies, and
    the routed copies' inputs the wrapped weights' gradients need (frozen experts keep none)."""
    config, path = moe
    added = measured_layer(config, TARGETS["experts"]) - measured_layer(config, TARGETS["module"])
    predicted = (predicted_layer(path, TARGETS["experts"], monkeypatch)
                 - predicted_layer(path, TARGETS["module"], monkeypatch))
    assert predicted == pytest.approx(added, rel=1e-9)
    arch = architecture_from_hf_config(path)
    rebuilt = 16 * (256 * 2 * 96 + 96 * 256) * 2  # E x (gate_up + down) elements, bf16
    assert float(peft_experts.wrapped_elements(arch, Job(kernels="hf", method="lora", lora_targets=TARGETS[
        "experts"]))) * 2 == rebuilt
    assert added > rebuilt


@pytest.mark.parametrize("case", ["module", "experts"])
def test_trainable_adapters_match_peft(case: str, moe: tuple[Any, Path]) -> None:
    """peft's trainable parameters and rigplan's count: module adapters on q and v, and one adapter per expert and
    wrapped parameter (gate and up share the fused gate_up_proj's)."""
    config, path = moe
    model = build(config, TARGETS[case])
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    arch = architecture_from_hf_config(path)
    job = Job(kernels="hf", method="lora", lora_rank=RANK, lora_targets=TARGETS[case])
    own, routed = stage_lora_params(arch, job, layers=arch.num_layers, dense_layers=arch.num_dense_layers)
    assert own + routed == trainable
    wrapped = [m for m in model.modules() if type(m).__name__ == "ParamWrapper"]
    assert len(wrapped) == (2 * 3 if case == "experts" else 0)


def test_exported_peft_config_wraps_the_experts(moe: tuple[Any, Path]) -> None:
    """rigplan export --framework hf-trainer's peft arguments, applied to the model: both expert parameters of
    every layer wrapped, and a training step runs."""
    from rigplan.export.hf_trainer import hf_training_file
    from rigplan.flow.request import EstimateRequest
    from rigplan.flow.resolve import build_setup

    config, path = moe
    request = EstimateRequest(model=str(path), gpu="h100-sxm", method="lora", lora_targets=["q", "v", "gate", "up",
                                                                                          "down"], seq=SEQ,
                              micro_batch=BATCH, lora_rank=RANK)
    arguments = hf_training_file(build_setup(request))["peft"]
    assert arguments["target_parameters"] == ["experts.gate_up_proj", "experts.down_proj"]
    torch.manual_seed(0)
    model = peft.get_peft_model(transformers.Qwen3MoeForCausalLM(config).to(torch.bfloat16),
                                peft.LoraConfig(**arguments))
    wrapped = {name.rsplit(".", 1)[0] for name, m in model.named_modules() if type(m).__name__ == "ParamWrapper"}
    assert len([n for n in wrapped if n.endswith("mlp.experts")]) == 3
    ids = torch.randint(0, 512, (BATCH, SEQ))
    model(input_ids=ids, labels=ids).loss.backward()
    grads = [p.grad for n, p in model.named_parameters() if p.requires_grad and "experts" in n]
    assert grads and all(g is not None for g in grads)
