"""Megatron-Core's 'moe' recompute module (--recompute-modules moe): the whole MoE block keeps its input only and
runs its forward again before its backward, all-to-alls and host ops included (estimate.recompute_modules)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.domain.job import Job
from rigplan.estimate import moe_host
from rigplan.estimate.activations import mlp_token_bytes
from rigplan.estimate.flops import micro_batch_flops
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest


def test_the_block_keeps_its_input_and_the_residual_only(dsv3) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="fused", moe_imbalance=1.0)
    whole = mlp_token_bytes(dsv3, replace(job, recompute_moe=True), False, True)
    # bf16: the residual (2·h) and the pre-MLP norm's output, the block's input (2·h); nothing split by tp
    assert whole.replicated_under_tp == 4 * dsv3.hidden and whole.split_by_tp == 0.0
    kept = mlp_token_bytes(dsv3, job, False, True)
    assert kept.split_by_tp > 0 and kept.replicated_under_tp > whole.replicated_under_tp
    # layernorm recompute frees the block's input too; dense layers are not touched
    both = replace(job, recompute_moe=True, recompute_layernorm=True)
    assert mlp_token_bytes(dsv3, both, False, True).replicated_under_tp == 2 * dsv3.hidden
    assert mlp_token_bytes(dsv3, replace(job, recompute_moe=True), False, False) == mlp_token_bytes(
        dsv3, job, False, False)


def test_the_block_forward_runs_again(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    job = Job(seq_len=4096, micro_batch=1)
    base = micro_batch_flops(qwen3_moe, job)
    redone = micro_batch_flops(qwen3_moe, replace(job, recompute_moe=True))
    assert float(redone.recompute.expert_flop - base.recompute.expert_flop) == pytest.approx(
        float(base.forward.expert_flop))
    assert float(redone.recompute.router_flop - base.recompute.router_flop) == pytest.approx(
        float(base.forward.router_flop))
    # attention and the LM head are outside the block
    assert redone.recompute.attention_proj_flop == base.recompute.attention_proj_flop
    assert redone.recompute.lm_head_flop == base.recompute.lm_head_flop
    # under full recompute the layer reruns anyway: the switch adds nothing
    full = replace(job, recompute="full")
    assert micro_batch_flops(qwen3_moe, replace(full, recompute_moe=True)).recompute == micro_batch_flops(
        qwen3_moe, full).recompute


def test_the_host_issues_the_block_again_in_backward(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="fused")
    args = dict(kernels=14.0, layers=48.0, dense_layers=0.0, lm_head=0.0, recomputed_layers=0.0)
    h100 = load_catalog().gpu("h100-sxm").to_domain()  # an x86 host
    # a GPU stream short enough for the host to set the pace: the extra host work shows up whole
    plain = float(moe_host.exposed_host_s(qwen3_moe, job, h100, 8.0, 1e-6, **args))
    redone = float(moe_host.exposed_host_s(qwen3_moe, replace(job, recompute_moe=True), h100, 8.0, 1e-6, **args))
    fwd, _ = moe_host.host_ops_per_moe_layer(qwen3_moe, job, 8.0, 14.0)
    assert redone - plain == pytest.approx(48 * float(fwd - 14.0) * moe_host.HOST_OP_S["x86"])


def test_estimate_memory_time_and_notes() -> None:
    base = {"model": "qwen3-235b-a22b", "gpu": "h100-sxm", "gpus": 256, "seq": 16384, "micro_batch": 1,
            "global_batch": 256, "tp": 4, "pp": 8, "vpp": 4, "ep": 8, "sequence_parallel": True,
            "framework": "megatron", "balanced_routing": True}
    plain = estimate(EstimateRequest(**base))
    redone = estimate(EstimateRequest(**base, recompute_moe=True))
    assert redone.step.step_time_s > plain.step.step_time_s
    # the all-to-all of the rerun forward: exposed expert-parallel traffic grows
    assert redone.step.ep_comm_s > plain.step.ep_comm_s
    assert redone.memory.breakdown.activations_bytes < plain.memory.breakdown.activations_bytes
    dense = estimate(EstimateRequest(**{**base, "model": "llama-3.1-8b", "ep": 1, "recompute_moe": True}))
    assert any("--recompute-moe changes nothing" in note for note in dense.setup.assumptions)


def test_cli_switch_reaches_the_job() -> None:
    args = ["memory", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "8", "--ep", "8", "--framework", "megatron",
            "--json"]
    runner = CliRunner()
    plain, redone = runner.invoke(cli, args), runner.invoke(cli, [*args, "--recompute-moe"])
    assert plain.exit_code == 0 and redone.exit_code == 0, plain.output + redone.output
    a, b = json.loads(plain.output), json.loads(redone.output)
    assert b["job"]["recompute_moe"] and not a["job"]["recompute_moe"]
    assert b["per_gpu"]["activations_bytes"] < a["per_gpu"]["activations_bytes"]


def test_the_inert_switch_notes_read_in_chinese() -> None:
    from rigplan import i18n

    base = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 8, "ep": 8, "framework": "megatron"}
    notes = [*estimate(EstimateRequest(**{**base, "model": "llama-3.1-8b", "ep": 1, "recompute_moe": True})).setup
             .assumptions,
             *estimate(EstimateRequest(**base, recompute_moe=True, recompute="full")).setup.assumptions,
             *estimate(EstimateRequest(**base, recompute_moe=True, recompute_moe_act=True)).setup.assumptions]
    inert = [note for note in notes if "changes nothing" in note and "--recompute-moe" in note]
    assert len(inert) == 3
    assert all(i18n.translate(note, "zh") != note for note in inert)
