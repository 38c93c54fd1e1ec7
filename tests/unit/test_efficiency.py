"""Efficiency mechanisms: power-limited clock, attention kernels, eager traffic, fp8 casts."""

from __future__ import annotations

from dataclasses import replace

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.efficiency import attention_efficiency, attention_kernel_for, clock_fraction, efficiency_for
from rigplan.estimate.step import elementwise_bytes_per_token, fp8_cast_bytes_per_token, step_time


def _gpu(gpu_id: str):  # type: ignore[no-untyped-def]
    return load_catalog().gpu(gpu_id).to_domain()


def test_power_cap_lowers_the_sustained_clock_by_the_square_root_law() -> None:
    full, capped = _gpu("h100-sxm"), _gpu("h100-sxm-96gb-500w")
    assert clock_fraction(full) == 1.0
    # ((500 - 70) / (700 - 70)) ** (1/2)
    assert abs(clock_fraction(capped) - (430 / 630) ** 0.5) < 1e-9
    # 600 W: 8.3% slower, nearer the reported 10-15% step-time loss at that cap than the cube-root law's 5.6%
    assert abs(1 - clock_fraction(replace(full, power_limit_w=600.0)) - 0.083) < 0.002
    arch = load_catalog().model("llama-3.1-8b").to_domain()
    job = Job(seq_len=8192, micro_batch=1, kernels="eager")
    fast = step_time(arch, job, Layout(dp=8, zero=3), full, global_batch=8)
    slow = step_time(arch, job, Layout(dp=8, zero=3), replace(full, power_limit_w=500.0), global_batch=8)
    assert float(slow.compute_s) > 1.1 * float(fast.compute_s)


def test_fused_stack_picks_cudnn_on_hopper_and_requested_kernels_win() -> None:
    hopper = efficiency_for(_gpu("h100-sxm"))
    assert attention_kernel_for(hopper, "fused") == "cudnn"
    assert attention_kernel_for(hopper, "eager") == "sdpa"
    assert attention_kernel_for(hopper, "eager", "fa3") == "fa3"
    ampere = efficiency_for(_gpu("a100-80gb-sxm"))
    assert attention_kernel_for(ampere, "fused", "fa3") == "fa2"  # no FA3 kernels before Hopper
    short = float(attention_efficiency(hopper, "fa3", 512, 128.0))
    long = float(attention_efficiency(hopper, "fa3", 16384, 128.0))
    assert short < long <= hopper.attention["fa3"].max_fraction


def test_eager_traffic_counts_rmsnorm_and_rope_and_compile_removes_it() -> None:
    llama = load_catalog().model("llama-3.1-8b").to_domain()
    eager = sum(elementwise_bytes_per_token(llama, Job(kernels="eager")))
    fused = sum(elementwise_bytes_per_token(llama, Job(kernels="fused")))
    compiled = sum(elementwise_bytes_per_token(llama, Job(kernels="eager", compile=True)))
    assert eager > 2 * fused
    assert compiled == fused
    layernorm = llama.with_overrides(norm="layernorm", positions="learned", mlp="plain")
    assert sum(elementwise_bytes_per_token(layernorm, Job(kernels="eager"))) == sum(
        elementwise_bytes_per_token(layernorm, Job(kernels="fused")))


def test_fp8_current_scaling_reads_more_than_delayed() -> None:
    llama = load_catalog().model("llama-3.1-8b").to_domain()
    delayed = float(fp8_cast_bytes_per_token(llama, Job(precision="fp8"), 1.0))
    current = float(fp8_cast_bytes_per_token(llama, Job(precision="fp8", fp8_recipe="current"), 1.0))
    compiled = Job(precision="fp8", fp8_recipe="current", compile=True)
    fused_current = float(fp8_cast_bytes_per_token(llama, compiled, 1.0))
    assert current == 1.5 * delayed
    assert fused_current == delayed
