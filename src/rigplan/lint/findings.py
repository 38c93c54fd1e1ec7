"""Lint findings and the result of one lint run (frozen values; `.to_dict()` is the JSON of record)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One observation about a build: a stable code, a severity, a sentence with the numbers, the numbers."""

    code: str
    severity: Severity
    message: str
    values: dict[str, Any] = field(default_factory=dict)
    """Quantities behind the message, in base units (W, bytes, bytes/s, bit/s, s, USD/CNY)."""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "values": dict(self.values)}


def finding(code: str, severity: Severity, message: str, **values: Any) -> Finding:
    return Finding(code=code, severity=severity, message=message, values=values)


@dataclass(frozen=True, kw_only=True)
class LintResult:
    build: dict[str, Any]
    """id, name, category, nodes, GPUs of the linted build."""
    findings: tuple[Finding, ...]
    workloads: tuple[dict[str, Any], ...] = ()
    """The workloads checked (from --for or the build's claims), with their best layout."""
    assumptions: tuple[str, ...] = ()

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    def codes(self, severity: Severity | None = None) -> set[str]:
        return {f.code for f in self.findings if severity is None or f.severity == severity}

    def to_dict(self) -> dict[str, Any]:
        return {
            "build": dict(self.build),
            "ok": not self.has_errors,
            "summary": {"error": self.count("error"), "warning": self.count("warning"), "info": self.count("info")},
            "findings": [f.to_dict() for f in self.findings],
            "workloads": [dict(w) for w in self.workloads],
            "assumptions": list(self.assumptions),
        }
