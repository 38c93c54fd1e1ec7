"""From a validated request to the domain values the estimators take (model, job, layout, GPU)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rigplan.catalog.load import Catalog, load_catalog
from rigplan.domain.frameworks import expert_parallel_note, no_pipeline_note
from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout, check_layout_for_model, heads_per_cp_problem, linear_heads_problem
from rigplan.domain.model import Architecture
from rigplan.domain.pipeline_layout import parse_megatron_layout
from rigplan.domain.stages import DEFAULT_SPLIT, PipelineSplit, describe_split
from rigplan.errors import InvalidSpec, UnsupportedPrecision
from rigplan.estimate import hf_experts, linear_attention
from rigplan.estimate.linear_attention import LORA_MIXER_TARGETS
from rigplan.flow.evidence import unquantized_experts_note
from rigplan.flow.framework import FrameworkApplied
from rigplan.flow.model_source import ResolvedModel, resolve_model

if TYPE_CHECKING:
    from rigplan.estimate.calibration import Calibration
    from rigplan.flow.request import JobSpec

DEFAULT_SEQ_LEN = 4096


@dataclass(frozen=True)
class TrainingSetup:
    """Everything one estimate needs, plus the assumptions made to get there."""

    arch: Architecture
    job: Job
    layout: Layout
    gpu: Gpu
    catalog: Catalog
    model_source: str
    assumptions: list[str] = field(default_factory=list)
    calibration: Calibration | None = None
    """Measured overrides of efficiency/overhead parameters (--calibration), applied when for this GPU."""
    model: ResolvedModel | None = None
    """The model as resolved (reused by callers that build more setups of the same request)."""
    framework: FrameworkApplied | None = None
    """The --framework preset that filled the request's unset fields, and what it set."""


def _derive_dp(spec: JobSpec) -> tuple[int, list[str]]:
    model_parallel = spec.tp * spec.pp * spec.cp
    if spec.gpus is None:
        return spec.dp or 1, []
    if spec.gpus % model_parallel:
        raise InvalidSpec(
            f"--gpus {spec.gpus} is not a multiple of tp*pp*cp = {spec.tp}*{spec.pp}*{spec.cp} = {model_parallel}"
        )
    derived = spec.gpus // model_parallel
    if spec.dp is not None and spec.dp != derived:
        raise InvalidSpec(
            f"--dp {spec.dp} disagrees with --gpus {spec.gpus}: tp*pp*cp*dp = {model_parallel}*{spec.dp} "
            f"= {model_parallel * spec.dp}"
        )
    return derived, ([] if spec.dp is not None else [f"dp={derived} derived from {spec.gpus} GPUs / (tp*pp*cp)"])


def _expert_tp_default(spec: JobSpec, dp: int) -> tuple[int, list[str]]:
    """The expert-tensor-parallel degree when --etp is left at 0: tp, as Megatron-Core defaults
    expert_tensor_parallel_size, unless ep*tp does not divide the tp*cp*dp GPUs of a pipeline stage while ep
    does; then 1, as Megatron-Bridge's MoE recipes and the Megatron-MoE-ModelZoo layouts set it (Qwen3-235B-A22B
    at TP2 EP32 PP8 on 256 H100 is such a layout), saying so."""
    stage = spec.tp * spec.cp * dp
    if spec.etp or spec.ep == 1 or spec.tp == 1 or stage % (spec.ep * spec.tp) == 0 or stage % spec.ep:
        return spec.etp, []
    return 1, [f"etp=1: ep*tp = {spec.ep}*{spec.tp} does not divide the {stage} GPUs of a pipeline stage "
               f"(tp*cp*dp), so the experts are laid out over ep alone, as Megatron-Bridge's MoE recipes set "
               f"expert_tensor_parallel_size; set --etp to choose"]


def _routing(spec: JobSpec) -> dict[str, object]:
    try:
        return spec.routing_values()
    except ValueError as exc:
        raise InvalidSpec(str(exc)) from exc


_TENSOR_PRECISION_OF_RECIPE = {"bf16-mixed": "bf16", "bf16-true": "bf16", "fp16-mixed": "fp16", "fp8": "fp8"}


