"""Load validation cases, run rigplan's estimators on them, compare with the measurements.

A case file is YAML with a top-level `suite` (which schema and evaluator apply), `cases` and
`skipped` (published rows that could not become cases, each with its reason). Unknown keys are
errors everywhere, including inside `request`, which is a `MemoryRequest` as the CLI and the API
build it.

Pass/fail:
  - expect: value - |predicted / measured - 1| <= tolerance, where `predicted` is the breakdown
    field named by `compare` (allocated_bytes or reserved_bytes). The tolerance is fixed a priori
    by the source's reliability (TOLERANCE_BY_RELIABILITY) and checked on load, so it cannot be
    tuned per case.
  - expect: oom - the run went out of memory: pass when rigplan's predicted total_bytes (what must
    fit on the device) exceeds the GPU's usable memory. The error shown is predicted / usable - 1.

Relative paths in `request.catalog` are resolved against this package's folder, so the overlay
of validation-only models (`models/`) works wherever the package is installed.

Adding a suite (e.g. throughput: step time, tokens/s): write its case and file schemas and an
evaluator returning CaseResult, and register a Suite in SUITES; `rigplan validate --suite` and
the summaries pick it up.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rigplan import api
from rigplan.errors import InvalidSpec
from rigplan.requests import MemoryRequest

PACKAGE_DIR = Path(__file__).parent
CASES_DIR = PACKAGE_DIR / "cases"

Reliability = Literal["high", "medium-high", "medium", "low"]
TOLERANCE_BY_RELIABILITY: dict[str, float] = {"high": 0.15, "medium-high": 0.20, "medium": 0.25, "low": 0.30}
"""Relative tolerance per source reliability, set before looking at any result."""

MemoryKind = Literal["allocated", "reserved", "active", "unspecified"]
COMPARABLE_FIELDS: dict[str, frozenset[str]] = {
    "allocated": frozenset({"allocated_bytes"}),
    "active": frozenset({"allocated_bytes"}),  # active blocks ~ allocated (torch memory_stats)
    "reserved": frozenset({"reserved_bytes"}),
    "unspecified": frozenset({"allocated_bytes", "reserved_bytes"}),
}
"""Which predicted field may be compared with each measured memory kind (never total_bytes)."""

BREAKDOWN_PARTS = (
    "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "logits_bytes", "transient_bytes",
    "cuda_context_bytes", "nccl_bytes", "fragmentation_bytes", "allocated_bytes", "reserved_bytes", "total_bytes",
)

Status = Literal["pass", "fail", "error", "gap"]
"""'gap': outside tolerance, and the case names the effect rigplan does not model (known_gap)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class MeasuredMemory(_Strict):
    bytes: float | None = Field(None, gt=0)
    """Peak memory in bytes (GiB x 2**30 or GB x 1e9 as the source printed it); null for OOM rows."""
    kind: MemoryKind
    as_printed: str
    """The value exactly as the source prints it, with its unit."""


