"""The Chinese catalog covers every error rigplan raises: each message template in the code (the f-string of
a `raise` or of `fail(...)`, read from the source tree) translates, with sample values in its placeholders,
to text without untranslated English."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from rigplan import i18n
from rigplan.bounds import BOUNDS, check
from rigplan.errors import InvalidSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from lang_check import english_words

SRC = Path(__file__).resolve().parents[2] / "src" / "rigplan"

NOT_FOR_USERS = {
    "unreachable", "gpu", "model", "server build", "{}{}", "{}: {}",
    "duplicate lint rule code {}", "rule {} emitted a finding with code {}",
    "{}: row shape {} differs from catalog {} {}", "{}: tp*pp*cp*dp != num_gpus", "duplicate id '{}'",
    "catalog line {}: expected 'en: ...' then 'zh: ...', got {}", "{} {}; got {}",
}
"""Raise sites that are not a message: a programming error inside rigplan (a lint rule's code clash, the build
of the shipped validation table or of the shipped catalog), a kind passed to UnknownEntry, a message
wrapped whole, or the bound line `{flag} {problem}; got {value}` (test_every_bound_message_translates)."""


def _template(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[misc]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (_template(node.left) or "{}") + (_template(node.right) or "{}")
    return None


COLLECTED_IN = {"problems", "errors", "reasons"}
"""Lists whose items an error message joins (`problems.append(...)`, then `raise InvalidSpec("; ".join(...))`)."""


def _messages(tree: ast.AST) -> list[ast.expr]:
    """The message expressions of `raise X(msg)`, `fail(msg)`, `problems.append(msg)` and of the return values
    of functions named `*problem*` (which say what is wrong for a raise elsewhere)."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            found.append(node.exc.args[0])
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if getattr(func, "id", None) == "fail" or (
                    isinstance(func, ast.Attribute) and func.attr == "append"
                    and getattr(func.value, "id", None) in COLLECTED_IN):
                found.append(node.args[0])
        elif isinstance(node, ast.FunctionDef) and "problem" in node.name:
            found.extend(ret.value for ret in ast.walk(node) if isinstance(ret, ast.Return) and ret.value)
    return found


def raised_templates() -> list[tuple[str, str]]:
    """(file, template) of every error message in the source tree."""
    found: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        for message in _messages(ast.parse(path.read_text(encoding="utf-8"))):
            text = _template(message)
            if text and text not in NOT_FOR_USERS:
                found.add((str(path.relative_to(SRC)), text))
    return sorted(found)


def _sample(template: str) -> str:
    parts = template.split("{}")
    return "".join(part + (f"V{i}" if i < len(parts) - 1 else "") for i, part in enumerate(parts))


def test_the_scan_finds_the_raise_sites() -> None:
    templates = {text for _, text in raised_templates()}
    assert len(templates) > 150
    assert "--sequence-parallel needs tp > 1" in templates


@pytest.mark.parametrize(("where", "template"), raised_templates())
def test_every_raised_message_has_a_chinese_translation(where: str, template: str) -> None:
    text = _sample(template)
    translated = i18n.translate(text, "zh")
    assert not english_words(translated), (
        f"{where}: add a Chinese line for this message to src/rigplan/i18n/zh.txt", template, translated)


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_every_bound_message_translates(name: str) -> None:
    bound = BOUNDS[name]
    for value in (float("nan"), bound.low - 1, bound.high * 2, "x", 1.5 if bound.integer else None):
        if value is None:
            continue
        try:
            check(name, value)
        except InvalidSpec as err:
            translated = i18n.translate(str(err), "zh")
            assert translated != str(err) and not english_words(translated), (str(err), translated)


def test_a_nested_message_is_translated_inside_its_frame() -> None:
    line = "rigplan: error: --micro-batch must be >= 1 (allowed 1 to 65,536); got 0"
    assert i18n.translate(line, "zh") == "rigplan: 错误: --micro-batch 必须 >= 1（允许 1 至 65,536）；收到 0"


def test_english_and_unknown_text_pass_through() -> None:
    assert i18n.translate("FITS", "en") == "FITS"
    assert i18n.translate("no template says this", "zh") == "no template says this"
    assert i18n.catalog("en") is None


@pytest.mark.parametrize(("given", "lang"), [("zh", "zh"), ("zh-CN", "zh"), ("zh_CN.UTF-8", "zh"), ("ZH-Hans", "zh"),
                                              ("en-US", "en"), ("fr", "en"), ("", "en"), (None, "en")])
def test_language_names_normalize(given: str | None, lang: str) -> None:
    assert i18n.normalize(given) == lang


@pytest.mark.parametrize(("header", "lang"), [("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("en-US,en;q=0.9,zh;q=0.8", "en"),
                                               ("fr-FR, zh;q=0.5", "zh"), ("zh;q=0, en", "en"), ("", "en"),
                                               ("*", "en"), ("zh;q=abc", "en")])
def test_accept_language_picks_the_first_language_rigplan_speaks(header: str, lang: str) -> None:
    assert i18n.from_accept_language(header) == lang


def test_flag_wins_over_environment_and_the_locale_is_not_read() -> None:
    assert i18n.resolve_language("en", {"RIGPLAN_LANG": "zh"}) == "en"
    assert i18n.resolve_language(None, {"RIGPLAN_LANG": "zh"}) == "zh"
    assert i18n.resolve_language(None, {"LANG": "zh_CN.UTF-8", "LC_ALL": "zh_CN.UTF-8"}) == "en"


def test_prose_fields_translate_and_codes_stay() -> None:
    data = {"fit": {"verdict": "fits"}, "assumptions": ["sequence length 4096 (default; set --seq)"],
            "violations": [{"code": "memory.exceeds_capacity", "message": "GPU-hours and prices must be non-negative"}]}
    out = i18n.translate_data(data, "zh")
    assert out["assumptions"] == ["序列长度 4096（默认；用 --seq 设置）"]
    assert out["violations"][0]["code"] == "memory.exceeds_capacity"
    assert out["violations"][0]["message"] == "GPU 小时数和价格不能为负"
    assert i18n.translate_data(data, "en") is data


EVIDENCE_PROPER_NAMES = ("MLPerf Training", "Together AI", "CUDA graph", "ModelZoo", "FlagPerf", "AutoModel", "Cisco")
"""Benchmark, vendor and product names the evidence lines quote, which stay as written in Chinese."""


def _evidence_lines() -> list[str]:
    from rigplan.flow import evidence

    return sorted(name for name in dir(evidence) if name.endswith("_EVIDENCE"))


@pytest.mark.parametrize("name", _evidence_lines())
def test_every_evidence_line_translates(name: str) -> None:
    """The validation evidence an estimate quotes (flow.evidence) is restated whenever the suite grows; its Chinese line
    must follow it, or the zh report falls back to English."""
    from rigplan.flow import evidence

    line = getattr(evidence, name)
    translated = i18n.translate(line, "zh")
    assert translated != line, f"{name}: restate its Chinese line in src/rigplan/i18n/zh.txt"
    names_left = translated
    for proper in EVIDENCE_PROPER_NAMES:
        names_left = names_left.replace(proper, " ")
    assert not english_words(names_left), (name, english_words(names_left))

