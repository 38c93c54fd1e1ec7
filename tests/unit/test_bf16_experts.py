"""--bf16-experts: torchao's float8 linear conversion as torchtitan applies it, every linear of the blocks in fp8 but
the routed experts' grouped GEMMs, which stay bf16 with their weights and all-to-all."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.errors import InvalidSpec
from rigplan.estimate.elementwise import FP8_CAST_BYTES, fp8_cast_bytes_per_token
from rigplan.estimate.moe_host import host_ops_per_moe_layer
from rigplan.flow import estimate as speed
from rigplan.flow.memory import memory
from rigplan.flow.request import EstimateRequest, MemoryRequest

BASE = {"model": "mixtral-8x7b", "gpu": "b200", "gpus": 8, "ep": 8, "seq": 4096, "micro_batch": 4,
        "global_batch": 64, "framework": "torchtitan", "compile": True, "balanced_routing": True}
FP8 = {**BASE, "precision": "fp8", "fp8_recipe": "current"}


def test_dense_linears_in_fp8_experts_in_bf16() -> None:
    bf16 = speed.estimate(EstimateRequest(**BASE))
    dense_only = speed.estimate(EstimateRequest(**FP8, bf16_experts=True))
    everything = speed.estimate(EstimateRequest(**FP8))
    # Mixtral's wide experts gain from fp8: leaving them bf16 gives most of that up; the attention linears keep theirs
    assert everything.step.step_time_s < dense_only.step.step_time_s < bf16.step.step_time_s
    # the all-to-all carries bf16 as without fp8, where full fp8 dispatches fp8
    assert dense_only.step.ep_comm_s == pytest.approx(bf16.step.ep_comm_s)
    assert everything.step.ep_comm_s < dense_only.step.ep_comm_s
    assumptions = dense_only.setup.assumptions
    assert any(a.startswith("bf16 experts: ") for a in assumptions)
    assert not any(a.startswith("MoE in fp8: ") for a in assumptions)
    assert any(a.startswith("MoE in fp8: ") for a in everything.setup.assumptions)


def test_expert_weights_keep_no_fp8_copy() -> None:
    def weights(**changes: object) -> float:
        request = {k: v for k, v in {**FP8, **changes}.items() if k != "global_batch"}
        return float(memory(MemoryRequest(**request)).breakdown.weights_bytes)

    everything, dense_only = weights(), weights(bf16_experts=True)
    bf16 = weights(precision="bf16-mixed", fp8_recipe="delayed")
    # torchao's tensorwise fp8 keeps a 1 B/param copy beside each converted bf16 weight
    assert bf16 < dense_only < everything
    arch = load_catalog().model("mixtral-8x7b").to_domain()
    assert arch.moe is not None
    expert_params_per_gpu = 3 * arch.hidden * arch.moe.expert_ffn * arch.moe.num_experts / 8 * arch.num_layers
    assert everything - dense_only == pytest.approx(expert_params_per_gpu * 1.0, rel=1e-6)


def test_only_the_dense_operands_are_cast_and_host_ops_are_bf16s() -> None:
    job = speed.estimate(EstimateRequest(**FP8, bf16_experts=True)).setup.job
    full = speed.estimate(EstimateRequest(**FP8)).setup.job
    bf16 = speed.estimate(EstimateRequest(**BASE)).setup.job
    arch = load_catalog().model("mixtral-8x7b").to_domain()
    h, q_w, kv_w = arch.hidden, arch.num_heads * arch.dim_per_head, arch.kv_heads * arch.dim_per_head
    dense_elements = h + q_w + (q_w + 2 * kv_w) + h  # no shared expert in Mixtral
    # compiled current scaling fuses the amax into the producer: the delayed recipe's traffic per element
    assert fp8_cast_bytes_per_token(arch, job, 1.0) == pytest.approx(dense_elements * FP8_CAST_BYTES["delayed"])
    assert fp8_cast_bytes_per_token(arch, job, 1.0) < fp8_cast_bytes_per_token(arch, full, 1.0)
    assert host_ops_per_moe_layer(arch, job, 8.0, 14.0) == host_ops_per_moe_layer(arch, bf16, 8.0, 14.0)
    # fp8 experts issue bf16's host ops (one allocation for all experts: TransformerEngine PRs #1793, #1934)
    assert host_ops_per_moe_layer(arch, full, 8.0, 14.0) == host_ops_per_moe_layer(arch, job, 8.0, 14.0)


@pytest.mark.parametrize(("changes", "message"), [
    ({"precision": "bf16-mixed", "fp8_recipe": "delayed"}, "needs --precision fp8"),
    ({"framework": "megatron", "compile": False}, "give --kernels eager"),
    ({"model": "llama-3.1-8b", "ep": 1}, "this model has none"),
])
def test_what_it_cannot_run_is_one_clear_line(changes: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSpec, match=re.escape(message)) as info:
        speed.estimate(EstimateRequest(**{**FP8, "bf16_experts": True, **changes}))
    assert "\n" not in str(info.value)


def test_the_cli_flag_and_its_error() -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["estimate", "mixtral-8x7b", "--gpu", "b200", "--gpus", "8", "--ep", "8", "--precision",
                             "fp8", "--fp8-recipe", "current", "--framework", "torchtitan", "--bf16-experts"])
    assert ok.exit_code == 0 and "bf16 experts: " in ok.output
    bad = runner.invoke(cli, ["estimate", "mixtral-8x7b", "--gpu", "b200", "--gpus", "8", "--ep", "8",
                              "--framework", "torchtitan", "--bf16-experts"])
    assert bad.exit_code == 2 and "needs --precision fp8" in bad.output and "Traceback" not in bad.output
