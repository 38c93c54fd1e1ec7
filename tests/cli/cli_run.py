"""Run `rigplan ARGS` in this process, as the console script would: its exit status, stdout and stderr."""

from __future__ import annotations

import sys

import pytest


def run_main(args: list[str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from rigplan.cli.main import main

    monkeypatch.setattr(sys, "argv", ["rigplan", *args])
    code = 0
    try:
        main()
    except SystemExit as done:
        code = int(done.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
