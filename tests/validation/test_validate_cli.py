"""`rigplan validate`: the table, the per-group summary, JSON, and exit status 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rigplan import api
from rigplan.cli.validate import validate_command
from rigplan.flow.request import MemoryRequest
from rigplan.validation.run import SUITES, load_case_file

GiB = 2**30
REQUEST = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "method": "lora", "seq": 2048, "micro_batch": 1,
           "precision": "bf16-true", "recompute": "full"}


def _predicted_reserved() -> float:
    return float(api.memory(MemoryRequest.model_validate(REQUEST)).breakdown.reserved_bytes)


def _case_file(tmp_path: Path, measured_factors: dict[str, float], oom: bool = False) -> Path:
    predicted = _predicted_reserved()
    cases: list[dict] = []
    for case_id, factor in measured_factors.items():
        cases.append({
            "id": case_id, "group": "tiny_group", "source": {"title": "synthetic"}, "reliability": "high",
            "request": REQUEST,
            "measured": {"bytes": predicted * factor, "kind": "reserved", "as_printed": f"{predicted * factor:.0f} B"},
            "compare": "reserved_bytes", "tolerance": 0.15, "notes": [f"measured = predicted x {factor}"],
        })
    if oom:
        cases.append({
            "id": "tiny-oom", "group": "tiny_group", "source": {"title": "synthetic"}, "reliability": "high",
            "expect": "oom", "request": {**REQUEST, "method": "full", "precision": "fp32", "seq": 8192},
            "measured": {"kind": "allocated", "as_printed": "OOM"}, "notes": ["fp32 full 8B on one 80 GB GPU"],
        })
    data = {"schema_version": 1, "suite": "memory", "description": "synthetic", "cases": cases,
            "skipped": [{"id": "tiny-skipped", "group": "tiny_group", "reason": "no number"}]}
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def invoke(*args: str):
    return CliRunner().invoke(validate_command, list(args))


def test_passing_cases_print_the_table_and_exit_0(tmp_path: Path) -> None:
    out = invoke("--cases", str(_case_file(tmp_path, {"tiny-exact": 1.0, "tiny-close": 1.1}, oom=True)))
    assert out.exit_code == 0, out.output
    for text in ("tiny-exact", "tiny-close", "tiny-oom", "tiny_group", "measured GiB", "predicted GiB", "+0.0%",
                 "-9.1%", "pass", "Per group", "median |error|"):
        assert text in out.output, text
    assert "FAIL" not in out.output


def test_one_failing_case_exits_1_and_is_named(tmp_path: Path) -> None:
    out = invoke("--cases", str(_case_file(tmp_path, {"tiny-exact": 1.0, "tiny-off": 2.0})))
    assert out.exit_code == 1, out.output
    assert "FAIL" in out.output
    assert "-50.0%" in out.output
    assert "1 of 2 cases fail: tiny-off" in out.output


def test_case_filter_and_verbose_notes(tmp_path: Path) -> None:
    path = _case_file(tmp_path, {"tiny-exact": 1.0, "tiny-off": 2.0})
    out = invoke("--cases", str(path), "--case", "tiny-exact", "--verbose")
    assert out.exit_code == 0, out.output
    assert "tiny-off" not in out.output
    assert "measured = predicted x 1.0" in out.output
    assert "predicted GiB: weights" in out.output


def test_json_output(tmp_path: Path) -> None:
    out = invoke("--cases", str(_case_file(tmp_path, {"tiny-exact": 1.0, "tiny-off": 2.0})), "--json")
    assert out.exit_code == 1
    data = json.loads(out.output)
    assert data["passed"] is False
    assert [r["id"] for r in data["results"]] == ["tiny-exact", "tiny-off"]
    assert data["results"][1]["error"] == -0.5 or abs(data["results"][1]["error"] + 0.5) < 1e-9
    assert data["summary"][0]["group"] == "tiny_group"
    assert data["summary"][0]["failed"] == 1
    assert data["skipped"] == [{"id": "tiny-skipped", "group": "tiny_group", "reason": "no number"}]


def test_bad_case_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("schema_version: 1\nsuite: memory\ndescription: d\ncases: []\nsurprise: 1\n")
    out = invoke("--cases", str(path))
    assert out.exit_code == 2
    assert "surprise" in out.output


def test_packaged_suite_runs_every_case() -> None:
    out = invoke("--suite", "memory", "--json")
    assert out.exit_code in (0, 1)
    data = json.loads(out.output)
    cases = load_case_file(SUITES["memory"].default_file).cases
    assert len(data["results"]) == len(cases)
    assert data["passed"] == (out.exit_code == 0)
    assert data["skipped"], "skipped published rows are listed with their reasons"


def test_group_filter_on_the_packaged_suite() -> None:
    out = invoke("--group", "torchtitan")
    assert out.exit_code in (0, 1)
    assert "torchtitan-h100-202412-t1-fsdp" in out.output
    assert "litgpt" not in out.output


# --- throughput suite -------------------------------------------------------------------------------------------

THROUGHPUT_REQUEST = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "seq": 4096, "gpus": 8, "zero": 3,
                      "micro_batch": 1, "global_batch": 8, "kernels": "eager"}


def _throughput_file(tmp_path: Path, measured_factors: dict[str, float]) -> Path:
    from rigplan.flow.estimate import estimate
    from rigplan.flow.request import EstimateRequest

    predicted = estimate(EstimateRequest.model_validate(THROUGHPUT_REQUEST)).to_dict()["tokens_per_s_per_gpu"]
    cases = [{
        "id": case_id, "group": "tiny_speed", "source": {"title": "synthetic"}, "reliability": "high",
        "request": THROUGHPUT_REQUEST,
        "measured": {"value": predicted / factor, "unit": "tokens/s/GPU", "metric": "tokens_per_sec_per_gpu",
                     "as_printed": f"{predicted / factor:.0f}"},
        "compare": "tokens_per_s_per_gpu", "notes": [f"measured = predicted / {factor}"],
    } for case_id, factor in measured_factors.items()]
    data = {"schema_version": 1, "suite": "throughput", "description": "synthetic", "cases": cases}
    path = tmp_path / "throughput.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_throughput_file_within_limits_exits_0(tmp_path: Path) -> None:
    out = invoke("--cases", str(_throughput_file(tmp_path, {"s-exact": 1.0, "s-close": 1.05, "s-off": 0.95})))
    assert out.exit_code == 0, out.output
    for text in ("s-exact", "tokens/s/GPU", "+5.0%", "-5.0%", "15.0%", "tiny_speed", "throughput overall",
                 "median |error| 5.0%", "overall median <= 7%", "group signed median within +/-5%"):
        assert text in out.output, text
    assert "BREACH" not in out.output


def test_group_median_breach_exits_1_though_every_case_passes(tmp_path: Path) -> None:
    path = _throughput_file(tmp_path, {"s-a": 1.1, "s-b": 1.1, "s-c": 0.9})
    out = invoke("--cases", str(path))
    assert out.exit_code == 1, out.output
    assert "FAIL" not in out.output
    assert "BREACH" in out.output and "group tiny_speed" in out.output and "exceeds 8%" in out.output
    assert "median signed error +10.0% is outside +/-5%" in out.output
    assert "throughput suite: median |error| 10.0%" in out.output
    data = json.loads(invoke("--cases", str(path), "--json").output)
    assert data["passed"] is False
    assert len(data["breaches"]) == 3
    assert data["suites"][0]["median_abs_error"] == pytest.approx(0.1)
    # one case is no group: the aggregate rules are off with --case
    assert invoke("--cases", str(path), "--case", "s-a").exit_code == 0


def test_packaged_throughput_suite_runs_every_case() -> None:
    out = invoke("--suite", "throughput", "--json")
    assert out.exit_code in (0, 1)
    data = json.loads(out.output)
    cases = load_case_file(SUITES["throughput"].default_file).cases
    assert len(data["results"]) == len(cases)
    assert {r["suite"] for r in data["results"]} == {"throughput"}
    assert data["passed"] == (out.exit_code == 0)
    assert data["passed"] == (not data["breaches"] and all(r["status"] in ("pass", "gap") for r in data["results"]))
    assert [s["suite"] for s in data["suites"]] == ["throughput"]
    assert data["suites"][0]["median_abs_error"] is not None
    assert data["skipped"], "skipped published rows are listed with their reasons"


def test_suite_all_runs_memory_throughput_moe_and_frontier() -> None:
    data = json.loads(invoke("--suite", "all", "--json").output)
    assert {r["suite"] for r in data["results"]} == {"memory", "throughput", "moe", "frontier", "dense_oos"}
    assert {s["suite"] for s in data["suites"]} == {"memory", "throughput", "moe", "frontier", "dense_oos"}


def test_throughput_table_shows_group_medians_and_the_overall_line() -> None:
    out = invoke("--suite", "throughput", "--group", "megatron")
    assert "megatron2021-a100-gpt1.7B" in out.output
    assert "tflops_per_gpu" in out.output
    assert "throughput overall: n=10" in out.output
