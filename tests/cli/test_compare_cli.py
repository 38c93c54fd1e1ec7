"""`rigplan compare`: a layout that fits wins over a faster one over the GPU's memory; an option whose only
layouts are over it (within rigplan's memory uncertainty) is shown and marked MAY NOT FIT; the layout row names
the expert and virtual-pipeline degrees as plan does."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.report.text import layout_text


def _compare(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["compare", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_an_option_with_only_layouts_over_the_memory_is_marked_may_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _compare("deepseek-v3", "256xh100-sxm", "128xh100-sxm", "--tokens", "14.8T")
    headroom = next(r["values"] for r in data["rows"] if r["key"] == "headroom_bytes")
    assert data["over_limit"] == [False, True]
    assert headroom[0] >= 0 > headroom[1]
    monkeypatch.delenv("RIGPLAN_LANG", raising=False)
    text = CliRunner().invoke(cli, ["compare", "deepseek-v3", "256xh100-sxm", "128xh100-sxm", "--tokens", "14.8T"])
    assert "MAY NOT FIT 128xh100-sxm" in text.output and "MAY NOT FIT 256xh100-sxm" not in text.output


def test_a_fitting_layout_wins_over_a_faster_one_over_the_memory() -> None:
    data = _compare("kimi-k2", "256xh100-sxm", "512xh100-sxm", "--tokens", "1T")
    headroom = next(r["values"] for r in data["rows"] if r["key"] == "headroom_bytes")
    assert data["over_limit"] == [False, False]
    assert all(h >= 0 for h in headroom)


def test_the_layout_row_names_expert_and_virtual_stage_degrees() -> None:
    assert layout_text(dict(tp=2, pp=8, vpp=2, dp=16, cp=1, ep=32, etp=1, zero=1, micro_batch=1,
                            recompute="none")) == "tp2 pp8x2 dp16 ep32 z1 mb1 none"
    assert layout_text(dict(tp=2, pp=1, vpp=1, dp=4, cp=2, ep=8, etp=2, zero=3, micro_batch=2,
                            recompute="full")) == "tp2 pp1 dp4 cp2 ep8 etp2 z3 mb2 full"
    # a dense model's expert tp (Megatron's default: tp) is not shown
    assert layout_text(dict(tp=4, pp=2, vpp=1, dp=1, cp=1, ep=1, etp=4, zero=0, micro_batch=1,
                            recompute="none")) == "tp4 pp2 dp1 z0 mb1 none"


def test_a_part_without_the_precision_is_marked_and_the_others_compared() -> None:
    args = ["compare", "llama-3.1-8b", "8xb200", "8xh100-sxm", "--tokens", "10B", "--precision", "fp8",
            "--fp8-recipe", "nvfp4"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["infeasible"][0] is None
    assert "has no NVFP4 tensor cores" in data["infeasible"][1] and "use --fp8-recipe delayed" in data["infeasible"][1]
    refused = CliRunner().invoke(cli, ["compare", "llama-3.1-8b", "8xh100-sxm", "8xa100-80gb-sxm", *args[4:]])
    assert refused.exit_code == 2 and "no NVFP4 tensor cores" in refused.output and "Traceback" not in refused.output
