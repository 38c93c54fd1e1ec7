"""LoRA on hybrid models' linear-attention layers, measured exactly on CPU: what peft trains and what its adapters
save.

Tiny random-weight Qwen3.5 (dense; Gated DeltaNet with four input projections, gated full attention every 4th
layer), Qwen3.5 MoE, Qwen3-Next (two input projections, MoE) and Nemotron-H (Mamba-2, attention and MLP blocks)
models from transformers are given peft LoRA with the target modules `rigplan export --framework hf-trainer` writes.
peft's trainable parameters must equal rigplan's adapter count exactly, and the bytes the linear-attention adapters
add to the layers' saved tensors must equal rigplan's count to the byte, as must the attention and MLP adapters' on
a hybrid's other layers. The frozen projections' share (what a frozen base saves less) is not checked here: on CPU
transformers runs its torch fallbacks of the conv and the gated delta rule, which save other tensors than the CUDA
kernels rigplan counts.

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
from rigplan.estimate import lora_activations
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.states import stage_lora_params
from rigplan.measure.saved_tensors import saved_bytes_in_layers

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -e '.[frameworks]')")
peft = pytest.importorskip("peft", reason="peft is not installed (pip install -e '.[frameworks]')")

if not all(hasattr(transformers, name) for name in ("Qwen3_5TextConfig", "Qwen3_5MoeTextConfig", "Qwen3NextConfig",
                                                   "NemotronHConfig")):
    pytest.skip("needs transformers with Qwen3.5, Qwen3-Next and Nemotron-H (transformers >= 5)",
                allow_module_level=True)

BATCH, SEQ, RANK, VOCAB = 2, 64, 8, 512
LAYERS = 8  # Gated DeltaNet on 0-2 and 4-6, full attention on 3 and 7
ATTENTION, MIXER, MLP = ("q", "k", "v", "o"), ("in_proj", "out_proj"), ("gate", "up", "down")


def _save(config: Any, name: str, tmp: pytest.TempPathFactory) -> Path:
    data = config.to_dict()  # as transformers 5 saves it (NemotronHConfig: its block list, no num_hidden_layers)
    path = tmp.mktemp(name) / "config.json"
    path.write_text(json.dumps(data, default=str))
    return path


@pytest.fixture(scope="module")
def qwen3_5(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    config = transformers.Qwen3_5TextConfig(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=LAYERS, num_attention_heads=4,
        num_key_value_heads=2, head_dim=64, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=32, linear_value_head_dim=32, max_position_embeddings=4096, use_cache=False,
        attn_implementation="sdpa")
    return config, _save(config, "qwen3_5", tmp_path_factory)


TINY_HYBRID_MOE: dict[str, Any] = dict(
    vocab_size=VOCAB, hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32, num_experts=8,
    num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=64, max_position_embeddings=4096,
    use_cache=False, attn_implementation="sdpa")
"""The tiny Gated DeltaNet MoE shape of the Qwen3-Next and Qwen3.5 MoE models built here."""


@pytest.fixture(scope="module")
def qwen3_next(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    config = transformers.Qwen3NextConfig(intermediate_size=512, **TINY_HYBRID_MOE)
    return config, _save(config, "qwen3_next", tmp_path_factory)


@pytest.fixture(scope="module")
def qwen3_5_moe(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    config = transformers.Qwen3_5MoeTextConfig(**TINY_HYBRID_MOE)
    return config, _save(config, "qwen3_5_moe", tmp_path_factory)


@pytest.fixture(scope="module")
def nemotron_h(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    config = transformers.NemotronHConfig(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=6,
        hybrid_override_pattern="M-M*M-", num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        mamba_num_heads=8, mamba_head_dim=32, n_groups=2, ssm_state_size=16, chunk_size=32,
        max_position_embeddings=4096, use_cache=False, attn_implementation="sdpa")
    return config, _save(config, "nemotron_h", tmp_path_factory)


def peft_arguments(path: Path, targets: tuple[str, ...]) -> dict[str, Any]:
    """What rigplan export --framework hf-trainer writes for peft.LoraConfig."""
    from rigplan.export.hf_trainer import hf_training_file
    from rigplan.flow.request import EstimateRequest
    from rigplan.flow.resolve import build_setup

    request = EstimateRequest(model=str(path), gpu="h100-sxm", method="lora", lora_targets=list(targets), seq=SEQ,
                              micro_batch=BATCH, lora_rank=RANK, framework="hf")
    arguments: dict[str, Any] = hf_training_file(build_setup(request))["peft"]
    return arguments


def build(model_class: Any, config: Any, path: Path, targets: tuple[str, ...]) -> Any:
    torch.manual_seed(0)
    model = model_class(config).to(torch.bfloat16)
    return peft.get_peft_model(model, peft.LoraConfig(**peft_arguments(path, targets)))


def rigplan_adapters(path: Path, targets: tuple[str, ...]) -> float:
    """rigplan's adapter count for the job as `rigplan estimate --framework hf` resolves it (which drops the targets
    peft refuses: a Mamba-2 model's out_proj)."""
    from rigplan.flow.request import EstimateRequest
    from rigplan.flow.resolve import build_setup

    setup = build_setup(EstimateRequest(model=str(path), gpu="h100-sxm", method="lora", lora_targets=list(targets),
                                        seq=SEQ, micro_batch=BATCH, lora_rank=RANK, framework="hf"))
    arch = setup.arch
    own, routed = stage_lora_params(arch, setup.job, layers=arch.num_layers, dense_layers=arch.num_dense_layers)
    return float(own + routed)


