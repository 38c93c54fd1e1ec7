"""Every lint finding the rule tests provoke (tests/unit/test_lint_rules.py: each rule on crafted good and bad
builds) reads in Chinese: only numbers, units, names, flags and the build record's own words stay as written."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest
import test_lint_rules as rule_tests

from rigplan import i18n

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from lang_check import english_words


def provoked_findings(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The findings of every test of test_lint_rules.py (run again here, their own checks included)."""
    found: list[Any] = []
    real_run = rule_tests.run

    def recording(code: str, build: dict[str, Any], **kw: Any) -> list[Any]:
        result = real_run(code, build, **kw)
        found.extend(result)
        return result

    monkeypatch.setattr(rule_tests, "run", recording)
    for name, test in inspect.getmembers(rule_tests, inspect.isfunction):
        if not name.startswith("test_"):
            continue
        params = inspect.signature(test).parameters
        if not params:
            test()
        elif list(params) == ["code"]:
            for code in sorted(rule_tests.BY_CODE):
                test(code)
    return found


def test_every_provoked_finding_is_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = provoked_findings(monkeypatch)
    codes = {f.code for f in findings}
    assert len(findings) > 60 and {"psu.capacity", "psu.redundancy", "cooling.airflow", "power.rack",
                                   "memory.host_ram", "network.scale_out", "storage.checkpoint",
                                   "workload.fit", "workload.time", "budget.price"} <= codes
    untranslated = []
    for f in findings:
        text = i18n.translate(f.message, "zh")
        if f.code == "claim.unverifiable":  # the claim is quoted as the build record has it
            text = text.replace(f.values["text"], " ")
        if english_words(text):
            untranslated.append((f.code, f.message, text))
    assert not untranslated, untranslated
