"""The CLI starts numpy's OpenBLAS with one thread (its estimators make no BLAS call), except for the commands
that time this machine, and never over a count the user set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rigplan.cli import main as cli_main

CODE = ("import os, sys; from rigplan.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)")


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_memory_runs_with_one_blas_thread_unless_told_otherwise(given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given:
        env["OPENBLAS_NUM_THREADS"] = given
    proc = subprocess.run([sys.executable, "-c", CODE, "memory", "llama-3.1-8b", "--gpu", "h100-sxm"], env=env,
                          capture_output=True, text=True, check=True)
    assert proc.stderr.splitlines()[-1] == expected


def test_measuring_commands_keep_the_machines_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"})
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    for command in sorted(cli_main.MEASURING):
        cli_main.one_blas_thread(command)
        assert "OPENBLAS_NUM_THREADS" not in os.environ
    cli_main.one_blas_thread("plan")
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