@pytest.mark.parametrize("targets", [ATTENTION, MIXER, ATTENTION + MIXER + MLP])
def test_qwen3_5_trainable_adapters_match_peft(targets: tuple[str, ...], qwen3_5: tuple[Any, Path]) -> None:
    config, path = qwen3_5
    model = build(transformers.Qwen3_5ForCausalLM, config, path, targets)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert rigplan_adapters(path, targets) == pytest.approx(trainable, rel=1e-12)


@pytest.mark.parametrize("targets", [ATTENTION, MIXER, ATTENTION + MIXER])
def test_qwen3_next_trainable_adapters_match_peft(targets: tuple[str, ...], qwen3_next: tuple[Any, Path]) -> None:
    config, path = qwen3_next
    model = build(transformers.Qwen3NextForCausalLM, config, path, targets)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert rigplan_adapters(path, targets) == pytest.approx(trainable, rel=1e-12)


@pytest.mark.parametrize("targets", [ATTENTION + MIXER, ATTENTION + MIXER + MLP])
def test_qwen3_5_moe_trainable_adapters_match_peft(targets: tuple[str, ...], qwen3_5_moe: tuple[Any, Path]) -> None:
    """Qwen3.5 MoE (a model type peft does not rewrite): the mixers' and attention's module adapters, the shared
    expert's module adapters and the routed experts' parameter adapters (target_parameters, at the rank given)."""
    config, path = qwen3_5_moe
    model = build(transformers.Qwen3_5MoeForCausalLM, config, path, targets)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert rigplan_adapters(path, targets) == pytest.approx(trainable, rel=1e-12)


@pytest.mark.parametrize("targets", [MIXER, ATTENTION + MIXER + ("up", "down")])
def test_nemotron_h_trainable_adapters_match_peft(targets: tuple[str, ...], nemotron_h: tuple[Any, Path]) -> None:
    config, path = nemotron_h
    model = build(transformers.NemotronHForCausalLM, config, path, targets)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert rigplan_adapters(path, targets) == pytest.approx(trainable, rel=1e-12)


def saved_in_layers(model_class: Any, config: Any, path: Path, targets: tuple[str, ...]) -> int:
    """Bytes of the distinct storages the decoder layers save in one forward (saved_bytes_in_layers)."""
    model = build(model_class, config, path, targets)
    return saved_bytes_in_layers(model, model.base_model.model.model.layers, torch.randint(0, VOCAB, (BATCH, SEQ)))


def predicted_total(path: Path, targets: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> float:
    """rigplan's saved bytes of a layer (a mixer and the feed-forward block after it), the mean over the model's
    layers, times its layers."""
    monkeypatch.setattr(lora_activations, "PEFT_LORA_DROPOUT", False)  # the exported adapters run at dropout 0
    arch = architecture_from_hf_config(path)
    job = Job(precision="bf16-true", seq_len=SEQ, micro_batch=BATCH, kernels="hf", method="lora", lora_rank=RANK,
              lora_targets=targets)
    return float(layer_activation_bytes(arch, job, Layout(), moe_layer=False).saved_bytes) * arch.num_layers


CASES = {"qwen3.5 +in_proj,out_proj": ("qwen3_5", ATTENTION, MIXER), "qwen3.5 +q,k,v,o": ("qwen3_5", MIXER, ATTENTION),
         "qwen3.5 +in_proj,out_proj over the MLP": ("qwen3_5", ATTENTION + MLP, MIXER),
         "nemotron-h +in_proj": ("nemotron_h", ATTENTION, ("in_proj",)),
         "nemotron-h +up,down": ("nemotron_h", ("in_proj",), ("up", "down"))}
MODELS = {"qwen3_5": "Qwen3_5ForCausalLM", "nemotron_h": "NemotronHForCausalLM"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_adapters_add_exactly_what_rigplan_counts(case: str, request: pytest.FixtureRequest,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The saved bytes one more set of adapters adds to the model, to the byte (each adapter its fp32 input and
    lora_A's fp32 output): on Qwen3.5's six Gated DeltaNet layers four input-projection adapters and one on out_proj,
    or on its two full-attention layers q, k, v and o's; on Nemotron-H's three Mamba-2 mixers in_proj's, or on its
    two MLP blocks (of four layers: rigplan's mean counts half a block a layer) up and down's. rigplan's per-layer
    figure is the mean over the layers (linear_attention.blend), times the layers here."""
    name, base, added = CASES[case]
    config, path = request.getfixturevalue(name)
    model_class = getattr(transformers, MODELS[name])
    measured = (saved_in_layers(model_class, config, path, base + added)
                - saved_in_layers(model_class, config, path, base))
    predicted = predicted_total(path, base + added, monkeypatch) - predicted_total(path, base, monkeypatch)
    assert measured > 0
    assert predicted == pytest.approx(measured, rel=1e-9)
