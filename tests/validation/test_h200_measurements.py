"""rigplan against the training runs measured on an NVIDIA H200 (docs/measurements/h200-2026-12.md).

Hugging Face transformers' Llama trained for a few steps on the device (benchmarks/gpu_session.py hf):
full-depth Llama 3.2 1B / 3B and Llama 3.1 8B, bf16 or fp32 under autocast, SDPA or eager attention,
gradient checkpointing, LoRA through peft, default and expandable-segment allocators. The runs are not the
scenarios the allocator fractions were measured on (8-layer models), so they check those too.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from scripts import load_script

from rigplan.api import estimate, memory
from rigplan.estimate.params import count_params
from rigplan.flow.request import EstimateRequest, MemoryRequest

FOLDER = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "h200-2026-12"
MODELS = {2048: "llama-3.2-1b", 3072: "llama-3.2-3b", 4096: "llama-3.1-8b"}


def runs(name: str) -> list[tuple[dict[str, Any], bool]]:
    data = json.loads((FOLDER / name).read_text())
    return [(row, "expandable_segments:True" in data["alloc_conf"]) for row in data["rows"]]


ALL_RUNS = runs("hf.json") + runs("hf_expandable.json")


def request_fields(row: dict[str, Any], expandable: bool) -> dict[str, Any]:
    fields: dict[str, Any] = dict(
        model=MODELS[row["config"]["hidden_size"]], gpu="h200-sxm", gpus=1, framework="hf", seq=row["seq"],
        micro_batch=row["batch"], optimizer_foreach=False, expandable_segments=expandable,
        recompute="full" if row["ckpt"] else "none")
    if row["weights"] == "bf16":
        fields.update(precision="bf16-true", autocast=False)
    else:
        fields.update(precision="bf16-mixed")
    if row["attn"] == "eager":
        fields.update(attention="eager")
    else:
        fields.update(attention="flash", attention_kernel="sdpa")
    if row["lora"]:
        fields.update(method="lora", lora_rank=16, lora_targets="q,v")
    return fields


def errors(key: str) -> list[float]:
    out = []
    for row, expandable in ALL_RUNS:
        b = memory(MemoryRequest(**request_fields(row, expandable))).breakdown
        out.append(float(getattr(b, f"step_{key}_bytes")) / row[f"peak_{key}_bytes"] - 1.0)
    return out


def test_allocated_peaks_of_every_run_within_8_percent() -> None:
    errs = errors("allocated")
    assert len(errs) == 13
    assert max(abs(e) for e in errs) < 0.08, errs
    assert statistics.median(abs(e) for e in errs) < 0.02


def test_reserved_peaks_median_within_8_percent_and_every_run_within_30() -> None:
    errs = errors("reserved")
    assert statistics.median(abs(e) for e in errs) < 0.08, errs
    assert max(abs(e) for e in errs) < 0.30, errs


FAMILY_RUNS = [row for row, _ in runs("families.json")]


def family_fields(row: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = dict(
        model=row["catalog"], gpu="h200-sxm", gpus=1, framework="hf", seq=row["seq"], micro_batch=row["batch"],
        optimizer_foreach=False, precision="bf16-true", autocast=False, recompute="full" if row["ckpt"] else "none",
        attention="eager" if row["attn"] == "eager" else "flash")
    if row["attn"] != "eager":
        fields["attention_kernel"] = "sdpa"
    if row["lora"]:
        fused_qkv = row["lora_modules"] == ["qkv_proj"]
        fields.update(method="lora", lora_rank=16, lora_targets="q,k,v" if fused_qkv else "q,v")
    return fields


@pytest.mark.parametrize("row", [r for r in FAMILY_RUNS if "error" not in r], ids=lambda r: r["name"])
def test_other_families_allocated_within_3_percent(row: dict[str, Any], tmp_path: Path) -> None:
    """Qwen2.5 7B, Mistral 7B, Phi-3-mini, Qwen3 8B and Gemma 2 9B, read from the config each run was built from
    (Phi-3-mini's without the catalog's 2047-token window: no mask reached SDPA): full training with checkpointing
    within 3%, LoRA without it within 1% (Phi-3-mini's fused qkv held whole by v's view: -7.2% before it was
    counted)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**row["config"], "model_type": row["model_type"]}))
    result = memory(MemoryRequest(**{**family_fields(row), "model": str(config)}))
    assert count_params(result.setup.arch).total == row["parameters"] - row["trainable_parameters"] * row["lora"]
    error = float(result.breakdown.step_allocated_bytes) / row["peak_allocated_bytes"] - 1.0
    assert abs(error) < (0.01 if row["lora"] else 0.03), error


def test_the_run_that_ran_out_of_memory_is_predicted_not_to_fit() -> None:
    """Gemma 2 9B LoRA at 4 x 2048 with eager attention (Gemma 2's softcapping) ran out of the H200's memory."""
    oom = [r for r in FAMILY_RUNS if "error" in r]
    assert [r["name"] for r in oom] == ["gemma-2-9b lora r16 bf16 s2048 b4"]
    assert "OutOfMemoryError" in oom[0]["error"]
    case = next(c for c in runs_cases() if c["name"] == oom[0]["name"])
    result = memory(MemoryRequest(**family_fields(case)))
    assert not result.fits


def runs_cases() -> list[dict[str, Any]]:
    """The families cases as the session defines them (an OOM row records only its name and error)."""
    module = load_script("benchmarks/gpu_session.py")
    return [{**c, "parameters": 0, "trainable_parameters": 0} for c in module.FAMILY_CASES]


@pytest.mark.parametrize("row", [r for r, _ in runs("hf.json")], ids=lambda r: r["name"])
def test_step_time_within_12_percent(row: dict[str, Any]) -> None:
    if row["attn"] == "eager":
        pytest.xfail("eager attention: rigplan is 21% fast with the op-by-op softmax traffic counted "
                     "(elementwise.EAGER_SOFTMAX_TRAFFIC; 35% before); the rest is not identified")
    fields = request_fields(row, False)
    result = estimate(EstimateRequest(**fields, global_batch=row["batch"]))
    error = float(result.step.step_time_s) / row["step_time_s"] - 1.0
    assert abs(error) < 0.12, error
