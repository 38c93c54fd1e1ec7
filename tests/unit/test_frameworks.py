"""Framework presets: each sets what its table claims, explicit fields win, conditions hold."""

from __future__ import annotations

from typing import get_args

import pytest

from rigplan.api import memory
from rigplan.catalog.load import load_catalog
from rigplan.domain.frameworks import FRAMEWORK_NAMES, FRAMEWORK_PRESETS, FrameworkName, condition_holds
from rigplan.flow.request import EstimateRequest, JobSpec, MemoryRequest, PlanRequest
from rigplan.flow.resolve import build_setup


def test_the_literal_names_every_preset_and_the_brief_list() -> None:
    assert set(get_args(FrameworkName)) == set(FRAMEWORK_NAMES)
    assert {"megatron", "nemo", "torchtitan", "fsdp", "deepspeed", "hf"} <= set(FRAMEWORK_NAMES)
    assert {"unsloth", "torchtune"} & set(FRAMEWORK_NAMES)


@pytest.mark.parametrize("name", FRAMEWORK_NAMES)
def test_every_setting_names_request_fields_and_a_source(name: str) -> None:
    for setting in FRAMEWORK_PRESETS[name].settings:
        assert setting.source.strip()
        for field, value in setting.values:
            assert field in JobSpec.model_fields, (name, field)
            JobSpec.model_validate({field: value})  # a value the request accepts


@pytest.mark.parametrize(("precision", "tp"), [("bf16-mixed", 1), ("fp8", 2), ("fp16-mixed", 2)])
@pytest.mark.parametrize("name", FRAMEWORK_NAMES)
def test_each_preset_sets_what_it_claims(name: str, precision: str, tp: int) -> None:
    request = MemoryRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, tp=tp, precision=precision,
                            framework=name)
    applied = request.framework_applied
    assert applied is not None and applied.name == name
    for setting in FRAMEWORK_PRESETS[name].settings:
        holds = condition_holds(setting.when, precision=str(request.precision), tp=tp, zero=request.zero,
                                compile=bool(request.compile))
        for field, value in setting.values:
            if field == "precision":
                continue  # an explicit --precision here; the torchtune precision test covers it
            if holds:
                assert getattr(request, field) == value, (name, field)
                assert applied.set_values[field] == value
            else:  # another setting of the field may hold (torchtitan's loss with and without compile)
                assert applied.set_values.get(field, not value) != value
    job = build_setup(request).job
    for field in ("kernels", "loss", "compile", "autocast", "main_grads_fp32", "optimizer_foreach", "fused_swiglu",
                  "fp8_transpose_cache", "ddp_grad_copy", "fsdp_prefetch", "attention_kernel", "recompute",
                  "rope_factor_unfused"):
        if field in applied.set_values:
            assert getattr(job, field) == applied.set_values[field], (name, field)


def test_explicit_fields_win_even_at_their_default_value() -> None:
    request = MemoryRequest(model="llama-3.1-8b", gpus=8, framework="torchtitan", zero=0, loss="fused")
    assert (request.zero, request.loss, request.kernels) == (0, "fused", "eager")
    applied = request.framework_applied
    assert applied is not None and set(applied.kept) == {"zero", "loss"}
    assert "zero" not in applied.set_values and "loss" not in applied.set_values
    assert request.model_fields_set == {"model", "gpus", "framework", "zero", "loss"}


def test_recompute_and_its_granularity_are_one_setting() -> None:
    default = MemoryRequest(model="llama-3.1-8b", framework="torchtitan")
    assert (default.recompute, default.recompute_every) == ("full", 2)
    job = build_setup(default).job
    assert (job.recompute, job.recompute_method, job.recompute_layers) == ("full", "every", 2)
    op = MemoryRequest(model="llama-3.1-8b", framework="torchtitan", recompute="op")
    assert (op.recompute, op.recompute_every) == ("op", None)
    build_setup(op)  # no stray granularity under a non-full recompute
    megatron = MemoryRequest(model="llama-3.1-8b", framework="megatron", recompute="full", recompute_num_layers=2)
    assert megatron.recompute_every is None and build_setup(megatron).job.recompute_layers == 2


