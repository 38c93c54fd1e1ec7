"""--check: exit status 1 when the answer is "does not fit" / "infeasible", 0 when it is yes; 2 stays bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli

NOT_FIT = ["llama-3.1-70b", "--gpu", "rtx-4090"]
FITS = ["llama-3.2-1b", "--gpu", "h100-sxm"]


@pytest.mark.parametrize("command", ["memory", "estimate"])
def test_does_not_fit_exits_1_only_with_check(command: str) -> None:
    runner = CliRunner()
    plain = runner.invoke(cli, [command, *NOT_FIT, "--json"])
    assert plain.exit_code == 0 and json.loads(plain.output)["fits"] is False
    checked = runner.invoke(cli, [command, *NOT_FIT, "--json", "--check"])
    assert checked.exit_code == 1 and json.loads(checked.output)["fits"] is False
    assert runner.invoke(cli, [command, *FITS, "--check"]).exit_code == 0


def test_infeasible_plan_exits_1_with_check() -> None:
    runner = CliRunner()
    args = ["plan", "llama-3.1-70b", "--tokens", "1T", "--deadline", "1d", "--budget", "1k", "--gpu", "h100-sxm",
            "--gpus-max", "64", "--json"]
    assert runner.invoke(cli, args).exit_code == 0
    checked = runner.invoke(cli, [*args, "--check"])
    assert checked.exit_code == 1 and json.loads(checked.output)["stats"]["eligible"] == 0
    ok = runner.invoke(cli, ["plan", "llama-3.2-1b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "8",
                             "--check", "--json"])
    assert ok.exit_code == 0


@pytest.mark.parametrize("command", ["memory", "estimate", "plan"])
def test_check_is_documented_in_help(command: str) -> None:
    text = CliRunner().invoke(cli, [command, "--help"]).output
    assert "--check" in text and "status 1" in text
