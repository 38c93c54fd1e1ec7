"""`rigplan validate`: the table, the per-group summary, JSON, and exit status 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from rigplan import api
from rigplan.cli.validate import validate_command
from rigplan.requests import MemoryRequest
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
