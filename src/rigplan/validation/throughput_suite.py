"""The throughput suite (cases/throughput.yaml): a case is an `EstimateRequest` and a published rate; see run.py."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rigplan.flow import estimate as speed
from rigplan.flow.regime import setup_regime
from rigplan.flow.request import EstimateRequest
from rigplan.validation.common import (
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

THROUGHPUT_CASE_TOLERANCE = 0.15
"""Largest |predicted / measured - 1| of one throughput case (every case, whatever its source)."""
THROUGHPUT_GROUP_MEDIAN_LIMIT = 0.08
"""Largest median |error| of one throughput group."""
THROUGHPUT_GROUP_SIGNED_LIMIT = 0.05
"""Largest |median signed error| of one throughput group: a group whose errors lean one way by more
than this is missing a mechanism, even when each case is inside its tolerance."""
THROUGHPUT_SUITE_MEDIAN_LIMIT = 0.07
"""Largest median |error| over the whole throughput suite."""

ThroughputCompare = Literal["tokens_per_s_per_gpu", "step_time_s", "megatron_tflops_per_gpu"]
ThroughputMetric = Literal["tokens_per_sec_per_gpu", "step_time_s", "tflops_per_gpu"]
THROUGHPUT_COMPARISONS: dict[str, tuple[str, str]] = {
    "tokens_per_s_per_gpu": ("tokens_per_sec_per_gpu", "tokens/s/GPU"),
    "step_time_s": ("step_time_s", "s"),
    "megatron_tflops_per_gpu": ("tflops_per_gpu", "TFLOP/s/GPU"),
}
"""compare -> the published metric and unit it is compared with."""

STEP_DETAIL = ("step_time_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "hfu")


class MeasuredThroughput(_Strict):
    value: float = Field(gt=0)
    """In `unit`: tokens/s per GPU, seconds per step, or TFLOP/s per GPU."""
    unit: Literal["tokens/s/GPU", "s", "TFLOP/s/GPU"]
    metric: ThroughputMetric
    """The published field (shared/validation `measured.<metric>`)."""
    as_printed: str


class ThroughputCase(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
    group: str
    source: SourceRef
    reliability: Reliability
    request: EstimateRequest
    measured: MeasuredThroughput
    compare: ThroughputCompare
    known_gap: str | None = None
    """An effect in the measurement that rigplan does not model, as the source documents it; a case
    outside tolerance with a known gap is reported as 'gap', shown, and does not fail the suite."""
    notes: list[str] = Field(default_factory=list)

    @field_validator("request")
    @classmethod
    def _resolve_catalog(cls, request: EstimateRequest) -> EstimateRequest:
        return _with_package_catalog(request)

    @model_validator(mode="after")
    def _consistent(self) -> ThroughputCase:
        metric, unit = THROUGHPUT_COMPARISONS[self.compare]
        if (self.measured.metric, self.measured.unit) != (metric, unit):
            raise ValueError(f"compare: {self.compare} needs measured metric {metric} in {unit}")
        if self.compare == "megatron_tflops_per_gpu" and not self.request.global_batch:
            raise ValueError("megatron_tflops_per_gpu needs request.global_batch (the formula's B)")
        return self


class ThroughputCaseFile(_Strict):
    schema_version: Literal[1]
    suite: Literal["throughput"]
    description: str
    cases: list[ThroughputCase]
    skipped: list[SkippedRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ids(self) -> ThroughputCaseFile:
        _unique_ids([c.id for c in self.cases] + [s.id for s in self.skipped])
        return self


def megatron_flop_per_step(*, global_batch: float, seq_len: float, layers: float, hidden: float,
                           vocab: float) -> float:
    """FLOPs per training step as Narayanan et al. 2021 count them (arXiv 2104.04473, Sec. 5.1, eq. 3):

        F = 96 · B · s · l · h² · (1 + s / (6h) + V / (16 · l · h))

    for a GPT model with full activation recomputation (one extra forward pass is counted), global
    batch B sequences of length s, l layers, hidden h and vocabulary V. Their Table 1 reports
    F / (iteration time · GPUs) as the achieved TFLOP/s per GPU.
    """
    return 96.0 * global_batch * seq_len * layers * hidden**2 * (
        1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden))


def megatron_tflops_per_gpu(result: speed.EstimateResult) -> float:
    """rigplan's predicted step time expressed as Narayanan et al.'s TFLOP/s per GPU (their FLOP
    definition, not rigplan's model or hardware FLOPs), for comparison with their Table 1."""
    arch, job = result.setup.arch, result.setup.job
    flop = megatron_flop_per_step(global_batch=job.global_batch, seq_len=job.seq_len, layers=arch.num_layers,
                                  hidden=arch.hidden, vocab=arch.vocab)
    return flop / float(result.step.step_time_s) / result.num_gpus / 1e12


def predicted_throughput(result: speed.EstimateResult, compare: str) -> float:
    """The prediction that `compare` names, from one estimate."""
    if compare == "megatron_tflops_per_gpu":
        return megatron_tflops_per_gpu(result)
    return float(result.to_dict()[compare])


def evaluate_throughput_case(case: ThroughputCase) -> CaseResult:
    base: dict[str, Any] = {
        "suite": "throughput", "id": case.id, "group": case.group, "expect": "value", "unit": case.measured.unit,
        "kind": case.measured.metric, "measured": case.measured.value, "tolerance": THROUGHPUT_CASE_TOLERANCE,
        "compare": case.compare, "reliability": case.reliability, "notes": tuple(case.notes),
        "known_gap": case.known_gap,
    }
    try:
        result = speed.estimate(case.request)
        data = result.to_dict()
        predicted = predicted_throughput(result, case.compare)
    except Exception as err:  # a case that cannot be estimated is reported, not raised
        return CaseResult(**base, predicted=None, error=None, status="error", message=f"{type(err).__name__}: {err}")
    detail = {key: float(data[key]) for key in STEP_DETAIL}
    detail.update({f"{k}": float(v) for k, v in data["breakdown"].items() if not isinstance(v, dict)})
    error = predicted / case.measured.value - 1
    status: Status = "pass" if abs(error) <= THROUGHPUT_CASE_TOLERANCE + 1e-12 else _miss(case.known_gap)
    regime = setup_regime(result.setup, float(result.step.host_load)) if result.setup.arch.moe is not None else {}
    return CaseResult(**base, predicted=predicted, error=error, status=status, detail=detail,
                      assumptions=tuple(data["assumptions"]), regime=regime)