MX_ARCHITECTURES = ("blackwell", "cdna 4")
"""Architectures whose tensor cores take block-scaled MX formats (MXFP8): NVIDIA Blackwell (sm_100, sm_103,
sm_120) and AMD CDNA 4 (MI350 series). Hopper, Ada and CDNA 3 scale fp8 per tensor only. Transformer Engine's
MXFP8BlockScaling runs on compute capability 10.x only: its support matrix lists MXFP8 as not supported on 12.0
(the GB202 cards; Gpu.workstation_blackwell), which check_precision_on_gpu refuses."""


BLOCKWISE_FP8_ARCHITECTURES = ("hopper", "blackwell")
"""NVIDIA architectures Transformer Engine runs Float8BlockScaling (--fp8-recipe blockwise) on: Hopper natively
(cuBLASLt's 128-element and 128 x 128 block scales) and Blackwell by converting the scales for MXFP8 GEMMs
(TransformerEngine PR #2157); not Ada or earlier (Transformer Engine's datatype and hardware support matrix, 'FP8 block
scaling')."""


NVFP4_ARCHITECTURE = "blackwell"
"""NVFP4 (E2M1 with E4M3 scales per 16 elements) is NVIDIA's format: Blackwell's tensor cores take it (sm_100,
sm_103, sm_120); CDNA 4's fp4 is OCP MXFP4 (E8M0 scales per 32), which Transformer Engine's NVFP4 recipe does not
use."""


BIASED_EXPERTS_UNFUSED = (
    "--moe-fused-grouped-mlp: these experts carry biases, which Transformer Engine's fused grouped MLP takes only "
    "where cudnn-frontend's grouped GEMM has a bias input (ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8."
    "is_fc1_bias_supported), else it runs the grouped linears unfused; rigplan times them unfused, as gpt-oss-120b "
    "measures in Megatron-Bridge's 26.06 table and model card (+2-7% unfused, +28-36% fused)")
"""The fused grouped MLP's gate for biased experts (gpt-oss): the runs that set it measure the unfused speed."""


OWN_EXPERTS = {"automodel": "own", "unsloth": "unsloth"}
"""Presets whose fused stack ('fused' kernels) runs the routed experts in its own code, not Megatron-Core's
TEGroupedMLP, and Job.moe_expert_module for each: NeMo AutoModel (nemo_automodel/components/moe/layers.py:
quick_geglu_deepep and the other expert activations are torch.compile'd, clamp and routing weights included) and
Unsloth (its MoE backend on transformers 5's experts: torch._grouped_mm, its Triton grouped GEMMs where that falls
back, split LoRA; Unsloth's MoE guide, 2026-02)."""
SINKS_CP_ALL_TO_ALL = (
    "context parallelism as all-to-all (--cp-comm-type a2a): Transformer Engine runs learned attention sinks only "
    "in its FusedAttention backend, which takes context parallelism only as all-to-all "
    "(dot_product_attention/utils.py get_attention_backend; Megatron-Bridge's gpt-oss recipe sets cp_comm_type a2a)")
"""Why a model with attention sinks gets all-to-all context parallelism by default."""


def _context_parallel_exchange(arch: Architecture, job: Job, layout: Layout, given: str | None,
                               assumptions: list[str]) -> Job:
    """The job with its context-parallel exchange: the one given, else all-to-all where Transformer Engine needs
    it (learned attention sinks under its fused attention), else the ring."""
    if given is None and arch.attention_sinks and job.kernels == "fused" and job.attention == "flash":
        job = replace(job, cp_comm_type="a2a")
        if layout.cp > 1:
            assumptions.append(SINKS_CP_ALL_TO_ALL)
    if job.cp_comm_type == "a2a":
        problem = heads_per_cp_problem(arch.num_heads, arch.kv_heads, layout.tp, layout.cp)
        if problem:
            raise InvalidSpec(problem)
    return job


