"""Every `rigplan ...` command in README.md and README.zh.md runs exactly as written (in a fresh process,
from a folder where the repository's tests/ data is reachable as the README assumes: the repository
root), with the exit status and error line the README shows; every line of their code blocks is such a
command or a setup step that CI runs itself."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", ROOT / "README.zh.md"]
ENTRY = [sys.executable, "-c", "from rigplan.cli.main import main; main()"]
EXPECTED_STATUS = {"lint": 1}
"""`rigplan lint` exits 1 when the build has errors (documented in its --help); the README's article-mid
build has them (that is the example's point). An example whose comment shows an error line
(`# rigplan: error: ...`) exits 2 with that line. Every other example exits 0."""
SETUP_LINES = {"pip install -e '.[dev]'", "python -m pytest"}
"""Code-block lines that are not rigplan commands: CI runs them itself (.ci/run installs with the dev
extras, then runs the tests)."""
ERROR_PREFIXES = ("rigplan: error:", "rigplan: 错误:")


EXPONENT = re.compile(r"\d(?:\.\d+)?e[+-]\d+")
"""A number printed in exponent notation (5e+10, 1.2e-05): rigplan writes "50B tokens" instead."""


def sentences(json_text: str) -> str:
    """The strings of a JSON document (its numbers are data, not text for people)."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            found.append(value)

    walk(json.loads(json_text))
    return "\n".join(found)


@dataclass(frozen=True)
class Example:
    readme: str
    command: str
    env: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    """The error line the README shows for it (its comment), if any."""

    @property
    def args(self) -> list[str]:
        return shlex.split(self.command)

    def __str__(self) -> str:
        return f"{self.readme}: {' '.join(f'{k}={v}' for k, v in self.env)} {self.command}".replace(":  ", ": ")


def code_block_lines(text: str) -> list[str]:
    """The command lines of every fenced code block: in a block that shows a session (`$ ` prompts) the
    prompted lines, elsewhere every line; continuation lines (trailing backslash) joined."""
    lines: list[str] = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S):
        rows = block.splitlines()
        session = any(r.startswith("$ ") for r in rows)
        rows_iter = iter(rows)
        for row in rows_iter:
            if session and not row.startswith("$ "):
                continue
            line = row.removeprefix("$ ").strip()
            while line.endswith("\\"):
                line = line[:-1].rstrip() + " " + next(rows_iter).strip()
            if line:
                lines.append(line)
    return lines


def examples(path: Path) -> tuple[list[Example], list[str]]:
    """The rigplan commands of a README's code blocks (and the `(rigplan ...)` commands their comments
    name), and the code-block lines that are neither rigplan commands nor setup lines."""
    found: list[Example] = []
    other: list[str] = []
    for line in code_block_lines(path.read_text(encoding="utf-8")):
        command_part, _, comment = line.partition("  #")
        comment = comment.strip().removeprefix("# ").strip()
        for part in (p.strip() for p in command_part.split("&&")):
            words = shlex.split(part)
            env = tuple(tuple(w.split("=", 1)) for w in words if re.fullmatch(r"[A-Z_]+=\S*", w))
            rest = words[len(env):]
            if rest[:1] == ["rigplan"]:
                error = comment if comment.startswith(ERROR_PREFIXES) else None
                found.append(Example(path.name, shlex.join(rest), env, error))  # type: ignore[arg-type]
            elif part not in SETUP_LINES:
                other.append(part)
        found.extend(Example(path.name, m.strip()) for m in re.findall(r"\((rigplan [^)]*)\)", comment))
    return found, other


EXAMPLES = [e for path in READMES for e in examples(path)[0]]


@pytest.mark.parametrize("path", READMES, ids=lambda p: p.name)
def test_every_code_block_line_is_an_example_run_here_or_a_setup_step(path: Path) -> None:
    found, other = examples(path)
    assert other == []
    assert len(found) >= 10


def test_the_readmes_have_their_examples() -> None:
    names = {e.args[1] for e in EXAMPLES if e.readme == "README.md"}
    assert {"memory", "estimate", "plan", "compare", "tco", "lint", "servers", "models", "gpus", "validate",
            "serve"} <= names
    assert {"--plot", "--markdown"} <= {a for e in EXAMPLES for a in e.args}
    assert any(e.error for e in EXAMPLES) and any(e.env for e in EXAMPLES)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.command != "rigplan serve"], ids=str)
def test_readme_command_runs_as_written(example: Example, tmp_path: Path) -> None:
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    args = example.args
    env = {k: v for k, v in os.environ.items() if k != "RIGPLAN_LANG"} | dict(example.env)
    proc = subprocess.run([*ENTRY, *args[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    if example.error:
        assert proc.returncode == 2 and proc.stderr.strip() == example.error, proc.stderr
        return
    command = next(a for a in args[1:] if not a.startswith("-") and a != "zh")
    assert proc.returncode == EXPECTED_STATUS.get(command, 0), proc.stderr[-2000:]
    assert proc.stdout.strip()
    assert not EXPONENT.findall(sentences(proc.stdout) if "--json" in args else proc.stdout + proc.stderr)
    for flag in ("--plot", "--markdown"):
        if flag in args:
            assert (tmp_path / args[args.index(flag) + 1]).stat().st_size > 0


def test_readme_serve_answers_on_its_port(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="rigplan serve needs the web extra")
    assert "rigplan serve" in [e.command for e in EXAMPLES]
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.skip("port 8000 is in use on this machine")
    proc = subprocess.Popen([*ENTRY, "serve"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:8000/api/gpus", timeout=5) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "rigplan serve did not answer within 60 s"
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_readme_sessions_show_what_rigplan_prints_now() -> None:
    """The outputs README.md shows under its `$ rigplan ...` examples are today's (tools/readme_outputs.py)."""
    spec = importlib.util.spec_from_file_location("readme_outputs", ROOT / "tools" / "readme_outputs.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = tool.README.read_text(encoding="utf-8")
    assert tool.rendered(text) == text, "run python tools/readme_outputs.py"
