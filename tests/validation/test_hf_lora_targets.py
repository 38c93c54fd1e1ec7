"""LoRA's targets as transformers names the modules, checked against peft on CPU: multi-head latent attention and
fused projections.

Tiny random-weight DeepSeek-V3 (MLA with a query rank: q_a_proj and q_b_proj), DeepSeek-V2 (MLA without one: q_proj)
and Phi-3 (fused qkv_proj and gate_up_proj) models from transformers are given peft LoRA with the target modules
`rigplan export --framework hf-trainer` writes; peft's trainable parameters must equal rigplan's adapter count
exactly (states.stage_lora_params), and on the MLA models what LoRA saves less than full training must equal
rigplan's count to the byte (lora_activations.mla_token_bytes; the MoE layers' fp32 router input,
token_activation.hf_fp32_router_input_bytes).

Needs torch, transformers and peft (pip install -e '.[frameworks]'); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.domain.job import Job
from rigplan.estimate.states import stage_lora_params
from rigplan.measure.saved_tensors import saved_bytes_in_layers

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -e '.[frameworks]')")
peft = pytest.importorskip("peft", reason="peft is not installed (pip install -e '.[frameworks]')")

RANK, VOCAB = 8, 512
MLA = {"vocab_size": VOCAB, "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 64,
       "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32, "max_position_embeddings": 4096,
       "use_cache": False}
MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM",
                    {**MLA, "q_lora_rank": 96, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 1,
                     "topk_group": 1, "first_k_dense_replace": 1, "num_nextn_predict_layers": 0}),
    "deepseek_v2": ("DeepseekV2Config", "DeepseekV2ForCausalLM",
                    {**MLA, "q_lora_rank": None, "n_routed_experts": 8, "num_experts_per_tok": 2,
                     "first_k_dense_replace": 1}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM",
             {"vocab_size": VOCAB, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
              "use_cache": False, "pad_token_id": 0}),
}
TARGETS = [("q", "v"), ("k",), ("q", "k", "v", "o"), ("q", "k", "v", "o", "gate", "up", "down")]


def _config(name: str, tmp: Path) -> tuple[Any, Path]:
    config_class, _, fields = MODELS[name]
    config = getattr(transformers, config_class)(**fields)
    path = tmp / name / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config.to_dict(), default=str))
    return config, path


def peft_arguments(path: Path, targets: tuple[str, ...]) -> dict[str, Any]:
    """What rigplan export --framework hf-trainer writes for peft.LoraConfig."""
    from rigplan.export.hf_trainer import hf_training_file
    from rigplan.flow.request import EstimateRequest
    from rigplan.flow.resolve import build_setup

    request = EstimateRequest(model=str(path), gpu="h100-sxm", method="lora", lora_targets=list(targets), seq=256,
                              lora_rank=RANK, framework="hf")
    arguments: dict[str, Any] = hf_training_file(build_setup(request))["peft"]
    return arguments


@pytest.mark.parametrize("targets", TARGETS, ids=[",".join(t) for t in TARGETS])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_trainable_adapters_match_peft(name: str, targets: tuple[str, ...], tmp_path: Path) -> None:
    config, path = _config(name, tmp_path)
    arguments = peft_arguments(path, targets)
    if name != "phi3" and {"gate", "up", "down"} & set(targets):
        assert arguments.get("target_parameters")  # the routed experts' 3-D parameters, estimate.peft_experts
    torch.manual_seed(0)
    model = getattr(transformers, MODELS[name][1])(config).to(torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(**arguments))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    arch = architecture_from_hf_config(path)
    job = Job(kernels="hf", method="lora", lora_rank=RANK, lora_targets=targets)
    own, routed = stage_lora_params(arch, job, layers=arch.num_layers, dense_layers=arch.num_dense_layers)
    assert own + routed == pytest.approx(trainable, rel=1e-12)


def saved_in_layers(model: Any) -> int:
    """Bytes of the distinct storages the decoder layers save in one forward (saved_bytes_in_layers)."""
    inner = model.base_model.model if hasattr(model, "peft_config") else model
    return saved_bytes_in_layers(model, inner.model.layers, torch.randint(0, VOCAB, (2, 64)))


@pytest.mark.parametrize("targets", [("q", "k", "v", "o"), ("q", "v")], ids=["q,k,v,o", "q,v"])
@pytest.mark.parametrize("dense", [True, False], ids=["dense", "moe"])
@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v2"])
def test_mla_lora_saves_what_rigplan_counts_less(name: str, dense: bool, targets: tuple[str, ...],
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What peft LoRA saves less than full training in MLA layers, to the byte (the attention kernel's own tensors,
    which CPU's math SDPA keeps in fp32, are alike in both and cancel): frozen norms, linear inputs and latent
    norms keep nothing, the adapters their fp32 inputs and lora_A's outputs (estimate.lora_activations.
    mla_token_bytes); the MoE layers' frozen experts as peft_lora_token_bytes counts them."""
    from rigplan.domain.layout import Layout
    from rigplan.estimate import lora_activations
    from rigplan.estimate.activations import layer_activation_bytes

    config_class, model_class, fields = MODELS[name]
    layers = fields["num_hidden_layers"]
    fields = {**fields, "first_k_dense_replace": layers if dense else 1, "attn_implementation": "sdpa"}
    config = getattr(transformers, config_class)(**fields)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config.to_dict(), default=str))

    def measured(lora: bool) -> int:
        torch.manual_seed(0)
        model = getattr(transformers, model_class)(config).to(torch.bfloat16)
        if lora:
            model = peft.get_peft_model(model, peft.LoraConfig(**peft_arguments(path, targets)))
        return saved_in_layers(model)

    monkeypatch.setattr(lora_activations, "PEFT_LORA_DROPOUT", False)  # the exported adapters run at dropout 0
    arch = architecture_from_hf_config(path)

    def predicted(lora: bool) -> float:
        extra: dict[str, Any] = {"method": "lora", "lora_rank": RANK, "lora_targets": targets} if lora else {}
        job = Job(precision="bf16-true", seq_len=64, micro_batch=2, kernels="hf", **extra)
        return sum(float(layer_activation_bytes(arch, job, Layout(), moe_layer=moe).saved_bytes) * count
                   for moe, count in ((False, arch.num_dense_layers), (True, arch.num_moe_layers)) if count)

    assert predicted(False) - predicted(True) == pytest.approx(measured(False) - measured(True), rel=1e-9)