class MemoryCase(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
    group: str
    source: SourceRef
    reliability: Reliability
    expect: Literal["value", "oom"] = "value"
    request: MemoryRequest
    measured: MeasuredMemory
    compare: Literal["allocated_bytes", "reserved_bytes"] | None = None
    tolerance: float | None = None
    known_gap: str | None = None
    """An effect in the measurement that rigplan does not model (e.g. a checkpoint-loading peak); a case
    outside tolerance with a known gap is reported as 'gap', shown, and does not fail the suite."""
    notes: list[str] = Field(default_factory=list)

    @field_validator("request")
    @classmethod
    def _resolve_catalog(cls, request: MemoryRequest) -> MemoryRequest:
        folders = [p if Path(p).is_absolute() else str(PACKAGE_DIR / p) for p in request.catalog]
        return request.model_copy(update={"catalog": folders})

    @model_validator(mode="after")
    def _consistent(self) -> MemoryCase:
        if self.expect == "oom":
            if self.measured.bytes is not None or self.compare is not None or self.tolerance is not None:
                raise ValueError("an expect: oom case has no measured bytes, compare or tolerance")
            return self
        if self.measured.bytes is None:
            raise ValueError("measured.bytes is required (or set expect: oom)")
        if self.compare is None or self.compare not in COMPARABLE_FIELDS[self.measured.kind]:
            allowed = " or ".join(sorted(COMPARABLE_FIELDS[self.measured.kind]))
            raise ValueError(f"compare must be {allowed} for measured kind '{self.measured.kind}'")
        expected = TOLERANCE_BY_RELIABILITY[self.reliability]
        if self.tolerance is None or not math.isclose(self.tolerance, expected):
            raise ValueError(f"tolerance must be {expected} for reliability '{self.reliability}' (set a priori)")
        return self


def _unique_ids(ids: Iterable[str]) -> None:
    seen: set[str] = set()
    for case_id in ids:
        if case_id in seen:
            raise ValueError(f"duplicate id '{case_id}'")
        seen.add(case_id)


class MemoryCaseFile(_Strict):
    schema_version: Literal[1]
    suite: Literal["memory"]
    description: str
    cases: list[MemoryCase]
    skipped: list[SkippedRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ids(self) -> MemoryCaseFile:
        _unique_ids([c.id for c in self.cases] + [s.id for s in self.skipped])
        return self


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
        }


@dataclass(frozen=True)
class GroupSummary:
    suite: str
    group: str
    n: int
    passed: int
    compared: int
    """Cases with a measured value (expect: value) that produced a prediction."""
    median_abs_error: float | None
    worst_abs_error: float | None
    worst_id: str | None
    median_error: float | None
    """Signed median of predicted / measured - 1: > 0 means rigplan over-predicts."""

    gaps: int = 0

    @property
    def failed(self) -> int:
        return self.n - self.passed - self.gaps

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "group": self.group, "n": self.n, "passed": self.passed, "failed": self.failed,
                "gaps": self.gaps,
                "compared": self.compared, "median_abs_error": self.median_abs_error,
                "worst_abs_error": self.worst_abs_error, "worst_id": self.worst_id, "median_error": self.median_error}


def evaluate_memory_case(case: MemoryCase) -> CaseResult:
    base: dict[str, Any] = {
        "suite": "memory", "id": case.id, "group": case.group, "expect": case.expect, "unit": "bytes",
        "kind": "oom" if case.expect == "oom" else case.measured.kind, "measured": case.measured.bytes,
        "tolerance": case.tolerance, "compare": case.compare or "total_bytes > usable",
        "reliability": case.reliability, "notes": tuple(case.notes), "known_gap": case.known_gap,
    }
    try:
        result = api.memory(case.request)
    except Exception as err:  # a case that cannot be estimated is reported, not raised
        return CaseResult(**base, predicted=None, error=None, status="error",
                          message=f"{type(err).__name__}: {err}")
    breakdown = result.breakdown
    detail = {part: float(getattr(breakdown, part)) for part in BREAKDOWN_PARTS}
    base.update(detail=detail, assumptions=tuple(result.setup.assumptions))
    if case.expect == "oom":
        predicted = float(breakdown.total_bytes)
        limit = float(result.usable_bytes)
        return CaseResult(**base, predicted=predicted, limit=limit, error=predicted / limit - 1,
                          status="pass" if predicted > limit else _miss(case.known_gap))
    assert case.compare is not None and case.measured.bytes is not None and case.tolerance is not None
    predicted = float(getattr(breakdown, case.compare))
    error = predicted / case.measured.bytes - 1
    status: Status = "pass" if abs(error) <= case.tolerance + 1e-12 else _miss(case.known_gap)
    return CaseResult(**base, predicted=predicted, error=error, status=status)


def _miss(known_gap: str | None) -> Status:
    return "gap" if known_gap else "fail"