def test_conditions_follow_precision_and_tp() -> None:
    fp16 = MemoryRequest(model="llama-3.1-8b", framework="megatron", precision="fp16-mixed")
    assert fp16.main_grads_fp32 is False  # Megatron keeps fp16 grads unless asked
    bf16 = MemoryRequest(model="llama-3.1-8b", framework="megatron")
    assert bf16.main_grads_fp32 is True and bf16.fp8_transpose_cache is False
    fp8 = MemoryRequest(model="llama-3.1-8b", framework="megatron", precision="fp8")
    assert fp8.fp8_transpose_cache is True and fp8.fp8_recipe == "delayed"
    titan_fp8 = MemoryRequest(model="llama-3.1-8b", framework="torchtitan", precision="fp8")
    assert titan_fp8.fp8_recipe == "current"
    assert MemoryRequest(model="llama-3.1-8b", framework="nemo", tp=2, gpus=8).sequence_parallel is True
    assert MemoryRequest(model="llama-3.1-8b", framework="nemo", tp=1, gpus=8).sequence_parallel is False
    lora_hf = MemoryRequest(model="llama-3.1-8b", framework="hf", method="lora")  # bf16-true: no autocast
    assert lora_hf.autocast is False and MemoryRequest(model="llama-3.1-8b", framework="hf").autocast is True


def test_megatron_overlap_defaults_are_for_ddp_and_the_distributed_optimizer() -> None:
    zero1 = MemoryRequest(model="llama-3.1-8b", gpus=8, framework="megatron", zero=1)
    assert (zero1.overlap_grad_reduce, zero1.overlap_param_gather, zero1.pp_comm_overlap) == (False, False, True)
    fsdp = MemoryRequest(model="llama-3.1-8b", gpus=8, framework="megatron", zero=3)
    assert (fsdp.overlap_grad_reduce, fsdp.overlap_param_gather) == (None, None)  # rigplan's FSDP default
    # NeMo 2.0 / Megatron-Bridge comm-overlap configs turn the interleaved schedule's p2p overlap on
    assert MemoryRequest(model="llama-3.1-8b", framework="nemo").pp_comm_overlap is True


def test_torchtune_trains_in_pure_bf16_unless_told() -> None:
    assert MemoryRequest(model="llama-3.1-8b", framework="torchtune").precision == "bf16-true"
    assert MemoryRequest(model="llama-3.1-8b", framework="torchtune", precision="bf16-mixed").precision == "bf16-mixed"


def test_the_preset_reaches_the_estimate() -> None:
    """Megatron's fp32 main grads double the gradient bytes; the fused loss shrinks the logits buffers."""
    plain = memory(MemoryRequest(model="llama-3.1-8b", gpus=8, zero=1)).to_dict()
    megatron = memory(MemoryRequest(model="llama-3.1-8b", gpus=8, zero=1, framework="megatron")).to_dict()
    assert megatron["per_gpu"]["gradients_bytes"] == pytest.approx(2 * plain["per_gpu"]["gradients_bytes"])
    assert megatron["per_gpu"]["logits_bytes"] < plain["per_gpu"]["logits_bytes"]
    assert plain["framework"] is None and megatron["framework"]["name"] == "megatron"
    assert any(a.startswith("framework megatron") for a in megatron["assumptions"])


