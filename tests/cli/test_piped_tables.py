"""Tables sent to a pipe or a file keep every id whole: rich would lay them out 80 columns wide and cut a GPU id
such as rtx-4090d to 'rtx-409…', which then reads as rtx-4090. COLUMNS, where set, still rules (the README's
outputs are rendered 100 wide); on a narrow terminal an id breaks onto the next line instead of being cut."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.report.text import PIPED_WIDTH, stdout_console


def _piped(args: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("RIGPLAN_LANG", raising=False)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_gpus_listing_sent_to_a_pipe_shows_every_id_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _piped(["gpus"], monkeypatch)
    rows = [line for line in out.splitlines() if line.startswith("│")]
    ids = {line.split("│")[1].strip() for line in rows}
    assert ids == set(load_catalog().gpus)
    assert "…" not in out


def test_models_listing_sent_to_a_pipe_shows_every_id_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _piped(["models"], monkeypatch)
    ids = {line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")}
    assert ids == set(load_catalog().models)


def test_plan_sent_to_a_pipe_names_each_gpu_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _piped(["plan", "llama-3.1-8b", "--tokens", "1e10"], monkeypatch)
    first = next(line for line in out.splitlines() if line.startswith("│"))
    gpus_cell = first.split("│")[1].strip()
    count, _, gpu = gpus_cell.partition(" x ")
    assert count.isdigit() and gpu in load_catalog().gpus


def test_columns_still_sets_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert stdout_console().width == 100
    monkeypatch.delenv("COLUMNS")
    assert stdout_console().width == PIPED_WIDTH


def test_a_narrow_layout_breaks_an_id_instead_of_cutting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(cli, ["gpus"]).output
    cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    joined = "".join(cells)
    assert all(gpu in joined for gpu in load_catalog().gpus)
    assert not any(cell.endswith("…") for cell in cells)