def _inert_switches(arch: Architecture, job: Job) -> list[str]:
    """One line for each switch given that changes nothing in this job, and what it needs."""
    notes = []
    if job.a2a_overlap_schedule == "dualpipe" and not job.a2a_overlap:
        notes.append("--a2a-overlap-schedule dualpipe schedules the expert all-to-all overlap and changes nothing "
                     "without it; add --a2a-overlap")
    if job.recompute_mla_up_proj and arch.mla is None:
        notes.append(f"--recompute-mla-up-proj changes nothing: {arch.id} has no multi-head latent attention")
    if job.recompute_moe_act and arch.moe is None:
        notes.append(f"--recompute-moe-act changes nothing: {arch.id} has no routed experts")
    elif job.recompute_moe_act and job.recompute not in ("none", "selective"):
        notes.append(f"--recompute-moe-act changes nothing beside --recompute {job.recompute}: the recomputed "
                     "layers keep their inputs only")
    if job.recompute_moe and arch.moe is None:
        notes.append(f"--recompute-moe changes nothing: {arch.id} has no routed experts")
    elif job.recompute_moe and job.recompute not in ("none", "selective"):
        notes.append(f"--recompute-moe changes nothing beside --recompute {job.recompute}: the recomputed "
                     "layers keep their inputs only")
    elif job.recompute_moe and job.recompute_moe_act:
        notes.append("--recompute-moe-act changes nothing beside --recompute-moe: the whole MoE block reruns")
    if job.experts_implementation is not None and arch.moe is None:
        notes.append(f"--experts-implementation changes nothing: {arch.id} has no routed experts")
    if job.op_save_grouped_mm and arch.moe is None:
        notes.append(f"--op-save-grouped-mm changes nothing: {arch.id} has no routed experts")
    elif job.op_save_grouped_mm and job.recompute != "op":
        notes.append(f"--op-save-grouped-mm changes nothing beside --recompute {job.recompute}: it extends the "
                     "per-op save list of --recompute op")
    return notes


def check_precision_on_gpu(gpu: Gpu, precision: str, *, defaulted: bool = False, fp8_recipe: str | None = None) -> None:
    """A recipe whose tensor precision the part lacks (bf16 on V100/T4, fp8 before Hopper/Ada, MXFP8 before
    Blackwell / CDNA 4) is an error naming the recipe that does run; a silent fallback would misstate both memory
    and speed."""
    blockwise_runs = gpu.vendor == "nvidia" and any(name in gpu.architecture.lower()
                                                    for name in BLOCKWISE_FP8_ARCHITECTURES)
    if precision == "fp8" and fp8_recipe == "mxfp8" and gpu.has_precision("fp8") and not any(
            name in gpu.architecture.lower() for name in MX_ARCHITECTURES):
        others = "delayed, current or blockwise (128-element fp32 scales)" if blockwise_runs else "delayed or current"
        raise UnsupportedPrecision(f"{gpu.name} has no block-scaled (MX) fp8 tensor cores, so --fp8-recipe mxfp8 "
                                   f"cannot run on it (Blackwell and CDNA 4 have them); use --fp8-recipe {others}")
    if precision == "fp8" and fp8_recipe == "mxfp8" and gpu.workstation_blackwell:
        raise UnsupportedPrecision(f"{gpu.name} is a compute-capability 12.0 Blackwell, on which Transformer Engine "
                                   "does not run MXFP8 (its support matrix; 'MXFP8 ... is not supported on 12.0+ "
                                   "architectures', TransformerEngine issue #2304); use --fp8-recipe delayed, current "
                                   "or blockwise")
    if precision == "fp8" and fp8_recipe == "blockwise" and gpu.has_precision("fp8") and not blockwise_runs:
        raise UnsupportedPrecision(f"{gpu.name} does not run Transformer Engine's block-scaled fp8 "
                                   "(Float8BlockScaling, NVIDIA Hopper and Blackwell), so --fp8-recipe blockwise "
                                   "cannot run on it; use --fp8-recipe delayed or current")
    if precision == "fp8" and fp8_recipe == "nvfp4" and gpu.has_precision("fp8") and not (
            gpu.has_precision("fp4") and NVFP4_ARCHITECTURE in gpu.architecture.lower()):
        alternative = "mxfp8" if any(name in gpu.architecture.lower() for name in MX_ARCHITECTURES) else "delayed"
        raise UnsupportedPrecision(f"{gpu.name} has no NVFP4 tensor cores, so --fp8-recipe nvfp4 cannot run on it "
                                   f"(NVIDIA Blackwell has them); use --fp8-recipe {alternative}")
    if precision == "fp32" and not gpu.peak("tf32"):
        raise UnsupportedPrecision(f"{gpu.name} has no fp32 or tf32 rate in rigplan's catalog (no published "
                                   "figure), so --precision fp32 cannot be estimated on it; use --precision bf16-mixed")
    need = _TENSOR_PRECISION_OF_RECIPE.get(precision)
    if need is None or gpu.has_precision(need):
        return
    alternative = "bf16-mixed" if gpu.has_precision("bf16") else "fp16-mixed"
    if defaulted:
        raise UnsupportedPrecision(f"{gpu.name} has no {need} tensor cores, so the default precision {precision} "
                                   f"cannot run on it; use --precision {alternative}")
    raise UnsupportedPrecision(f"{gpu.name} has no {need} tensor cores, so --precision {precision} cannot run on "
                               f"it; use --precision {alternative}")