def test_plan_requests_carry_the_preset_to_their_candidates() -> None:
    from rigplan.flow.plan import candidate_request, plan

    request = PlanRequest(model="llama-3.1-8b", tokens="10B", gpu=["h100-sxm"], gpus_max=8, framework="hf")
    assert request.kernels == "hf"
    result = plan(request)
    data = result.to_dict()
    assert data["framework"]["name"] == "hf" and "zero" not in data["framework"]["set"]
    cand = candidate_request(request, result.ranked[0])
    assert isinstance(cand, EstimateRequest)
    assert (cand.kernels, cand.autocast, cand.optimizer_foreach) == ("hf", True, True)
    assert cand.zero == result.ranked[0].layout["zero"]  # the searched layout, not the preset's
    assert "--framework hf" in data["ranked"][0]["estimate_command"]


def test_the_doc_lists_every_setting() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "methodology" / "frameworks.md").read_text(encoding="utf-8")
    for name, preset in FRAMEWORK_PRESETS.items():
        section = doc.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for setting in preset.settings:
            assert f"`{setting.label}` | {setting.when} | {setting.source} |" in section, (name, setting.label)


def test_megatron_bf16_gradient_reduction_keeps_bf16_main_grads() -> None:
    """Megatron-Core allocates its main-grad buffer in fp32 exactly when it reduces gradients in fp32
    (distributed_data_parallel.py: torch.float if grad_reduce_in_fp32 else param.dtype), so a bf16 reduction
    under the megatron / nemo presets leaves 2-byte gradients; the fp32 default keeps both."""
    from rigplan.flow.memory import memory
    from rigplan.flow.request import MemoryRequest

    def grads(**extra: object) -> float:
        request = MemoryRequest(model="llama-3-8b", gpu="h100-sxm", gpus=8, framework="megatron", zero=1, **extra)
        return float(memory(request).breakdown.model_gradients_bytes)

    params = 8.03e9
    assert grads() == pytest.approx(4.0 * params, rel=0.02)
    assert grads(grad_reduce_dtype="bf16") == pytest.approx(2.0 * params, rel=0.02)
    # the fp32 reduction given explicitly is the same switch at the preset's value: fp32 main grads still (before
    # 2026-12-07 an explicit --grad-reduce-dtype fp32 dropped the buffer to 2 bytes)
    assert grads(grad_reduce_dtype="fp32") == pytest.approx(4.0 * params, rel=0.02)
    for name in ("nemo", "ms-swift"):
        request = MemoryRequest(model="llama-3-8b", gpu="h100-sxm", gpus=8, framework=name, zero=1,
                                grad_reduce_dtype="fp32")
        assert request.main_grads_fp32 is True, name
        assert "grad_reduce_dtype" in request.framework_applied.kept, name


def test_a_setting_given_at_another_value_stays_the_users_whole() -> None:
    """Only a coupled setting (one framework switch) fills its other fields when the user gives one at the
    preset's value; an ordinary multi-field setting keeps its all-or-nothing rule (torchtitan's every-second-layer
    recompute does not follow a user's --recompute full)."""
    megatron = MemoryRequest(model="llama-3-8b", framework="megatron", main_grads_fp32=False, grad_reduce_dtype="fp32")
    assert megatron.main_grads_fp32 is False
    titan = MemoryRequest(model="llama-3-8b", framework="torchtitan", recompute="full")
    assert titan.recompute_every is None


def test_fp8_param_gather_keeps_fp8_weights_only() -> None:
    """Megatron --fp8-param-gather: the weights are fp8 tensors with no bf16 copy beside them (2 B/param fewer
    than fp8 with the transpose cache), and only fp8 recipes accept it."""
    from rigplan.errors import InvalidSpec
    from rigplan.flow.memory import memory
    from rigplan.flow.request import MemoryRequest

    def weights(**extra: object) -> float:
        request = MemoryRequest(model="llama-3-8b", gpu="h100-sxm", gpus=8, framework="megatron", precision="fp8",
                                zero=1, **extra)
        return float(memory(request).breakdown.weights_bytes)

    # the block linears (32 x (4096 x 10240 + 3 x 4096 x 14336)) lose their bf16 copy, the embedding and head
    # (2 x 128256 x 4096) and the norms keep theirs
    linears = 32 * (4096 * 10240 + 3 * 4096 * 14336)
    assert weights() - weights(fp8_param_gather=True) == pytest.approx(2.0 * linears)
    assert weights(fp8_param_gather=True) == pytest.approx(2.0 * linears + 2.0 * 2 * 128256 * 4096, rel=0.001)
    with pytest.raises(InvalidSpec, match="--precision fp8"):
        memory(MemoryRequest(model="llama-3-8b", gpu="h100-sxm", fp8_param_gather=True))


