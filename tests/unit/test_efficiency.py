"""Efficiency mechanisms: power-limited clock, attention kernels, eager traffic, fp8 casts."""

from __future__ import annotations

from dataclasses import replace

import pytest

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


def test_eager_attention_scores_move_38_bytes_each_without_the_fused_softmax() -> None:
    llama = load_catalog().model("llama-3.2-1b").to_domain()
    seq, heads = 2048, llama.num_heads

    def scores_bytes(kernels: str) -> float:
        with_scores = sum(elementwise_bytes_per_token(llama, Job(kernels=kernels, attention="eager", seq_len=seq)))
        without = sum(elementwise_bytes_per_token(llama, Job(kernels=kernels, attention="flash", seq_len=seq)))
        return (with_scores - without) / (heads * seq)

    # per score and pass; the step model runs each element-wise op once forward and twice backward
    assert 3 * scores_bytes("hf") == pytest.approx(38.0)
    assert 3 * scores_bytes("fused") == pytest.approx(12.0)  # Megatron's fused scale-mask-softmax: read + write, bf16


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


def test_softmax_exponentials_move_the_hopper_attention_curve_to_blackwell_parts() -> None:
    from rigplan.estimate.efficiency import (
        attention_flop_per_exp,
        softmax_adjusted_efficiency,
        softmax_exp_ratio,
    )

    cat = load_catalog()
    gpus = {g: cat.gpu(g).to_domain() for g in ("h100-sxm", "b200", "gb200", "gb300")}
    curve = efficiency_for(gpus["gb200"]).attention["fa2"]  # measured on an H100
    # cuDNN's Blackwell curve was measured on the family (GB200), so no exponential rate moves it
    assert efficiency_for(gpus["gb200"]).attention["cudnn"].reference_exp_per_s == 0.0
    f_exp = attention_flop_per_exp(128, 128)
    assert f_exp == 7 * 128
    # On the part the curve was measured on the adjustment is the identity.
    h100 = gpus["h100-sxm"]
    assert abs(softmax_adjusted_efficiency(0.5, curve, peak_flop_per_s=h100.peak("bf16"), exp_per_s=h100.exp_per_s,
                                           flop_per_exp=f_exp) - 0.5) < 1e-6
    # 1/e = 1/e_curve - R_H100 + R_part, by hand: R = P / (X · 7·128).
    r_h100 = 989.5e12 / (4.18e12 * 896)
    for gpu_id, peak, exp_rate in (("gb200", 2500e12, 5.0e12), ("gb300", 2500e12, 10.7e12), ("b200", 2250e12, 5.0e12)):
        gpu = gpus[gpu_id]
        assert abs(gpu.exp_per_s / exp_rate - 1) < 1e-12
        expected = 1.0 / (1.0 / 0.5 - r_h100 + peak / (exp_rate * 896))
        got = softmax_adjusted_efficiency(0.5, curve, peak_flop_per_s=gpu.peak("bf16"), exp_per_s=gpu.exp_per_s,
                                          flop_per_exp=f_exp)
        assert abs(got - expected) < 1e-6
    e200 = softmax_adjusted_efficiency(0.5, curve, peak_flop_per_s=2500e12, exp_per_s=5.0e12, flop_per_exp=f_exp)
    e300 = softmax_adjusted_efficiency(0.5, curve, peak_flop_per_s=2500e12, exp_per_s=10.7e12, flop_per_exp=f_exp)
    assert 1.10 < e300 / e200 < 1.20
    # A part without a known exponential rate keeps the curve as measured.
    assert softmax_adjusted_efficiency(0.5, curve, peak_flop_per_s=2500e12, exp_per_s=0.0, flop_per_exp=f_exp) == 0.5
    # Halving the head dimension doubles the exponentials per FLOP.
    half = softmax_exp_ratio(2500e12, 5e12, attention_flop_per_exp(64, 64))
    assert half == 2 * softmax_exp_ratio(2500e12, 5e12, f_exp)


def test_softmax_model_reproduces_nvidias_blackwell_ultra_fprop_gain() -> None:
    """NVIDIA ('Making Softmax More Efficient with NVIDIA Blackwell Ultra') reports about 35% more FP8 forward
    attention throughput on GB300 than on GB200 for DeepSeek-V3 (MLA: d_qk 192, d_v 128). The additive model,
    forward only (2·(d_qk + d_v) FLOPs per exponential) at the fp8 peak, gives 1.33-1.40x for any tensor
    efficiency between 0.55 and 0.75."""
    from rigplan.estimate.efficiency import softmax_exp_ratio

    flop_per_exp = 2.0 * (192 + 128)
    for e_mma in (0.55, 0.65, 0.75):
        t_gb200 = 1.0 / e_mma + softmax_exp_ratio(5000e12, 5.0e12, flop_per_exp)
        t_gb300 = 1.0 / e_mma + softmax_exp_ratio(5000e12, 10.7e12, flop_per_exp)
        assert 1.30 < t_gb200 / t_gb300 < 1.42