def _fp8_transpose_cache(spec: JobSpec, gpu: Gpu, precision: str, assumptions: list[str]) -> bool:
    """The fp8 weights' second layout: per-tensor scaling keeps a transpose only where the part's fp8 GEMMs
    are TN-only (Gpu.fp8_gemm_any_layout); block-scaled fp8, MXFP8 and NVFP4 keep their column-wise data on every part
    (their scales run along one dimension)."""
    if not (spec.fp8_transpose_cache and precision == "fp8"):
        return spec.fp8_transpose_cache
    if spec.fp8_recipe not in ("blockwise", "mxfp8", "nvfp4") and gpu.fp8_gemm_any_layout:
        assumptions.append(f"fp8 weights keep no transpose on {gpu.id}: its fp8 GEMMs take any operand layout "
                           "(Transformer Engine is_non_tn_fp8_gemm_supported)")
        return False
    return True


def _recompute_granularity(spec: JobSpec) -> dict[str, object]:
    """Job.recompute_method and recompute_layers from Megatron's or torchtitan's spelling."""
    if spec.recompute_every is not None:
        if spec.recompute_num_layers is not None or spec.recompute_method != "uniform":
            raise InvalidSpec("--recompute-every (torchtitan) and --recompute-num-layers/--recompute-method "
                              "(Megatron) choose the recomputed layers two ways; give one")
        return {"recompute_method": "every", "recompute_layers": spec.recompute_every}
    return {"recompute_method": spec.recompute_method, "recompute_layers": spec.recompute_num_layers or 1}


MAMBA_OUT_PROJ_DROPPED = ("LoRA leaves out_proj of the Mamba-2 mixers out: peft refuses it on Mamba models "
                          "(_check_lora_target_modules_mamba), as transformers' fused scan kernel reads that weight "
                          "directly (mamba_split_conv1d_scan_combined's outproj_weight)")


def _without_peft_refused_targets(arch: Architecture, job: Job, assumptions: list[str]) -> Job:
    """The job less the LoRA targets peft refuses on transformers' modules: out_proj on a Mamba-2 model."""
    if not (job.is_peft and arch.has_mamba2 and "out_proj" in job.lora_targets and linear_attention.peft_adapters(job)):
        return job
    kept = tuple(t for t in job.lora_targets if t != "out_proj")
    if not kept:
        raise InvalidSpec("--lora-targets out_proj on a Mamba-2 model: peft refuses LoRA on its out_proj, which "
                          "transformers' fused scan kernel reads directly; add in_proj or q,k,v,o")
    assumptions.append(MAMBA_OUT_PROJ_DROPPED)
    return replace(job, lora_targets=kept)


def model_lora_targets(arch: Architecture, targets: Sequence[str]) -> tuple[str, ...]:
    """The LoRA targets that name a module of the model: in_proj and out_proj (what 'all' adds) only where it has a
    Gated DeltaNet or Mamba-2 mixer."""
    mixer = arch.linear_attention is not None and arch.linear_attention.kind != "kimi_delta"
    return tuple(t for t in targets if t not in LORA_MIXER_TARGETS or mixer)


