"""`--framework` on memory, estimate, plan and compare: what ran, what it set, explicit flags win."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.domain.frameworks import FRAMEWORK_NAMES


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), terminal_width=200)


def as_json(*args: str) -> dict[str, Any]:
    out = invoke(*args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_unknown_framework_is_one_line_naming_the_choices() -> None:
    out = invoke("memory", "llama-3.1-8b", "--framework", "jax")
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rigplan: error: --framework")
    assert all(name in lines[0] for name in FRAMEWORK_NAMES)


def test_help_names_every_preset() -> None:
    for command in ("memory", "estimate", "plan", "compare"):
        text = " ".join(invoke(command, "--help").output.split())
        assert "--framework" in text and all(name in text for name in FRAMEWORK_NAMES), command


def test_memory_json_says_which_preset_ran_and_what_it_set() -> None:
    data = as_json("memory", "llama-3.1-8b", "--gpus", "8", "--framework", "megatron")
    assert data["framework"]["name"] == "megatron"
    assert data["framework"]["set"]["loss"] == "fused" and data["framework"]["set"]["main_grads_fp32"] is True
    assert "arguments.py" in data["framework"]["sources"]["main_grads_fp32"]
    assert any(a.startswith("framework megatron") for a in data["assumptions"])


def test_an_explicit_flag_overrides_the_preset_even_at_its_default() -> None:
    data = as_json("memory", "llama-3.1-8b", "--gpus", "8", "--framework", "torchtitan", "--zero", "0",
                   "--loss", "fused", "--compile")
    assert data["layout"]["zero"] == 0
    assert {"zero", "loss", "compile"} <= set(data["framework"]["kept"])
    assert not {"zero", "loss", "compile"} & set(data["framework"]["set"])
    base = as_json("memory", "llama-3.1-8b", "--gpus", "8", "--framework", "torchtitan")
    assert base["layout"]["zero"] == 3 and base["framework"]["set"]["kernels"] == "eager"


def test_a_flag_left_at_its_click_default_does_not_block_the_preset() -> None:
    """--kernels defaults to fused on the command line; without the flag the hf preset's 'hf' applies."""
    data = as_json("estimate", "llama-3.1-8b", "--gpus", "8", "--framework", "hf")
    assert data["framework"]["set"]["kernels"] == "hf" and data["framework"]["kept"] == []


def test_text_output_names_the_preset() -> None:
    out = invoke("memory", "llama-3.1-8b", "--framework", "unsloth", "--method", "qlora", "--gpu", "rtx-4090")
    assert out.exit_code == 0, out.output
    assert "framework unsloth" in " ".join(out.output.split())


def test_compare_and_plan_take_the_preset() -> None:
    data = as_json("compare", "llama-3.1-8b", "8xh100-sxm", "8xa100-80gb-sxm", "--tokens", "10B",
                   "--framework", "fsdp")
    assert data["framework"]["name"] == "fsdp" and data["framework"]["set"]["optimizer_foreach"] is True
    plan = as_json("plan", "llama-3.1-8b", "--tokens", "10B", "--gpu", "h100-sxm", "--gpus-max", "8",
                   "--framework", "deepspeed")
    assert plan["framework"]["name"] == "deepspeed"


def test_the_megatron_core_presets_charge_the_training_loop_once_a_step() -> None:
    """--framework megatron/nemo add MEGATRON_STEP_OVERHEAD_MS to every step (reported with the host time);
    --step-overhead-ms overrides it, and other presets leave it at 0."""
    from rigplan.domain.frameworks import MEGATRON_STEP_OVERHEAD_MS

    base = ("estimate", "llama-3.1-8b", "--gpus", "8", "--global-batch", "64")
    nemo = as_json(*base, "--framework", "nemo")
    plain = as_json(*base, "--framework", "nemo", "--step-overhead-ms", "0")
    assert nemo["framework"]["set"]["step_overhead_ms"] == MEGATRON_STEP_OVERHEAD_MS
    added = nemo["step_time_s"] - plain["step_time_s"]
    assert abs(added - MEGATRON_STEP_OVERHEAD_MS / 1000) < 1e-9
    assert abs(nemo["breakdown"]["host_s"] - plain["breakdown"]["host_s"] - added) < 1e-9
    assert "step_overhead_ms" in plain["framework"]["kept"]
    doubled = as_json(*base, "--step-overhead-ms", "90")
    assert abs(doubled["step_time_s"] - as_json(*base)["step_time_s"] - 0.090) < 1e-9
    titan = as_json(*base, "--framework", "torchtitan")
    assert "step_overhead_ms" not in titan["framework"]["set"] and titan["breakdown"]["host_s"] == 0.0


def test_a_negative_step_overhead_is_one_line_and_exit_2() -> None:
    out = invoke("estimate", "llama-3.1-8b", "--gpus", "8", "--step-overhead-ms", "-5")
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--step-overhead-ms" in lines[0] and ">= 0" in lines[0]


def test_grad_bucket_params_reaches_the_megatron_and_deepspeed_exports_and_refuses_a_negative() -> None:
    out = invoke("export", "llama-3.1-8b", "--gpus", "8", "--zero", "1", "--framework", "megatron",
                 "--grad-bucket-params", "7.68e8")
    assert out.exit_code == 0, out.output
    assert "--ddp-bucket-size 768000000" in out.output
    refused = invoke("estimate", "llama-3.1-8b", "--gpus", "8", "--grad-bucket-params", "-1")
    assert refused.exit_code == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--grad-bucket-params" in lines[0]


def test_plan_takes_the_step_costs_and_its_reproduce_line_repeats_them() -> None:
    out = invoke("plan", "qwen3-30b-a3b", "--tokens", "10B", "--gpus-max", "16", "--framework", "nemo",
                 "--grad-bucket-params", "7.68e8", "--step-overhead-ms", "50")
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "--step-overhead-ms 50" in text and "--grad-bucket-params 768000000" in text


def test_plan_export_writes_the_best_candidate_the_framework_can_express() -> None:
    """A ZeRO-2 layout has no Megatron-LM form: plan --export megatron writes the first ranked candidate that has one,
    says so, and still prints the plan (it used to stop at the exporter's error)."""
    result = invoke("plan", "llama-3.1-8b", "--tokens", "1e9", "--gpu", "h100-sxm", "--gpus-max", "16", "--export",
                    "megatron", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    zeros = [c["layout"]["zero"] for c in data["ranked"]]
    written = zeros.index(next(z for z in zeros if z != 2)) + 1
    assert data["ranked"] and data["export"]["command"]
    if written == 1:
        assert data["export"]["note"] is None
    else:
        assert f"candidate {written} as megatron" in data["export"]["note"] and "ZeRO-2" in data["export"]["note"]
