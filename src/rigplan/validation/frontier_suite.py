"""The frontier dense suites: dense training runs published in 2025-2026 on H100, H200, B200, B300, GB200 and
GB300, rows that are not in the shared validation set.

frontier (cases/frontier.yaml): NVIDIA Megatron-Bridge's 25.11 tables and torchtitan's H200 records. Each case
is an EstimateRequest with its measured tokens/s per GPU, judged as the throughput suite judges its cases
(|predicted / measured - 1| <= THROUGHPUT_CASE_TOLERANCE or a named known gap), and each group's median |error|
is held to THROUGHPUT_GROUP_MEDIAN_LIMIT.

dense_oos (cases/dense_oos.yaml): dense rows added out of sample, each estimated with rigplan as it stood
before the row was added and its first estimate kept in its notes; the same case rule, and no group rule, so
that a bias they show is reported by `rigplan validate --suite dense_oos` instead of being tuned away.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import Field, model_validator

from rigplan.validation.common import CaseResult, SkippedRow, _Strict, _unique_ids
from rigplan.validation.throughput_suite import ThroughputCase, evaluate_throughput_case


class FrontierCaseFile(_Strict):
    schema_version: Literal[1]
    suite: Literal["frontier"]
    description: str
    cases: list[ThroughputCase]
    skipped: list[SkippedRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ids(self) -> FrontierCaseFile:
        _unique_ids([c.id for c in self.cases] + [s.id for s in self.skipped])
        return self


class DenseOutOfSampleCaseFile(FrontierCaseFile):
    suite: Literal["dense_oos"]  # type: ignore[assignment]


def evaluate_frontier_case(case: ThroughputCase) -> CaseResult:
    """One frontier case, evaluated like a throughput case and reported under the 'frontier' suite."""
    return replace(evaluate_throughput_case(case), suite="frontier")


def evaluate_dense_oos_case(case: ThroughputCase) -> CaseResult:
    """One out-of-sample dense case, evaluated like a throughput case and reported under 'dense_oos'."""
    return replace(evaluate_throughput_case(case), suite="dense_oos")
