"""--fp8-recipe blockwise: Transformer Engine's Float8BlockScaling (DeepSeek-V3's 1 x 128 / 128 x 128 fp32 block
scales), its cast and memory bytes, the parts that run it, its GEMM rate against DeepGEMM's published figures, and
its exports."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.errors import InvalidSpec, UnsupportedPrecision
from rigplan.estimate.efficiency import HOPPER, IN_STEP_GEMM_FRACTION, gemm_efficiency
from rigplan.estimate.elementwise import FP8_CAST_BYTES
from rigplan.estimate.fp8_inputs import quantized_bytes
from rigplan.export import Unsupported, export
from rigplan.flow import estimate as speed
from rigplan.flow.memory import memory
from rigplan.flow.request import EstimateRequest, MemoryRequest
from rigplan.flow.resolve import build_setup

DENSE = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 8, "seq": 4096, "micro_batch": 2, "global_batch": 64,
         "framework": "megatron", "precision": "fp8"}
MOE = {"model": "mixtral-8x7b", "gpu": "h100-sxm", "gpus": 32, "ep": 8, "zero": 1, "global_batch": 256,
       "framework": "megatron", "precision": "fp8", "balanced_routing": True}

DEEPGEMM_H800 = [  # (m, n, k, TFLOP/s): deepseek-ai/DeepGEMM PR #73 (128x160 tiles) and PR #81 (256x128), H800 SXM
    (4096, 24576, 1536, 1204), (4096, 32768, 512, 777), (4096, 7168, 16384, 1500), (4096, 4096, 7168, 1377),
    (4096, 7168, 2048, 1204)]


def test_deepgemm_block_scaled_gemms_reach_the_per_tensor_fp8_curve() -> None:
    peak = load_catalog().gpu("h800-sxm").to_domain().peak("fp8")
    for m, n, k, measured in DEEPGEMM_H800:
        # the curve as a benchmark sees it: without the in-step share the estimate applies inside a training step
        curve = float(gemm_efficiency(HOPPER, min(m, n, k), fp8=True)) / IN_STEP_GEMM_FRACTION * peak / 1e12
        assert measured > curve, (m, n, k, curve)


def test_casts_and_copies_carry_one_fp32_scale_per_128_elements() -> None:
    assert FP8_CAST_BYTES["delayed"] < FP8_CAST_BYTES["blockwise"] == pytest.approx(2 + 2 * (1 + 4 / 128))
    job = build_setup(EstimateRequest(**DENSE, fp8_recipe="blockwise")).job
    assert quantized_bytes(job) == pytest.approx(1 + 1 / 32)
    assert quantized_bytes(job, weight=True) == pytest.approx(1 + 4 / 128 ** 2)


def test_estimate_sits_beside_delayed_scaling_with_its_note() -> None:
    delayed = speed.estimate(EstimateRequest(**MOE))
    blockwise = speed.estimate(EstimateRequest(**MOE, fp8_recipe="blockwise"))
    # same GEMM curve, a sixteenth of a byte more per cast element, scales in the saved inputs
    assert delayed.step.step_time_s < blockwise.step.step_time_s < 1.01 * delayed.step.step_time_s
    assert any(a.startswith("block-scaled fp8: ") and "MXFP8" not in a for a in blockwise.setup.assumptions)
    on_b200 = speed.estimate(EstimateRequest(**{**MOE, "gpu": "b200"}, fp8_recipe="blockwise"))
    assert any(a.startswith("block-scaled fp8: ") and "runs the GEMMs as MXFP8" in a
               for a in on_b200.setup.assumptions)


def test_weights_keep_block_scaled_copies() -> None:
    def weights(**changes: object) -> float:
        request = {k: v for k, v in {**DENSE, **changes}.items() if k != "global_batch"}
        return float(memory(MemoryRequest(**request)).breakdown.weights_bytes)

    # Hopper's TN-only fp8 GEMMs keep a transposed copy under either recipe; the 128 x 128 scales add 1/4096 B each
    assert weights(fp8_recipe="blockwise") > weights(fp8_recipe="delayed")
    assert weights(fp8_recipe="blockwise") < weights(fp8_recipe="delayed") * 1.001


@pytest.mark.parametrize("gpu", ["l40s", "mi300x", "mi355x"])
def test_parts_without_float8blockscaling_are_refused(gpu: str) -> None:
    with pytest.raises(UnsupportedPrecision, match="--fp8-recipe blockwise cannot run on it; use --fp8-recipe "
                                                   "delayed or current"):
        build_setup(EstimateRequest(**{**DENSE, "gpu": gpu}, fp8_recipe="blockwise"))


def test_needs_transformer_engine_kernels_and_fp8() -> None:
    with pytest.raises(InvalidSpec, match="Float8BlockScaling, which --kernels eager does not run"):
        build_setup(EstimateRequest(**{**DENSE, "framework": None, "kernels": "eager"}, fp8_recipe="blockwise"))
    with pytest.raises(InvalidSpec, match="needs --precision fp8"):
        build_setup(EstimateRequest(**{**DENSE, "precision": "bf16-mixed"}, fp8_recipe="blockwise"))


def test_exports_write_megatrons_flag_and_refuse_elsewhere() -> None:
    setup = build_setup(EstimateRequest(**MOE, fp8_recipe="blockwise"))
    out = export(setup, "megatron")
    assert (out.values["fp8_format"], out.values["fp8_recipe"]) == ("e4m3", "blockwise")
    assert "--fp8-recipe blockwise" in out.command
    fsdp = build_setup(EstimateRequest(**{**DENSE, "zero": 3, "framework": None}, fp8_recipe="blockwise"))
    for framework in ("torchtitan", "accelerate", "hf-trainer"):
        with pytest.raises(Unsupported, match="--fp8-recipe blockwise"):
            export(fsdp, framework)


def test_cli_flag_and_one_line_refusal() -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["estimate", "deepseek-v3", "--gpu", "h800-sxm", "--gpus", "2048", "--pp", "16",
                             "--ep", "64", "--precision", "fp8", "--fp8-recipe", "blockwise", "--framework",
                             "megatron", "--global-batch", "15360", "--json"])
    assert ok.exit_code == 0, ok.output
    refused = runner.invoke(cli, ["estimate", "llama-3.1-8b", "--gpu", "l40s", "--precision", "fp8",
                                  "--fp8-recipe", "blockwise"])
    assert refused.exit_code != 0 and "Traceback" not in refused.output


def test_mxfp8_refused_on_hopper_names_blockwise_where_it_runs() -> None:
    with pytest.raises(UnsupportedPrecision, match="use --fp8-recipe delayed, current or blockwise"):
        build_setup(EstimateRequest(**DENSE, fp8_recipe="mxfp8"))
    with pytest.raises(UnsupportedPrecision, match=r"use --fp8-recipe delayed or current$"):
        build_setup(EstimateRequest(**{**DENSE, "gpu": "l40s"}, fp8_recipe="mxfp8"))


@pytest.mark.parametrize("gpu", ["rtx-5090", "rtx-pro-6000"])
def test_mxfp8_refused_on_compute_capability_12_blackwell(gpu: str) -> None:
    # Transformer Engine's support matrix: MXFP8 not on 12.0; block-scaled fp8 runs there, without the MXFP8 note
    with pytest.raises(UnsupportedPrecision, match=r"compute-capability 12\.0 Blackwell"):
        build_setup(EstimateRequest(**{**DENSE, "gpu": gpu, "zero": 3}, fp8_recipe="mxfp8"))
    runs = speed.estimate(EstimateRequest(**{**DENSE, "gpu": gpu, "zero": 3}, fp8_recipe="blockwise"))
    assert any(a.startswith("block-scaled fp8: ") and "MXFP8" not in a for a in runs.setup.assumptions)
