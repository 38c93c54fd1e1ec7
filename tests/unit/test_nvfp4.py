"""NVFP4 training (--fp8-recipe nvfp4): GEMMs at the fp4 rate on NVIDIA Blackwell, 4-bit copies of weights and saved
inputs, its cast traffic, and the parts that refuse it."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rigplan.domain.job import Job
from rigplan.errors import UnsupportedPrecision
from rigplan.estimate.activations import attention_token_bytes
from rigplan.estimate.efficiency import BLACKWELL, HOPPER, NVFP4_OVER_BF16_SUSTAINED, gemm_efficiency
from rigplan.estimate.elementwise import FP8_CAST_BYTES
from rigplan.estimate.fp8_inputs import quantized_bytes
from rigplan.estimate.states import fp8_copy_bytes_per_param
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest

BF16 = Job(kernels="fused", moe_imbalance=1.0)
MX = replace(BF16, precision="fp8", fp8_recipe="mxfp8")
NV = replace(BF16, precision="fp8", fp8_recipe="nvfp4")
LLAMA_70B_GB300 = dict(model="llama-3.1-70b", gpu="gb300", gpus=64, pp=4, vpp=5, seq=8192, micro_batch=1,
                       global_batch=256, zero=1, framework="megatron", precision="fp8")


def test_nvfp4_copies_are_half_a_byte_plus_their_scales() -> None:
    assert quantized_bytes(NV) == pytest.approx(0.5 + 1 / 16)  # E4M3 scale per 16 elements along a row
    assert quantized_bytes(NV, weight=True) == pytest.approx(0.5 + 1 / 256)  # one per 16 x 16 weight block
    assert quantized_bytes(MX) == pytest.approx(1 + 1 / 32)
    assert fp8_copy_bytes_per_param(replace(NV, fp8_transpose_cache=True)) == pytest.approx(2 * (0.5 + 1 / 256))


def test_saved_linear_inputs_shrink_to_nvfp4(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    mx = attention_token_bytes(qwen3_moe, MX, False)
    nv = attention_token_bytes(qwen3_moe, NV, False)
    saved = (1 + 1 / 32 - 0.5 - 1 / 16) * qwen3_moe.hidden
    assert mx.replicated_under_tp - nv.replicated_under_tp == pytest.approx(saved)


def test_fp4_gemm_curve_sits_on_the_measured_ratio_to_bf16() -> None:
    assert BLACKWELL.fp4_gemm_max == pytest.approx(BLACKWELL.gemm_max * NVFP4_OVER_BF16_SUSTAINED, abs=1e-3)
    large = 16384.0
    ratio = gemm_efficiency(BLACKWELL, large, fp8=True, fp4=True) / gemm_efficiency(BLACKWELL, large)
    assert ratio == pytest.approx(NVFP4_OVER_BF16_SUSTAINED, abs=0.01)
    assert HOPPER.fp4_gemm_max == 0.0  # Hopper has no fp4 tensor cores


def test_the_benchmark_behind_the_ratio_still_gives_it() -> None:
    path = Path(__file__).parents[2] / "benchmarks" / "nvfp4_gemm_fit.py"
    spec = importlib.util.spec_from_file_location("nvfp4_gemm_fit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.sustained_ratio() == pytest.approx(NVFP4_OVER_BF16_SUSTAINED, abs=5e-4)


def test_nvfp4_casts_cost_more_than_mxfp8_ones() -> None:
    assert FP8_CAST_BYTES["nvfp4"] > FP8_CAST_BYTES["mxfp8"]


def test_nvfp4_step_is_faster_than_mxfp8_by_less_than_the_peak_ratio() -> None:
    mx = estimate(EstimateRequest(**LLAMA_70B_GB300, fp8_recipe="mxfp8")).step
    nv = estimate(EstimateRequest(**LLAMA_70B_GB300, fp8_recipe="nvfp4")).step
    gain = mx.step_time_s / nv.step_time_s
    assert 1.2 < gain < 3.0  # GB300: fp4 is 3x the fp8 peak, attention and the rest stay
    assert nv.peak_flop_per_s == pytest.approx(3 * mx.peak_flop_per_s)  # MFU against the fp4 peak


def test_nvfp4_job_says_what_it_assumes() -> None:
    result = estimate(EstimateRequest(**LLAMA_70B_GB300, fp8_recipe="nvfp4"))
    assert any(line.startswith("NVFP4: the linear layers' GEMMs at the fp4 peak") for line in result.setup.assumptions)


@pytest.mark.parametrize("gpu,alternative", [("h100-sxm", "delayed"), ("mi355x", "mxfp8")])
def test_parts_without_nvfp4_refuse_it_and_name_what_runs(gpu: str, alternative: str) -> None:
    with pytest.raises(UnsupportedPrecision, match=f"no NVFP4 tensor cores.*use --fp8-recipe {alternative}"):
        estimate(EstimateRequest(model="llama-3.1-8b", gpu=gpu, gpus=8, precision="fp8", fp8_recipe="nvfp4"))
