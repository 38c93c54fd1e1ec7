"""Megatron-Core per-module recompute (--recompute-modules mla_up_proj, layernorm, mlp): the activation bytes each
frees and the forward work each reruns (estimate.recompute_modules)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.domain.job import Job
from rigplan.estimate import recompute_modules
from rigplan.estimate.activations import attention_token_bytes, mlp_token_bytes
from rigplan.estimate.flops import micro_batch_flops


def test_mla_up_proj_frees_query_key_and_value(dsv3) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="fused")
    kept = attention_token_bytes(dsv3, job, False)
    freed = attention_token_bytes(dsv3, replace(job, recompute_mla_up_proj=True), False)
    # DeepSeek-V3: 128 heads, d_qk = 128 + 64, d_v = 128; bf16: 2·(2·128·192 + 128·128) bytes per token
    assert kept.split_by_tp - freed.split_by_tp == 2 * (2 * 128 * 192 + 128 * 128)
    assert kept.replicated_under_tp == freed.replicated_under_tp
    # under full recompute the layer keeps its input only; the switch changes nothing there
    full = replace(job, recompute="full")
    assert attention_token_bytes(dsv3, replace(full, recompute_mla_up_proj=True), False) == attention_token_bytes(
        dsv3, full, False)


def test_mla_up_proj_is_a_no_op_without_mla(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="fused")
    assert attention_token_bytes(qwen3_moe, replace(job, recompute_mla_up_proj=True), False) == attention_token_bytes(
        qwen3_moe, job, False)


def test_layernorm_frees_the_outputs_of_separate_norms_only(dsv3, qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="fused", moe_imbalance=1.0)
    norm = replace(job, recompute_layernorm=True)
    # MLA: the input norm is a module of its own (TENorm), its h-wide output freed
    assert (attention_token_bytes(dsv3, job, False).replicated_under_tp
            - attention_token_bytes(dsv3, norm, False).replicated_under_tp) == 2 * dsv3.hidden
    # GQA: the input norm is fused into linear_qkv (TELayerNormColumnParallelLinear): nothing to free
    assert attention_token_bytes(qwen3_moe, norm, False) == attention_token_bytes(qwen3_moe, job, False)
    # MoE layer: the pre-MLP norm is its own module; dense layer: fused into linear_fc1
    assert (mlp_token_bytes(qwen3_moe, job, False, True).replicated_under_tp
            - mlp_token_bytes(qwen3_moe, norm, False, True).replicated_under_tp) == 2 * qwen3_moe.hidden
    assert mlp_token_bytes(dsv3, norm, False, False) == mlp_token_bytes(dsv3, job, False, False)


def test_dense_mlp_recompute_keeps_the_input_only(dsv3) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="fused", moe_imbalance=1.0)
    mlp = replace(job, recompute_mlp=True)
    dense = mlp_token_bytes(dsv3, mlp, False, False)
    assert dense.replicated_under_tp == 2 * dsv3.hidden and dense.split_by_tp == 0.0
    # MoE layers are not touched (Megatron sets recompute_mlp only when the MLP is not a MoELayer)
    assert mlp_token_bytes(dsv3, mlp, False, True) == mlp_token_bytes(dsv3, job, False, True)


def test_rerun_forward_work(dsv3) -> None:  # type: ignore[no-untyped-def]
    job = Job(seq_len=4096, micro_batch=1)
    base = micro_batch_flops(dsv3, job).recompute
    up = micro_batch_flops(dsv3, replace(job, recompute_mla_up_proj=True)).recompute
    m = dsv3.mla
    per_token = 2 * (m.q_lora_rank * 128 * m.qk_head_dim + m.kv_lora_rank * 128 * (m.qk_nope_head_dim + m.v_head_dim))
    assert per_token == recompute_modules.mla_up_proj_flop_per_token(dsv3)
    assert float(up.attention_proj_flop - base.attention_proj_flop) == pytest.approx(
        per_token * 4096 * dsv3.num_layers)
    mlp = micro_batch_flops(dsv3, replace(job, recompute_mlp=True)).recompute
    forward = micro_batch_flops(dsv3, job).forward
    # the three dense layers' MLP once more; shared experts (also mlp_flop) are MoE layers, left alone
    dense_mlp = 3 * 2 * 4096 * dsv3.hidden * dsv3.ffn * 3
    assert float(mlp.mlp_flop - base.mlp_flop) == pytest.approx(dense_mlp)
    assert float(mlp.mlp_flop - base.mlp_flop) < float(forward.mlp_flop)


def test_cli_switches_reach_the_estimate() -> None:
    args = ["memory", "deepseek-v3", "--gpu", "b200", "--gpus", "256", "--pp", "16", "--ep", "8",
            "--precision", "fp8", "--framework", "nemo", "--global-batch", "2048", "--json"]
    runner = CliRunner()
    plain = runner.invoke(cli, args)
    redone = runner.invoke(cli, [*args, "--recompute-mla-up-proj", "--recompute-mlp", "--recompute-layernorm"])
    assert plain.exit_code == 0 and redone.exit_code == 0, plain.output + redone.output
    a, b = json.loads(plain.output), json.loads(redone.output)
    assert b["job"]["recompute_mla_up_proj"] and b["job"]["recompute_mlp"] and b["job"]["recompute_layernorm"]
    assert b["per_gpu"]["activations_bytes"] < a["per_gpu"]["activations_bytes"]
