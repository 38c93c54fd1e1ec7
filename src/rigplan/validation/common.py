"""What every validation suite shares: case provenance, tolerances by source reliability, the result of one case.

May import: rigplan.errors, rigplan.flow.request (the requests cases carry).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from rigplan.flow.request import JobSpec

PACKAGE_DIR = Path(__file__).parent
CASES_DIR = PACKAGE_DIR / "cases"

Reliability = Literal["high", "medium-high", "medium", "low"]
TOLERANCE_BY_RELIABILITY: dict[str, float] = {"high": 0.15, "medium-high": 0.20, "medium": 0.25, "low": 0.30}
"""Relative tolerance per source reliability, set before looking at any result."""

Status = Literal["pass", "fail", "error", "gap"]
"""'gap': outside tolerance, and the case names the effect rigplan does not model (known_gap)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_Request = TypeVar("_Request", bound=JobSpec)


def _with_package_catalog(request: _Request) -> _Request:
    folders = [p if Path(p).is_absolute() else str(PACKAGE_DIR / p) for p in request.catalog]
    return request.model_copy(update={"catalog": folders})


class SourceRef(_Strict):
    """Provenance copied from the published-data entry."""

    title: str
    repo: str | None = None
    path: str | None = None
    commit: str | None = None
    url: str | None = None
    secondary: str | None = None


class SkippedRow(_Strict):
    """A published row that is not a case, and why."""

    id: str
    group: str
    reason: str



def _unique_ids(ids: Iterable[str]) -> None:
    seen: set[str] = set()
    for case_id in ids:
        if case_id in seen:
            raise ValueError(f"duplicate id '{case_id}'")
        seen.add(case_id)


@dataclass(frozen=True)
class CaseResult:
    """One case compared: predicted against measured, and whether it is within tolerance."""

    suite: str
    id: str
    group: str
    kind: str
    """What was measured: allocated / reserved / active / unspecified, or 'oom'."""
    expect: str
    unit: str
    measured: float | None
    predicted: float | None
    error: float | None
    """predicted / measured - 1 (expect: value), predicted / limit - 1 (expect: oom)."""
    tolerance: float | None
    status: Status
    compare: str
    reliability: str
    limit: float | None = None
    """Usable GPU memory, for expect: oom cases."""
    notes: tuple[str, ...] = ()
    detail: dict[str, float] = field(default_factory=dict)
    """The predicted breakdown (bytes by part) for display."""
    assumptions: tuple[str, ...] = ()
    message: str = ""

    known_gap: str | None = None
    regime: dict[str, str] = field(default_factory=dict)
    """An MoE case's regime labels (flow.regime.regime_of), empty for other cases."""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def failed(self) -> bool:
        return self.status in ("fail", "error")

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite, "id": self.id, "group": self.group, "kind": self.kind, "expect": self.expect,
            "unit": self.unit, "measured": self.measured, "predicted": self.predicted, "limit": self.limit,
            "error": self.error, "tolerance": self.tolerance, "status": self.status, "compare": self.compare,
            "reliability": self.reliability, "notes": list(self.notes), "detail": dict(self.detail),
            "assumptions": list(self.assumptions), "message": self.message, "known_gap": self.known_gap,
            "regime": dict(self.regime),
        }



def _miss(known_gap: str | None) -> Status:
    return "gap" if known_gap else "fail"

