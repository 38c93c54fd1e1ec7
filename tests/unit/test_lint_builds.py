"""The shipped builds: the article's three are flagged for the article's errors; corrections and standard builds
have no errors (corrections no warnings either); the JSON of a result is stable."""

from __future__ import annotations

import json

import pytest

from rigplan.catalog.load import ENV_VAR
from rigplan.lint import LintResult, Workload, lint_build
from rigplan.servers import get_server, load_servers

ARTICLE = ("article-entry", "article-mid", "article-cluster")


@pytest.fixture(scope="module")
def results() -> dict[str, LintResult]:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV_VAR, raising=False)
        return {bid: lint_build(b) for bid, b in load_servers().items()}


def by_code(result: LintResult, code: str, severity: str | None = None) -> list:
    return [f for f in result.findings if f.code == code and (severity is None or f.severity == severity)]


def test_article_entry_errors(results: dict[str, LintResult]) -> None:
    r = results["article-entry"]
    assert r.codes("error") == {"gpu.link", "cpu.compat", "budget.price"}
    link = by_code(r, "gpu.link", "error")[0]
    assert link.values["stated_link"] == "nvlink-bridge" and link.values["gpu_link"] == "pcie"
    budget = by_code(r, "budget.price", "error")[0]
    assert budget.values["gpu_price_floor"] == pytest.approx(2 * 6800 * 7.1)  # ~96.6k CNY > 80k
    assert budget.values["budget_max"] == 80000
    # "pretraining under 10B" (checked as 7B on 140B tokens): only with CPU offload, and ~230 days
    assert by_code(r, "workload.fit", "warning")
    days = by_code(r, "workload.time")[0].values["time_to_train_s"] / 86400
    assert 150 < days < 400
    assert by_code(r, "psu.capacity", "warning")  # the article states no PSU


def test_article_mid_errors(results: dict[str, LintResult]) -> None:
    r = results["article-mid"]
    assert r.codes("error") == {"chassis.gpu_fit", "cpu.compat", "budget.price", "workload.fit"}
    fit = by_code(r, "workload.fit", "error")[0]
    assert fit.values["model"] == "llama-2-70b" and fit.values["per_gpu_bytes"] > 80 * 2**30
    assert fit.values["host_bytes_needed"] > 512 * 2**30
    assert fit.values["lora_per_gpu_bytes"] < 80 * 2**30  # LoRA of 70B does fit
    assert by_code(r, "budget.price", "error")[0].values["gpu_price_floor"] == pytest.approx(4 * 12500 * 7.1)
    assert by_code(r, "storage.redundancy", "warning")  # RAID0
    assert any("92%" in f.message for f in by_code(r, "claim.unverifiable"))


def test_article_cluster_findings(results: dict[str, LintResult]) -> None:
    r = results["article-cluster"]
    assert r.codes("error") == {"budget.price"}
    assert by_code(r, "budget.price")[0].values["gpu_price_floor"] > 10 * 1_000_000
    assert {"network.scale_out", "psu.capacity", "memory.host_ram", "storage.checkpoint"} <= r.codes("warning")


@pytest.mark.parametrize("bid", ["article-entry-fixed", "article-mid-fixed", "article-cluster-fixed"])
def test_corrected_builds_lint_clean(results: dict[str, LintResult], bid: str) -> None:
    r = results[bid]
    assert r.count("error") == 0 and r.count("warning") == 0, [f.message for f in r.findings if f.severity != "info"]
    assert r.workloads and all(w["fits"] for w in r.workloads)


def test_standard_builds_have_no_errors(results: dict[str, LintResult]) -> None:
    standard = [bid for bid, b in load_servers().items() if b.category == "standard"]
    assert len(standard) >= 6
    for bid in standard:
        assert not results[bid].has_errors, (bid, [f.message for f in results[bid].findings if f.severity == "error"])


def test_dgx_psu_and_power_figures(results: dict[str, LintResult]) -> None:
    cap = by_code(results["dgx-h100"], "psu.capacity")[0].values
    assert cap["load_w"] == 10200 and cap["working_capacity_w"] == 4 * 3300
    red = by_code(results["dgx-b200"], "psu.redundancy")[0].values
    assert red["after_one_failure_w"] == 5 * 3300 and red["load_w"] == 14300


def test_for_workload_replaces_the_claims() -> None:
    r = lint_build(get_server("article-mid-fixed"), workload=Workload(text="t", model="llama-2-70b", method="full"))
    assert [w["model"] for w in r.workloads] == ["llama-2-70b"]
    assert r.codes("error") == {"workload.fit"}


def test_result_json_contract(results: dict[str, LintResult]) -> None:
    data = json.loads(json.dumps(results["article-entry"].to_dict()))
    assert {"build", "ok", "summary", "findings", "workloads", "assumptions"} <= set(data)
    assert data["ok"] is False and data["summary"]["error"] == 3
    for f in data["findings"]:
        assert set(f) == {"code", "severity", "message", "values"}
        assert f["severity"] in ("error", "warning", "info")
    severities = [f["severity"] for f in data["findings"]]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
