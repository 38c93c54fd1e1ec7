"""--compile, --autocast, --attention-kernel, --fp8-recipe, --fp8-attention and the CUDA-graph switches reach the
estimate on every command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli

JOB = ("llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--fsdp", "--seq", "8192", "--global-batch", "64")


def run(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def step(*flags: str) -> float:
    return float(run("estimate", *JOB, *flags)["step_time_s"])


def test_compile_removes_eager_elementwise_time() -> None:
    assert step("--kernels", "eager", "--compile") < step("--kernels", "eager")


def test_compile_changes_nothing_for_fused_kernels() -> None:
    assert step("--compile") == pytest.approx(step())


def test_autocast_adds_fp32_residual_traffic() -> None:
    assert step("--kernels", "eager", "--autocast") > step("--kernels", "eager")


def test_attention_kernel_is_used_and_reported() -> None:
    fa3 = run("estimate", *JOB, "--kernels", "eager", "--attention-kernel", "fa3")
    sdpa = run("estimate", *JOB, "--kernels", "eager")
    assert fa3["efficiency"]["attention_kernel"] == "fa3"
    assert sdpa["efficiency"]["attention_kernel"] == "sdpa"
    assert fa3["step_time_s"] < sdpa["step_time_s"]  # FA3 reaches 0.58 of the H100 peak, SDPA 0.23
    assert any("attention kernel fa3" in note for note in fa3["assumptions"])


def test_a_kernel_the_gpu_lacks_falls_back_and_says_so() -> None:
    data = run("estimate", *JOB, "--attention-kernel", "fa3", "--gpu", "a100-80gb-sxm")
    assert data["efficiency"]["attention_kernel"] == "fa2"
    assert any("--attention-kernel fa3 has no ampere kernel" in note for note in data["assumptions"])


def test_fp8_current_scaling_costs_more_than_delayed() -> None:
    delayed = step("--precision", "fp8")
    current = step("--precision", "fp8", "--fp8-recipe", "current")
    assert current > delayed
    assert step("--precision", "fp8", "--fp8-recipe", "current", "--compile") == pytest.approx(delayed)


def test_memory_takes_the_flags_and_echoes_them() -> None:
    data = run("memory", *JOB, "--kernels", "eager", "--compile", "--autocast", "--attention-kernel", "fa2",
               "--precision", "fp8", "--fp8-recipe", "current")
    assert {k: data["job"][k] for k in ("kernels", "compile", "autocast", "attention_kernel", "fp8_recipe")} == {
        "kernels": "eager", "compile": True, "autocast": True, "attention_kernel": "fa2", "fp8_recipe": "current"}


def test_plan_and_compare_carry_the_flags_into_their_estimates() -> None:
    base = ("llama-3.1-8b", "--tokens", "10B", "--seq", "8192", "--kernels", "eager")
    plain = run("compare", *base, "8xh100-sxm", "16xh100-sxm")
    compiled = run("compare", *base, "8xh100-sxm", "16xh100-sxm", "--compile", "--attention-kernel", "fa3")
    key = next(row for row in plain["rows"] if row["key"] == "tokens_per_s")
    fast = next(row for row in compiled["rows"] if row["key"] == "tokens_per_s")
    assert fast["values"][0] > key["values"][0]
    planned = run("plan", *base, "--gpu", "h100-sxm", "--gpus-exact", "8", "--compile", "--fp8-recipe", "current",
                  "--precision", "fp8", "--cloud")
    command = planned["ranked"][0]["estimate_command"]
    assert "--compile" in command and "--fp8-recipe current" in command
    muon = run("plan", *base, "--gpu", "h100-sxm", "--gpus-exact", "8", "--optimizer", "muon", "--cloud")
    best = muon["ranked"][0]
    assert "--optimizer muon" in best["estimate_command"] and best["layout"]["zero"] in (0, 1)


def test_help_describes_each_flag() -> None:
    for command in ("memory", "estimate", "plan", "compare"):
        text = CliRunner().invoke(cli, [command, "--help"]).output
        for flag in ("--compile", "--autocast", "--attention-kernel", "--fp8-recipe", "--fp8-attention",
                     "--cuda-graphs", "--cuda-graph-scope"):
            assert flag in text, (command, flag)


def test_a_bad_kernel_is_one_line_exit_2() -> None:
    result = CliRunner().invoke(cli, ["estimate", *JOB, "--attention-kernel", "fa9"])
    assert result.exit_code == 2
    assert "fa9" in result.output


def test_plan_carries_fp8_attention_and_cuda_graphs_into_its_estimate_command() -> None:
    planned = run("plan", "qwen3-30b-a3b", "--tokens", "10B", "--gpu", "gb200", "--gpus-exact", "8", "--precision",
                  "fp8", "--fp8-recipe", "mxfp8", "--fp8-attention", "--cuda-graphs", "full", "--cloud")
    command = planned["ranked"][0]["estimate_command"]
    assert "--fp8-attention" in command and "--cuda-graphs full" in command
    scoped = run("plan", "qwen3-30b-a3b", "--tokens", "10B", "--gpu", "gb200", "--gpus-exact", "8",
                 "--cuda-graph-scope", "attn,moe_router", "--cloud")
    assert "--cuda-graph-scope attn,moe_router" in scoped["ranked"][0]["estimate_command"]


def test_plan_fits_with_megatrons_weight_and_moment_storage_and_repeats_it() -> None:
    base = ("qwen3-30b-a3b", "--tokens", "10B", "--gpu", "h100-sxm", "--gpus-exact", "8", "--precision", "fp8",
            "--cloud")
    lean = run("plan", *base, "--fp8-param-gather", "--bf16-moments")
    command = lean["ranked"][0]["estimate_command"]
    assert "--fp8-param-gather" in command and "--bf16-moments" in command
    for name in ("plan", "compare"):
        text = CliRunner().invoke(cli, [name, "--help"]).output
        assert "--bf16-moments" in text and "--fp8-param-gather" in text
