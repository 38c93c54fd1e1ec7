"""The rule registry: one function per rule, each with a stable code (`gpu.link`, `psu.capacity`, ...)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding

RuleFunc = Callable[[LintContext], list[Finding]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    code: str
    title: str
    func: RuleFunc

    def __call__(self, ctx: LintContext) -> list[Finding]:
        found = self.func(ctx)
        for f in found:
            if f.code != self.code:
                raise AssertionError(f"rule {self.code} emitted a finding with code {f.code}")
        return found


RULES: list[Rule] = []


def rule(code: str, title: str) -> Callable[[RuleFunc], RuleFunc]:
    """Register a rule function under a stable code (codes are part of the JSON contract)."""

    def register(func: RuleFunc) -> RuleFunc:
        if any(r.code == code for r in RULES):
            raise AssertionError(f"duplicate lint rule code {code}")
        RULES.append(Rule(code=code, title=title, func=func))
        return func

    return register