def test_automodel_runs_transformer_engine_attention_where_it_prefers_cudnn() -> None:
    """AutoModel's TE attention is cuDNN's fused kernel on Hopper and later, FlashAttention-2 on Ampere (the
    architecture has no cuDNN curve, so the fused stack's kernel runs); plain FSDP2 keeps SDPA."""
    from rigplan.flow import estimate as speed
    from rigplan.flow.request import EstimateRequest

    def kernel(framework: str, gpu: str) -> str:
        result = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu=gpu, gpus=8, ep=8, framework=framework,
                                                recompute="full", balanced_routing=True))
        return str(result.to_dict()["efficiency"]["attention_kernel"])

    assert kernel("automodel", "h100-sxm") == "cudnn"
    assert kernel("automodel", "a100-80gb-sxm") == "fa2"
    assert kernel("fsdp", "h100-sxm") == "sdpa"


def test_bf16_moments_halve_adams_moments_and_keep_the_master_weights() -> None:
    """Megatron's precision-aware optimizer with bf16 exp_avg and exp_avg_sq: 4 + 2 + 2 B/param of optimizer
    states (fp32 master, two bf16 moments) instead of 4 + 4 + 4; only Adam accepts it."""
    from rigplan.errors import InvalidSpec
    from rigplan.flow.memory import memory
    from rigplan.flow.request import MemoryRequest

    def optimizer(**extra: object) -> float:
        request = MemoryRequest(model="llama-3-8b", gpu="h100-sxm", gpus=8, framework="megatron", zero=0, **extra)
        return float(memory(request).breakdown.optimizer_bytes)

    assert optimizer(bf16_moments=True) / optimizer() == pytest.approx(8.0 / 12.0, rel=1e-6)
    with pytest.raises(InvalidSpec, match="--bf16-moments"):
        memory(MemoryRequest(model="llama-3-8b", gpu="h100-sxm", optimizer="sgd", bf16_moments=True))


def test_ms_swift_runs_megatron_core_with_its_own_argument_defaults() -> None:
    """Megatron-SWIFT's arguments (docs/source_en/Megatron-SWIFT/Command-line-parameters.md): selective recompute,
    the distributed optimizer and no dropout, where Megatron-LM's own defaults are none, off and 0.1."""
    shape = {"model": "qwen3-30b-a3b", "gpu": "a800-80gb-sxm", "gpus": 16, "tp": 2, "ep": 8}
    swift = MemoryRequest(**shape, framework="ms-swift")
    megatron = MemoryRequest(**shape, framework="megatron")
    assert (swift.zero, swift.dropout, swift.recompute) == (1, False, "selective")
    assert (megatron.zero, megatron.dropout, megatron.recompute) == (0, True, "none")
    assert (swift.kernels, swift.loss, swift.step_overhead_ms) == (megatron.kernels, megatron.loss,
                                                                    megatron.step_overhead_ms)
    kept = MemoryRequest(**shape, framework="ms-swift", recompute="full", zero=0)
    assert (kept.recompute, kept.zero) == ("full", 0)