def _pipeline_split(spec: JobSpec, arch: Architecture, assumptions: list[str]) -> tuple[int, PipelineSplit]:
    """vpp and the pipeline split the request asks for: Megatron's layout string (--pipeline-layout, read by
    domain.pipeline_layout: its stages give vpp = stages / pp, its decoder and MTP counts must be the model's), or
    the split options as given."""
    if not spec.pipeline_layout:
        return spec.vpp, PipelineSplit(
            stage_layers=tuple(spec.stage_layers), first_stage_layers=spec.first_stage_layers,
            last_stage_layers=spec.last_stage_layers, embedding_weight=spec.embedding_layer_weight,
            head_weight=spec.head_layer_weight)
    others = [flag for flag, given in (
        ("--stage-layers", bool(spec.stage_layers)), ("--first-stage-layers", spec.first_stage_layers is not None),
        ("--last-stage-layers", spec.last_stage_layers is not None),
        ("--embedding-layer-weight", spec.embedding_layer_weight is not None),
        ("--head-layer-weight", spec.head_layer_weight is not None)) if given]
    if others:
        raise InvalidSpec(f"--pipeline-layout and {others[0]} both split the pipeline; give one")
    parsed = parse_megatron_layout(spec.pipeline_layout, spec.pp)
    vpp = parsed.stages // spec.pp
    if spec.vpp not in (1, vpp):
        raise InvalidSpec(f"--pipeline-layout lists {parsed.stages} stages, vpp {vpp} at --pp {spec.pp}; "
                          f"drop --vpp {spec.vpp} or give a layout of {spec.pp * spec.vpp} stages")
    decoder = sum(parsed.stage_layers)
    if decoder != arch.num_layers:
        raise InvalidSpec(f"--pipeline-layout holds {decoder} decoder layers ('t'); {arch.id} has {arch.num_layers}")
    mtp = arch.moe.mtp_layers if arch.moe is not None else 0
    if parsed.mtp_modules != mtp:
        fix = (f"set --mtp-layers {parsed.mtp_modules} to train with that many" if arch.moe is not None
               else "rigplan models MTP modules on MoE models only")
        raise InvalidSpec(f"--pipeline-layout places {parsed.mtp_modules} MTP modules ('m'); {arch.id} has {mtp} "
                          f"({fix})")
    if vpp != spec.vpp:
        assumptions.append(f"vpp {vpp}: --pipeline-layout lists {parsed.stages} stages over --pp {spec.pp}")
    if parsed.mtp_stage is not None and parsed.mtp_stage != parsed.stages - 1:
        assumptions.append(f"--pipeline-layout puts the MTP modules on virtual stage {parsed.mtp_stage} (pipeline "
                           f"rank {parsed.mtp_stage % spec.pp}); rigplan times them with the LM head on the last stage")
    return vpp, PipelineSplit(stage_layers=parsed.stage_layers, given_by="--pipeline-layout")


