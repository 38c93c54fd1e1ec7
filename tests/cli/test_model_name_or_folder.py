"""MODEL as a catalog id or as a folder: a catalog id wins over a folder of the same name in the working
folder (`./NAME` reads the folder), a bare name that is neither says so in one line, and a bare folder
holding a config.json is still read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

TINY = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 1000, "intermediate_size": 512}


def _run(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    from rigplan.cli.main import main

    monkeypatch.setattr(sys, "argv", ["rigplan", *args])
    code = 0
    try:
        main()
    except SystemExit as done:
        code = int(done.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


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
