"""Per-layer saved activations of Hugging Face transformers modules, measured exactly on CPU.

A tiny random-weight model (no download) is run forward in bf16 under
torch.autograd.graph.saved_tensors_hooks; the bytes of every tensor autograd saves while a decoder
layer runs are summed per layer, each storage once (views share storage), parameters excluded, and
storages saved by more than one layer (the rotary cos/sin tables, computed once per model) left to
the model. rigplan's `--kernels hf` per-layer formula must match within 3%; its plain `eager`
formula is shown to be below (the gap the hf stack closes).

Needs torch and transformers (pip install -e '.[frameworks]'); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.measure.saved_tensors import saved_bytes_per_layer

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -e '.[frameworks]')")

TOLERANCE = 0.03
SHAPES: dict[str, dict[str, Any]] = {
    # model_type: config keys; sizes chosen so no activation has the shape of a weight.
    "llama": {"hidden_size": 384, "intermediate_size": 1024, "num_attention_heads": 6, "num_key_value_heads": 2},
    "qwen2": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 4},
    "mistral": {"hidden_size": 320, "intermediate_size": 896, "num_attention_heads": 5, "num_key_value_heads": 1,
                "sliding_window": None},
    "qwen3": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 64},
    "phi3": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 4,
             "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2, "sliding_window": None},
}
CONFIG_CLASSES = {"llama": "LlamaConfig", "qwen2": "Qwen2Config", "mistral": "MistralConfig", "qwen3": "Qwen3Config",
                  "phi3": "Phi3Config"}
MODEL_CLASSES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen3": "Qwen3ForCausalLM", "phi3": "Phi3ForCausalLM"}
LORA_SHAPES: dict[str, dict[str, Any]] = {
    **{k: SHAPES[k] for k in ("llama", "qwen2", "qwen3")},
    "phi3": SHAPES["phi3"],
}


def measure_saved_bytes_per_layer(model: Any, input_ids: Any) -> list[int]:
    """Bytes autograd saves while each decoder layer runs (rigplan.measure.saved_tensors)."""
    return saved_bytes_per_layer(model, input_ids)


def build(model_type: str, attention: str, tmp_path: Path,
          shape: dict[str, Any] | None = None, use_cache: bool = False) -> tuple[Any, Path]:
    config_cls = getattr(transformers, CONFIG_CLASSES[model_type])
    # use_cache off, as training recipes and every device run set it: with it on, the KV cache's concatenation
    # hands SDPA copies of k and v (test_kv_cache_copies_the_fused_value_view).
    config = config_cls(num_hidden_layers=3, vocab_size=512, max_position_embeddings=4096,
                        attn_implementation=attention, use_cache=use_cache, **(shape or SHAPES[model_type]))
    torch.manual_seed(0)
    model = getattr(transformers, MODEL_CLASSES[model_type])(config).to(torch.bfloat16)
    model.train()
    path = tmp_path / model_type / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = config.to_dict()
    data["model_type"] = model_type
    path.write_text(json.dumps(data, default=str))
    return model, path


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("model_type", sorted(SHAPES))
def test_hf_stack_matches_measured_saved_tensors(model_type: str, attention: str, tmp_path: Path) -> None:
    model, config_path = build(model_type, attention, tmp_path)
    batch, seq = 2, 160
    input_ids = torch.randint(0, 512, (batch, seq))
    measured = measure_saved_bytes_per_layer(model, input_ids)
    assert len(measured) == 3 and len(set(measured)) == 1, measured
    arch = architecture_from_hf_config(config_path)
    rigplan_attention = "eager" if attention == "eager" else "flash"
    job = Job(precision="bf16-true", seq_len=seq, micro_batch=batch, attention=rigplan_attention, kernels="hf")
    predicted = layer_activation_bytes(arch, job, Layout(), moe_layer=False).saved_bytes
    assert predicted == pytest.approx(measured[0], rel=TOLERANCE)
    plain = layer_activation_bytes(arch, Job(precision="bf16-true", seq_len=seq, micro_batch=batch,
                                             attention=rigplan_attention, kernels="eager"),
                                   Layout(), moe_layer=False).saved_bytes
    assert measured[0] > plain * 1.10, "Hugging Face modules save more than plain eager kernels"


@pytest.mark.parametrize("model_type", sorted(LORA_SHAPES))
def test_peft_lora_on_hf_modules_matches_measured_saved_tensors(model_type: str, tmp_path: Path) -> None:
    """peft LoRA r=16 (q and v; Phi-3's fused qkv_proj), dropout 0: the layers after the first save exactly what
    peft_lora_token_bytes counts. With dropout a CPU saves a 4-byte mask where CUDA saves 1 byte
    (docs/measurements/h200-2026-12/saved.json has both devices), so the comparison runs without it."""
    peft = pytest.importorskip("peft", reason="peft is not installed (pip install -e '.[frameworks]')")
    from rigplan.estimate import lora_activations

    model, config_path = build(model_type, "sdpa", tmp_path, LORA_SHAPES[model_type])
    targets = ["qkv_proj"] if model_type == "phi3" else ["q_proj", "v_proj"]
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=targets))
    wrapped.train()
    batch, seq = 2, 160
    measured = measure_saved_bytes_per_layer(wrapped.base_model.model, torch.randint(0, 512, (batch, seq)))
    arch = architecture_from_hf_config(config_path)
    job = Job(precision="bf16-true", seq_len=seq, micro_batch=batch, kernels="hf", method="lora", lora_rank=16,
              lora_targets=("q", "k", "v") if model_type == "phi3" else ("q", "v"))
    saved_dropout = lora_activations.PEFT_LORA_DROPOUT
    lora_activations.PEFT_LORA_DROPOUT = False
    try:
        predicted = layer_activation_bytes(arch, job, Layout(), moe_layer=False).saved_bytes
    finally:
        lora_activations.PEFT_LORA_DROPOUT = saved_dropout
    assert measured[1] == measured[2]
    assert predicted == pytest.approx(measured[1], rel=0.01)
    assert measured[0] < measured[1]  # the first layer's input needs no gradient: it saves less (left out)


def test_device_measurement_has_the_one_byte_dropout_mask() -> None:
    """On the H200 each LoRA dropout adds one byte per element of the adapter's input (CUDA's bool mask)."""
    rows = json.loads((Path(__file__).resolve().parents[2] / "docs" / "measurements" / "h200-2026-12" /
                       "saved.json").read_text())["rows"]
    for model_type in ("llama", "qwen2", "qwen3"):
        plain, dropped = (next(r for r in rows if r["model_type"] == model_type and r["lora"]
                               and r["lora_dropout"] == d) for d in (0.0, 0.05))
        extra = dropped["per_token_per_hidden"][1] - plain["per_token_per_hidden"][1]
        assert extra == pytest.approx(2.0, abs=1e-3)  # q and v adapters, 1 byte x h each


def test_kv_cache_copies_the_fused_value_view(tmp_path: Path) -> None:
    """Phi-3 with its KV cache left on in training: DynamicCache.update concatenates k and v, SDPA gets a copy of v
    instead of the view of the fused qkv output, and each layer saves exactly the view term less."""
    from rigplan.estimate.activations import hf_sdpa_input_bytes

    batch, seq = 2, 160
    ids = torch.randint(0, 512, (batch, seq))
    without, config_path = build("phi3", "sdpa", tmp_path)
    with_cache, _ = build("phi3", "sdpa", tmp_path, use_cache=True)
    arch = architecture_from_hf_config(config_path)
    job = Job(precision="bf16-true", seq_len=seq, micro_batch=batch, kernels="hf", method="lora")
    view = hf_sdpa_input_bytes(arch, job)[1]  # LoRA: no output-projection copy, only the view
    assert view == 2 * (256 + 256)
    difference = measure_saved_bytes_per_layer(without, ids)[1] - measure_saved_bytes_per_layer(with_cache, ids)[1]
    assert difference == view * batch * seq


@pytest.mark.parametrize(("model_type", "window", "padded"), [("phi3", 100, False), ("phi3", None, True),
                                                             ("llama", None, True), ("mistral", 128, False)])
def test_explicit_mask_and_its_consequences_match(model_type: str, window: int | None, padded: bool,
                                                  tmp_path: Path) -> None:
    """An explicit mask reaching SDPA (a sliding window the sequence reaches, or padding): each layer keeps a bf16
    copy (2·s per token), and under GQA (Llama here) repeat_kv's full-width k and v, which under MQA (Mistral here,
    one kv head) are views; Phi-3 without GQA keeps its fused qkv whole either way."""
    shape = dict(SHAPES[model_type])
    if window is not None:
        shape["sliding_window"] = window
    model, config_path = build(model_type, "sdpa", tmp_path, shape)
    batch, seq = 2, 160
    mask = None
    if padded:
        mask = torch.ones(batch, seq, dtype=torch.long)
        mask[0, : seq // 4] = 0  # left padding of the first sample
    measured = saved_bytes_per_layer(model, torch.randint(3, 512, (batch, seq)), mask)
    arch = architecture_from_hf_config(config_path)
    job = Job(precision="bf16-true", seq_len=seq, micro_batch=batch, kernels="hf", varying_lengths=padded)
    predicted = layer_activation_bytes(arch, job, Layout(), moe_layer=False).saved_bytes
    unmasked = layer_activation_bytes(arch, Job(precision="bf16-true", seq_len=seq, micro_batch=batch, kernels="hf"),
                                      Layout(), moe_layer=False).saved_bytes if padded else None
    assert predicted == pytest.approx(measured[1], rel=0.005)
    assert unmasked is None or unmasked < measured[1] * 0.99


def test_window_json_rows_match_per_layer() -> None:
    """Phi-3-mini's modules on the H200 (docs/measurements/h200-2026-12/window.json; benchmarks/gpu_window.py): LoRA
    and full training, 2,047 to 4,096 tokens, with and without the 2047-token window, each layer after the first
    to within 0.1%."""
    from rigplan.catalog.load import load_catalog

    arch = load_catalog().model_domain("phi-3-mini")
    rows = json.loads((Path(__file__).resolve().parents[2] / "docs" / "measurements" / "h200-2026-12" /
                       "window.json").read_text())["rows"]
    assert len(rows) == 6
    for row in rows:
        run_arch = arch if row["sliding_window"] else arch.with_overrides(attention_windows=())
        lora: dict[str, Any] = dict(method="lora", lora_rank=16, lora_targets=("q", "k", "v")) if row["lora"] else {}
        job = Job(precision="bf16-true", seq_len=row["seq"], micro_batch=4, kernels="hf", **lora)
        predicted = layer_activation_bytes(run_arch, job, Layout(), moe_layer=False).saved_bytes
        assert predicted == pytest.approx(row["saved_per_layer_bytes"][1], rel=1e-3), row