def test_a_calibrated_attention_ceiling_is_not_moved_by_the_softmax_rates() -> None:
    from rigplan.estimate.calibration import Calibration, calibrated_efficiency
    from rigplan.estimate.efficiency import softmax_adjusted_efficiency

    gpu = load_catalog().gpu("gb200").to_domain()
    cal = Calibration(gpu_id="gb200", efficiency={"attention": 0.4})
    curve = calibrated_efficiency(gpu, cal).attention["cudnn"]
    assert curve.max_fraction == 0.4
    assert softmax_adjusted_efficiency(0.4, curve, peak_flop_per_s=gpu.peak("bf16"), exp_per_s=gpu.exp_per_s,
                                       flop_per_exp=896.0) == 0.4


def test_warp_mma_attention_kernels_keep_their_h100_rate_on_blackwell() -> None:
    """FlashAttention-2 runs sm80 warp-level MMA on a B200: 354 TFLOP/s forward at head dim 128 against 330 on an
    H100 (tritonbench), not the H100 curve's 0.33 of a 2.3x larger peak. cuDNN's kernels are native and keep the
    fraction; a curve calibrated on the device is taken as measured."""
    from rigplan.estimate.calibration import Calibration, calibrated_efficiency
    from rigplan.estimate.efficiency import (
        WARP_MMA_B200_OVER_H100,
        attention_flop_per_exp,
        softmax_adjusted_efficiency,
        warp_mma_speedup,
    )

    h100, b200 = _gpu("h100-sxm"), _gpu("b200")
    hopper, blackwell = efficiency_for(h100), efficiency_for(b200)
    f_exp = attention_flop_per_exp(128, 128)

    def tflops(eff, gpu, kernel: str) -> float:  # type: ignore[no-untyped-def]
        curve = eff.attention[kernel]
        e = softmax_adjusted_efficiency(attention_efficiency(eff, kernel, 16384.0, 128.0), curve,
                                        peak_flop_per_s=gpu.peak("bf16"), exp_per_s=gpu.exp_per_s,
                                        flop_per_exp=f_exp,
                                        tensor_speedup=warp_mma_speedup(eff, curve, gpu.peak("bf16")))
        return float(e) * gpu.peak("bf16") / 1e12

    for kernel in ("fa2", "sdpa"):
        assert warp_mma_speedup(hopper, hopper.attention[kernel], h100.peak("bf16")) == 1.0
        assert warp_mma_speedup(blackwell, blackwell.attention[kernel], b200.peak("bf16")) == pytest.approx(
            989.5e12 * WARP_MMA_B200_OVER_H100 / 2250e12)
        ratio = tflops(blackwell, b200, kernel) / tflops(hopper, h100, kernel)
        assert 1.0 < ratio < 1.2  # the matrix products at 1.07x, the exponentials at B200's own rate
    assert warp_mma_speedup(blackwell, blackwell.attention["cudnn"], b200.peak("bf16")) == 1.0
    assert tflops(blackwell, b200, "cudnn") / tflops(hopper, h100, "cudnn") > 1.5
    calibrated = calibrated_efficiency(b200, Calibration(gpu_id="b200", efficiency={"attention": 0.4}))
    assert warp_mma_speedup(calibrated, calibrated.attention["fa2"], b200.peak("bf16")) == 1.0


def test_blackwell_ultra_runs_its_tensor_work_at_gb200s_rate_raised_by_its_power() -> None:
    """GB300 and B300 are quoted at GB200's / B200's dense peaks at 1,400 W and 1,100 W; from GB200 (2,500 at
    1,200 W) the square-root power law gives 2,700 and 2,390 TFLOP/s of sustained tensor rate. The same law from
    GB200 reproduces B200's datasheet (2,250 at 1,000 W) within 2%, and a cap below the design power lowers it."""
    from rigplan.estimate.efficiency import sustained_tensor_scale

    gb300, b300, gb200, b200 = (_gpu(g) for g in ("gb300", "b300", "gb200", "b200"))
    assert sustained_tensor_scale(gb300) == pytest.approx(2500 * (1260 / 1080) ** 0.5 / 2500)
    assert sustained_tensor_scale(b300) == pytest.approx(2500 * (990 / 1080) ** 0.5 / 2250)
    assert clock_fraction(gb300) == sustained_tensor_scale(gb300) and 1.07 < clock_fraction(gb300) < 1.09
    assert clock_fraction(gb200) == 1.0 and clock_fraction(b200) == 1.0
    # MI325X: MI300X's die and 1,307.4 TFLOP/s at 1,000 W against 750 W; measured 784.9 / 668.4 = 1.174x
    assert sustained_tensor_scale(_gpu("mi325x")) == pytest.approx((900 / 675) ** 0.5)
    assert abs(sustained_tensor_scale(_gpu("mi325x")) / (784.9 / 668.4) - 1) < 0.02
    assert abs(2500 * (900 / 1080) ** 0.5 / b200.peak("bf16") * 1e12 - 1) < 0.02
    capped = replace(gb300, power_limit_w=1200.0)
    assert sustained_tensor_scale(capped) == pytest.approx(((1200 - 140) / 1080) ** 0.5)  # idle stays 10% of TDP


