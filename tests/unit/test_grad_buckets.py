"""Gradient buckets (Job.grad_bucket_params, Megatron --ddp-bucket-size): the last bucket's reduction and the first
bucket's all-gather of a step are exposed (estimate.step)."""

from __future__ import annotations

import pytest

from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest

BASE = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 16, "gpus_per_node": 8, "micro_batch": 1,
        "global_batch": 16, "zero": 1, "framework": "nemo", "step_overhead_ms": 0.0}


def _dp(**extra: object) -> dict[str, float]:
    result = speed.estimate(EstimateRequest(**{**BASE, **extra})).to_dict(False)
    return result["breakdown"]["comm_by_axis"]["dp"] | {"step_time_s": result["step_time_s"]}


def test_no_bucket_keeps_one_layer_share_exposed() -> None:
    given_none = _dp()
    assert given_none["total_s"] > 0 and given_none["exposed_s"] < given_none["total_s"] / 10


def test_a_bucket_as_large_as_the_buffer_exposes_the_whole_sync() -> None:
    whole = _dp(grad_bucket_params=1e11)
    assert whole["exposed_s"] == pytest.approx(whole["total_s"], rel=1e-6)


def test_exposure_grows_with_the_bucket() -> None:
    sizes = (0.0, 4e7, 2e8, 7.68e8, 8e9)
    exposed = [_dp(grad_bucket_params=b)["exposed_s"] if b else _dp()["exposed_s"] for b in sizes]
    assert exposed == sorted(exposed) and exposed[-1] > exposed[0]
    steps = [_dp(grad_bucket_params=b)["step_time_s"] if b else _dp()["step_time_s"] for b in sizes]
    assert steps == sorted(steps)
