"""Saved linear inputs under Transformer Engine fp8 (estimate.fp8_inputs): quantized copies of 1 byte per element
(+1/32 MXFP8 scales) in place of the bf16 tensors; torchao's Float8Linear (eager stacks) saves bf16."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.domain.job import Job
from rigplan.estimate.activations import attention_token_bytes, mlp_token_bytes

BF16 = Job(kernels="fused", moe_imbalance=1.0)
MX = replace(BF16, precision="fp8", fp8_recipe="mxfp8")
CURRENT = replace(BF16, precision="fp8", fp8_recipe="current")
DELAYED = replace(BF16, precision="fp8", fp8_recipe="delayed")


def test_gqa_attention_saves_the_qkv_input_quantized(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    h = qwen3_moe.hidden
    q_w = qwen3_moe.num_heads * qwen3_moe.dim_per_head
    bf16 = attention_token_bytes(qwen3_moe, BF16, False)
    mx = attention_token_bytes(qwen3_moe, MX, False)
    # linear_qkv (LayerNormLinear) saves its norm output as MXFP8: 1 + 1/32 bytes per element instead of 2
    assert bf16.replicated_under_tp - mx.replicated_under_tp == pytest.approx((2 - 1 - 1 / 32) * h)
    # linear_proj saves the kernel's bf16 output (save_original_input): no extra copy outside delayed scaling
    assert mx.split_by_tp == bf16.split_by_tp
    delayed = attention_token_bytes(qwen3_moe, DELAYED, False)
    assert bf16.replicated_under_tp - delayed.replicated_under_tp == h
    assert delayed.split_by_tp - bf16.split_by_tp == q_w  # fp8 copy of the out-projection input


def test_dense_mlp_saves_fc1_and_fc2_inputs_quantized(dsv3) -> None:  # type: ignore[no-untyped-def]
    bf16 = mlp_token_bytes(dsv3, BF16, False, False)
    cur = mlp_token_bytes(dsv3, CURRENT, False, False)
    assert bf16.replicated_under_tp - cur.replicated_under_tp == dsv3.hidden
    assert bf16.split_by_tp - cur.split_by_tp == dsv3.ffn


def test_routed_experts_save_their_inputs_quantized(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    moe = qwen3_moe.moe
    bf16 = mlp_token_bytes(qwen3_moe, BF16, False, True)
    cur = mlp_token_bytes(qwen3_moe, CURRENT, False, True)
    # each of the k routed copies: fc1's input (h) and fc2's input (f_e) at 1 byte instead of 2
    assert bf16.split_by_tp - cur.split_by_tp == pytest.approx(moe.top_k * (qwen3_moe.hidden + moe.expert_ffn))
    # the pre-MLP norm output stays bf16 (the router reads it); no shared experts on Qwen3-30B-A3B
    assert bf16.replicated_under_tp == cur.replicated_under_tp
    # moe_act recompute: fc2's input is not kept, only fc1's
    act_bf16 = mlp_token_bytes(qwen3_moe, replace(BF16, recompute_moe_act=True), False, True)
    act_cur = mlp_token_bytes(qwen3_moe, replace(CURRENT, recompute_moe_act=True), False, True)
    assert act_bf16.split_by_tp - act_cur.split_by_tp == pytest.approx(moe.top_k * qwen3_moe.hidden)


def test_mla_and_shared_experts(dsv3) -> None:  # type: ignore[no-untyped-def]
    moe = dsv3.moe
    mla = dsv3.mla
    h = dsv3.hidden
    # MLA: the q/kv up-projections' inputs (the normed latents) quantized; the norm output read by q_down and
    # kv_down is two fp8 copies, as many bytes as bf16
    diff = (attention_token_bytes(dsv3, BF16, False).replicated_under_tp
            - attention_token_bytes(dsv3, CURRENT, False).replicated_under_tp)
    assert diff == mla.q_lora_rank + mla.kv_lora_rank
    bf16 = mlp_token_bytes(dsv3, BF16, False, True)
    cur = mlp_token_bytes(dsv3, CURRENT, False, True)
    # the shared expert's fc1 adds its own fp8 copy of the norm output; its fc2 input is quantized
    assert cur.replicated_under_tp - bf16.replicated_under_tp == h
    assert bf16.split_by_tp - cur.split_by_tp == pytest.approx(
        moe.top_k * (h + moe.expert_ffn) + moe.num_shared_experts * moe.shared_ffn)


def test_torchao_float8_keeps_bf16_inputs(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    # torchtitan's stack: Float8Linear saves input_hp (matmul_with_hp_or_float8_args)
    eager = replace(BF16, kernels="eager")
    fp8 = replace(eager, precision="fp8", fp8_recipe="current")
    assert attention_token_bytes(qwen3_moe, fp8, False) == attention_token_bytes(qwen3_moe, eager, False)
    assert mlp_token_bytes(qwen3_moe, fp8, False, True) == mlp_token_bytes(qwen3_moe, eager, False, True)
    assert mlp_token_bytes(qwen3_moe, fp8, False, False) == mlp_token_bytes(qwen3_moe, eager, False, False)
