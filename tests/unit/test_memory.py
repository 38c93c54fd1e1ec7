"""Hand-checkable memory cases: Korthikanti et al. 2022 activations, ZeRO model states, overheads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.activations import korthikanti_layer_bytes, layer_activation_bytes
from rigplan.estimate.memory import peak_memory
from rigplan.estimate.params import count_params
from rigplan.estimate.states import model_states

GPT_175B = Architecture(id="gpt3", num_layers=96, hidden=12288, num_heads=96, ffn=4 * 12288, vocab=51200,
                        mlp="plain", positions="learned", max_positions=2048, tied_embeddings=True,
                        norm="layernorm", norm_bias=True, qkv_bias=True, attn_out_bias=True, mlp_bias=True)


@pytest.mark.parametrize("tp,sp,recompute", [
    (1, False, "none"), (8, False, "none"), (8, True, "none"),
    (1, False, "selective"), (8, True, "selective"), (8, False, "selective"),
    (1, False, "full"), (8, True, "full"), (8, False, "full"),
])
def test_gpt_layer_activations_equal_korthikanti_table_2(tp: int, sp: bool, recompute: str) -> None:
    """The general per-layer model reduces to the paper's closed forms for GPT, eager, with dropout."""
    job = Job(seq_len=2048, micro_batch=1, attention="eager", dropout=True, recompute=recompute)  # type: ignore[arg-type]
    layout = Layout(tp=tp, sequence_parallel=sp)
    got = layer_activation_bytes(GPT_175B, job, layout, moe_layer=False, dropout=True).saved_bytes
    expected = korthikanti_layer_bytes(2048, 1, 12288, 96, tp=tp, sequence_parallel=sp, recompute=recompute)
    assert got == pytest.approx(expected, rel=1e-9)


def test_korthikanti_no_recompute_closed_form() -> None:
    """s·b·h·(34 + 5·a·s/h) for one GPT-3 layer at s=2048, b=1: 34·sbh + 5·a·s²·b."""
    s, b, h, a = 2048, 1, 12288, 96
    assert korthikanti_layer_bytes(s, b, h, a) == s * b * h * 34 + 5 * a * s * s * b


def test_flash_attention_has_no_quadratic_term() -> None:
    """With flash attention the saved bytes grow linearly with sequence length."""
    layout = Layout()
    short = layer_activation_bytes(GPT_175B, Job(seq_len=2048), layout, moe_layer=False).saved_bytes
    long = layer_activation_bytes(GPT_175B, Job(seq_len=8192), layout, moe_layer=False).saved_bytes
    assert long == pytest.approx(4 * short, rel=1e-9)


def test_mixed_precision_adamw_is_16_bytes_per_param() -> None:
    """ZeRO paper Sec. 3.1: 2 (fp16 weights) + 2 (grads) + 12 (fp32 master, momentum, variance) = 16 Ψ."""
    job = Job(precision="bf16-mixed", optimizer="adamw")
    states = model_states(GPT_175B, job, Layout(), rank=0)
    params = count_params(GPT_175B).total
    assert states.weights_bytes == pytest.approx(2 * params)
    assert states.gradients_bytes == pytest.approx(2 * params)
    assert states.optimizer_bytes == pytest.approx(12 * params)


@pytest.mark.parametrize("zero,expected", [(0, 16.0), (1, 4 + 12 / 64), (2, 2 + 14 / 64), (3, 16 / 64)])
def test_zero_stages_shard_model_states(zero: int, expected: float) -> None:
    """ZeRO Fig. 1: stage 1 shards optimizer states, 2 also gradients, 3 also weights (N_d = 64)."""
    job = Job(precision="bf16-mixed", optimizer="adamw")
    states = model_states(GPT_175B, job, Layout(dp=64, zero=zero), rank=0)  # type: ignore[arg-type]
    per_param = (states.weights_bytes + states.gradients_bytes + states.optimizer_bytes) / count_params(GPT_175B).total
    assert per_param == pytest.approx(expected)


def test_bf16_true_adamw_is_8_bytes_per_param() -> None:
    """bf16 weights, bf16 grads, two bf16 moments (torch AdamW keeps states in the parameter dtype)."""
    states = model_states(GPT_175B, Job(precision="bf16-true"), Layout(), rank=0)
    per_param = (states.weights_bytes + states.gradients_bytes + states.optimizer_bytes) / count_params(GPT_175B).total
    assert per_param == pytest.approx(8.0)


