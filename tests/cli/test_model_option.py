"""MODEL taken as the argument or as --model MODEL, the spelling of other tools: the same request either way, both
at once only when they agree, and every command that reads a model takes it."""

from __future__ import annotations

import json

import pytest
from cli_run import run_main

MODEL_COMMANDS = ("memory", "estimate", "plan", "export", "check", "calibrate")


def _json(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, err = run_main(argv, monkeypatch, capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("command", ["memory", "estimate"])
def test_the_option_gives_the_same_answer_as_the_argument(command: str, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    rest = ["--gpu", "h100-sxm", "--gpus", "8", "--ep", "8", "--json"]
    by_argument = _json([command, "qwen3-30b-a3b", *rest], monkeypatch, capsys)
    by_option = _json([command, "--model", "qwen3-30b-a3b", *rest], monkeypatch, capsys)
    assert by_option == by_argument
    model = by_option["model"] if command == "memory" else by_option["memory"]["model"]
    assert model["id"] == "qwen3-30b-a3b"


def test_plan_takes_the_option(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    data = _json(["plan", "--model", "llama-3.2-1b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "8",
                  "--json"], monkeypatch, capsys)
    assert data["ranked"] and all(c["gpu"] == "h100-sxm" for c in data["ranked"])


def test_the_same_model_twice_is_accepted(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    data = _json(["memory", "llama-3.1-8b", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"],
                 monkeypatch, capsys)
    assert data["model"]["id"] == "llama-3.1-8b"


def test_two_different_models_are_refused_in_one_line(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_main(["estimate", "qwen3-30b-a3b", "--model", "deepseek-v3", "--gpu", "h100-sxm"],
                            monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1
    assert "MODEL is given twice, 'qwen3-30b-a3b' and --model 'deepseek-v3'; give it once" in lines[0]


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_every_model_command_lists_the_option(command: str, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_main([command, "--help"], monkeypatch, capsys)
    assert code == 0 and "--model MODEL" in out and "[MODEL]" in out
