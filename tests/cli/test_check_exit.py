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


def test_infeasible_plan_says_why_first() -> None:
    args = ["plan", "llama-3.1-70b", "--tokens", "1T", "--deadline", "1d", "--budget", "1k", "--gpu", "h100-sxm",
            "--gpus-max", "64"]
    text = CliRunner().invoke(cli, args, terminal_width=200).output
    assert text.startswith("INFEASIBLE: no option meets both the budget and the deadline")
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert data["infeasible"].startswith("no option meets both") and data["ranked"] == []
    nothing = json.loads(CliRunner().invoke(cli, ["plan", "llama-3.1-405b", "--tokens", "1T", "--gpu", "rtx-4090",
                                                  "--gpus-max", "8", "--json"]).output)
    assert nothing["infeasible"] == "no layout fits this job in GPU memory"
    fine = json.loads(CliRunner().invoke(cli, ["plan", "llama-3.2-1b", "--tokens", "1B", "--gpu", "h100-sxm",
                                               "--gpus-max", "8", "--json"]).output)
    assert fine["infeasible"] is None


def test_compare_marks_each_option_that_cannot_run_and_checks_that_one_can() -> None:
    runner = CliRunner()
    args = ["compare", "llama-3.1-70b", "1xh100-sxm", "64xh100-sxm", "--tokens", "50B"]
    data = json.loads(runner.invoke(cli, [*args, "--json"]).output)
    assert data["infeasible"] == ["no layout fits this job in GPU memory", None]
    assert "INFEASIBLE 1xh100-sxm: no layout fits this job in GPU memory" in runner.invoke(cli, args).output
    assert runner.invoke(cli, [*args, "--check"]).exit_code == 0
    none_runs = ["compare", "llama-3.1-70b", "1xh100-sxm", "2xh100-sxm", "--tokens", "50B", "--check"]
    assert runner.invoke(cli, none_runs).exit_code == 1
    assert runner.invoke(cli, [*none_runs, "--json"]).exit_code == 1


def test_compare_times_a_gpu_it_cannot_price_and_leaves_its_cost_rows_empty() -> None:
    runner = CliRunner()
    args = ["compare", "qwen3-30b-a3b", "8xgb200", "8xgb300", "--tokens", "10B"]
    data = json.loads(runner.invoke(cli, [*args, "--json"]).output)
    assert data["infeasible"] == [None, None] and data["unpriced"] == [False, True]
    rows = {row["key"]: row["values"] for row in data["rows"]}
    assert all(v > 0 for v in rows["tokens_per_s"]) and rows["cloud_cost_usd"][1] is None
    assert rows["onprem_cost_usd"][1] is None and rows["cloud_cost_usd"][0] > 0
    text = runner.invoke(cli, args).output
    assert "NO PRICE 8xgb300: no cloud offer and no purchase price in the catalog" in text
    assert "INFEASIBLE" not in text and runner.invoke(cli, [*args, "--check"]).exit_code == 0


@pytest.mark.parametrize("command", ["memory", "estimate", "plan", "compare"])
def test_check_is_documented_in_help(command: str) -> None:
    text = CliRunner().invoke(cli, [command, "--help"]).output
    assert "--check" in text and "status 1" in text


def test_an_unpriced_option_ranks_after_every_priced_one_and_its_cost_is_null() -> None:
    from rigplan.flow.plan import plan
    from rigplan.flow.request import PlanRequest

    data = plan(PlanRequest(model="qwen3-30b-a3b", tokens="10B", gpu=["gb300", "gb200"], gpus_max=8,
                            unpriced=True)).to_dict()
    costs = [(c["gpu"], c["cost_usd"]) for c in data["ranked"]]
    assert ("gb300", None) in costs and all(cost is not None for gpu, cost in costs if gpu == "gb200")
    assert costs.index(("gb300", None)) > max(i for i, (gpu, _) in enumerate(costs) if gpu == "gb200")
    json.dumps(data, allow_nan=False)  # strict JSON: no Infinity


def test_a_plan_on_an_unpriced_gpu_says_which_commands_still_time_it() -> None:
    out = CliRunner().invoke(cli, ["plan", "qwen3-30b-a3b", "--tokens", "10B", "--gpu", "gb300", "--json"])
    assert json.loads(out.output)["infeasible"] == (
        "no price: no cloud offer and no purchase price in the catalog (rigplan compare and rigplan estimate still "
        "time it; a catalog overlay, --catalog, can add a price)")
