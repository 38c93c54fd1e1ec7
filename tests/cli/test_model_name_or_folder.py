"""MODEL as a catalog id or as a folder: a catalog id wins over a folder of the same name in the working
folder (`./NAME` reads the folder), a bare name that is neither says so in one line, and a bare folder
holding a config.json is still read."""

from __future__ import annotations

import json
from pathlib import Path

from cli_run import run_main

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 1000, "intermediate_size": 512}


def _run(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    return run_main(args, monkeypatch, capsys)


def test_a_catalog_id_wins_over_a_folder_of_that_name(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "llama-3.1-8b").mkdir()
    (tmp_path / "llama-3.1-8b" / "config.json").write_text(json.dumps(TINY))
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"], monkeypatch, capsys)
    data = json.loads(out)
    assert code == 0 and data["model"]["source"] == "catalog" and data["model"]["params_total"] > 7e9
    assert any("./llama-3.1-8b" in note for note in data["assumptions"])
    code, out, _ = _run(["memory", "./llama-3.1-8b", "--gpu", "h100-sxm", "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["model"]["source"] == "hf-config"


def test_a_bare_folder_without_config_is_an_unknown_model(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["memory", "src", "--gpu", "h100-sxm"], monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1
    assert "unknown model 'src'" in lines[0] and "neither a config.json nor a folder holding one" in lines[0]


def test_a_bare_folder_holding_a_config_is_read(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text(json.dumps(TINY))
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(["memory", "tiny", "--gpu", "h100-sxm", "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["model"]["source"] == "hf-config"


def test_a_hub_name_reads_as_its_catalog_model(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    for name, expected in (("Qwen/Qwen3-8B", "qwen3-8b"), ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
                           ("Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"), ("llama-2-7b-chat-hf", "llama-2-7b"),
                           ("google/gemma-3-27b-it", "gemma-3-27b")):
        code, out, _ = _run(["memory", name, "--gpu", "h100-sxm", "--json"], monkeypatch, capsys)
        data = json.loads(out)
        assert code == 0 and data["model"]["id"] == expected and data["model"]["source"] == "catalog", name
        assert any(f"'{name}' read as the catalog model {expected}" in note for note in data["assumptions"])


def test_a_hub_name_with_a_version_tag_is_not_guessed(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["memory", "mistralai/Mistral-7B-Instruct-v0.3", "--gpu", "h100-sxm"], monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1
    assert "no catalog model of that name" in lines[0] and "closest catalog ids: mistral-7b" in lines[0]


def test_a_folder_named_like_a_hub_repo_is_read(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "Qwen" / "Qwen3-8B").mkdir(parents=True)
    (tmp_path / "Qwen" / "Qwen3-8B" / "config.json").write_text(json.dumps(TINY))
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(["memory", "Qwen/Qwen3-8B", "--gpu", "h100-sxm", "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["model"]["source"] == "hf-config"
