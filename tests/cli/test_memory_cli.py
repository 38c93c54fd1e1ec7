"""`rigplan memory`, `models`, `gpus`: JSON contract, text output, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REQUIRED_KEYS = ("model.id", "model.params_total", "model.params_active", "per_gpu.weights_bytes",
                 "per_gpu.gradients_bytes", "per_gpu.optimizer_bytes", "per_gpu.activations_bytes",
                 "per_gpu.logits_bytes", "per_gpu.overhead_bytes", "per_gpu.total_bytes", "gpu.id",
                 "gpu.usable_bytes", "fits", "headroom_bytes", "host_bytes", "assumptions")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from rigplan.cli.main import main; main()", *args],
                          capture_output=True, text=True, timeout=120)


def lookup(data: dict, dotted: str) -> object:
    for part in dotted.split("."):
        data = data[part]
    return data


def test_memory_json_has_the_contract_keys() -> None:
    out = run("memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in REQUIRED_KEYS:
        lookup(data, key)
    assert data["model"]["id"] == "llama-3.1-8b"
    assert data["gpu"]["id"] == "h100-sxm"
    per_gpu = data["per_gpu"]
    parts = sum(per_gpu[k] for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                                     "logits_bytes", "transient_bytes", "overhead_bytes"))
    assert per_gpu["total_bytes"] == pytest.approx(parts)
    assert data["fits"] == (data["headroom_bytes"] >= 0)


def test_memory_text_has_breakdown_and_verdict() -> None:
    out = run("memory", "llama-3.1-8b", "--gpu", "rtx-4090", "--method", "qlora", "--seq", "2048", "--find-max")
    assert out.returncode == 0, out.stderr
    assert "optimizer states" in out.stdout
    assert "FITS" in out.stdout
    assert "largest micro-batch" in out.stdout


def test_moe_reports_active_params() -> None:
    data = json.loads(run("memory", "mixtral-8x7b", "--gpus", "8", "--ep", "8", "--zero", "1", "--json").stdout)
    assert data["model"]["params_active"] < data["model"]["params_total"] / 3


def test_generic_size_is_assumed_and_said() -> None:
    data = json.loads(run("memory", "70b", "--gpus", "64", "--tp", "8", "--zero", "1", "--json").stdout)
    assert 66e9 < data["model"]["params_total"] < 74e9
    assert any("generic" in a for a in data["assumptions"])


def test_shape_flags_without_model() -> None:
    out = run("memory", "--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "100", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    # 2 layers x (4·64² attention + 2·64·256 plain? no: gated 3·64·256) + norms, embeddings untied
    assert data["model"]["params_total"] == 2 * (4 * 64 * 64 + 3 * 64 * 256 + 2 * 64) + 2 * 100 * 64 + 64


@pytest.mark.parametrize("args,expected", [
    (("memory", "llama-3.1-8bb"), "did you mean llama-3.1-8b"),
    (("memory", "llama-3.1-8b", "--gpu", "h100"), "unknown gpu 'h100'"),
    (("memory", "llama-3.1-8b", "--tp", "3"), "tp=3 must divide heads=32, and divide kv_heads=8 or be a multiple"),
    (("memory", "llama-3.1-8b", "--pp", "4", "--stage-layers", "8,8,8"), "4 virtual stages need one each"),
    (("memory", "llama-3.1-8b", "--pp", "4", "--stage-layers", "8,8,8,9"), "sums to 33, the model has 32"),
    (("memory", "llama-3.1-8b", "--pp", "4", "--stage-layers", "8,a"), "comma-separated layer counts"),
    (("memory", "llama-3.1-8b", "--gpus", "64", "--pp", "64"), "more than the 32 layers"),
    (("memory", "llama-3.1-8b", "--pp", "4", "--first-stage-layers", "40"), "leave -8 of the 32 layers"),
    (("memory", "llama-3.1-8b", "--micro-batch", "-1"), "--micro-batch"),
    (("memory", "llama-3.1-8b", "--seq", "0"), "--seq"),
    (("memory", "llama-3.1-8b", "--gpus", "12", "--tp", "8"), "not a multiple of tp*pp*cp"),
    (("memory", "llama-3.1-8b", "--gpus", "2", "--ep", "2"), "needs a mixture-of-experts model"),
    (("memory", "llama-3.1-8b", "--lora-targets", "qq", "--method", "lora"), "unknown LoRA target"),
    (("memory", "--layers", "2"), "give at least --layers, --hidden, --heads and --vocab"),
    (("memory", "llama-3.1-8b", "--precision", "int3"), "--precision"),
    (("models", "show", "gpt-5"), "unknown model 'gpt-5'"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], expected: str) -> None:
    out = run(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert expected in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_malformed_config_json(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{ not json")
    out = run("memory", str(bad))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_catalog_listing_json() -> None:
    models = json.loads(run("models", "--json").stdout)["models"]
    gpus = json.loads(run("gpus", "--json").stdout)["gpus"]
    assert {"llama-3.1-8b", "deepseek-v3", "gpt-3-175b"} <= {m["id"] for m in models}
    assert {"h100-sxm", "rtx-4090", "mi300x"} <= {g["id"] for g in gpus}
    shown = json.loads(run("gpus", "show", "h100-sxm", "--json").stdout)
    assert shown["dense_tflops"]["bf16"] == pytest.approx(989.5, rel=0.01)
    assert shown["sources"]


def test_catalog_overlay_replaces_a_record(tmp_path: Path) -> None:
    (tmp_path / "gpus").mkdir()
    source = Path(__file__).parents[2] / "src/rigplan/catalog/data/gpus/h100-sxm.yaml"
    text = source.read_text().replace("name: ", "name: Overlay ", 1)
    (tmp_path / "gpus" / "h100-sxm.yaml").write_text(text)
    data = json.loads(run("memory", "llama-3.1-8b", "--catalog", str(tmp_path), "--json").stdout)
    assert data["gpu"]["name"].startswith("Overlay")


def test_overlay_with_unknown_key_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "gpus").mkdir()
    source = Path(__file__).parents[2] / "src/rigplan/catalog/data/gpus/h100-sxm.yaml"
    (tmp_path / "gpus" / "h100-sxm.yaml").write_text(source.read_text() + "\nwarp_drive: true\n")
    out = run("gpus", "--catalog", str(tmp_path))
    assert out.returncode == 2
    assert "warp_drive" in out.stderr


def test_memory_reports_the_load_peak_when_it_is_the_maximum() -> None:
    out = run("memory", "llama-2-7b", "--method", "lora", "--gpus", "2", "--fsdp", "--seq", "512",
              "--gpu", "a100-40gb-sxm", "--checkpoint-load", "full", "--json")
    assert out.returncode == 0, out.stderr
    per_gpu = json.loads(out.stdout)["per_gpu"]
    assert per_gpu["peak_phase"] == "load"
    assert per_gpu["load_peak_bytes"] > per_gpu["step_allocated_bytes"]
    text = run("memory", "llama-2-7b", "--method", "lora", "--gpus", "2", "--fsdp", "--seq", "512",
               "--gpu", "a100-40gb-sxm", "--checkpoint-load", "full")
    assert "load peak" in text.stdout and "peak during load" in text.stdout


def test_bad_checkpoint_load_is_one_line() -> None:
    out = run("memory", "llama-2-7b", "--checkpoint-load", "lazy")
    assert out.returncode == 2
    assert "--checkpoint-load" in out.stderr


@pytest.mark.parametrize(("args", "alternative"), [
    (("--gpu", "v100-32gb"), "fp16-mixed"),  # the default recipe, bf16-mixed
    (("--gpu", "v100-32gb", "--precision", "bf16-true"), "fp16-mixed"),
    (("--gpu", "v100-32gb", "--method", "qlora"), "fp16-mixed"),  # the PEFT default, bf16-true
    (("--gpu", "a100-80gb-sxm", "--precision", "fp8"), "bf16-mixed"),
])
def test_precision_the_gpu_lacks_is_an_error_naming_the_alternative(args: tuple[str, ...], alternative: str) -> None:
    out = run("memory", "llama-3.1-8b", *args)
    assert out.returncode == 2
    assert out.stderr.startswith("rigplan: error: ") and "Traceback" not in out.stderr
    assert f"--precision {alternative}" in out.stderr


def test_v100_runs_fp16_mixed() -> None:
    out = run("memory", "llama-3.2-1b", "--gpu", "v100-32gb", "--precision", "fp16-mixed", "--json")
    assert out.returncode == 0, out.stderr


def test_job_between_usable_and_nominal_memory_does_not_fit_on_b300() -> None:
    # about 280 GiB per GPU: below the 288 GiB nominal, above the 268.6 GiB nvidia-smi reports
    out = run("memory", "llama-3.1-70b", "--gpu", "b300", "--gpus", "5", "--zero", "3", "--recompute", "full",
              "--micro-batch", "2", "--seq", "10240", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert 275040 * 1024**2 < data["per_gpu"]["total_bytes"] < 288 * 1024**3
    assert data["gpu"]["usable_bytes"] == 275040 * 1024**2
    assert data["fits"] is False


def test_mi250x_device_is_one_gcd() -> None:
    out = run("memory", "llama-3.1-8b", "--gpu", "mi250x", "--json")
    data = json.loads(out.stdout)
    assert data["gpu"]["usable_bytes"] == 64 * 1024**3


def test_a_layout_whose_tp_experts_do_not_fit_runs_at_etp_1_and_says_so() -> None:
    # Qwen3-235B's Megatron-Bridge H100 layout (TP 2, PP 8, EP 32 on 256 GPUs) runs with expert_tensor_parallel 1
    args = ("memory", "qwen3-235b-a22b", "--gpu", "h100-sxm", "--gpus", "256", "--tp", "2", "--pp", "8", "--ep", "32")
    out = run(*args, "--json")
    assert out.returncode == 0, out.stderr
    assert any(a.startswith("etp=1: ep*tp = 32*2") for a in json.loads(out.stdout)["assumptions"])
    assert "etp=1：ep*tp = 32*2" in run("--lang", "zh", *args).stdout.replace("\n", "")
    refused = run(*args, "--etp", "2")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "ep*etp = 32*2 must divide the GPUs of a pipeline stage" in refused.stderr


def test_expert_count_error_lists_the_nearest_ep_that_divide_it() -> None:
    out = run("memory", "glm-4.5", "--gpu", "h100-sxm", "--gpus", "512", "--pp", "8", "--ep", "64")
    assert out.returncode == 2
    # 40, 80 and 160 divide the experts but not the 64 GPUs of a stage
    assert "ep=64 must divide experts=160 (ep that do: 16, 32)" in out.stderr
    zh = run("--lang", "zh", "memory", "glm-4.5", "--gpu", "h100-sxm", "--gpus", "512", "--pp", "8", "--ep", "64")
    assert "可整除的 ep：16, 32" in zh.stderr


def test_fp8_weights_keep_a_transpose_on_hopper_only() -> None:
    """Transformer Engine caches the fp8 weight's transpose only where fp8 GEMMs are TN-only
    (is_non_tn_fp8_gemm_supported: False on Hopper, True on datacenter Blackwell); MXFP8 keeps both layouts."""
    def weights(gpu: str, *extra: str) -> tuple[float, list[str]]:
        out = run("memory", "llama-3.1-8b", "--gpu", gpu, "--precision", "fp8", "--framework", "megatron",
                  "--json", *extra)
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        return data["per_gpu"]["weights_bytes"], data["assumptions"]

    hopper, hopper_notes = weights("h100-sxm")
    blackwell, blackwell_notes = weights("b200")
    mxfp8, _ = weights("b200", "--fp8-recipe", "mxfp8")
    # Llama 3.1 8B's block linears: 32 x (4096 x (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336)
    linears = 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)
    assert hopper - blackwell == pytest.approx(linears)  # the transpose, one byte per linear weight
    assert mxfp8 - blackwell == pytest.approx(linears * (1 + 2 / 32))  # both layouts, each with its scales
    assert any("keep no transpose on b200" in note for note in blackwell_notes)
    assert not any("keep no transpose" in note for note in hopper_notes)
    zh = run("--lang", "zh", "memory", "llama-3.1-8b", "--gpu", "b200", "--precision", "fp8", "--framework", "megatron")
    assert "不保留转置副本" in zh.stdout


def test_bf16_loss_keeps_half_the_unfused_logit_buffers() -> None:
    """--loss bf16 (cross-entropy on the bf16 logits, AutoModel's MaskedCrossEntropy fp32_upcast false): 6 B per
    logit at the log-softmax backward against 12 B for the fp32 upcast."""
    def logits(loss: str) -> float:
        out = run("memory", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "8", "--ep", "8", "--zero", "3",
                  "--micro-batch", "4", "--seq", "4096", "--loss", loss, "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["per_gpu"]["logits_bytes"]

    unfused, bf16 = logits("unfused"), logits("bf16")
    head_inputs = 4 * 4096 * 2 * 2048 * 2  # the LM head's inputs, counted in both
    assert (bf16 - head_inputs) / (unfused - head_inputs) == pytest.approx(0.5)


def test_memory_json_names_the_expert_layout_and_the_routing_it_ran() -> None:
    data = json.loads(run("memory", "qwen3-235b-a22b", "--gpus", "256", "--tp", "2", "--pp", "8", "--ep", "32",
                          "--json").stdout)
    # etp resolved to 1 (ep*tp does not fit a stage), expert data parallelism from the rest
    assert (data["layout"]["etp"], data["layout"]["expert_dp"]) == (1, 1)
    assert data["job"]["moe_load_factor"] == 1.5 and data["job"]["moe_dispatcher"] == "alltoall"
    dense = json.loads(run("memory", "llama-3.1-8b", "--json").stdout)
    assert "moe_load_factor" not in dense["job"]


def test_a_stage_too_small_for_ep_names_the_ep_that_fit_and_the_gpus_that_would() -> None:
    out = run("memory", "qwen3-30b-a3b", "--gpus", "256", "--pp", "8", "--ep", "3")
    assert out.returncode == 2 and "ep that do at etp 1: 1, 2, 4, 8, 16, 32" in out.stderr
    alone = run("memory", "qwen3-30b-a3b", "--ep", "8")
    assert alone.returncode == 2 and "or --gpus 8 or a multiple of it" in alone.stderr


def test_the_offload_remedy_says_what_it_costs_each_step() -> None:
    data = json.loads(run("memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--json").stdout)
    offload = next(r for r in data["advice"] if r["flag"] == "--offload optimizer")
    # 8.03B parameters on one GPU: 30 B each over 60 GB/s of host memory plus 2 B each back over PCIe Gen5
    assert offload["host_s_per_step"] == pytest.approx(8.03e9 * (30 / 60e9 + 2 / 50e9), rel=0.01)
    assert all("host_s_per_step" not in r for r in data["advice"] if not r["flag"].startswith("--offload"))
    text = run("memory", "llama-3.1-8b", "--gpu", "h100-sxm").stdout
    assert "try --offload optimizer" in text and "a step on the host" in text
