"""`rigplan estimate`: the JSON contract, the Megatron GPT-3 175B reference point, infeasible jobs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli

KEYS = ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
        "mfu", "hfu", "breakdown", "time_to_train_s", "gpu_hours", "energy_kwh", "memory", "assumptions")


def run(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_json_contract() -> None:
    data = run("estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--fsdp", "--tokens", "100B")
    for key in KEYS:
        assert key in data
    for key in ("compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "comm"):
        assert key in data["breakdown"]
    assert set(data["breakdown"]["comm"]) == {"tp_s", "cp_s", "ep_s", "pp_s", "dp_s"}
    assert data["time_to_train_s"] == pytest.approx(100e9 / data["tokens_per_s"])
    assert data["gpu_hours"] == pytest.approx(data["time_to_train_s"] * 8 / 3600)
    assert data["memory"]["model"]["id"] == "llama-3.1-8b"


def test_megatron_gpt3_175b_reference() -> None:
    """Narayanan et al. 2021 Sec. 5.1: 1,024 A100, tp 8, pp 8, batch 1536: 140 TFLOP/s per GPU, ~34 days for 300B."""
    data = run("estimate", "gpt-3-175b", "--gpu", "a100-80gb-sxm", "--gpus", "1024", "--tp", "8", "--pp", "8",
               "--global-batch", "1536", "--recompute", "full", "--attention", "eager", "--tokens", "300B",
               "--framework", "megatron", "--no-tp-async-backward")  # 2021 Megatron-LM: TP collectives in line
    # The paper's TFLOP/s count one recomputed forward, as rigplan's hardware TFLOP/s do.
    assert data["hardware_tflops_per_gpu"] == pytest.approx(140, rel=0.15)
    assert data["time_to_train_s"] / 86400 == pytest.approx(34, rel=0.15)
    assert data["fits"]


def test_infeasible_job_is_reported_with_what_it_needs() -> None:
    data = run("estimate", "llama-3.1-70b", "--gpu", "rtx-4090", "--gpus", "8")
    assert data["fits"] is False
    assert data["violations"][0]["code"] == "memory.exceeds_capacity"
    assert data["memory"]["per_gpu"]["total_bytes"] > data["memory"]["gpu"]["usable_bytes"]
    assert data["step_time_s"] > 0


def test_text_output_and_network_options() -> None:
    result = CliRunner().invoke(cli, ["estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "8",
                                      "--pp", "2", "--zero", "1", "--nic", "200", "--gpus-per-node", "8",
                                      "--tokens", "1T"])
    assert result.exit_code == 0, result.output
    assert "time to train" in result.output and "MFU" in result.output
    slower = run("estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "8", "--pp", "2",
                 "--zero", "1", "--nic", "25")
    faster = run("estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "8", "--pp", "2",
                 "--zero", "1", "--nic", "400")
    assert slower["step_time_s"] > faster["step_time_s"]


def test_moe_routing_and_expert_layout_flags() -> None:
    base = ("estimate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "16", "--tp", "2", "--ep", "8",
            "--sequence-parallel", "--global-batch", "64")
    balanced = run(*base, "--etp", "1", "--balanced-routing")
    dropless = run(*base, "--etp", "1", "--moe-imbalance", "1.5")
    overlapped = run(*base, "--etp", "1", "--balanced-routing", "--a2a-overlap")
    assert dropless["step_time_s"] > balanced["step_time_s"]
    assert overlapped["breakdown"]["comm"]["ep_s"] < balanced["breakdown"]["comm"]["ep_s"]
    capped = run(*base, "--etp", "1", "--moe-imbalance", "1.5", "--capacity-factor", "1.0")
    assert capped["step_time_s"] == pytest.approx(balanced["step_time_s"])


@pytest.mark.parametrize("extra, message", [
    (("--balanced-routing", "--moe-imbalance", "1.5"), "balanced-routing"),
    (("--etp", "4"), "ep*etp"),
    (("--capacity-factor", "0.5"), "capacity"),
])
def test_moe_flag_errors_are_one_line(extra: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(cli, ["estimate", "qwen3-30b-a3b", "--gpus", "8", "--tp", "2", "--ep", "4",
                                      "--sequence-parallel", *extra])
    assert result.exit_code == 2
    assert result.output.startswith("rigplan: error:") and message in result.output


def test_paper_mfu_is_reported_next_to_rigplans_own() -> None:
    args = ("estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--seq", "8192", "--global-batch", "64")
    data = run(*args)
    # 8k tokens: the full s² term the papers count adds about 12·l·h·s / (6·N) = 12% to the causal-half count
    assert data["mfu"] < data["mfu_paper"] < 1.2 * data["mfu"]
    assert data["paper_tflops_per_gpu"] == pytest.approx(data["mfu_paper"] * data["peak_tflops_per_gpu"])
    assert "MFU as papers count it" in CliRunner().invoke(cli, list(args)).output
    assert run(*args, "--method", "lora")["mfu_paper"] is None


def test_host_paced_moe_says_so_on_either_host_and_quotes_its_regime() -> None:
    """A host-paced dropless MoE estimate says how much of the step waits on the host and names the CUDA-graph
    switches, on x86 and Grace hosts alike (about the same cost an op in training: estimate.moe_host.HOST_OP_S), and
    quotes its regime's published runs; the padded-capacity evidence of earlier releases is gone with the x86
    calibration (the B200 Qwen3-30B-A3B runs it cited are within 5%)."""
    args = ("estimate", "qwen3-30b-a3b", "--precision", "fp8", "--fp8-recipe", "mxfp8", "--micro-batch", "1",
            "--global-batch", "512", "--ep", "8", "--seq", "4096", "--framework", "nemo", "--balanced-routing",
            "--gpus", "8")
    for gpu in ("b200", "gb200"):
        notes = run(*args, "--gpu", gpu)["assumptions"]
        paced = [a for a in notes if a.startswith("host-paced: ")]
        assert paced and "--cuda-graphs full" in paced[0], gpu
        assert any(a.startswith("validation: on the ") for a in notes), gpu
        assert not any("bridge2602-b200-qwen3-30b" in a for a in notes), gpu


@pytest.mark.parametrize("gpu", ["h100-sxm", "mi300x", "l40s"])
def test_mxfp8_needs_block_scaled_tensor_cores(gpu: str) -> None:
    result = CliRunner().invoke(cli, ["estimate", "qwen3-30b-a3b", "--gpu", gpu, "--gpus", "8", "--ep", "8",
                                      "--precision", "fp8", "--fp8-recipe", "mxfp8", "--tokens", "1B"])
    assert result.exit_code == 2
    assert "--fp8-recipe mxfp8 cannot run on it" in result.output and "Traceback" not in result.output
    for blackwell_or_cdna4 in ("b200", "mi355x"):
        ok = CliRunner().invoke(cli, ["estimate", "qwen3-30b-a3b", "--gpu", blackwell_or_cdna4, "--gpus", "8",
                                      "--ep", "8", "--precision", "fp8", "--fp8-recipe", "mxfp8", "--tokens", "1B"])
        assert ok.exit_code == 0, ok.output


def test_a_switch_that_changes_nothing_says_so() -> None:
    base = ["estimate", "qwen3-30b-a3b", "--gpus", "16", "--ep", "16", "--tokens", "1B", "--json"]
    plain = json.loads(CliRunner().invoke(cli, base).output)
    inert = json.loads(CliRunner().invoke(cli, [*base, "--recompute-mla-up-proj", "--a2a-overlap-schedule",
                                                "dualpipe"]).output)
    assert inert["step_time_s"] == plain["step_time_s"]
    notes = " ".join(inert["assumptions"])
    assert "--recompute-mla-up-proj changes nothing" in notes and "add --a2a-overlap" in notes
    full = json.loads(CliRunner().invoke(cli, [*base, "--recompute", "full", "--recompute-moe-act"]).output)
    assert any("--recompute-moe-act changes nothing beside --recompute full" in a for a in full["assumptions"])


@pytest.mark.parametrize("lang,text", [("en", "has no NVFP4 tensor cores, so --fp8-recipe nvfp4 cannot run on it"),
                                       ("zh", "没有 NVFP4 张量核心，无法运行 --fp8-recipe nvfp4")])
def test_nvfp4_needs_blackwell_in_both_languages(lang: str, text: str) -> None:
    result = CliRunner().invoke(cli, ["--lang", lang, "estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                      "--precision", "fp8", "--fp8-recipe", "nvfp4", "--tokens", "1B"])
    assert result.exit_code == 2
    assert text in result.output and "Traceback" not in result.output


def test_nvfp4_estimate_names_its_linear_layers_in_chinese() -> None:
    result = CliRunner().invoke(cli, ["--lang", "zh", "estimate", "llama-3.1-8b", "--gpu", "b200", "--gpus", "8",
                                      "--precision", "fp8", "--fp8-recipe", "nvfp4", "--tokens", "1B"])
    assert result.exit_code == 0, result.output
    assert "NVFP4 线性层" in result.output and "请把它当作上限" in result.output


def test_an_fp8_recipe_without_fp8_precision_is_refused() -> None:
    result = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--gpu", "b200", "--gpus", "8", "--fp8-recipe",
                                      "nvfp4", "--tokens", "1B"])
    assert result.exit_code == 2
    assert "--fp8-recipe nvfp4 sets how the low-precision GEMMs scale: it needs --precision fp8" in result.output


def test_fewer_tokens_than_one_step_says_so() -> None:
    """--tokens below one step's tokens (found by fuzzing: 1,000 tokens 'trained' in 86 ms of a longer step)."""
    from click.testing import CliRunner

    from rigplan.cli.main import cli

    result = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--tokens", "1000", "--json"])
    assert result.exit_code == 0
    notes = " | ".join(json.loads(result.output)["assumptions"])
    assert "--tokens 1,000 is less than one step's 4,194,304 tokens" in notes
