"""FP8 dot-product attention (--fp8-attention): the matrix products at the fp8 rate, the softmax
exponentials at their own (estimate.efficiency.softmax_adjusted_efficiency with tensor_speedup)."""

from __future__ import annotations

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.errors import InvalidSpec
from rigplan.estimate.efficiency import KernelCurve, softmax_adjusted_efficiency
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest

H100_BF16 = 989.5e12
H100_EXP = 4.18e12
FORWARD_FLOP_PER_EXP = 2.0 * (128 + 128)
"""Forward only: one exponential per score beside 2·(d_qk + d_v) tensor FLOPs."""


@pytest.mark.parametrize(("kernel", "bf16_tflops", "fp8_tflops", "tolerance"), [
    ("FlashAttention-3", 648.0, 1008.0, 0.03),
    ("cuDNN", 595.0, 1005.0, 0.09),
])
def test_fp8_attention_reproduces_flashattention3s_h100_forward_figures(
        kernel: str, bf16_tflops: float, fp8_tflops: float, tolerance: float) -> None:
    """Shah et al. 2024 (FlashAttention-3, arXiv 2407.08608), H100 SXM5, head dim 128, sequence 16k, forward:
    Fig. 5 gives the bf16 speeds, Fig. 7 the fp8 ones. Halving the tensor part of the bf16 kernel's time and
    keeping its exponentials predicts the fp8 speed (FA3 995 against 1,008 measured; cuDNN 931 against 1,005)."""
    curve = KernelCurve(max_fraction=bf16_tflops * 1e12 / H100_BF16, half_seq=0.0, source=kernel,
                        reference_peak_flop_per_s=H100_BF16, reference_exp_per_s=H100_EXP)
    e = softmax_adjusted_efficiency(curve.max_fraction, curve, peak_flop_per_s=H100_BF16, exp_per_s=H100_EXP,
                                    flop_per_exp=FORWARD_FLOP_PER_EXP, tensor_speedup=2.0)
    predicted = float(e) * H100_BF16 / 1e12
    assert abs(predicted / fp8_tflops - 1) < tolerance, (kernel, predicted)
    # Not the naive doubling: the exponentials cap the gain well below 2x.
    assert predicted < 1.7 * bf16_tflops


def test_the_exponentials_cap_the_fp8_gain_more_where_they_are_scarcer() -> None:
    """GB200's 5 TeraExponentials/s against GB300's 10.7 at the same 2.5 PFLOP/s bf16 peak: fp8 attention gains
    less on GB200, and at most the fp8/bf16 peak ratio anywhere."""
    cat = load_catalog()
    curve = KernelCurve(max_fraction=0.6, half_seq=0.0, source="test", reference_peak_flop_per_s=H100_BF16,
                        reference_exp_per_s=H100_EXP)
    gains = {}
    for gpu_id in ("gb200", "gb300", "h100-sxm"):
        gpu = cat.gpu(gpu_id).to_domain()
        kwargs = dict(peak_flop_per_s=gpu.peak("bf16"), exp_per_s=gpu.exp_per_s, flop_per_exp=7.0 * 128)
        s = gpu.peak("fp8") / gpu.peak("bf16")
        gains[gpu_id] = float(softmax_adjusted_efficiency(0.6, curve, tensor_speedup=s, **kwargs)
                              / softmax_adjusted_efficiency(0.6, curve, **kwargs))
        assert 1.0 < gains[gpu_id] < s
    assert gains["gb200"] < gains["gb300"]
    # A part whose exponential rate is unknown balances them as the curve's part does: its bf16 curve is the
    # measured one and its fp8 gain that part's.
    kwargs = dict(peak_flop_per_s=1e15, exp_per_s=0.0, flop_per_exp=896.0)
    assert softmax_adjusted_efficiency(0.5, curve, **kwargs) == pytest.approx(0.5)
    h100 = dict(peak_flop_per_s=H100_BF16, exp_per_s=H100_EXP, flop_per_exp=896.0)
    assert softmax_adjusted_efficiency(0.5, curve, tensor_speedup=2.0, **kwargs) == pytest.approx(
        softmax_adjusted_efficiency(0.5, curve, tensor_speedup=2.0, **h100))
    # A curve measured on a part of unknown rate gets no fp8 gain.
    bare = KernelCurve(max_fraction=0.3, half_seq=0.0, source="test")
    assert softmax_adjusted_efficiency(0.3, bare, tensor_speedup=2.0, **h100) == 0.3


def _dsv3_gb300(**extra: object) -> EstimateRequest:
    return EstimateRequest(model="deepseek-v3", gpu="gb300", gpus=256, precision="fp8", fp8_recipe="mxfp8",
                           seq=4096, micro_batch=1, global_batch=4096, tp=1, pp=2, vpp=8, ep=32, zero=1,
                           framework="megatron", balanced_routing=True, a2a_overlap=True,
                           moe_fused_grouped_mlp=True, recompute="none", **extra)


def test_fp8_attention_shortens_only_the_attention_kernels() -> None:
    base = speed.estimate(_dsv3_gb300())
    fp8 = speed.estimate(_dsv3_gb300(fp8_attention=True))
    saved = base.step.compute_s - fp8.step.compute_s
    assert saved > 0
    # Memory and communication are untouched; the saving is a share of the attention kernels' time.
    assert fp8.memory.headroom_bytes == base.memory.headroom_bytes
    assert fp8.to_dict()["breakdown"]["comm"] == base.to_dict()["breakdown"]["comm"]
    assert 0.03 < saved / base.step.compute_s < 0.20


def test_fp8_attention_needs_fp8() -> None:
    with pytest.raises(InvalidSpec, match="--fp8-attention"):
        speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", precision="bf16-mixed",
                                       fp8_attention=True))
