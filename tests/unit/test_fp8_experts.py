"""--fp8-experts: torchao's MoE recipe, only the routed experts' grouped GEMMs in fp8 (MXFP8 on Blackwell), every
other linear, the saved activations and the weights' memory in bf16."""

from __future__ import annotations

import re

import pytest

from rigplan.errors import InvalidSpec
from rigplan.flow import estimate as speed
from rigplan.flow.memory import memory
from rigplan.flow.request import EstimateRequest, MemoryRequest

BASE = {"model": "mixtral-8x7b", "gpu": "b200", "gpus": 8, "ep": 8, "seq": 4096, "micro_batch": 4,
        "global_batch": 64, "framework": "torchtitan", "compile": True, "balanced_routing": True}


def test_only_the_expert_gemms_speed_up_and_memory_stays_bf16() -> None:
    bf16 = speed.estimate(EstimateRequest(**BASE))
    experts = speed.estimate(EstimateRequest(**BASE, fp8_experts=True, fp8_recipe="mxfp8"))
    everything = speed.estimate(EstimateRequest(**{**BASE, "precision": "fp8", "fp8_recipe": "mxfp8"}))
    assert experts.setup.job.precision == "bf16-mixed" and experts.setup.job.fp8_experts
    # faster than bf16 at the expert GEMMs, slower than fp8 on every linear
    assert everything.step.step_time_s < experts.step.step_time_s < bf16.step.step_time_s
    assert any(a.startswith("fp8 experts (mxfp8)") for a in experts.setup.assumptions)
    mem_bf16 = memory(MemoryRequest(**{k: v for k, v in BASE.items() if k != "global_batch"}))
    mem_experts = memory(MemoryRequest(**{k: v for k, v in BASE.items() if k != "global_batch"}, fp8_experts=True,
                                       fp8_recipe="mxfp8"))
    assert mem_experts.breakdown.total_bytes == pytest.approx(mem_bf16.breakdown.total_bytes)


@pytest.mark.parametrize(("changes", "message"), [
    ({"model": "llama-3.1-8b", "ep": 1}, "this model has none"),
    ({"precision": "fp8"}, "not fp8"),
    ({"fp8_recipe": "delayed"}, "give --fp8-recipe mxfp8"),
    ({"gpu": "h100-sxm"}, "no block-scaled (MX) fp8 tensor cores"),
])
def test_what_it_cannot_run_is_one_clear_line(changes: dict[str, object], message: str) -> None:
    request = {**BASE, "fp8_experts": True, "fp8_recipe": "mxfp8", **changes}
    with pytest.raises(InvalidSpec, match=re.escape(message)) as info:
        speed.estimate(EstimateRequest(**request))
    assert "\n" not in str(info.value)