def test_lora_trains_only_adapters() -> None:
    """LoRA r=8 on q,v of a Llama-2-7B shape: 32 layers x 2 modules x 8 x (4096 + 4096) = 4,194,304."""
    llama2 = Architecture(id="l2", num_layers=32, hidden=4096, num_heads=32, ffn=11008, vocab=32000)
    job = Job(method="lora", lora_rank=8, lora_targets=("q", "v"), precision="bf16-true")
    states = model_states(llama2, job, Layout(), rank=0)
    assert states.trainable_params == 4_194_304
    assert states.gradients_bytes == pytest.approx(4_194_304 * 2)


def test_qlora_base_weights_are_nf4() -> None:
    """QLoRA keeps block linears in NF4 (~0.516 B/param with double quant) and the rest in bf16."""
    llama2 = Architecture(id="l2", num_layers=32, hidden=4096, num_heads=32, ffn=11008, vocab=32000)
    qlora = model_states(llama2, Job(method="qlora", precision="bf16-true"), Layout(), rank=0)
    lora = model_states(llama2, Job(method="lora", precision="bf16-true"), Layout(), rank=0)
    counts = count_params(llama2)
    embeddings = counts.embedding + counts.lm_head
    assert qlora.weights_bytes < lora.weights_bytes / 3
    assert qlora.weights_bytes > 2 * embeddings


def test_lora_on_the_fused_stack_keeps_the_frozen_base_in_bf16_or_fp8() -> None:
    """Megatron-Core / NeMo LoRA: the frozen base is built in bf16 (no fp32 copy: the optimizer's main weights are
    the adapters' only), under fp8 with fp8 params as the fp8 weight and its transpose; the autocast stacks keep
    Hugging Face's fp32 base with a bf16 copy (4 + 2 B/param)."""
    llama2 = Architecture(id="l2", num_layers=32, hidden=4096, num_heads=32, ffn=11008, vocab=32000)
    counts = count_params(llama2)
    base = counts.total
    blocks = (counts.dense_layer.attention + counts.dense_layer.mlp_dense) * llama2.num_layers
    adapters = model_states(llama2, Job(method="lora", precision="bf16-mixed", kernels="fused"),
                            Layout(), rank=0).trainable_params

    def weights(**kw: object) -> float:
        return model_states(llama2, Job(method="lora", **kw), Layout(), rank=0).weights_bytes  # type: ignore[arg-type]

    assert weights(precision="bf16-mixed", kernels="fused") == pytest.approx(2 * base + 2 * adapters)
    fp8 = weights(precision="fp8", fp8_recipe="delayed", kernels="fused", fp8_param_gather=True,
                  fp8_transpose_cache=True)
    assert fp8 == pytest.approx(2 * (base - blocks) + 2 * blocks + 2 * adapters)
    assert weights(precision="bf16-mixed", kernels="hf") == pytest.approx(6 * base + 2 * adapters)


def test_first_stage_holds_pp_micro_batches() -> None:
    """1F1B: the first stage keeps pp micro-batches of its layers, so its activations equal a whole model's."""
    job = Job(seq_len=2048, recompute="selective")
    # dp=64 with ZeRO-1 keeps the optimizer-step temporaries small, so the forward phase is the peak.
    whole = peak_memory(GPT_175B, job, Layout(dp=64, zero=1)).activations_bytes
    first_stage = peak_memory(GPT_175B, job, Layout(pp=8, dp=64, zero=1)).activations_bytes
    assert first_stage == pytest.approx(whole, rel=1e-9)


def test_interleaving_adds_korthikanti_factor() -> None:
    """Interleaved 1F1B: first stage holds L·(1 + (p-1)/(p·v)) layers' worth (Korthikanti Sec. 4.2.3)."""
    job = Job(seq_len=2048, recompute="selective")
    plain = peak_memory(GPT_175B, job, Layout(pp=8, dp=64, zero=1)).activations_bytes
    interleaved = peak_memory(GPT_175B, job, Layout(pp=8, vpp=3, dp=64, zero=1)).activations_bytes
    assert interleaved == pytest.approx(plain * (1 + 7 / 24), rel=1e-9)


def test_total_is_sum_of_parts() -> None:
    m = peak_memory(GPT_175B, Job(seq_len=2048), Layout(tp=8, pp=8, dp=4, zero=1))
    parts = (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes + m.logits_bytes
             + m.transient_bytes + m.cuda_context_bytes + m.nccl_bytes + m.unreleasable_bytes)
    assert m.total_bytes == pytest.approx(parts)
    assert m.reserved_bytes == pytest.approx(parts - m.cuda_context_bytes - m.nccl_bytes - m.unreleasable_bytes
                                             + m.fragmentation_bytes)


