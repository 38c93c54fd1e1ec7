"""YaRN's attention factor and Megatron-Core's unfused rotary: gpt-oss's rotary costs the unfused ops' traffic and
kernels in a Megatron-Core stack (--rope-factor-unfused, set by the megatron and nemo presets), nothing changes for
models without the factor or stacks that take it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.estimate import elementwise
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest


def _arch(model: str):  # type: ignore[no-untyped-def]
    return load_catalog().model_domain(model)


def test_the_catalog_carries_gpt_oss_yarn_factor_and_no_other() -> None:
    catalog = load_catalog()
    assert _arch("gpt-oss-120b").rope_attention_factor == pytest.approx(1.3466, abs=1e-4)
    assert _arch("gpt-oss-20b").rope_attention_factor == pytest.approx(1.3466, abs=1e-4)
    others = [m for m in catalog.models if not m.startswith("gpt-oss") and _arch(m).rope_attention_factor != 1.0]
    assert others == []  # DeepSeek-V3 and Kimi K2 use YaRN with mscale = mscale_all_dim: factor 1


def test_unfused_rotary_moves_the_counted_ops_bytes_and_kernels() -> None:
    arch = _arch("gpt-oss-120b")
    fused = Job(kernels="fused")
    unfused = replace(fused, rope_factor_unfused=True)
    assert elementwise.rope_unfused_for_factor(arch, unfused) and not elementwise.rope_unfused_for_factor(arch, fused)
    _, split_fused = elementwise.elementwise_bytes_per_token(arch, fused)
    _, split_unfused = elementwise.elementwise_bytes_per_token(arch, unfused)
    qk = arch.num_heads * arch.dim_per_head + arch.kv_heads * arch.dim_per_head
    rope_fused = 2 * qk * fused.compute_dtype_bytes  # read and write q and k once
    assert split_unfused - split_fused == pytest.approx(rope_fused * (25.0 / 6.0 - 1.0))
    assert elementwise.kernels_per_layer(arch, unfused) == elementwise.kernels_per_layer(arch, fused) + 23.0


@pytest.mark.parametrize(("model", "job"), [
    ("qwen3-30b-a3b", Job(kernels="fused", rope_factor_unfused=True)),  # no YaRN factor
    ("gpt-oss-120b", Job(kernels="eager", rope_factor_unfused=True)),  # eager rotary is charged as eager already
])
def test_no_extra_charge_without_the_factor_or_outside_the_fused_stack(model: str, job: Job) -> None:
    arch = _arch(model)
    assert not elementwise.rope_unfused_for_factor(arch, job)
    assert elementwise.elementwise_bytes_per_token(arch, job) == elementwise.elementwise_bytes_per_token(
        arch, replace(job, rope_factor_unfused=False))


def test_megatron_presets_charge_it_and_the_switch_turns_it_off() -> None:
    base = {"gpu": "b200", "gpus": 64, "ep": 8, "seq": 4096, "micro_batch": 4, "global_batch": 1280,
            "framework": "nemo"}
    on = speed.estimate(EstimateRequest(model="gpt-oss-120b", **base))
    off = speed.estimate(EstimateRequest(model="gpt-oss-120b", rope_factor_unfused=False, **base))
    assert on.setup.job.rope_factor_unfused and not off.setup.job.rope_factor_unfused
    assert on.step.step_time_s > off.step.step_time_s
    qwen_on = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", **base))
    qwen_off = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", rope_factor_unfused=False, **base))
    assert qwen_on.step.step_time_s == pytest.approx(qwen_off.step.step_time_s)


def test_the_estimate_says_when_it_charges_the_unfused_rotary() -> None:
    base = {"gpu": "b200", "gpus": 64, "ep": 8, "framework": "nemo"}
    shown = speed.estimate(EstimateRequest(model="gpt-oss-120b", **base)).setup.assumptions
    assert any(a.startswith("YaRN rotary (cos and sin scaled by 1.3466)") for a in shown)
    for request in (EstimateRequest(model="gpt-oss-120b", rope_factor_unfused=False, **base),
                    EstimateRequest(model="qwen3-30b-a3b", **base)):
        assert not any(a.startswith("YaRN rotary") for a in speed.estimate(request).setup.assumptions)