@dataclass(frozen=True)
class Suite:
    """A family of cases: its default file, its file schema and its evaluator."""

    name: str
    default_file: Path
    file_model: type[BaseModel]
    evaluate: Callable[[Any], CaseResult]


SUITES: dict[str, Suite] = {
    "memory": Suite("memory", CASES_DIR / "memory.yaml", MemoryCaseFile, evaluate_memory_case),
}


def _format_error(path: Path, err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(file)"
    return f"{path}: {where}: {first['msg']} ({err.error_count()} problem(s))"


def load_case_file(path: str | Path) -> Any:
    """Read and validate one case file; the schema comes from its `suite` key."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidSpec(f"{path}: cannot read case file ({str(exc).splitlines()[0]})") from exc
    if not isinstance(raw, dict) or raw.get("suite") not in SUITES:
        raise InvalidSpec(f"{path}: a case file is a mapping with suite: one of {', '.join(SUITES)}")
    try:
        return SUITES[raw["suite"]].file_model.model_validate(raw)
    except ValidationError as exc:
        raise InvalidSpec(_format_error(path, exc)) from exc


def select_cases(cases: Sequence[Any], group: str | None = None, case: str | None = None) -> list[Any]:
    """Cases whose group contains `group`, and whose id is `case` (or contains it, if none is equal)."""
    chosen = [c for c in cases if group is None or group.lower() in c.group.lower()]
    if case is not None:
        exact = [c for c in chosen if c.id == case]
        chosen = exact or [c for c in chosen if case.lower() in c.id.lower()]
    return chosen


def run_cases(case_file: Any, group: str | None = None, case: str | None = None) -> list[CaseResult]:
    evaluate = SUITES[case_file.suite].evaluate
    return [evaluate(c) for c in select_cases(case_file.cases, group, case)]


def suite_names(suite: str) -> list[str]:
    if suite == "all":
        return list(SUITES)
    if suite not in SUITES:
        raise InvalidSpec(f"unknown suite '{suite}'; choose from {', '.join([*SUITES, 'all'])}")
    return [suite]


def run_suite(suite: str = "memory", group: str | None = None, case: str | None = None,
              cases_file: str | Path | None = None) -> list[CaseResult]:
    """Run one suite ('all' for every registered one), or the cases of one explicit file."""
    if cases_file is not None:
        return run_cases(load_case_file(cases_file), group, case)
    results: list[CaseResult] = []
    for name in suite_names(suite):
        results.extend(run_cases(load_case_file(SUITES[name].default_file), group, case))
    return results


def skipped_rows(suite: str = "memory", cases_file: str | Path | None = None) -> list[SkippedRow]:
    files = [cases_file] if cases_file is not None else [SUITES[n].default_file for n in suite_names(suite)]
    rows: list[SkippedRow] = []
    for path in files:
        rows.extend(load_case_file(path).skipped)
    return rows


def summarize(results: Iterable[CaseResult]) -> list[GroupSummary]:
    """Per (suite, group): cases, passes, and the median and worst |error| of the value cases."""
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for result in results:
        groups.setdefault((result.suite, result.group), []).append(result)
    summaries = []
    for (suite, group), members in groups.items():
        compared = [r for r in members if r.expect == "value" and r.error is not None]
        errors = [abs(r.error) for r in compared if r.error is not None]
        worst = max(compared, key=lambda r: abs(r.error or 0.0)) if compared else None
        summaries.append(GroupSummary(
            suite=suite, group=group, n=len(members), passed=sum(r.passed for r in members),
            gaps=sum(r.status == "gap" for r in members),
            compared=len(compared),
            median_abs_error=statistics.median(errors) if errors else None,
            worst_abs_error=max(errors) if errors else None,
            worst_id=worst.id if worst else None,
            median_error=statistics.median([r.error for r in compared if r.error is not None]) if compared else None,
        ))
    return summaries
