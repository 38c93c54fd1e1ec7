"""A plan on a part rigplan has no price for: --cluster (the GPUs are had) and --unpriced keep it, with its layout,
time and memory and no cost, in the text, JSON and Markdown answers; without them the plan says there is no price.
A plot of a plan with nothing priced is still written, saying why, instead of failing on an empty log scale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_main

H800 = ["llama-3.2-1b", "--tokens", "1B"]  # the catalog's H800 has cloud offers of one machine and no purchase price


def _json(argv: list[str], monkeypatch, capsys) -> dict:  # type: ignore[no-untyped-def]
    code, out, err = run_main([*argv, "--json"], monkeypatch, capsys)
    assert code == 0, err
    return json.loads(out)


def test_a_stated_cluster_of_an_unpriced_part_is_planned(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    data = _json(["plan", *H800, "--cluster", "1x8:h800-sxm"], monkeypatch, capsys)
    assert data["infeasible"] is None and data["ranked"]
    best = data["ranked"][0]
    assert best["gpu"] == "h800-sxm" and best["gpus"] == 8 and best["mode"]["kind"] == "unpriced"
    assert best["cost_usd"] is None and best["wall_time_s"] > 0 and best["memory"]["total_bytes"] > 0
    assert best["reasons"] == ["fastest"]  # never 'cheapest' without a price


def test_unpriced_keeps_the_part_and_its_absence_says_why(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["plan", *H800, "--gpu", "h800-sxm", "--gpus-exact", "8", "--onprem"]
    assert _json(argv, monkeypatch, capsys)["infeasible"].startswith("no price")
    data = _json([*argv, "--unpriced"], monkeypatch, capsys)
    assert data["infeasible"] is None and data["ranked"][0]["mode"]["kind"] == "unpriced"


def test_text_and_markdown_say_unpriced(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "plan.md"
    code, out, err = run_main(["plan", *H800, "--cluster", "1x8:h800-sxm", "--markdown", str(report)],
                              monkeypatch, capsys)
    assert code == 0, err
    row = next(line for line in out.splitlines() if "8 x h800-sxm" in line)
    assert "no price" in row and "unpriced" in row
    assert "| 8 x h800-sxm | no price |" in report.read_text() and "| unpriced | unpriced |" in report.read_text()


@pytest.mark.parametrize("argv", [["plan", "llama-3.1-405b", "--tokens", "1T", "--gpu", "h100-sxm", "--gpus-max", "1"],
                                  ["plan", *H800, "--cluster", "1x8:h800-sxm"]], ids=["infeasible", "unpriced"])
def test_a_plot_with_nothing_priced_is_still_written(argv: list[str], tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    plot = tmp_path / "plan.png"
    code, _, err = run_main([*argv, "--plot", str(plot)], monkeypatch, capsys)
    assert code == 0 and "Traceback" not in err, err
    assert plot.stat().st_size > 1000