def test_the_estimate_says_when_a_part_runs_above_its_datasheet_peak() -> None:
    from rigplan.flow.estimate import estimate
    from rigplan.flow.request import EstimateRequest

    def notes(gpu: str) -> list[str]:
        request = EstimateRequest(model="llama-3.1-8b", gpu=gpu, gpus=8, seq=4096, global_batch=64)
        return [a for a in estimate(request).to_dict()["assumptions"] if "square-root power law" in a]

    assert notes("gb300") == ["NVIDIA GB300 (Blackwell Ultra GPU in GB300 NVL72): tensor work at 1.080x the 2,500 "
                              "TFLOP/s datasheet peak, from a 2,500 TFLOP/s part of the same SM design at 1,200 W by "
                              "the square-root power law (catalog power_basis)"]
    assert notes("gb200") == [] and notes("h100-sxm") == []


def test_gb200_gemm_fraction_is_the_median_of_nvidias_same_harness_ratios() -> None:
    """GB200's gemm_power_limit: NVIDIA's Megatron-Bridge tables (one harness, one recipe per row) measure GB300 over
    GB200 at 1.19, 1.21, 1.05 and 1.24 and GB200 over DGX-B200 at 1.03; against rigplan's GB300 clock (1.080x) and
    the datasheets' GB200/B200 ratio (2,500 / 2,250) each gives a GEMM fraction; the catalog takes their median."""
    import statistics

    gb200, gb300 = _gpu("gb200"), _gpu("gb300")
    implied = [clock_fraction(gb300) / r for r in (1.19, 1.21, 1.05, 1.24)] + [1.03 / (2500 / 2250)]
    assert gb200.gemm_power_fraction == round(statistics.median(implied), 2) == 0.91
    assert gb300.gemm_power_fraction == 1.0 and _gpu("b200").gemm_power_fraction == 1.0


def test_the_gemm_fraction_slows_gemms_and_leaves_attention_alone() -> None:
    """A part's gemm_power_fraction scales its GEMM efficiencies and leaves the attention kernels (whose Blackwell
    curve was measured on a GB200) and memory-bound work as they are."""
    from rigplan.estimate.layer_terms import layer_rates

    gb200 = _gpu("gb200")
    full = replace(gb200, gemm_power_fraction=1.0)
    arch = load_catalog().model("llama-3.1-8b").to_domain()
    job = Job(seq_len=4096, micro_batch=1, precision="bf16-mixed")
    slow, fast = (layer_rates(arch, job, Layout(tp=2, dp=4), gpu, efficiency_for(gpu), 2.0, 1.0, 1.0, 1.0)
                  for gpu in (gb200, full))
    for name in ("proj_eff", "mlp_eff", "head_eff"):
        assert float(getattr(slow, name)) == pytest.approx(0.91 * float(getattr(fast, name))), name
    assert float(slow.attn_eff) == pytest.approx(float(fast.attn_eff))
    assert slow.hbm_bytes_per_s == fast.hbm_bytes_per_s


def test_sdpa_runs_its_memory_efficient_backend_for_unequal_head_dims() -> None:
    """PyTorch SDPA's flash backend needs equal query, key and value head dims, so MLA (192, 128) runs the
    memory-efficient backend, measured about 2.5x slower than flash at 16k tokens on an H200 (NVIDIA's Llama-3.2-1B
    benchmark); fused stacks (cuDNN) and equal head dims are untouched."""
    from rigplan.estimate.efficiency import HOPPER, attention_efficiency, attention_kernel_for

    assert attention_kernel_for(HOPPER, "eager", None, (192.0, 128.0)) == "sdpa_efficient"
    assert attention_kernel_for(HOPPER, "eager", None, (128.0, 128.0)) == "sdpa"
    assert attention_kernel_for(HOPPER, "fused", None, (192.0, 128.0)) == "cudnn"
    assert attention_kernel_for(HOPPER, "eager", "sdpa", (192.0, 128.0)) == "sdpa_efficient"
    slow = attention_efficiency(HOPPER, "sdpa_efficient", 16384, 64.0)
    assert 0.13 < slow < 0.15  # 137 TFLOP/s of 989.5 at head dim 64, as derived from the benchmark
    assert slow < attention_efficiency(HOPPER, "sdpa", 16384, 64.0)
