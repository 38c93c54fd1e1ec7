"""--moe-dispatcher einsum: GShard's one-hot dispatch and combine einsums into capacity slots (MaxText's dense_matmul
with a capacity factor): every expert padded to capacity, five einsums of 2·E·C·h FLOPs a token per MoE layer
(forward two, backward three, two more where the layer is recomputed), outside the model's FLOP count; its masks are
saved for backward."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.errors import InvalidSpec
from rigplan.estimate import moe
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.export import export
from rigplan.export.common import Unsupported
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest, MemoryRequest
from rigplan.flow.resolve import build_setup

BASE = {"model": "deepseek-v3", "gpu": "b200", "gpus": 64, "ep": 8, "zero": 3, "global_batch": 64, "seq": 4096,
        "capacity_factor": 1.0, "precision": "bf16-true", "recompute": "full", "mtp_layers": 0}


def _job(**changes: object) -> tuple:
    setup = build_setup(EstimateRequest(**{**BASE, "moe_dispatcher": "einsum", **changes}))
    return setup.arch, setup.job


def test_capacity_slots_follow_maxtext_generate_masks() -> None:
    arch, job = _job()
    assert moe.capacity_slots(arch, job) == 256 * 128  # ceil(4096 * 8 / 256) = 128 slots per expert
    arch, job = _job(capacity_factor=1.25)
    assert moe.capacity_slots(arch, job) == 256 * 160
    arch, job = _job(model="qwen3-30b-a3b", seq=100, capacity_factor=1.25)
    assert moe.capacity_slots(arch, job) == 128 * 8  # int(ceil(800 / 128) * 1.25) = int(8.75)


def test_einsum_flops_grow_with_the_sequence_and_only_under_the_einsum_dispatcher() -> None:
    arch, job = _job()
    per_token = moe.dispatch_einsum_flop_per_token(arch, job)
    assert per_token == pytest.approx(2.0 * 256 * 128 * 7168)
    arch, longer = _job(seq=8192)
    assert moe.dispatch_einsum_flop_per_token(arch, longer) == pytest.approx(2.0 * per_token)
    arch, padded = _job(moe_dispatcher="alltoall", moe_pad_to_capacity=True)
    assert moe.dispatch_einsum_flop_per_token(arch, padded) == 0.0
    assert not moe.host_syncs(job) and moe.load_factor(job) == 1.0


def test_the_einsums_cost_time_at_a_gemm_rate_and_leave_the_model_flops_alone() -> None:
    einsum = speed.estimate(EstimateRequest(**BASE, moe_dispatcher="einsum"))
    padded = speed.estimate(EstimateRequest(**BASE, moe_dispatcher="alltoall", moe_pad_to_capacity=True))
    assert einsum.step.micro_batches == padded.step.micro_batches == 1
    assert einsum.step.model_flop_per_step == pytest.approx(padded.step.model_flop_per_step)
    arch, job = _job()
    einsums = sum(moe.DISPATCH_EINSUMS) + moe.DISPATCH_EINSUMS[0]  # forward, backward, the full recompute's forward
    flop = einsums * moe.dispatch_einsum_flop_per_token(arch, job) * BASE["seq"] * arch.num_moe_layers
    extra_s = float(einsum.step.compute_s) - float(padded.step.compute_s)
    rate = flop / extra_s / einsum.setup.gpu.peak("bf16")
    assert 0.3 < rate < 1.0, rate  # the einsums' FLOPs at a large GEMM's share of the bf16 peak
    assert any("one-hot einsums" in a for a in einsum.setup.assumptions)


def test_needs_a_capacity_factor() -> None:
    with pytest.raises(InvalidSpec, match="needs --capacity-factor"):
        build_setup(EstimateRequest(**{**BASE, "capacity_factor": 0.0}, moe_dispatcher="einsum"))
    result = CliRunner().invoke(cli, ["estimate", "deepseek-v3", "--gpu", "b200", "--gpus", "64", "--ep", "8",
                                      "--moe-dispatcher", "einsum"])
    assert result.exit_code == 2
    assert "needs --capacity-factor" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("framework", ["megatron", "torchtitan"])
def test_exports_without_it_refuse_it(framework: str) -> None:
    setup = build_setup(EstimateRequest(**{**BASE, "model": "qwen3-30b-a3b", "gpus": 8, "zero": 1},
                                        moe_dispatcher="einsum"))
    with pytest.raises(Unsupported, match="einsum dispatcher"):
        export(setup, framework)


def test_deepspeed_moe_is_the_einsum_dispatcher() -> None:
    request = {**BASE, "model": "qwen3-30b-a3b", "gpus": 8, "zero": 1, "capacity_factor": 1.25}
    einsum = export(build_setup(EstimateRequest(**request, moe_dispatcher="einsum")), "deepspeed")
    note = next(n for n in einsum.notes if "deepspeed.moe.layer.MoE" in n)
    assert "num_experts=128, ep_size=8, k=8, capacity_factor=1.25" in note and "does not count" not in note
    alltoall = export(build_setup(EstimateRequest(**request, moe_dispatcher="alltoall")), "deepspeed")
    assert any("--moe-dispatcher einsum" in n for n in alltoall.notes)


def test_capacity_follows_the_tokens_the_gate_sees() -> None:
    arch, job = _job(model="mixtral-8x7b", seq=32768, capacity_factor=1.1, ep=1)
    shard = moe.gate_shard(8, 1, True)  # tp 8 with sequence parallelism: the MoE block takes s / 8 tokens
    assert shard == 8 and moe.gate_shard(8, 2, False) == 2
    assert moe.capacity_slots(arch, job, shard) == 8 * 1126  # int(ceil(4096 * 2 / 8) * 1.1)
    assert moe.dispatch_einsum_flop_per_token(arch, job, shard) == pytest.approx(2.0 * 8 * 1126 * 4096)


def test_the_cli_takes_it() -> None:
    result = CliRunner().invoke(cli, ["estimate", "deepseek-v3", "--gpu", "b200", "--gpus", "64", "--ep", "8",
                                      "--zero", "3", "--capacity-factor", "1.25", "--moe-dispatcher", "einsum",
                                      "--json"])
    assert result.exit_code == 0, result.output


def test_the_masks_are_saved_for_backward() -> None:
    request = {**{k: v for k, v in BASE.items() if k != "global_batch"}, "micro_batch": 2, "recompute": "none"}
    einsum = build_setup(MemoryRequest(**request, moe_dispatcher="einsum"))
    padded = build_setup(MemoryRequest(**request, moe_dispatcher="alltoall", moe_pad_to_capacity=True))
    assert moe.dispatch_mask_bytes_per_token(einsum.arch, einsum.job) == 3.0 * 256 * 128  # bool + bf16 per slot
    assert moe.dispatch_mask_bytes_per_token(padded.arch, padded.job) == 0.0
    layer = {name: layer_activation_bytes(s.arch, s.job, s.layout, moe_layer=True).saved_bytes
             for name, s in (("einsum", einsum), ("padded", padded))}
    tokens = 2 * BASE["seq"]
    assert layer["einsum"] - layer["padded"] == pytest.approx(3.0 * 256 * 128 * tokens)
