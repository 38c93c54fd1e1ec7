"""Framework buffer switches, each against its hand-computed size."""

from __future__ import annotations

import pytest

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec
from rigplan.estimate.activations import mlp_token_bytes
from rigplan.estimate.framework_buffers import ddp_grad_copy_bytes, nvls_bytes
from rigplan.estimate.memory import peak_memory
from rigplan.estimate.params import count_params
from rigplan.estimate.states import model_states, stage_params

TINY = Architecture(id="tiny", num_layers=4, hidden=256, num_heads=4, ffn=1024, vocab=1000)
GiB = 2**30


def test_fp32_main_grads_double_the_gradient_bytes() -> None:
    plain = model_states(TINY, Job(), Layout(), 0)
    main = model_states(TINY, Job(main_grads_fp32=True), Layout(), 0)
    assert main.gradients_bytes == pytest.approx(2 * plain.gradients_bytes)


def test_ddp_bucket_copy_only_when_replicated() -> None:
    job = Job(ddp_grad_copy=True)
    assert ddp_grad_copy_bytes(job, Layout(dp=4), 1000.0, 2.0) == 2000.0
    assert ddp_grad_copy_bytes(job, Layout(dp=1), 1000.0, 2.0) == 0.0
    assert ddp_grad_copy_bytes(job, Layout(dp=4, zero=2), 1000.0, 2.0) == 0.0
    assert ddp_grad_copy_bytes(Job(), Layout(dp=4), 1000.0, 2.0) == 0.0
    with_copy = peak_memory(TINY, Job(seq_len=128, ddp_grad_copy=True), Layout(dp=4))
    without = peak_memory(TINY, Job(seq_len=128), Layout(dp=4))
    local = model_states(TINY, Job(), Layout(dp=4), 0).trainable_params
    assert with_copy.gradients_bytes - without.gradients_bytes == pytest.approx(2 * local)


def test_fsdp_prefetch_gathers_more_units() -> None:
    layout = Layout(dp=8, zero=3)
    one = peak_memory(TINY, Job(seq_len=128, recompute="full"), layout)
    none = peak_memory(TINY, Job(seq_len=128, recompute="full", fsdp_prefetch=0), layout)
    two = peak_memory(TINY, Job(seq_len=128, recompute="full", fsdp_prefetch=2), layout)
    assert none.total_bytes < one.total_bytes < two.total_bytes
    with pytest.raises(InvalidSpec):
        Job(fsdp_prefetch=-1)


def _block_linears(arch: Architecture) -> float:
    """The transformer blocks' linear weights, the ones Transformer Engine keeps an fp8 copy of."""
    return stage_params(arch, count_params(arch), Layout(), 0).quantizable


def test_fp8_transpose_cache_adds_one_byte_per_linear_weight() -> None:
    fp8 = model_states(TINY, Job(precision="fp8"), Layout(), 0)
    cached = model_states(TINY, Job(precision="fp8", fp8_transpose_cache=True), Layout(), 0)
    assert cached.weights_bytes - fp8.weights_bytes == pytest.approx(_block_linears(TINY))


def test_fp8_copies_skip_the_embedding_and_head() -> None:
    """bf16 for every weight, plus one fp8 byte for the blocks' linears only (embedding, head and norms have
    no Transformer Engine module)."""
    bf16 = model_states(TINY, Job(), Layout(), 0)
    fp8 = model_states(TINY, Job(precision="fp8"), Layout(), 0)
    assert fp8.weights_bytes - bf16.weights_bytes == pytest.approx(_block_linears(TINY))
    assert _block_linears(TINY) < fp8.local_params


def test_fused_swiglu_saves_3f_not_4f() -> None:
    gated = Architecture(id="g", num_layers=2, hidden=256, num_heads=4, ffn=1024, vocab=1000, mlp="gated")
    eager = mlp_token_bytes(gated, Job(), dropout=False, moe_layer=False)
    fused = mlp_token_bytes(gated, Job(fused_swiglu=True), dropout=False, moe_layer=False)
    assert eager.split_by_tp - fused.split_by_tp == 2 * 1024


