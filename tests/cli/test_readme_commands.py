"""Every `rigplan ...` command in README.md runs exactly as written (in a fresh process, from a folder
where the repository's tests/ data is reachable as the README assumes: the repository root)."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ENTRY = [sys.executable, "-c", "from rigplan.cli.main import main; main()"]
EXPECTED_STATUS = {"lint": 1}
"""`rigplan lint` exits 1 when the build has errors (documented in its --help); the README's article-mid
build has them (that is the example's point). Every other example exits 0."""


def readme_commands(text: str) -> list[str]:
    """`$ rigplan ...` lines (joined over trailing backslashes) and `rigplan ...` lines of code blocks,
    plus the `(rigplan ...)` commands named in those lines' comments."""
    commands: list[str] = []
    in_block = False
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        stripped = line.removeprefix("$ ").strip()
        if not stripped.startswith("rigplan "):
            continue
        while stripped.endswith("\\"):
            stripped = stripped[:-1].rstrip() + " " + next(lines).strip()
        command, _, comment = stripped.partition("#")
        commands.append(command.strip())
        commands.extend(m.strip() for m in re.findall(r"\((rigplan [^)]*)\)", comment))
    return commands


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))


def test_the_readme_has_its_examples() -> None:
    names = {shlex.split(c)[1] for c in COMMANDS}
    assert {"memory", "estimate", "plan", "compare", "tco", "lint", "servers", "models", "gpus", "validate",
            "serve"} <= names


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "rigplan serve"])
def test_readme_command_runs_as_written(command: str, tmp_path: Path) -> None:
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    args = shlex.split(command)
    proc = subprocess.run([*ENTRY, *args[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == EXPECTED_STATUS.get(args[1], 0), proc.stderr[-2000:]
    assert proc.stdout.strip()
    for flag in ("--plot", "--markdown"):
        if flag in args:
            assert (tmp_path / args[args.index(flag) + 1]).stat().st_size > 0


def test_readme_serve_answers_on_its_port(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="rigplan serve needs the web extra")
    assert "rigplan serve" in COMMANDS
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