def test_peak_phase_is_the_heaviest_of_three() -> None:
    """Without sharding, foreach AdamW's step temporaries (4 B/param) can exceed the freed activations."""
    job = Job(seq_len=2048, recompute="selective", optimizer_foreach=True)
    unsharded = peak_memory(GPT_175B, job, Layout(pp=8))
    sharded = peak_memory(GPT_175B, job, Layout(pp=8, dp=64, zero=1))
    assert unsharded.phase == "optimizer step" and unsharded.activations_bytes == 0
    assert sharded.phase == "forward/loss" and sharded.activations_bytes > 0


def test_eager_single_step_frees_gradients_before_forward() -> None:
    """PyTorch without accumulation: gradients are created as activations are freed, so they do not add up."""
    small = Architecture(id="s", num_layers=16, hidden=2048, num_heads=16, ffn=8192, vocab=32000)
    eager = peak_memory(small, Job(seq_len=4096, micro_batch=8, kernels="eager", precision="bf16-true"), Layout())
    fused = peak_memory(small, Job(seq_len=4096, micro_batch=8, kernels="fused", precision="bf16-true"), Layout())
    assert eager.phase == "forward/loss" and eager.gradients_bytes == 0
    assert fused.gradients_bytes == fused.model_gradients_bytes > 0
    # gradients held between steps are not part of the step's churn: the allocator overheads are equal
    assert fused.unreleasable_bytes == pytest.approx(eager.unreleasable_bytes)
    assert fused.total_bytes - eager.total_bytes == pytest.approx(fused.model_gradients_bytes, rel=1e-6)


def test_lora_under_zero1_regathers_only_the_adapters() -> None:
    """ZeRO-1/2 all-gather the weights the optimizer updated; under LoRA those are the adapters, so fp8 parameters
    (which halve a full model's gather) leave a LoRA job's data-parallel traffic unchanged, and it is a small part of
    a full fine-tune's."""
    from rigplan.flow.estimate import estimate
    from rigplan.flow.request import EstimateRequest

    base = {"model": "llama-2-70b", "gpu": "h200-sxm", "gpus": 64, "tp": 4, "cp": 2, "seq": 8192, "micro_batch": 1,
            "global_batch": 8, "precision": "fp8", "framework": "nemo", "zero": 1}

    def dp_total(**kw: object) -> float:
        comm = estimate(EstimateRequest(**{**base, **kw})).to_dict(with_advice=False)["breakdown"]["comm_by_axis"]
        return float(comm["dp"]["total_s"])

    lora = {"method": "lora", "lora_rank": 16, "lora_targets": "q,k,v,o"}
    assert dp_total(**lora, fp8_param_gather=True) == pytest.approx(dp_total(**lora, fp8_param_gather=False))
    assert dp_total(**lora) < 0.05 * dp_total()


def test_lora_on_the_fused_stack_saves_no_frozen_linear_input() -> None:
    """Transformer Engine saves a linear's input only when its weight needs a gradient: under LoRA on q, k, v, o
    (fp8, delayed scaling) a Llama 2 70B layer drops the fc1 and fc2 fp8 inputs and the out-projection's fp8
    copy, keeps the qkv input in bf16 for its adapter (its fp8 copy goes), and adds lora_A's two outputs."""
    from rigplan.estimate.activations import fused_lora_token_bytes

    llama2_70b = Architecture(id="l2-70b", num_layers=80, hidden=8192, num_heads=64, num_kv_heads=8, ffn=28672,
                              vocab=32000)
    job = Job(method="lora", lora_rank=16, lora_targets=("q", "k", "v", "o"), precision="fp8",
              fp8_recipe="delayed", kernels="fused")
    delta = fused_lora_token_bytes(llama2_70b, job)
    assert delta.replicated_under_tp == pytest.approx((2 - 1) * 8192 - 1 * 8192)
    assert delta.split_by_tp == pytest.approx(-28672 - 8192 + 2 * 16 * 2)
    full = layer_activation_bytes(llama2_70b, Job(precision="fp8", fp8_recipe="delayed", kernels="fused",
                                                  seq_len=4096), Layout(), moe_layer=False).saved_bytes
    lora = layer_activation_bytes(llama2_70b, replace(job, seq_len=4096), Layout(), moe_layer=False).saved_bytes
    assert lora == pytest.approx(full + 4096 * (delta.replicated_under_tp + delta.split_by_tp))