@pytest.mark.parametrize("name", ["torchtitan", "ms-swift", "megatron"])
def test_plan_searches_recompute_over_a_preset_that_sets_its_own(name: str) -> None:
    """torchtitan's preset checkpoints every second layer (recompute full with recompute_every 2), ms-swift's
    recomputes the attention core; plan tries every recompute itself, and each candidate's estimate reproduces it."""
    from rigplan.flow import estimate as speed
    from rigplan.flow.plan import candidate_request, plan

    request = PlanRequest(model="llama-3.1-8b", tokens="10B", gpu=["h100-sxm"], gpus_max=16, framework=name)
    result = plan(request)
    assert result.ranked and "recompute" not in result.to_dict()["framework"]["set"]
    for cand in result.ranked[:3]:
        again = speed.estimate(candidate_request(request, cand))
        assert again.setup.job.recompute == cand.layout["recompute"]
        assert again.to_dict()["tokens_per_s"] == pytest.approx(cand.tokens_per_s, rel=1e-6)


def test_a_framework_without_a_pipeline_schedule_keeps_one_stage_and_says_so() -> None:
    """Hugging Face Trainer, DeepSpeed's ZeRO engine, a plain FSDP2 script and Unsloth run no pipeline schedule:
    plan keeps their layouts at one stage, and an estimate given --pp times it as asked with a line saying so."""
    from rigplan.flow import estimate as speed
    from rigplan.flow.plan import plan
    from rigplan.search.space import pipeline_options

    assert pipeline_options(32, 8, max_pp=1) == [1] and 8 in pipeline_options(32, 8)
    for name in ("hf", "deepspeed", "fsdp", "unsloth"):
        assert FRAMEWORK_PRESETS[name].no_pipeline
    assert not FRAMEWORK_PRESETS["megatron"].no_pipeline and not FRAMEWORK_PRESETS["torchtitan"].no_pipeline
    request = PlanRequest(model="llama-3.1-70b", tokens="10B", gpu=["h100-sxm"], gpus_max=16, framework="hf")
    result = plan(request)
    assert result.ranked and all(c.layout["pp"] == 1 for c in result.ranked + result.pareto)
    assert any("--framework hf runs no pipeline schedule" in a for a in result.to_dict()["assumptions"])
    megatron = plan(PlanRequest(model="llama-3.1-70b", tokens="10B", gpu=["h100-sxm"], gpus_max=16,
                                framework="megatron"))
    assert not any("pipeline schedule" in a for a in megatron.to_dict()["assumptions"])
    asked = speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, pp=2, framework="hf"))
    assert any("rigplan times --pp 2 as asked" in a for a in asked.setup.assumptions)
    plain = speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, pp=2, framework="megatron"))
    assert not any("pipeline schedule" in a for a in plain.setup.assumptions)


def test_transformers_expert_parallelism_is_named_and_kept_out_of_the_search() -> None:
    """transformers' expert parallelism gives every rank of the group the same micro-batch (TRL issue #5713), which
    rigplan does not model: plan keeps an hf MoE job at one expert rank, an estimate given --ep says what it times."""
    from rigplan.flow import estimate as speed
    from rigplan.flow.plan import plan
    from rigplan.search.space import layout_space

    arch = load_catalog().model("qwen3-30b-a3b").to_domain()
    assert set(layout_space(arch, 8, 16, 4096, sequence_parallel=True, max_ep=1).ep) == {1}
    assert max(layout_space(arch, 8, 16, 4096, sequence_parallel=True).ep) > 1
    result = plan(PlanRequest(model="qwen3-30b-a3b", tokens="1B", gpu=["h100-sxm"], gpus_max=16, framework="hf",
                              method="lora"))
    assert result.ranked and all(c.layout["ep"] == 1 for c in result.ranked + result.pareto)
    assert any("the search keeps one expert rank" in a for a in result.to_dict()["assumptions"])
    asked = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8, framework="hf",
                                           method="lora"))
    assert any("it times --ep 8 as Megatron-Core's" in a for a in asked.setup.assumptions)
    dense = speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, framework="hf"))
    assert not any("expert parallelism" in a for a in dense.setup.assumptions)
    torchtitan = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8,
                                                framework="torchtitan"))
    assert not any("which rigplan does not model" in a for a in torchtitan.setup.assumptions)
