"""The MoE throughput suite (cases/moe.yaml): published mixture-of-experts training runs, each an
EstimateRequest with its measured tokens/s per GPU or step time, judged as the throughput suite
judges its cases (|predicted / measured - 1| <= THROUGHPUT_CASE_TOLERANCE, or a named known gap).

No group or suite median rule is enforced here; `rigplan validate --suite moe` prints the medians.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import Field, model_validator

from rigplan.validation.common import CaseResult, SkippedRow, _Strict, _unique_ids
from rigplan.validation.throughput_suite import ThroughputCase, evaluate_throughput_case


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
    """One MoE case, evaluated like a throughput case and reported under the 'moe' suite."""
    return replace(evaluate_throughput_case(case), suite="moe")
