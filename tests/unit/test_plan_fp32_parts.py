"""Parts without an fp32 figure in the catalog (Gaudi, Ascend, TPU, MLU) and jobs whose only fp32 GEMMs would be a
transformers MoE's routed experts: a dense model has none, so its plan runs on those parts; an MoE whose experts run
in fp32 (QLoRA after peft's k-bit preparation) is refused on them in one line and left out of a plan."""

from __future__ import annotations

import warnings

import pytest

from rigplan.errors import UnsupportedPrecision
from rigplan.flow.estimate import estimate
from rigplan.flow.plan import plan
from rigplan.flow.request import EstimateRequest, PlanRequest

NO_FP32 = ["gaudi3", "tpu-v5p", "ascend-910b"]


def test_dense_qlora_on_transformers_plans_on_parts_without_fp32() -> None:
    """Before, a dense model's expert rate read the fp32 peak (0 there): 0/0 FLOPs, a NaN step, a plan that failed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = plan(PlanRequest(model="llama-3.1-8b", method="qlora", framework="hf", tokens="50M", gpus_max=8,
                                  gpu=[*NO_FP32, "h100-sxm"]))
    assert {c.gpu for c in result.ranked} >= {"gaudi3", "h100-sxm"}


def test_fp32_experts_are_refused_where_the_part_has_no_fp32_rate() -> None:
    request = EstimateRequest(model="qwen3-30b-a3b", method="qlora", framework="hf", gpu="gaudi3", gpus=1, seq=2048)
    with pytest.raises(UnsupportedPrecision, match="no fp32 rate"):
        estimate(request)
    eager = request.model_copy(update={"experts_implementation": "eager"})
    assert estimate(eager).to_dict()["step_time_s"] > 0


def test_a_plan_leaves_those_parts_out() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = plan(PlanRequest(model="qwen3-30b-a3b", method="qlora", framework="hf", tokens="50M", gpus_max=8,
                                  gpu=[*NO_FP32, "h100-sxm"]))
    assert {c.gpu for c in result.ranked} == {"h100-sxm"}
    assert result.stats["infeasible_by_reason"].get("precision.unsupported", 0) >= len(NO_FP32)
