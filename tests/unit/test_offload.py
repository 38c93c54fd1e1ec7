"""CPU offload costs time (estimate.offload): the host optimizer step and the copies over the host link at the
part's achievable PCIe rate, the weight shards of --offload all beyond what each micro-batch's compute hides."""

from __future__ import annotations

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.estimate.offload import (
    CPU_OPTIMIZER_BYTES_TOUCHED,
    HOST_MEMORY_BYTES_PER_S_PER_GPU,
    optimizer_offload_s,
    parameter_offload_s,
)
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest


def test_the_host_optimizer_step_and_its_copies_follow_the_formula() -> None:
    h100 = load_catalog().gpu_domain("h100-sxm")  # PCIe Gen5: 50 GB/s achievable
    job = Job(offload="optimizer", optimizer="adamw")
    params = 1e9
    cpu = params * CPU_OPTIMIZER_BYTES_TOUCHED["adamw"] / HOST_MEMORY_BYTES_PER_S_PER_GPU
    back = params * 2 / 50e9
    # gradients out (2 B each) hide behind a long backward, not behind a short one
    assert optimizer_offload_s(job, h100, params, backward_s=10.0) == pytest.approx(cpu + back)
    assert optimizer_offload_s(job, h100, params, backward_s=0.0) == pytest.approx(cpu + 2 * back)
    assert optimizer_offload_s(Job(), h100, params, backward_s=0.0) == 0.0
    a100 = load_catalog().gpu_domain("a100-80gb-sxm")  # Gen4: half the rate
    assert optimizer_offload_s(job, a100, params, backward_s=0.0) == pytest.approx(cpu + 2 * params * 2 / 25e9)


def test_offloaded_weights_cost_only_what_the_compute_does_not_hide() -> None:
    h100 = load_catalog().gpu_domain("h100-sxm")
    job = Job(offload="all")
    moved = 1e9 * 3 * 2 / 50e9  # forward and backward weights in, gradients out
    assert parameter_offload_s(job, h100, 1e9, compute_s=0.0) == pytest.approx(moved)
    assert parameter_offload_s(job, h100, 1e9, compute_s=10 * moved) == 0.0
    assert parameter_offload_s(Job(offload="optimizer"), h100, 1e9, compute_s=0.0) == 0.0


def test_an_offloaded_estimate_is_slower_and_says_where_the_time_goes() -> None:
    def run(offload: str) -> dict:
        return speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, zero=3, offload=offload,
                                              seq=4096, micro_batch=1, global_batch=8, tokens="1B")).to_dict()

    plain, optimizer, everything = run("none"), run("optimizer"), run("all")
    assert plain["breakdown"]["offload_s"] == 0.0
    assert optimizer["step_time_s"] > plain["step_time_s"]
    assert optimizer["breakdown"]["offload_s"] > 0 and optimizer["breakdown"]["optimizer_s"] == 0.0
    assert everything["step_time_s"] >= optimizer["step_time_s"]