def test_nvls_is_one_gib_per_8_gpu_communicator() -> None:
    job = Job(nvls_buffers=True)
    assert nvls_bytes(job, Layout(dp=8)) == 1 * GiB
    assert nvls_bytes(job, Layout(tp=8, dp=16)) == 2 * GiB
    assert nvls_bytes(job, Layout(dp=2)) == 0.0
    assert nvls_bytes(Job(), Layout(dp=8)) == 0.0


def test_fsdp_flat_params_keep_whole_block_gradients() -> None:
    """FSDP1 flat parameters: every LoRA block's gradient covers its frozen elements, unsharded while
    accumulating under no_sync, 1/dp of it otherwise; the root unit (embedding, head) gets none."""
    from rigplan.estimate.framework_buffers import fsdp_flat_grad_extra_bytes
    from rigplan.estimate.params import count_params

    layout = Layout(dp=4, zero=3)
    lora = dict(method="lora", precision="bf16-true", lora_rank=8, seq_len=128, recompute="full")
    counts = count_params(TINY)
    adapters = 2 * 8 * (256 + 256) * TINY.num_layers  # q and v: r·(d_in + d_out) each, per layer
    blocks = counts.dense_layer.total * TINY.num_layers + adapters
    accumulating = Job(**lora, fsdp_flat_params=True, global_batch=32)  # type: ignore[arg-type]
    states = model_states(TINY, accumulating, layout, 0)
    assert states.gradients_bytes + fsdp_flat_grad_extra_bytes(TINY, accumulating, layout, 0, states) == \
        pytest.approx(2 * blocks)
    synced = Job(**lora, fsdp_flat_params=True)  # type: ignore[arg-type]
    states = model_states(TINY, synced, layout, 0)
    assert states.gradients_bytes + fsdp_flat_grad_extra_bytes(TINY, synced, layout, 0, states) == \
        pytest.approx(2 * blocks / 4)
    plain = peak_memory(TINY, Job(**lora, global_batch=32), layout)  # type: ignore[arg-type]
    flat = peak_memory(TINY, accumulating, layout)
    assert flat.model_gradients_bytes - plain.model_gradients_bytes == pytest.approx(2 * blocks - 2 * adapters / 4)
    assert flat.total_bytes > plain.total_bytes
    assert fsdp_flat_grad_extra_bytes(TINY, accumulating, Layout(dp=4, zero=2), 0, states) == 0.0


def test_fsdp_flat_params_without_zero_3_says_it_changes_nothing() -> None:
    from rigplan.api import memory
    from rigplan.flow.request import MemoryRequest

    plain = memory(MemoryRequest(model="llama-3.2-1b", gpu="h100-sxm", gpus=2))
    flagged = memory(MemoryRequest(model="llama-3.2-1b", gpu="h100-sxm", gpus=2, fsdp_flat_params=True))
    assert flagged.breakdown.total_bytes == plain.breakdown.total_bytes
    assert any("--fsdp-flat-params" in a and "--zero 0" in a for a in flagged.setup.assumptions)
    sharded = memory(MemoryRequest(model="llama-3.2-1b", gpu="h100-sxm", gpus=2, zero=3, fsdp_flat_params=True))
    assert not any("--fsdp-flat-params" in a for a in sharded.setup.assumptions)



def test_mxfp8_weight_copy_carries_its_scales() -> None:
    """Transformer Engine's weight cache: 2 x (1 + 1/32) B per element for MXFP8 against 2 for tensor scaling
    (tests/pytorch/test_cpu_offloading.py _estimate_cached_weight_size)."""
    per_tensor = model_states(TINY, Job(precision="fp8", fp8_transpose_cache=True), Layout(), 0)
    mx = model_states(TINY, Job(precision="fp8", fp8_recipe="mxfp8", fp8_transpose_cache=True), Layout(), 0)
    assert mx.weights_bytes - per_tensor.weights_bytes == pytest.approx(2 / 32 * _block_linears(TINY))
