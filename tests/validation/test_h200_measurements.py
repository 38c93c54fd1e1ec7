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

from rigplan.api import estimate, memory
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


@pytest.mark.parametrize("row", [r for r, _ in runs("hf.json")], ids=lambda r: r["name"])
def test_step_time_within_12_percent(row: dict[str, Any]) -> None:
    if row["attn"] == "eager":
        pytest.xfail("eager attention's fp32 softmax passes are not modelled: measured 35% slower than rigplan")
    fields = request_fields(row, False)
    result = estimate(EstimateRequest(**fields, global_batch=row["batch"]))
    error = float(result.step.step_time_s) / row["step_time_s"] - 1.0
    assert abs(error) < 0.12, error
