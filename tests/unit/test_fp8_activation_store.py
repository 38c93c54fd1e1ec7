"""--fp8-activation-store (Megatron-Core activation_func_fp8_input_store): the fused SwiGLU saves its 2f input as
float8_e4m3fn, 1 byte an element, in the dense MLP, the shared experts and each routed copy, and casts it there and
back (one element-wise pass each way, a kernel more); nothing changes where the MLP is plain or under moe_act
recompute, and the flag needs the fused stack's fused SwiGLU."""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.domain.job import Job
from rigplan.errors import InvalidSpec
from rigplan.estimate import elementwise
from rigplan.estimate.activations import mlp_token_bytes
from rigplan.estimate.moe import load_factor
from rigplan.flow import memory
from rigplan.flow.request import MemoryRequest

FUSED = {"kernels": "fused", "fused_swiglu": True}


def test_dense_swiglu_input_drops_to_one_byte_an_element() -> None:
    llama = load_catalog().model_domain("llama-2-70b")
    for precision, q in (("bf16-mixed", 2), ("fp8", 1)):
        base = Job(precision=precision, **FUSED)  # type: ignore[arg-type]
        stored = replace(base, fp8_activation_store=True)
        before = mlp_token_bytes(llama, base, dropout=False, moe_layer=False)
        after = mlp_token_bytes(llama, stored, dropout=False, moe_layer=False)
        # gate and up (2f) from 2 bytes to 1; fc2's input (q bytes) and the replicated part unchanged
        assert before.split_by_tp == (2 * 2 + q) * llama.ffn
        assert before.split_by_tp - after.split_by_tp == 2 * llama.ffn
        assert after.replicated_under_tp == before.replicated_under_tp


def test_routed_and_shared_experts_store_theirs_but_not_under_moe_act_recompute() -> None:
    dsv3 = load_catalog().model_domain("deepseek-v3")
    moe = dsv3.moe
    assert moe is not None and moe.num_shared_experts == 1
    base = Job(precision="bf16-mixed", moe_imbalance=1.3, **FUSED)
    stored = replace(base, fp8_activation_store=True)
    saved = (mlp_token_bytes(dsv3, base, dropout=False, moe_layer=True).split_by_tp
             - mlp_token_bytes(dsv3, stored, dropout=False, moe_layer=True).split_by_tp)
    routed = load_factor(base) * moe.top_k * 2 * moe.expert_ffn
    shared = moe.num_shared_experts * 2 * moe.shared_ffn
    assert saved == pytest.approx(routed + shared)
    recomputed = replace(base, recompute_moe_act=True)
    saved = (mlp_token_bytes(dsv3, recomputed, dropout=False, moe_layer=True).split_by_tp
             - mlp_token_bytes(dsv3, replace(recomputed, fp8_activation_store=True), dropout=False,
                               moe_layer=True).split_by_tp)
    assert saved == pytest.approx(shared)  # the checkpoint holds fc1's routed output in bf16


def test_plain_mlp_is_unchanged() -> None:
    gpt = load_catalog().model_domain("gpt-3-175b")
    assert gpt.mlp == "plain"
    base = Job(precision="bf16-mixed", **FUSED)
    stored = replace(base, fp8_activation_store=True)
    assert mlp_token_bytes(gpt, stored, dropout=False, moe_layer=False) == mlp_token_bytes(
        gpt, base, dropout=False, moe_layer=False)
    assert elementwise.elementwise_bytes_per_token(gpt, stored) == elementwise.elementwise_bytes_per_token(gpt, base)


def test_the_casts_move_the_2f_input_and_launch_a_kernel() -> None:
    llama = load_catalog().model_domain("llama-2-70b")
    base = Job(precision="bf16-mixed", **FUSED)
    stored = replace(base, fp8_activation_store=True)
    _, before = elementwise.elementwise_bytes_per_token(llama, base)
    _, after = elementwise.elementwise_bytes_per_token(llama, stored)
    # 6 bytes an element of the 2f input over the step, charged as 2 bytes forward (x3 in the step model)
    assert (after - before) * 3 == pytest.approx(6 * 2 * llama.ffn)
    assert elementwise.kernels_per_layer(llama, stored) == elementwise.kernels_per_layer(llama, base) + 1.0


def test_the_mlperf_lora_recipe_fits_a_b200_with_it() -> None:
    request = dict(model="llama-2-70b", method="lora", lora_rank=16, lora_targets="q,k,v,o", gpu="b200", gpus=8,
                   precision="fp8", fp8_attention=True, seq=8192, micro_batch=1, global_batch=8, zero=1,
                   recompute="none", framework="nemo", fp8_param_gather=True)
    without = memory.memory(MemoryRequest(**request)).to_dict()
    with_store = memory.memory(MemoryRequest(**request, fp8_activation_store=True)).to_dict()
    gib = 2 ** 30
    saved = 80 * 8192 * 2 * 28672  # 80 layers, 8,192 tokens, 2f one byte less each
    assert (without["per_gpu"]["activations_bytes"] - with_store["per_gpu"]["activations_bytes"]) == saved
    assert not without["fits"] and with_store["fits"]
    assert with_store["per_gpu"]["activations_bytes"] / gib == pytest.approx(87.7, abs=0.1)


def test_it_needs_the_fused_swiglu() -> None:
    with pytest.raises(InvalidSpec, match="plain MLP"):
        memory.memory(MemoryRequest(model="gpt-3-175b", framework="megatron", fp8_activation_store=True))
    with pytest.raises(InvalidSpec, match="fused SwiGLU"):
        Job(kernels="eager", fp8_activation_store=True)
    with pytest.raises(InvalidSpec, match="--fused-swiglu"):
        Job(kernels="fused", fused_swiglu=False, fp8_activation_store=True)
    result = CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--kernels", "eager", "--fp8-activation-store"])
    assert result.exit_code == 2
    assert "--fp8-activation-store" in result.output and "Traceback" not in result.output
