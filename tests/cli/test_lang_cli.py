"""`--lang zh` / RIGPLAN_LANG=zh: the reports of memory, estimate, plan, compare, tco, lint, validate and the catalog
listings, and every error, in Chinese, with the same exit status; English output unchanged. Record content (catalog
names, notes and sources, a build's claims) and a validation case's own notes stay as written; every lint finding
is checked branch by branch in test_lint_zh.py. Numbers, units, flag names, option values and model/GPU ids stay as
typed (lang_check.py says what may stay English)."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from lang_check import english_words
from test_hostile_cli import CORPUS, _files

from rigplan.cli.main import cli
from rigplan.servers import get_server, load_servers

COMMANDS = [
    "memory llama-3.1-8b --gpu h100-sxm --gpus 8 --fsdp --recompute selective --seq 8192",
    "memory llama-3.1-70b --gpu h100-sxm",
    "memory 70b --gpus 64 --tp 8 --pp 2 --zero 1 --recompute selective",
    "memory tests/data/hf/qwen2.5-7b/config.json --method qlora --gpu rtx-4090 --seq 2048 --find-max",
    "memory llama-3.1-70b --gpus 8 --fsdp --checkpoint-load full",
    "memory mixtral-8x7b --gpus 8 --ep 8 --zero 1",
    "estimate gpt-3-175b --gpu a100-80gb-sxm --gpus 1024 --tp 8 --pp 8 --global-batch 1536 --recompute full "
    "--attention eager --tokens 300B",
    "estimate llama-3.1-70b --gpu h100-sxm --gpus 512 --tp 8 --pp 4 --vpp 5 --precision fp8 --tokens 1T",
    "estimate llama-3.1-70b --gpu h100-sxm --gpus 1 --tokens 1B",
    "plan llama-3.1-8b --tokens 100B --gpu h100-sxm --gpu a100-80gb-sxm --deadline 30d",
    "plan llama-3.1-70b --tokens 1T --gpu h100-sxm --deadline 5d --budget 10k",
    "compare llama-2-7b 8xa100-80gb-sxm 4xh100-sxm --tokens 2B --method lora",
    "tco --gpu h100-sxm --gpus 64 --currency cny --price-per-kwh 0.6",
    "tco --gpu h100-sxm --gpus 64 --months 12",
    "tco --scenario seed",
    "tco --gpu h100-sxm --gpus 8 --tou valley:8h@0.04,peak:16h@0.12",
    "tco --gpu h100-sxm --gpus 64 --months 36",
    "tco --gpu h20 --gpus 8 --months 6 --currency cny --tou cn-tou-4to1 --shiftable",
    "tco --gpu t4 --gpus 4 --months 1",
    "plan llama-3.1-8b --tokens 100B --cluster 6x8:h100-sxm",
    "compare llama-3.1-8b 8xh100-sxm 8xh20 16xa800-80gb-sxm --tokens 100B",
    "estimate llama-3.1-8b --gpus 8 --framework megatron",
    "estimate llama-3.1-8b --gpus 8 --framework torchtitan --recompute op",
    "memory llama-3.1-8b --gpus 8 --framework hf",
    "memory llama-3.1-8b --gpus 8 --framework deepspeed",
    "memory llama-3.1-8b --gpus 1 --framework unsloth --method qlora",
    "models",
    "gpus",
    "servers",
]


def _zh(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("COLUMNS", "400")  # a line is not wrapped inside a name
    result = CliRunner().invoke(cli, ["--lang", "zh", *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("line", COMMANDS)
def test_chinese_report_has_no_untranslated_english(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _zh(line.split(), monkeypatch)
    assert code == 0, out
    left = [(ln, english_words(ln)) for ln in out.splitlines() if english_words(ln)]
    assert not left, left[:5]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in out)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _files(tmp_path_factory.mktemp("hostile-zh"))


BAD_FLAGS = ["memory llama-3.1-8b --zero 5", "memory llama-3.1-8b --tp x", "memory llama-3.1-8b --bogus",
             "memory llama-3.1-8b --precision bf17", "memry", "memory llama-3.1-8b x-9", "compare",
             "memory llama-3.1-8b --gpu h100", "lint nosuch", "memory llama-3.1-8b --tp 3",
             "memory --layers 2 --hidden 30 --heads 4 --vocab 10", "memory llama-3.1-8b --tp"]


@pytest.mark.parametrize("line", CORPUS + BAD_FLAGS)
def test_chinese_errors_are_one_line_exit_2(files, line, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from rigplan.cli.main import main

    monkeypatch.setattr(sys, "argv", ["rigplan", "--lang", "zh", *line.format(**files).split()])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2, line
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("rigplan: 错误: "), (line, lines)
    assert not english_words(lines[0].replace(files["folder"], "FOLDER")), lines[0]


def test_seed_correction_names_the_price_kind_in_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corrected GPU price says what kind of price it is (a catalog price's kind, a command name in English, so
    the untranslated-word check above passes it either way)."""
    code, out = _zh(["tco", "--scenario", "seed"], monkeypatch)
    assert code == 0, out
    line = next(ln for ln in out.splitlines() if "GPU 价格" in ln)
    kind = line.split("（", 1)[1].split("，", 1)[0]
    assert kind in {"市场价", "标价", "估计"}, line


