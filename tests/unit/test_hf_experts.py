"""Hugging Face transformers' routed experts on the host (estimate.hf_experts): which implementation runs, how many
experts a micro-batch reaches, the serial phases of the eager loop, and the switch end to end."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.domain.job import Job
from rigplan.errors import InvalidSpec
from rigplan.estimate import hf_experts, moe_host, peft_experts
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest

QWEN_LORA = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 8, "framework": "hf", "method": "lora",
             "seq": 4096, "micro_batch": 1, "global_batch": 64}
HOST_ARGS = {"kernels": 30.0, "layers": 48.0, "dense_layers": 0.0, "lm_head": 1.0, "recomputed_layers": 0.0}


def test_grouped_mm_is_the_default_on_the_hf_kernels_only() -> None:
    assert hf_experts.experts_implementation(Job(kernels="hf")) == "grouped_mm"
    assert hf_experts.experts_implementation(Job(kernels="hf", experts_implementation="eager")) == "eager"
    assert hf_experts.experts_implementation(Job(kernels="eager", experts_implementation="eager")) == "eager"
    assert hf_experts.experts_implementation(Job(kernels="eager")) is None  # torchtitan's own experts
    assert hf_experts.experts_implementation(Job()) is None  # Megatron-Core's
    with pytest.raises(InvalidSpec, match="needs the model's own PyTorch modules"):
        Job(kernels="fused", experts_implementation="grouped_mm")


def test_experts_hit_runs_from_k_at_one_token_to_all_of_them() -> None:
    arch = load_catalog().model("qwen3-30b-a3b").to_domain()  # 128 experts, top-8
    assert float(hf_experts.experts_hit(arch, 1.0)) == pytest.approx(8.0)
    assert float(hf_experts.experts_hit(arch, 16.0)) == pytest.approx(128.0 * (1.0 - (1.0 - 8.0 / 128.0) ** 16))
    assert float(hf_experts.experts_hit(arch, 4096.0)) == pytest.approx(128.0)
    assert float(hf_experts.experts_hit(arch, 4096.0, 8.0)) == pytest.approx(16.0)  # a rank's 16 of 128


def test_the_eager_loop_serialises_the_expert_phase_and_the_rest() -> None:
    # a host-only expert phase after a GPU-only rest cannot overlap it: the two add up
    assert float(hf_experts.serial_phases_s(1.0, 0.5, 0.0, 0.5)) == pytest.approx(1.5)
    # each phase still overlaps inside itself
    assert float(hf_experts.serial_phases_s(1.0, 1.0, 0.5, 0.5)) == pytest.approx(1.0)
    assert float(hf_experts.serial_phases_s(1.0, 0.0, 0.5, 0.0)) == pytest.approx(1.0)
    assert float(hf_experts.serial_phases_s(0.0, 2.0, 0.0, 1.0)) == pytest.approx(2.0)


def test_the_eager_loop_issues_every_expert_hit_and_waits_where_grouped_mm_runs_ahead() -> None:
    catalog = load_catalog()
    arch, h100 = catalog.model("qwen3-30b-a3b").to_domain(), catalog.gpu("h100-sxm").to_domain()
    grouped, eager = Job(kernels="hf", seq_len=4096), Job(kernels="hf", seq_len=4096, experts_implementation="eager")
    op_s = moe_host.TORCH_LINEAR_CPU_S["x86"]
    issue = {}
    for name, job in (("grouped", grouped), ("eager", eager)):
        forward = float(hf_experts.moe_layer_ops(arch, job, 4096.0, "forward"))
        backward = float(hf_experts.moe_layer_ops(arch, job, 4096.0, "backward"))
        issue[name] = 48.0 * (2 * 30.0 + forward + backward) * op_s
    expected_eager = hf_experts.ROUTER_OPS + hf_experts.EAGER_LAYER_OPS + 128.0 * hf_experts.EAGER_EXPERT_OPS["forward"]
    assert float(hf_experts.moe_layer_ops(arch, eager, 4096.0, "forward")) == pytest.approx(expected_eager)
    for name, job in (("grouped", grouped), ("eager", eager)):
        gpu_s = 2.0 * issue[name]  # the GPU has twice the host's work
        timing = hf_experts.host_timing(arch, job, h100, 1.0, gpu_s, tokens=4096.0, expert_forward_s=0.1 * gpu_s,
                                        **HOST_ARGS)
        assert float(timing.load) == pytest.approx(0.5)
        if name == "grouped":  # no wait: the host hides behind the GPU
            assert float(timing.exposed_s) == 0.0
        else:  # the expert loop's host time cannot hide behind the attention's GPU time
            assert float(timing.exposed_s) > 0.0


def test_peft_adapters_on_the_expert_linears_add_host_ops_to_the_loop() -> None:
    arch = load_catalog().model("qwen3-30b-a3b").to_domain()
    plain = Job(kernels="hf", method="lora", experts_implementation="eager")
    wrapped = Job(kernels="hf", method="lora", experts_implementation="eager", lora_targets=("q", "v", "gate", "up",
                                                                                            "down"))
    added = float(hf_experts.moe_layer_ops(arch, wrapped, 4096.0, "forward")) - float(
        hf_experts.moe_layer_ops(arch, plain, 4096.0, "forward"))
    assert added == pytest.approx(128.0 * 3 * hf_experts.LORA_LINEAR_OPS)
    # under grouped_mm peft wraps the two 3-D expert parameters (gate_up_proj, down_proj), not one module an expert
    grouped = Job(kernels="hf", method="lora", lora_targets=("q", "v", "gate", "up", "down"))
    added = float(hf_experts.moe_layer_ops(arch, grouped, 4096.0, "forward")) - float(
        hf_experts.moe_layer_ops(arch, Job(kernels="hf", method="lora"), 4096.0, "forward"))
    assert added == pytest.approx(2 * peft_experts.HOST_OPS["forward"])


def test_transformers_4_loop_is_slower_the_more_experts_a_model_has() -> None:
    slowdown = {}
    for model in ("qwen3-30b-a3b", "mixtral-8x7b"):  # 128 and 8 experts
        grouped = speed.estimate(EstimateRequest(**{**QWEN_LORA, "model": model}))
        eager = speed.estimate(EstimateRequest(**{**QWEN_LORA, "model": model, "experts_implementation": "eager"}))
        slowdown[model] = float(eager.step.step_time_s) / float(grouped.step.step_time_s)
        assert any("transformers" in a and "no published transformers MoE training run" in a
                   for a in eager.setup.assumptions)
    assert slowdown["qwen3-30b-a3b"] > 3.0
    assert 1.0 <= slowdown["mixtral-8x7b"] < 1.2


def test_the_cli_switch_and_its_error() -> None:
    runner = CliRunner()
    args = ["estimate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "8", "--framework", "hf", "--method", "lora"]
    ok = runner.invoke(cli, [*args, "--experts-implementation", "eager"])
    assert ok.exit_code == 0 and "--experts-implementation grouped_mm" in ok.output
    bad = runner.invoke(cli, ["estimate", "qwen3-30b-a3b", "--framework", "megatron", "--experts-implementation",
                              "eager"])
    assert bad.exit_code == 2 and "--kernels fused" in bad.output and "Traceback" not in bad.output


def test_the_switch_on_a_dense_model_says_it_changes_nothing() -> None:
    dense = speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, framework="hf",
                                           experts_implementation="eager"))
    assert "--experts-implementation changes nothing: llama-3.1-8b has no routed experts" in dense.setup.assumptions
