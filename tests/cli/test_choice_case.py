"""Listed option values are taken in any case, as model and GPU ids are (LoRA, CNY, BF16-mixed), and mean the same
as the listed id; a value not listed is still one error line with exit status 2."""

from __future__ import annotations

import json

import pytest
from cli_run import run_main


def _json(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, err = run_main([*args, "--json"], monkeypatch, capsys)
    assert code == 0, err
    return json.loads(out)


def test_mixed_case_values_equal_the_listed_ids(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    base = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm"]
    typed = _json([*base, "--method", "LoRA", "--precision", "BF16-Mixed", "--optimizer", "AdamW"], monkeypatch,
                  capsys)
    listed = _json([*base, "--method", "lora", "--precision", "bf16-mixed", "--optimizer", "adamw"], monkeypatch,
                   capsys)
    assert typed == listed
    assert typed["job"]["method"] == "lora"


def test_currency_in_capitals_prices_in_that_currency(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tco", "--gpu", "h100-sxm", "--fx", "7.1"]
    upper = _json([*args, "--currency", "CNY"], monkeypatch, capsys)
    lower = _json([*args, "--currency", "cny"], monkeypatch, capsys)
    assert upper == lower


def test_a_value_not_listed_is_one_error_line(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--method", "LoRAX"], monkeypatch,
                              capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "'LoRAX' is not one of 'full', 'lora', 'qlora'" in lines[0]