def test_environment_variable_selects_chinese_and_the_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGPLAN_LANG", "zh")
    zh = CliRunner().invoke(cli, ["memory", "llama-3.1-8b"]).output
    en = CliRunner().invoke(cli, ["--lang", "en", "memory", "llama-3.1-8b"]).output
    assert "参数" in zh and "params" in en and "参数" not in en


def test_english_output_is_unchanged_by_a_chinese_run_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RIGPLAN_LANG", raising=False)
    before = CliRunner().invoke(cli, ["memory", "llama-3.1-8b"]).output
    _zh(["memory", "llama-3.1-8b"], monkeypatch)
    monkeypatch.delenv("COLUMNS")
    after = CliRunner().invoke(cli, ["memory", "llama-3.1-8b"]).output
    assert before == after and "params" in after and "参数" not in after


def test_json_keeps_keys_and_codes_and_translates_sentences(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _zh(["memory", "llama-3.1-70b", "--json"], monkeypatch)
    data = json.loads(out)
    assert code == 0 and data["fit"]["verdict"] == "does-not-fit"
    assert data["assumptions"] == ["序列长度 4096（默认；用 --seq 设置）"]
    assert data["advice"][0]["flag"].startswith("--")


@pytest.mark.parametrize("build", sorted(load_servers()))
def test_lint_findings_are_chinese(build: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every finding and assumption of every build, alone and with workloads, is Chinese; what stays English is
    the record's own words (its claims, its price's scope), quoted as written."""
    record = get_server(build)
    quoted = [c.text for c in record.claims] + ([record.price.scope] if record.price else [])
    for workload in ([], ["--for", "llama-3.1-70b", "--tokens", "1T"], ["--for", "llama-3.1-8b", "--method", "lora"]):
        code, out = _zh(["lint", build, "--json", *workload], monkeypatch)
        data = json.loads(out)
        assert code in (0, 1) and data["findings"]
        for text in [f["message"] for f in data["findings"]] + data["assumptions"]:
            for words in quoted:
                text = text.replace(words, " ")
            assert not english_words(text), text


def test_lint_frame_is_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _zh(["lint", "article-mid"], monkeypatch)
    assert code == 1 and "级别" in out and "不通过：4 个错误" in out and "FAIL" not in out
    assert "出厂即装满 8 个 GPU" in out and "与 A+ Server AS-4124GO-NART 不匹配" in out and "组成 RAID0" in out


def test_validate_frame_is_chinese_and_case_data_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """validate's tables, statuses and summaries in Chinese; case ids, groups, kinds, units and a case's known-gap
    text (case data, as the source's row is cited) stay as written."""
    line = ["validate", "--suite", "moe", "--group", "megatron_moe_modelzoo_h100"]
    data = json.loads(CliRunner().invoke(cli, [*line, "--json"]).output)
    code, out = _zh(line, monkeypatch)
    assert code == 0 and "预测值与实测值" in out and "各组汇总" in out and "已知差距" in out and "总体" in out
    for r in data["results"]:
        for text in (r["id"], r["group"], r["kind"], r.get("unit") or "", r.get("known_gap") or ""):
            out = out.replace(text, " ")
    out = out.replace("megatron_moe_modelzoo_h100", " ")
    left = [(ln, english_words(ln)) for ln in out.splitlines() if english_words(ln)]
    assert not left, left[:5]


def test_a_quoted_source_with_colons_keeps_its_line_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    """An inherited-efficiency line quotes the family's source, which holds ': ' (Blackwell's does); the frame around
    it is still Chinese and no 'assumed' prefix is left."""
    code, out = _zh(["estimate", "llama-3.1-8b", "--gpu", "b200", "--gpus", "8", "--tokens", "1B"], monkeypatch)
    assert code == 0
    assert "效率数据沿用自其他型号" in out and "assumed" not in out


@pytest.mark.parametrize("framework,args", [
    ("accelerate", ["--zero", "1"]),
    ("deepspeed", ["--zero", "0", "--offload", "optimizer"]),
    ("hf-trainer", ["--zero", "3", "--optimizer", "muon"]),
    ("megatron", ["--zero", "3", "--optimizer", "muon"]),
    ("torchtitan", ["--gpu", "b200", "--zero", "3", "--precision", "fp8", "--fp8-recipe", "nvfp4"]),
    ("torchtitan", ["--tp", "2", "--zero", "1"]),
])
def test_export_refusals_are_translated(framework: str, args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["--lang", "zh", "export", "llama-3.1-8b", "--gpus", "8", *args,
                                      "--framework", framework])
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert "无法表达" in line and not english_words(line), line
