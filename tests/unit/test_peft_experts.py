"""peft's parameter adapters on transformers 5's routed experts (estimate.peft_experts): when they apply, what they
wrap, the bytes and FLOPs they add to a step, the memory they keep, and the adapter counts of MoE layers
(estimate.states.lora_layer_params)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate import hf_experts, peft_experts
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.flops import stage_micro_batch_flops
from rigplan.estimate.states import lora_layer_params
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest

EXPERTS = ("q", "v", "gate", "up", "down")
QWEN = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 8, "framework": "hf", "method": "lora", "seq": 4096,
        "micro_batch": 1, "global_batch": 64, "zero": 3}
H, F, E = 2048, 768, 128  # Qwen3-30B-A3B's hidden size, expert ffn and experts


@pytest.fixture(scope="module")
def qwen3_moe():  # type: ignore[no-untyped-def]
    return load_catalog().model("qwen3-30b-a3b").to_domain()


def test_applies_to_lora_on_grouped_mm_experts_only(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    wrapped = Job(kernels="hf", method="lora", lora_targets=EXPERTS)
    assert peft_experts.applies(qwen3_moe, wrapped)
    assert not peft_experts.applies(qwen3_moe, replace(wrapped, lora_targets=("q", "v")))  # no expert target
    assert not peft_experts.applies(qwen3_moe, replace(wrapped, experts_implementation="eager"))  # transformers 4
    assert not peft_experts.applies(qwen3_moe, Job(kernels="fused", method="lora", lora_targets=EXPERTS))
    assert peft_experts.applies(qwen3_moe, Job(kernels="hf", method="qlora", lora_targets=EXPERTS))  # experts bf16
    dense = load_catalog().model("llama-3.1-8b").to_domain()
    assert not peft_experts.applies(dense, wrapped)


def test_gate_and_up_share_the_fused_parameter(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="hf", method="lora", lora_targets=EXPERTS)
    assert peft_experts.wrapped_shapes(qwen3_moe, job) == [(H, 2 * F), (F, H)]
    assert float(peft_experts.wrapped_elements(qwen3_moe, job)) == E * 3 * H * F
    assert float(peft_experts.wrapped_elements(qwen3_moe, job, largest=True)) == E * 2 * H * F
    gate_only = replace(job, lora_targets=("gate",))  # targeting gate wraps the whole gate_up_proj
    assert peft_experts.wrapped_shapes(qwen3_moe, gate_only) == [(H, 2 * F)]
    assert float(peft_experts.wrapped_elements(qwen3_moe, job, 8.0)) == E / 8 * 3 * H * F  # a rank's 16 experts
    assert peft_experts.wrapped_share(qwen3_moe, job) == pytest.approx(1.0)
    assert peft_experts.wrapped_share(qwen3_moe, replace(job, lora_targets=("down",))) == pytest.approx(1 / 3)


def test_bytes_per_pass_follow_the_weight_dtype(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    n = 1000.0
    bf16 = Job(kernels="hf", method="lora", lora_targets=EXPERTS, precision="bf16-true")
    assert peft_experts.pass_bytes(qwen3_moe, bf16, n) == (pytest.approx(4 * n), pytest.approx(6 * n))
    fp32_base = replace(bf16, precision="bf16-mixed", autocast=True)  # W and W' in fp32 without FSDP (zero 0)
    fp32 = hf_experts.expert_weights_fp32(fp32_base, 0)
    assert float(fp32) == 1.0 and float(hf_experts.expert_weights_fp32(fp32_base, 3)) == 0.0
    assert peft_experts.pass_bytes(qwen3_moe, fp32_base, n, fp32) == (pytest.approx(8 * n), pytest.approx(12 * n))


def test_the_backward_computes_the_wrapped_weights_gradient(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    """Module LoRA (transformers 4's expert modules) runs the experts' input gradient only and an adapter on each
    routed copy; the parameter adapters add the full weight gradient and take the adapters off the tokens."""
    module = Job(kernels="hf", method="lora", lora_targets=EXPERTS, experts_implementation="eager")
    wrapped = replace(module, experts_implementation=None)
    kw = {"layers": 48.0, "dense_layers": 0.0, "lm_head": 0.0, "micro_batch": 1.0, "tp": 1.0, "cp": 1.0}
    per_module = stage_micro_batch_flops(qwen3_moe, module, Layout(), **kw)
    per_param = stage_micro_batch_flops(qwen3_moe, wrapped, Layout(), **kw)
    assert float(per_module.backward.expert_flop) == pytest.approx(float(per_module.forward.expert_flop))
    assert float(per_param.backward.expert_flop) == pytest.approx(2.0 * float(per_param.forward.expert_flop))
    assert float(per_param.forward.adapter_flop) < float(per_module.forward.adapter_flop)
    attention_only = stage_micro_batch_flops(qwen3_moe, replace(wrapped, lora_targets=("q", "v")), Layout(), **kw)
    assert float(per_param.forward.adapter_flop) == pytest.approx(float(attention_only.forward.adapter_flop))


def test_rebuilt_weights_are_kept_unless_the_layer_is_recomputed(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    job = Job(kernels="hf", method="lora", lora_targets=EXPERTS, seq_len=4096, micro_batch=1)
    kept, transient = peft_experts.layer_memory_bytes(qwen3_moe, job, 1.0, 1.0)
    factors = E * 16 * ((H + 2 * F) + (F + H)) * 2
    assert float(kept) == E * 3 * H * F * 2 + factors
    assert float(transient) == E * 2 * H * F * 2
    wrapped = layer_activation_bytes(qwen3_moe, job, Layout(), moe_layer=True)
    module = layer_activation_bytes(qwen3_moe, replace(job, lora_targets=("q", "v")), Layout(), moe_layer=True)
    assert wrapped.saved_bytes - module.saved_bytes > float(kept)  # and the routed copies' inputs again
    recomputed = layer_activation_bytes(qwen3_moe, replace(job, recompute="full"), Layout(), moe_layer=True)
    assert recomputed.saved_bytes < float(kept) / 10
    assert recomputed.full_bytes >= float(kept) + float(transient)


def test_moe_layers_adapt_every_expert(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    r = 16
    attention = r * (H + 32 * 128) + r * (H + 4 * 128)  # q and v
    module = Job(kernels="hf", method="lora", lora_targets=EXPERTS, experts_implementation="eager")
    assert lora_layer_params(qwen3_moe, module, moe_layer=True) == (attention, E * r * 3 * (H + F))
    wrapped = replace(module, experts_implementation=None)  # one adapter on gate_up_proj, one on down_proj
    assert lora_layer_params(qwen3_moe, wrapped, moe_layer=True) == (attention, E * r * (H + 2 * F + F + H))
    assert lora_layer_params(qwen3_moe, replace(module, lora_targets=("q", "v")), moe_layer=True) == (attention, 0)
    shared = load_catalog().model("qwen1.5-moe-a2.7b").to_domain()  # one shared expert beside 60 routed
    own, routed = lora_layer_params(shared, replace(module, lora_targets=("down",)), moe_layer=True)
    assert own == r * (shared.moe.shared_ffn + shared.hidden)
    assert routed == shared.moe.num_experts * r * (shared.moe.expert_ffn + shared.hidden)


def test_expert_adapters_slow_the_step_and_say_why() -> None:
    plain = speed.estimate(EstimateRequest(**QWEN, lora_targets=["q", "v"]))
    wrapped = speed.estimate(EstimateRequest(**QWEN, lora_targets=list(EXPERTS), recompute="full"))
    unwrapped = speed.estimate(EstimateRequest(**QWEN, lora_targets=["q", "v"], recompute="full"))
    assert float(wrapped.step.step_time_s) > 1.2 * float(unwrapped.step.step_time_s)
    note = [a for a in wrapped.setup.assumptions if "target_parameters" in a]
    assert len(note) == 1 and "GiB of expert weights" in note[0] and "the recompute" in note[0]
    assert not [a for a in plain.setup.assumptions if "target_parameters" in a]
    args = ["--lang", "zh", "estimate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "8", "--framework", "hf",
            "--method", "lora", "--lora-targets", "q,v,gate,up,down", "--seq", "4096", "--zero", "3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "通过 peft 的 target_parameters" in result.output


def test_qlora_leaves_transformers_5_experts_unquantized(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    """bitsandbytes converts nn.Linear modules only: transformers 5's 3-D experts stay out of NF4 and peft's
    prepare_model_for_kbit_training casts them to fp32; transformers 4's per-expert modules are quantized."""
    from rigplan.estimate.params import count_params
    from rigplan.estimate.states import NF4_BYTES_PER_PARAM, NF4_DOUBLE_QUANT_BYTES_PER_PARAM

    base = {"model": "qwen3-30b-a3b", "gpu": "rtx-4090", "framework": "hf", "method": "qlora", "seq": 2048}
    v5 = speed.estimate(EstimateRequest(**base))
    v4 = speed.estimate(EstimateRequest(**base, experts_implementation="eager"))
    assert peft_experts.experts_left_unquantized(qwen3_moe, v5.setup.job)
    assert not peft_experts.experts_left_unquantized(qwen3_moe, v4.setup.job)
    experts = count_params(qwen3_moe).routed_experts_total
    grown = float(v5.memory.breakdown.weights_bytes) - float(v4.memory.breakdown.weights_bytes)
    nf4 = NF4_DOUBLE_QUANT_BYTES_PER_PARAM if v4.setup.job.qlora_double_quant else NF4_BYTES_PER_PARAM
    assert grown == pytest.approx(experts * (4.0 - nf4), rel=1e-6)
    assert not v5.memory.fits and v4.memory.fits
    note = [a for a in v5.setup.assumptions if "bitsandbytes issue #1849" in a]
    assert len(note) == 1 and "fp32" in note[0]
    assert not [a for a in v4.setup.assumptions if "#1849" in a]
    unsloth = speed.estimate(EstimateRequest(**{**base, "framework": "unsloth"}))
    assert not [a for a in unsloth.setup.assumptions if "#1849" in a]


def test_grouped_mm_falls_back_off_sm90_sm100_and_with_fp32_experts() -> None:
    """torch._grouped_mm's fused kernel takes bf16 operands on sm_90 / sm_100 only; elsewhere each call waits on the
    host and issues one mm per expert, which a small micro-batch pays for."""
    catalog = load_catalog()
    lora = Job(kernels="hf", method="lora")
    for gpu, fused in (("h100-sxm", 1.0), ("b200", 1.0), ("gb300", 1.0), ("mi300x", 1.0), ("a100-80gb-sxm", 0.0),
                       ("rtx-4090", 0.0), ("rtx-5090", 0.0), ("rtx-pro-6000", 0.0)):
        assert float(hf_experts.fused_grouped_mm(catalog.gpu_domain(gpu), lora)) == fused, gpu
    upcast = Job(kernels="hf", method="qlora", kbit_fp32_upcast=True, recompute="full")
    assert float(hf_experts.fused_grouped_mm(catalog.gpu_domain("h200-sxm"), upcast)) == 0.0  # fp32 experts
    small = {**QWEN, "lora_targets": ["q", "v"], "seq": 1024, "recompute": "full"}
    on_hopper = speed.estimate(EstimateRequest(**small))
    on_ampere = speed.estimate(EstimateRequest(**{**small, "gpu": "a100-80gb-sxm"}))
    assert float(on_hopper.step.host_s) == 0.0 < float(on_ampere.step.host_s)
    assert [a for a in on_ampere.setup.assumptions if "PyTorch's fallback on a100-80gb-sxm" in a]
    assert not [a for a in on_hopper.setup.assumptions if "fallback" in a]


def test_qlora_moe_layers_move_their_4bit_experts(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    """peft-prepared QLoRA on Hugging Face modules: an MoE layer's attention Linear4bit modules as a dense layer's
    and, where the experts are 4-bit (transformers 4's per-expert nn.Linear), each routed copy's casts, the fp32
    activation and every expert hit's weights dequantized; transformers 5's unquantized experts add none of it."""
    from rigplan.estimate import peft_kbit

    v4 = Job(kernels="hf", method="qlora", kbit_fp32_upcast=True, experts_implementation="eager",
             lora_targets=("q", "v"))
    tokens, copies, hit = 2048.0, 2048.0 * 8, 128.0
    with_experts, _ = peft_kbit.moe_layer_kbit_traffic(qwen3_moe, v4, tokens=tokens, copies=copies, experts_hit=hit,
                                                       quantized_experts=True)
    attention, _ = peft_kbit.moe_layer_kbit_traffic(qwen3_moe, v4, tokens=tokens, copies=copies, experts_hit=hit,
                                                    quantized_experts=False)
    per_copy = 6.0 * 3 * (H + F) + 10.0 * F
    dequantized = hit * 3 * H * F * peft_kbit.NF4_DEQUANT_BYTES_PER_PARAM
    assert with_experts - attention == pytest.approx(per_copy * copies + dequantized)
    parts = peft_kbit.kbit_parts(qwen3_moe, v4, tokens=tokens, ep=1.0, load=1.0)
    assert parts is not None and parts[3] == pytest.approx(with_experts)
    v5 = replace(v4, experts_implementation=None)  # bitsandbytes leaves the 3-D experts alone
    v5_parts = peft_kbit.kbit_parts(qwen3_moe, v5, tokens=tokens, ep=1.0, load=1.0)
    assert v5_parts is not None and v5_parts[3] == pytest.approx(attention)
    assert peft_kbit.kbit_parts(qwen3_moe, replace(v4, method="lora"), tokens=tokens, ep=1.0, load=1.0) is None


def test_unsloth_runs_transformers_experts_without_waits_or_rebuilt_weights(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    """--framework unsloth: Unsloth's MoE backend (torch._grouped_mm or its Triton grouped GEMMs, split LoRA on the
    routed tokens) takes transformers' grouped_mm host model, not Megatron-Core's synced one; no W' is rebuilt, its
    4-bit experts stay 4-bit, and no GPU takes torch's fallback."""
    base = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 1, "framework": "unsloth", "method": "lora",
            "lora_targets": list(EXPERTS), "seq": 2048, "micro_batch": 4, "global_batch": 16}
    result = speed.estimate(EstimateRequest(**base))
    job = result.setup.job
    assert job.moe_expert_module == "unsloth" and job.routed_experts_implementation == "grouped_mm"
    assert not peft_experts.applies(qwen3_moe, job)
    assert float(result.step.host_s) == 0.0
    assert [a for a in result.setup.assumptions if a.startswith("MoE experts as Unsloth runs them")]
    assert not [a for a in result.setup.assumptions if "target_parameters" in a or "Megatron" in a]
    on_ampere = speed.estimate(EstimateRequest(**{**base, "gpu": "a100-80gb-sxm"}))
    assert float(hf_experts.fused_grouped_mm(on_ampere.setup.gpu, on_ampere.setup.job)) == 1.0
    qlora = speed.estimate(EstimateRequest(**{**base, "method": "qlora"}))
    assert not peft_experts.experts_left_unquantized(qwen3_moe, qlora.setup.job)
