"""QLoRA as Hugging Face + peft + bitsandbytes run it, measured on an H200 (benchmarks/gpu_qlora.py).

Two checks against docs/measurements/h200-2026-12/qlora*.json:
- per layer, exactly: the bytes each QLoRA-prepared decoder layer saved for backward on the GPU's own kernels
  (rigplan.measure.saved_tensors; Llama with GQA and Qwen2 with MHA, LoRA on q,v and on every linear, with and
  without autocast) against estimate.peft_kbit;
- whole runs: torch.cuda.max_memory_allocated of fourteen training runs (Llama 3.1 8B, Qwen2.5 7B, Llama 2 7B;
  with and without gradient checkpointing and autocast) against `rigplan memory --framework hf --method qlora`.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from rigplan.api import memory
from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.flow.request import MemoryRequest

FOLDER = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "h200-2026-12"
TARGETS = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "gate_proj": "gate", "up_proj": "up",
           "down_proj": "down"}


def _rows(name: str) -> list[dict[str, Any]]:
    return json.loads((FOLDER / name).read_text())["rows"]


SAVED = _rows("qlora_second.json")[0]["saved"]
RUNS = [row for name in ("qlora.json", "qlora_second.json") for row in _rows(name) if "targets" in row]


def _row_id(row: dict[str, Any]) -> str:
    return f"{row['model_type']}-{len(row['targets'])}-{'autocast' if row['autocast'] else 'fp32'}"


@pytest.mark.parametrize("row", [r for r in SAVED if r["lora_dropout"] > 0], ids=_row_id)
def test_layer_count_matches_the_device(row: dict[str, Any], tmp_path: Path) -> None:
    shape = {k: row[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads")}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": row["model_type"], "num_hidden_layers": 3, "vocab_size": 512,
                                "max_position_embeddings": 4096, **shape}))
    arch = architecture_from_hf_config(path)
    job = Job(precision="bf16-true", seq_len=160, micro_batch=2, kernels="hf", method="qlora", lora_rank=16,
              lora_targets=tuple(TARGETS[t] for t in row["targets"]), kbit_fp32_upcast=True,
              autocast=row["autocast"], recompute="none")
    predicted = layer_activation_bytes(arch, job, Layout(), moe_layer=False).saved_bytes
    if row["autocast"]:
        # rigplan leaves out autocast's bf16 casts of the adapter weights, r·(d_in + d_out)·2 bytes per adapter and
        # layer (not per token: 0.1 MB a layer at Llama 3.1 8B's widths); added here for the exact comparison
        h, f, q_w, kv_w = (arch.hidden, arch.ffn, arch.num_heads * arch.dim_per_head,
                           arch.kv_heads * arch.dim_per_head)
        shapes = {"q": (h, q_w), "k": (h, kv_w), "v": (h, kv_w), "o": (q_w, h), "gate": (h, f), "up": (h, f),
                  "down": (f, h)}
        predicted += sum(16 * sum(shapes[t]) * 2 for t in job.lora_targets)
    # layers after the first (its input needs no gradient); a scalar or two per layer remain (< 0.001)
    assert predicted / 320 == pytest.approx(row["per_token_bytes"][1], rel=1e-3)


def test_without_autocast_gqa_layers_save_the_probabilities() -> None:
    """fp32 q, k, v under GQA take SDPA's math path: the fp32 probabilities (4·a·s per token) are saved."""
    plain = next(r for r in SAVED if r["model_type"] == "llama" and not r["autocast"] and r["lora_dropout"] > 0
                 and len(r["targets"]) == 2)
    mixed = next(r for r in SAVED if r["model_type"] == "llama" and r["autocast"] and r["lora_dropout"] > 0
                 and len(r["targets"]) == 2)
    assert plain["per_token_bytes"][1] - mixed["per_token_bytes"][1] > 4 * 6 * 160


def _job_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The request fields of one measured run (H200, QLoRA through the hf preset)."""
    return {"model": row["catalog"], "gpu": "h200-sxm", "method": "qlora", "framework": "hf",
            "lora_targets": "q,v" if len(row["targets"]) == 2 else "all", "seq": row["seq"],
            "micro_batch": row["batch"], "recompute": "full" if row["ckpt"] else "none",
            "autocast": bool(row.get("autocast"))}


def _predicted_allocated(row: dict[str, Any]) -> float:
    return float(memory(MemoryRequest(**_job_fields(row))).breakdown.allocated_bytes)


def test_whole_runs_allocated() -> None:
    errors = {row["name"]: _predicted_allocated(row) / row["peak_allocated_bytes"] - 1 for row in RUNS}
    assert len(errors) == 14
    assert statistics.median(abs(e) for e in errors.values()) < 0.03, errors
    assert max(abs(e) for e in errors.values()) < 0.07, errors


def _predicted_step_s(row: dict[str, Any]) -> float:
    from rigplan.api import estimate
    from rigplan.flow.request import EstimateRequest

    request = EstimateRequest(**_job_fields(row), gpus=1, global_batch=row["batch"])
    return float(estimate(request).step.step_time_s)


def test_step_time_under_autocast() -> None:
    """Under autocast (the Trainer's bf16=True) the seven runs' step times, with the casts, adapters and
    dequantization of estimate.peft_kbit.kbit_traffic; without them rigplan was 16-42% fast. The micro-batch-1
    runs stay about 16% fast (Python dispatch of some 8,000 small ops a step, not modelled)."""
    errors = [_predicted_step_s(r) / r["step_time_s"] - 1 for r in RUNS if r.get("autocast")]
    assert len(errors) == 7
    assert statistics.median(abs(e) for e in errors) < 0.05, errors
    assert min(errors) > -0.20 and max(errors) < 0.10, errors
