"""The memory suite (cases/memory.yaml): a case is a `MemoryRequest` and a published peak; see run.py."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rigplan import api
from rigplan.flow.request import MemoryRequest
from rigplan.validation.common import (
    TOLERANCE_BY_RELIABILITY,
    CaseResult,
    Reliability,
    SkippedRow,
    SourceRef,
    Status,
    _miss,
    _Strict,
    _unique_ids,
    _with_package_catalog,
)

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
        return _with_package_catalog(request)

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

