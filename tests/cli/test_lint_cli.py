"""`rigplan lint` and `rigplan servers` through click's CliRunner: table, --json, exit status, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from rigplan.catalog.load import ENV_VAR
from rigplan.cli.lint import lint_command
from rigplan.cli.servers import servers_group
from rigplan.servers import get_server


@pytest.fixture(autouse=True)
def _no_overlays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def lint(*args: str) -> Result:
    return CliRunner().invoke(lint_command, list(args), terminal_width=200)


def servers(*args: str) -> Result:
    return CliRunner().invoke(servers_group, list(args), terminal_width=200)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rigplan: error: "), result.stderr
    return lines[0]


def test_article_entry_table_and_exit_1() -> None:
    out = lint("article-entry")
    assert out.exit_code == 1, out.output
    for code in ("gpu.link", "cpu.compat", "budget.price"):
        assert code in out.stdout
    assert "FAIL" in out.stdout and "3 error(s)" in out.stdout


def test_article_mid_json_and_exit_1() -> None:
    out = lint("article-mid", "--json")
    assert out.exit_code == 1
    data = json.loads(out.stdout)
    errors = {f["code"] for f in data["findings"] if f["severity"] == "error"}
    assert errors == {"chassis.gpu_fit", "cpu.compat", "budget.price", "workload.fit"}
    assert all(set(f) == {"code", "severity", "message", "values"} for f in data["findings"])
    assert data["build"]["id"] == "article-mid" and data["ok"] is False


def test_clean_build_exits_0_and_quiet_hides_info() -> None:
    out = lint("dgx-h100")
    assert out.exit_code == 0, out.output
    assert "OK" in out.stdout and "psu.redundancy" in out.stdout
    quiet = lint("article-entry-fixed", "-q")
    assert quiet.exit_code == 0 and "psu.redundancy" not in quiet.stdout


def test_for_workload_with_tokens() -> None:
    out = lint("article-mid-fixed", "--for", "llama-2-13b", "--tokens", "20B", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert [w["model"] for w in data["workloads"]] == ["llama-2-13b"]
    time = next(f for f in data["findings"] if f["code"] == "workload.time")
    assert time["values"]["time_to_train_s"] > 0
    fails = lint("article-mid-fixed", "--for", "llama-2-70b")
    assert fails.exit_code == 1 and "workload.fit" in fails.stdout


def test_build_yaml_file(tmp_path: Path) -> None:
    data = get_server("article-entry").model_dump(mode="json")
    data.update(id="my-entry", category="user")
    path = tmp_path / "BUILD.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = lint(str(path), "--json")
    assert out.exit_code == 1
    assert json.loads(out.stdout)["build"]["id"] == "my-entry"


@pytest.mark.parametrize("args, expect", [
    (("no-such-build",), "unknown server build"),
    (("missing.yaml",), "not found"),
    (("dgx-h100", "--tokens", "2T"), "--for"),
    (("dgx-h100", "--for", "no-such-model"), "unknown model"),
    (("dgx-h100", "--for", "llama-2-7b", "--tokens", "lots"), "--tokens"),
    (("dgx-h100", "--for", "llama-2-7b", "--seq", "0"), "--seq"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], expect: str) -> None:
    assert expect in one_line_error(lint(*args))


def test_invalid_build_file_is_one_line(tmp_path: Path) -> None:
    data = get_server("dgx-h100").model_dump(mode="json")
    data["gpus"]["count"] = 0
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert "gpus.count" in one_line_error(lint(str(path)))


def test_servers_list_table_and_json() -> None:
    out = servers()
    assert out.exit_code == 0, out.output
    for bid in ("article-entry", "article-mid-fixed", "dgx-b200", "workstation-4x-rtx5090"):
        assert bid in out.stdout
    data = json.loads(servers("--json").stdout)["servers"]
    ids = [d["id"] for d in data]
    assert ids.index("article-entry") < ids.index("article-entry-fixed") < ids.index("dgx-h100")
    dgx = next(d for d in data if d["id"] == "dgx-h100")
    assert dgx["total_gpus"] == 8 and dgx["load_w_per_node"] == 10200 and dgx["psu"]["redundancy"] == "4+2"
    only = json.loads(servers("--category", "article", "--json").stdout)["servers"]
    assert {d["id"] for d in only} == {"article-entry", "article-mid", "article-cluster"}


def test_servers_show_text_and_json() -> None:
    out = servers("show", "article-mid")
    assert out.exit_code == 0, out.output
    assert "AS-4124GO-NART" in out.stdout and "sources:" in out.stdout
    data = json.loads(servers("show", "dgx-b200", "--json").stdout)
    assert data["id"] == "dgx-b200" and data["psu"]["redundancy"] == "5+1"
    assert data["derived"]["total_gpus"] == 8 and data["sources"]


def test_servers_show_unknown_is_one_line() -> None:
    assert "did you mean" in one_line_error(servers("show", "dgx-h10"))
