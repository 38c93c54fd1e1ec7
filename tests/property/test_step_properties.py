"""Invariants of the step-time model (hypothesis)."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.step import step_time

GPUS = ("a100-80gb-sxm", "h100-sxm", "b200", "rtx-4090", "mi300x", "l40s")


def gpu(gpu_id: str):  # type: ignore[no-untyped-def]
    return load_catalog().gpu(gpu_id).to_domain()


@st.composite
def models(draw: st.DrawFn) -> Architecture:
    heads = draw(st.sampled_from([16, 32, 64]))
    return Architecture(id="p", num_layers=draw(st.sampled_from([16, 32, 64])), hidden=heads * 128, num_heads=heads,
                        num_kv_heads=draw(st.sampled_from([8, heads])), ffn=draw(st.sampled_from([8192, 14336, 28672])),
                        vocab=draw(st.sampled_from([32000, 128256])))


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    return Job(seq_len=draw(st.sampled_from([1024, 2048, 4096, 8192])), micro_batch=draw(st.sampled_from([1, 2, 4])),
               recompute=draw(st.sampled_from(["none", "selective", "op", "full"])),
               precision=draw(st.sampled_from(["bf16-mixed", "fp8"])),
               kernels=draw(st.sampled_from(["fused", "eager"])), method=draw(st.sampled_from(["full", "lora"])))


@settings(max_examples=80, deadline=None)
@given(arch=models(), job=jobs(), gpu_id=st.sampled_from(GPUS), tp=st.sampled_from([1, 2, 8]),
       pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 4, 32]), zero=st.sampled_from([0, 1, 3]))
def test_step_time_is_at_least_pure_compute(arch: Architecture, job: Job, gpu_id: str, tp: int, pp: int, dp: int,
                                             zero: int) -> None:
    layout = Layout(tp=tp, pp=pp, dp=dp, zero=zero)  # type: ignore[arg-type]
    r = step_time(arch, job, layout, gpu(gpu_id), global_batch=job.micro_batch * dp * 8)
    assert float(r.step_time_s) >= float(r.compute_s) > 0
    parts = float(r.compute_s + r.bubble_s + r.exposed_comm_s + r.optimizer_s)
    assert abs(float(r.step_time_s) - parts) <= 1e-9 * parts


@settings(max_examples=80, deadline=None)
@given(arch=models(), job=jobs(), gpu_id=st.sampled_from(GPUS), tp=st.sampled_from([1, 2, 8]),
       zero=st.sampled_from([0, 1, 3]), dp=st.sampled_from([1, 2, 8, 16]))
def test_more_gpus_at_fixed_work_never_reduce_communication(arch: Architecture, job: Job, gpu_id: str, tp: int,
                                                           zero: int, dp: int) -> None:
    """Doubling dp with the same micro-batches per GPU: per-step communication does not shrink."""
    device = gpu(gpu_id)
    small = step_time(arch, job, Layout(tp=tp, dp=dp, zero=zero), device,  # type: ignore[arg-type]
                      global_batch=job.micro_batch * dp * 4)
    large = step_time(arch, job, Layout(tp=tp, dp=2 * dp, zero=zero), device,  # type: ignore[arg-type]
                      global_batch=job.micro_batch * 2 * dp * 4)
    assert float(large.exposed_comm_s) >= float(small.exposed_comm_s) * (1 - 1e-9)


@settings(max_examples=60, deadline=None)
@given(arch=models(), job=jobs(), gpu_id=st.sampled_from(GPUS), tp=st.sampled_from([1, 2, 8]))
def test_tokens_per_second_grows_with_micro_batch(arch: Architecture, job: Job, gpu_id: str, tp: int) -> None:
    """At a fixed number of micro-batches per step, a larger micro-batch never lowers throughput."""
    device = gpu(gpu_id)
    rates = []
    for mb in (1, 2, 4, 8):
        j = replace(job, micro_batch=mb)
        r = step_time(arch, j, Layout(tp=tp, dp=8), device, global_batch=mb * 8 * 4)
        rates.append(float(r.tokens_per_step / r.step_time_s))
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(rates))