def build_setup(spec: JobSpec, catalog: Catalog | None = None, model: ResolvedModel | None = None) -> TrainingSetup:
    """Resolve the catalog, model and GPU, and build a checked Job and Layout.

    A caller that builds many setups of one request (plan, compare) passes the catalog and the model it
    resolved once, so that neither is looked up again.
    """
    catalog = catalog or load_catalog(spec.catalog)
    resolved: ResolvedModel = model or resolve_model(spec.model, catalog, spec.shape_flags())
    arch = resolved.arch
    assumptions = [*resolved.assumptions, *spec.source_notes]
    if spec.framework_applied is not None:
        assumptions.append(spec.framework_applied.assumption())
    gpu = catalog.gpu_domain(spec.gpu)
    seq = spec.seq
    if seq is None:
        seq = min(DEFAULT_SEQ_LEN, arch.context_length) if arch.context_length else DEFAULT_SEQ_LEN
        assumptions.append(f"sequence length {seq} (default; set --seq)")
    elif arch.context_length and seq > arch.context_length:
        assumptions.append(f"--seq {seq} exceeds the model's trained context {arch.context_length}")
    if arch.positions == "learned" and arch.max_positions and seq > arch.max_positions:
        raise InvalidSpec(f"--seq {seq} exceeds the learned position table ({arch.max_positions} rows) of {arch.id}")
    dp, dp_notes = _derive_dp(spec)
    assumptions.extend(dp_notes)
    vpp, split = _pipeline_split(spec, arch, assumptions)
    etp, etp_notes = _expert_tp_default(spec, dp)
    assumptions.extend(etp_notes)
    layout = Layout(tp=spec.tp, pp=spec.pp, vpp=vpp, dp=dp, cp=spec.cp, ep=spec.ep, etp=etp,
                    zero=spec.zero, sequence_parallel=spec.sequence_parallel, split=split)
    check_layout_for_model(layout, num_layers=arch.num_layers, num_heads=arch.num_heads,
                           num_kv_heads=arch.kv_heads, num_experts=arch.moe.num_experts if arch.moe else 0,
                           seq_len=seq)
    linear = arch.linear_attention
    problem = linear and linear_heads_problem(linear.num_key_heads, linear.num_value_heads, layout.tp, layout.cp)
    if problem:
        raise InvalidSpec(problem)
    if spec.method != "full" and not model_lora_targets(arch, spec.lora_targets):
        raise InvalidSpec(f"--lora-targets {','.join(spec.lora_targets)} name a linear-attention mixer's projections "
                          f"(Gated DeltaNet, Mamba-2), which {arch.id} does not have; add q,k,v,o or gate,up,down")
    if layout.pp > 1 and (split != DEFAULT_SPLIT or arch.num_layers % (layout.pp * layout.vpp)):
        assumptions.append(describe_split(split, arch.num_layers, layout.pp, layout.vpp))
    if spec.global_batch and spec.global_batch % (spec.micro_batch * dp):
        raise InvalidSpec(
            f"--global-batch {spec.global_batch} must be a multiple of micro-batch*dp = "
            f"{spec.micro_batch}*{dp} = {spec.micro_batch * dp}"
        )
    precision = spec.precision
    if precision is None:
        precision = "bf16-true" if spec.method in ("lora", "qlora") else "bf16-mixed"
        if spec.method != "full":
            assumptions.append("precision bf16-true: base model loaded in bf16, as PEFT and torchtune recipes do "
                               "(set --precision bf16-mixed for fp32 weights with autocast)")
    if spec.method == "qlora" and precision in ("fp32", "fp8"):
        raise InvalidSpec(f"QLoRA computes in bf16/fp16; --precision {precision} is not supported with it")
    recompute = spec.recompute
    if recompute is None:
        recompute = "full" if spec.method == "qlora" else "none"
        if spec.method == "qlora":
            assumptions.append("recompute full: QLoRA recipes turn gradient checkpointing on (the QLoRA paper's "
                               "reference code, peft and torchtune configs); set --recompute none to turn it off")
    job = Job(
        method=spec.method, precision=precision,  # type: ignore[arg-type]
        optimizer=spec.optimizer, seq_len=seq, micro_batch=spec.micro_batch, recompute=recompute,
        **_recompute_granularity(spec),
        attention=spec.attention, offload=spec.offload, lora_rank=spec.lora_rank,
        lora_targets=model_lora_targets(arch, spec.lora_targets), optimizer_in_backward=spec.optimizer_in_backward,
        activation_offload=spec.activation_offload,
        optimizer_foreach=spec.optimizer_foreach, qlora_double_quant=spec.qlora_double_quant,
        loss=spec.loss, dropout=spec.dropout, global_batch=spec.global_batch, kernels=spec.kernels,
        checkpoint_load=spec.checkpoint_load, nf4_quantizer=spec.nf4_quantizer,
        kbit_fp32_upcast=spec.kbit_fp32_upcast,
        main_grads_fp32=spec.main_grads_fp32, ddp_grad_copy=spec.ddp_grad_copy, fsdp_prefetch=spec.fsdp_prefetch,
        fsdp_flat_params=spec.fsdp_flat_params,
        fp8_transpose_cache=_fp8_transpose_cache(spec, gpu, precision, assumptions),
        fp8_param_gather=spec.fp8_param_gather,
        fp8_attention=spec.fp8_attention, bf16_moments=spec.bf16_moments, cuda_graphs=spec.cuda_graphs,
        cuda_graph_scope=tuple(spec.cuda_graph_scope), fused_swiglu=spec.fused_swiglu,
        fp8_activation_store=spec.fp8_activation_store,
        rope_factor_unfused=spec.rope_factor_unfused, fp8_experts=spec.fp8_experts,
        bf16_experts=spec.bf16_experts,
        recompute_moe_act=spec.recompute_moe_act, recompute_moe=spec.recompute_moe,
        recompute_mla_up_proj=spec.recompute_mla_up_proj,
        recompute_layernorm=spec.recompute_layernorm, recompute_mlp=spec.recompute_mlp,
        op_save_grouped_mm=spec.op_save_grouped_mm,
        nvls_buffers=spec.nvls_buffers, step_overhead_s=(spec.step_overhead_ms or 0.0) / 1000.0,
        grad_bucket_params=spec.grad_bucket_params or 0.0,
        expandable_segments=spec.expandable_segments, varying_lengths=spec.varying_lengths,
        **_routing(spec), **spec.overlap_values(),
        compile=spec.compile, autocast=spec.autocast, attention_kernel=spec.attention_kernel,
        fp8_recipe=spec.fp8_recipe,
    )
    check_precision_on_gpu(gpu, precision, defaulted=spec.precision is None, fp8_recipe=spec.fp8_recipe)
    if job.fp8_activation_store and arch.mlp != "gated":
        raise InvalidSpec(f"--fp8-activation-store keeps SwiGLU's input in fp8 (Megatron-Core supports it for SwiGLU "
                          f"only); {arch.id} has a plain MLP (drop it)")
    if "mamba" in job.cuda_graph_scope and not arch.has_mamba2:
        raise InvalidSpec(f"--cuda-graph-scope mamba captures Mamba-2 mixers; {arch.id} has none (drop it)")
    if job.bf16_experts and arch.moe is None:
        raise InvalidSpec("--bf16-experts keeps a mixture-of-experts model's routed experts in bf16; this model has "
                          "none (drop it: --precision fp8 covers its linears)")
    if job.fp8_experts:
        if arch.moe is None:
            raise InvalidSpec("--fp8-experts puts a mixture-of-experts model's routed experts in fp8; this model has "
                              "none (use --precision fp8 for its linears)")
        check_precision_on_gpu(gpu, "fp8", fp8_recipe=job.fp8_recipe)
    if layout.zero == 3 and job.is_peft:
        assumptions.append("ZeRO-3/FSDP shards the frozen base weights too")
    if experts_note := unquantized_experts_note(arch, job):
        assumptions.append(experts_note)
    if job.fsdp_flat_params and layout.zero != 3:
        assumptions.append("--fsdp-flat-params describes FSDP1 (ZeRO-3) and changes nothing at --zero "
                           f"{layout.zero}; add --zero 3 (or --fsdp) for it")
    assumptions.extend(_inert_switches(arch, job))
    preset = spec.framework_applied.name if spec.framework_applied is not None else None
    if layout.pp > 1 and (pipeline_note := no_pipeline_note(preset, layout.pp)):
        assumptions.append(pipeline_note)
    if arch.moe is not None and layout.ep > 1 and (experts_note := expert_parallel_note(preset, layout.ep)):
        assumptions.append(experts_note)
    if job.moe_fused_grouped_mlp and arch.moe is not None and arch.moe.expert_bias:
        job = replace(job, moe_fused_grouped_mlp=False, moe_expert_module="te_ops")
        assumptions.append(BIASED_EXPERTS_UNFUSED)
    job = _context_parallel_exchange(arch, job, layout, getattr(spec, "cp_comm_type", None), assumptions)
    if arch.moe is not None and spec.framework_applied is not None and spec.framework_applied.name in OWN_EXPERTS:
        job = replace(job, moe_expert_module=OWN_EXPERTS[spec.framework_applied.name])
    if spec.framework_applied is not None and spec.framework_applied.name == "unsloth":
        job = replace(job, transformers_modules=True)  # Unsloth's kernels patch transformers' modules; peft's LoRA
    job = _without_peft_refused_targets(arch, job, assumptions)
    if arch.moe is not None and float(hf_experts.expert_weights_fp32(job, layout.zero)) > 0 and not gpu.peak("fp32"):
        raise UnsupportedPrecision(f"transformers' grouped_mm experts run fp32 GEMMs in this job (QLoRA after peft's "
                                   f"k-bit preparation, or autocast over fp32 weights without sharding) and "
                                   f"{gpu.name} has no fp32 rate in rigplan's catalog (no published figure); use "
                                   "--experts-implementation eager or --framework unsloth")
    calibration = None
    if spec.calibration is not None:
        from rigplan.calibration.file import applied_note, calibration_from  # pydantic and YAML: only when asked

        calibration_file = calibration_from(spec.calibration)
        calibration = calibration_file.to_domain()
        assumptions.append(applied_note(calibration_file, gpu))
    return TrainingSetup(arch=arch, job=job, layout=layout, gpu=gpu, catalog=catalog,
                         model_source=resolved.source, assumptions=assumptions, calibration=calibration,
                         model=resolved, framework=spec.framework_applied)
