"""torchtitan's per-op selective checkpointing ('op') in an MoE layer: its save list holds aten.mm and the attention
kernels, not the routed experts' torch._grouped_mm, and the router gate is force-recomputed, so the routed experts
keep no activations and run their whole forward again in backward."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.estimate.activations import op_checkpoint_token_bytes
from rigplan.estimate.flops import ROUTED_EXPERTS_OP_RECOMPUTED, micro_batch_flops, op_recompute_matmul_share
from rigplan.flow import estimate as speed
from rigplan.flow.memory import memory
from rigplan.flow.request import EstimateRequest, MemoryRequest

BASE = {"model": "gpt-oss-20b", "gpu": "gb300", "gpus": 64, "seq": 8192, "micro_batch": 8, "zero": 3,
        "framework": "torchtitan", "compile": True, "loss": "head-chunked"}


def test_routed_experts_keep_nothing_under_op() -> None:
    arch = load_catalog().model("gpt-oss-20b").to_domain()
    job = speed.estimate(EstimateRequest(**BASE, global_batch=512, recompute="op")).setup.job
    moe_token = op_checkpoint_token_bytes(arch, job, moe_layer=True)
    p = job.compute_dtype_bytes
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    # saved: the layer input, q and v (1st and 3rd matmuls; k and the output projection recomputed) and the
    # attention output; gpt-oss has no shared experts, so nothing of the MLP
    assert moe_token.split_by_tp == pytest.approx(p * (q_w + kv_w) + p * q_w)
    assert job.recompute == "op"


def test_the_recompute_reruns_the_routed_forward_and_the_alternation_skips_it() -> None:
    gpt_oss = load_catalog().model("gpt-oss-20b").to_domain()
    qwen = load_catalog().model("qwen3-30b-a3b").to_domain()
    assert ROUTED_EXPERTS_OP_RECOMPUTED == 1.0
    # attention only (q, k, v, o): k and o recomputed
    q_w, kv_w, h = gpt_oss.num_heads * gpt_oss.dim_per_head, gpt_oss.kv_heads * gpt_oss.dim_per_head, gpt_oss.hidden
    assert op_recompute_matmul_share(gpt_oss) == pytest.approx((h * kv_w + q_w * h) / (2 * h * q_w + 2 * h * kv_w))
    assert 0.0 < op_recompute_matmul_share(qwen) < 1.0
    job = speed.estimate(EstimateRequest(**BASE, global_batch=512, recompute="op")).setup.job
    flops_op = micro_batch_flops(gpt_oss, job)
    flops_none = micro_batch_flops(gpt_oss, replace(job, recompute="none"))
    assert flops_op.recompute.expert_flop == pytest.approx(flops_op.forward.expert_flop)
    assert flops_op.recompute.attention_proj_flop == pytest.approx(
        flops_op.forward.attention_proj_flop * op_recompute_matmul_share(gpt_oss))
    assert flops_none.recompute.expert_flop == 0.0


def test_lambda_gb300_selective_runs_within_their_measured_memory() -> None:
    # Lambda's torchtitan tuning on 64 GB300 (gb300/TUNING_RESULTS.md @ 3956f1b7): SelectiveAC + compile at batch 8
    # reserved 27.2% of 276.5 GiB; rigplan once kept the routed experts' GEMM outputs and gave 141.6 GiB
    reserved = memory(MemoryRequest(**BASE, recompute="op")).breakdown.reserved_bytes / 2**30
    assert reserved == pytest.approx(0.272 * 276.5, rel=0.15)


def test_saving_the_grouped_gemms_keeps_fc1_and_fc2_outputs_and_skips_their_rerun() -> None:
    # --op-save-grouped-mm: aten._grouped_mm in the save list (Lambda's save_grouped_mm,
    # gb300/TUNING_RESULTS_SAC_GMM.md @ c94ee3f7): each routed copy keeps fc1's (R, 2F) and fc2's (R, D) outputs
    arch = load_catalog().model("gpt-oss-20b").to_domain()
    plain = speed.estimate(EstimateRequest(**BASE, global_batch=512, recompute="op")).setup.job
    saved = speed.estimate(EstimateRequest(**BASE, global_batch=512, recompute="op",
                                           op_save_grouped_mm=True)).setup.job
    assert saved.op_save_grouped_mm
    p, moe = saved.compute_dtype_bytes, arch.moe
    assert moe is not None
    balanced = replace(saved, moe_imbalance=1.0)
    extra = (op_checkpoint_token_bytes(arch, balanced, moe_layer=True).split_by_tp
             - op_checkpoint_token_bytes(arch, replace(plain, moe_imbalance=1.0), moe_layer=True).split_by_tp)
    assert extra == pytest.approx(p * moe.top_k * (2 * moe.expert_ffn + arch.hidden))
    # per 8,192-token sequence over gpt-oss-20b's 24 layers: the file's own prediction, 12.7 GiB
    assert extra * 8192 * arch.num_layers / 2**30 == pytest.approx(12.7, abs=0.1)
    assert op_checkpoint_token_bytes(arch, saved, moe_layer=False).split_by_tp == pytest.approx(
        op_checkpoint_token_bytes(arch, plain, moe_layer=False).split_by_tp)
    flops_saved = micro_batch_flops(arch, saved)
    assert flops_saved.recompute.expert_flop == 0.0
    assert flops_saved.recompute.router_flop == pytest.approx(micro_batch_flops(arch, plain).recompute.router_flop)


def test_saving_the_grouped_gemms_is_faster_and_dearer_in_memory_as_measured() -> None:
    # the file: +13.9% tokens/s at batch 8 over plain SelectiveAC, reserved 27.2% -> 61.31% of 276.50 GiB
    plain = speed.estimate(EstimateRequest(**BASE, global_batch=512, recompute="op"))
    saved = speed.estimate(EstimateRequest(**BASE, global_batch=512, recompute="op", op_save_grouped_mm=True))
    gain = plain.step.step_time_s / saved.step.step_time_s - 1
    assert 0.0 < gain < 0.139
    mem_plain = memory(MemoryRequest(**BASE, recompute="op")).breakdown.reserved_bytes / 2**30
    mem_saved = memory(MemoryRequest(**BASE, recompute="op", op_save_grouped_mm=True)).breakdown.reserved_bytes / 2**30
    assert mem_saved - mem_plain == pytest.approx((0.6131 - 0.272) * 276.5, rel=0.25)


@pytest.mark.parametrize(("model", "recompute", "needle"), [
    ("llama-3.1-8b", "op", "has no routed experts"),
    ("gpt-oss-20b", "full", "beside --recompute full"),
])
def test_the_switch_says_when_it_changes_nothing(model: str, recompute: str, needle: str) -> None:
    base = ["estimate", model, "--gpu", "gb300", "--gpus", "64", "--framework", "torchtitan", "--tokens", "1B",
            "--recompute", recompute, "--json"]
    plain = json.loads(CliRunner().invoke(cli, base).output)
    inert = json.loads(CliRunner().invoke(cli, [*base, "--op-save-grouped-mm"]).output)
    assert inert["step_time_s"] == plain["step_time_s"]
    assert any("--op-save-grouped-mm changes nothing" in a and needle in a for a in inert["assumptions"])
