"""The MoE throughput suite (cases/moe.yaml): published mixture-of-experts training runs, each an
EstimateRequest with its measured tokens/s per GPU or step time, evaluated as a throughput case and
judged by MOE_CASE_TOLERANCE (|predicted / measured - 1| <= 0.25, or a named known gap).

No group or suite median rule is enforced here; `rigplan validate --suite moe` prints the medians.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import Field, model_validator

from rigplan.validation.common import CaseResult, SkippedRow, _miss, _Strict, _unique_ids
from rigplan.validation.throughput_suite import ThroughputCase, evaluate_throughput_case

MOE_CASE_TOLERANCE = 0.25
"""Largest |predicted / measured - 1| of one MoE case: MoE routing, all-to-all and host pacing are
modelled with less published data behind them than the dense step; the dense suites hold 0.15."""


class MoECaseFile(_Strict):
    schema_version: Literal[1]
    suite: Literal["moe"]
    description: str
    cases: list[ThroughputCase]
    skipped: list[SkippedRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ids(self) -> MoECaseFile:
        _unique_ids([c.id for c in self.cases] + [s.id for s in self.skipped])
        return self


def evaluate_moe_case(case: ThroughputCase) -> CaseResult:
    """One MoE case, evaluated like a throughput case and reported under the 'moe' suite with its own
    tolerance."""
    result = evaluate_throughput_case(case)
    if result.error is None:
        return replace(result, suite="moe")
    status = "pass" if abs(result.error) <= MOE_CASE_TOLERANCE + 1e-12 else _miss(case.known_gap)
    return replace(result, suite="moe", tolerance=MOE_CASE_TOLERANCE, status=status)
