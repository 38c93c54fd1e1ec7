"""`memory`: per-GPU peak memory of one training job, whether it fits, and the largest batch/sequence that fits."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rigplan.catalog.load import Catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.domain.stages import virtual_stage_layers
from rigplan.estimate.allocator import cache_within_device
from rigplan.estimate.hf_experts import experts_implementation
from rigplan.estimate.memory import MemoryBreakdown, peak_memory
from rigplan.estimate.moe import by_expert_ranks, dispatcher, load_factor
from rigplan.estimate.params import count_params
from rigplan.flow.fit import advice, fit_verdict, nothing_fits_note
from rigplan.flow.resolve import TrainingSetup, build_setup
from rigplan.units import format_bytes

if TYPE_CHECKING:
    from rigplan.flow.request import MemoryRequest

ALLOCATOR_RETRY_NOTE = (
    "memory within the model's uncertainty of the device ({needed} of {usable}): once a step's cache meets the "
    "device, PyTorch's caching allocator frees its cached blocks and retries each failed cudaMalloc "
    "(torch.cuda.memory_stats() num_alloc_retries), waiting on the GPU each time, which the step time leaves out; a "
    "published torchtitan run of Qwen3-30B-A3B on 8 H200 that logged such retries at 96% of memory ran 14% fewer "
    "tokens/s per GPU than the same layout at 83%")
"""The speed caveat of a job that fits within the fit model's uncertainty (allocator_pressure_note). The allocator:
c10/cuda/CUDACachingAllocator.cpp (a failed cudaMalloc frees every cached block with no live tensor, through
cudaFree, which waits for the device, and retries) and torch.cuda.memory_stats ('num_alloc_retries: number of failed
cudaMalloc calls that result in a cache flush and retry'). The run: a torchtitan user's Qwen3-30B-A3B tuning log on
8 H200 (torchtitan's qwen3_30b_moe.toml, FSDP 8, EP 8, selective recompute, torch.compile, 8,192 tokens a sequence;
2025-12; stored in rigplan's source index as file 16131559758, whose repository the index does not name): local
batch 8 logged '25 CUDA memory allocation retries' at 134.43 GiB (96.21%) and 4,959 tokens/s per GPU, local batch 6
115.41 GiB (82.60%) and 5,748; in the same log TP 4 x EP 2 at local batch 16 (135.04 GiB, 96.65%) ran 1,588 against
2,228 at 12 (116.82 GiB), 29% fewer. Which loss the run used is not stated, and rigplan's reading depends on it:
with the loss head-chunked, as torchtitan's 2026 model registries wrap it, rigplan puts the two reserved peaks at
137.4 and 115.7 GiB, the first FITS, BORDERLINE and the second a clear fit; with its torchtitan preset's compiled
loss (whole logits), at 153.3 and 134.5 GiB, the first OVER, BORDERLINE and the second FITS, BORDERLINE (--recompute
op --compile --zero 3 either way). So the note is a caveat on the speed of a job at the limit, not a prediction that
a given job will retry."""
MAX_SEARCH_SEQ = 1 << 24
MAX_SEARCH_BATCH = 1 << 16


def moe_job_dict(arch: Architecture, job: Job, layout: Layout) -> dict[str, Any]:
    """The routing of an MoE job as JSON values, resolved as the estimators use it (empty for a dense model)."""
    if arch.moe is None:
        return {}
    return {"moe_imbalance": job.moe_imbalance or None, "capacity_factor": job.capacity_factor or None,
            "moe_pad_to_capacity": job.moe_pad_to_capacity,
            "moe_load_factor": float(by_expert_ranks(layout.ep, job, load_factor)),
            "moe_dispatcher": dispatcher(job), "a2a_overlap": job.a2a_overlap,
            "a2a_overlap_schedule": job.a2a_overlap_schedule if job.a2a_overlap else None,
            "moe_fused_grouped_mlp": job.moe_fused_grouped_mlp,
            "experts_implementation": experts_implementation(job),
            "moe_rank_capacity_factor": job.moe_rank_capacity_factor}


@dataclass(frozen=True)
class MemoryResult:
    setup: TrainingSetup
    breakdown: MemoryBreakdown
    usable_bytes: int
    max_micro_batch: int | None = None
    max_seq_len: int | None = None

    @property
    def fits(self) -> bool:
        return self.breakdown.total_bytes <= self.usable_bytes

    @property
    def headroom_bytes(self) -> float:
        return self.usable_bytes - self.breakdown.total_bytes

    def violations(self) -> list[dict[str, Any]]:
        if self.fits:
            return []
        return [{
            "code": "memory.exceeds_capacity",
            "message": f"needs {self.breakdown.total_bytes / 2**30:.1f} GiB per GPU, "
                       f"{self.setup.gpu.name} has {self.usable_bytes / 2**30:.1f} GiB usable",
            "needed": self.breakdown.total_bytes,
            "available": float(self.usable_bytes),
        }]

    def to_dict(self, with_advice: bool = True) -> dict[str, Any]:
        """The result as JSON values; without `with_advice` the remedies are not searched ("advice": null)."""
        s = self.setup
        counts = count_params(s.arch)
        b = self.breakdown
        return {
            "model": {
                "id": s.arch.id, "name": s.arch.name, "source": s.model_source,
                "params_total": counts.total, "params_active": counts.active_published,
                "params_active_matmul": counts.active_matmul,
                "layers": s.arch.num_layers, "hidden": s.arch.hidden, "heads": s.arch.num_heads,
                "kv_heads": s.arch.kv_heads, "attention": s.arch.attention_kind, "vocab": s.arch.vocab,
                "moe": s.arch.moe is not None,
            },
            "gpu": {
                "id": s.gpu.id, "name": s.gpu.name, "memory_bytes": s.gpu.memory_bytes,
                "usable_bytes": self.usable_bytes, "memory_kind": s.gpu.memory_kind,
            },
            "job": {
                "method": s.job.method, "precision": s.job.precision, "optimizer": s.job.optimizer,
                "seq_len": s.job.seq_len, "micro_batch": s.job.micro_batch, "global_batch": s.job.global_batch or None,
                "recompute": s.job.recompute,
                "recompute_method": s.job.recompute_method, "recompute_layers": s.job.recompute_layers,
                "attention": s.job.attention, "offload": s.job.offload,
                "lora_rank": s.job.lora_rank if s.job.is_peft else None,
                "lora_targets": list(s.job.lora_targets) if s.job.is_peft else None,
                "optimizer_in_backward": s.job.optimizer_in_backward,
                "activation_offload": s.job.activation_offload, "loss": s.job.loss,
                "checkpoint_load": s.job.checkpoint_load, "nf4_quantizer": s.job.nf4_quantizer,
                "kbit_fp32_upcast": s.job.kbit_fp32_upcast,
                "main_grads_fp32": s.job.main_grads_fp32, "ddp_grad_copy": s.job.ddp_grad_copy,
                "fsdp_prefetch": s.job.fsdp_prefetch, "fsdp_flat_params": s.job.fsdp_flat_params,
                "fp8_transpose_cache": s.job.fp8_transpose_cache, "fp8_param_gather": s.job.fp8_param_gather,
                "fp8_activation_store": s.job.fp8_activation_store,
                "fp8_attention": s.job.fp8_attention, "cuda_graphs": s.job.cuda_graphs,
                "cuda_graph_scope": list(s.job.cuda_graph_scope), "bf16_moments": s.job.bf16_moments,
                "fused_swiglu": s.job.fused_swiglu, "recompute_moe_act": s.job.recompute_moe_act,
                "recompute_moe": s.job.recompute_moe,
                "recompute_mla_up_proj": s.job.recompute_mla_up_proj,
                "recompute_layernorm": s.job.recompute_layernorm, "recompute_mlp": s.job.recompute_mlp,
                "op_save_grouped_mm": s.job.op_save_grouped_mm,
                "nvls_buffers": s.job.nvls_buffers,
                "expandable_segments": s.job.expandable_segments, "varying_lengths": s.job.varying_lengths,
                "kernels": s.job.kernels, "compile": s.job.compile, "autocast": s.job.autocast,
                "attention_kernel": s.job.attention_kernel, "fp8_recipe": s.job.fp8_recipe,
                **moe_job_dict(s.arch, s.job, s.layout),
            },
            "layout": {
                "tp": s.layout.tp, "pp": s.layout.pp, "vpp": s.layout.vpp, "dp": s.layout.dp,
                "cp": s.layout.cp, "ep": s.layout.ep, "etp": s.layout.expert_tp, "expert_dp": s.layout.expert_dp,
                "zero": s.layout.zero,
                "sequence_parallel": s.layout.sequence_parallel, "gpus": s.layout.num_gpus,
                **pipeline_split_dict(s.layout, s.arch.num_layers),
            },
            "per_gpu": {
                "weights_bytes": b.weights_bytes,
                "gradients_bytes": b.gradients_bytes,
                "optimizer_bytes": b.optimizer_bytes,
                "activations_bytes": b.activations_bytes,
                "logits_bytes": b.logits_bytes,
                "transient_bytes": b.transient_bytes,
                "cuda_context_bytes": b.cuda_context_bytes,
                "nccl_bytes": b.nccl_bytes,
                "fragmentation_bytes": b.fragmentation_bytes,
                "unreleasable_bytes": b.unreleasable_bytes,
                "needed_bytes": b.needed_bytes,
                "overhead_bytes": b.overhead_bytes,
                "allocated_bytes": b.allocated_bytes,
                "reserved_bytes": b.reserved_bytes,
                "total_bytes": b.total_bytes,
                "step_allocated_bytes": b.step_allocated_bytes,
                "step_reserved_bytes": b.step_reserved_bytes,
                "load_peak_bytes": b.load_bytes,
                "load_reserved_bytes": b.load_reserved_bytes,
                "peak_phase": b.peak_phase,
                "stage": b.stage,
                "phase": b.phase,
                "model_gradients_bytes": b.model_gradients_bytes,
                "micro_batches_in_flight": b.micro_batches_in_flight,
            },
            "fits": self.fits,
            "headroom_bytes": self.headroom_bytes,
            "host_bytes": b.host_bytes,
            "host_bytes_per_node": b.host_bytes * min(s.gpu.gpus_per_node, s.layout.num_gpus),
            "max_micro_batch": self.max_micro_batch,
            "max_seq_len": self.max_seq_len,
            "find_max_note": self.find_max_note(),
            "fit": fit_verdict(float(b.total_bytes), float(self.usable_bytes)),
            "advice": self.advice() if with_advice else None,
            "violations": self.violations(),
            "assumptions": list(s.assumptions),
            "framework": s.framework.to_dict() if s.framework else None,
        }

    def advice(self) -> list[dict[str, Any]]:
        """Remedies ranked by what they save, when the job does not fit or is borderline."""
        total = float(self.breakdown.total_bytes)
        if fit_verdict(total, float(self.usable_bytes))["verdict"] == "fits":
            return []
        return advice(self.setup, total, float(self.usable_bytes))

    def find_max_note(self) -> str | None:
        """Why --find-max found nothing (instead of a micro-batch of 0)."""
        if self.max_micro_batch != 0:
            return None
        b = self.breakdown
        return nothing_fits_note(self.setup, float(b.weights_bytes), float(b.cuda_context_bytes + b.nccl_bytes),
                                 float(self.usable_bytes))


def _fits_with(setup: TrainingSetup, usable: int, job: Job) -> bool:
    return peak_memory(setup.arch, job, setup.layout).total_bytes <= usable


def _largest(setup: TrainingSetup, usable: int, attr: str, step: int, limit: int) -> int:
    """Largest multiple of `step` for job.<attr> that fits (memory grows monotonically with it)."""
    def ok(value: int) -> bool:
        return _fits_with(setup, usable, replace(setup.job, **{attr: value}))

    if not ok(step):
        return 0
    low, high = step, step * 2
    while high <= limit and ok(high):
        low, high = high, high * 2
    high = min(high, limit + step)
    while high - low > step:
        mid = (low + high) // 2 // step * step
        if mid <= low:
            break
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


def _calibrated(breakdown: MemoryBreakdown, setup: TrainingSetup) -> MemoryBreakdown:
    """The measured CUDA context and fragmentation of a calibration for this GPU, in place of the defaults."""
    cal = setup.calibration
    if cal is None or not cal.applies_to(setup.gpu):
        return breakdown
    if cal.cuda_context_bytes is not None:
        breakdown = replace(breakdown, cuda_context_bytes=cal.cuda_context_bytes)
    if cal.fragmentation_fraction is not None:
        breakdown = replace(breakdown, fragmentation_bytes=breakdown.allocated_bytes * cal.fragmentation_fraction)
    return breakdown


def _within_device(breakdown: MemoryBreakdown, usable_bytes: float) -> MemoryBreakdown:
    """Reserved as a device of `usable_bytes` bounds it: the allocator gives its cache back under pressure
    (estimate/allocator.py cache_within_device)."""
    device = usable_bytes - breakdown.cuda_context_bytes - breakdown.nccl_bytes
    step = cache_within_device(breakdown.fragmentation_bytes, allocated_bytes=breakdown.step_allocated_bytes,
                               unreleasable_bytes=breakdown.unreleasable_bytes, device_bytes=device)
    load_cache = breakdown.load_reserved_bytes - breakdown.load_bytes
    load = cache_within_device(load_cache, allocated_bytes=breakdown.load_bytes,
                               unreleasable_bytes=breakdown.load_unreleasable_bytes, device_bytes=device)
    return replace(breakdown, fragmentation_bytes=float(step), load_reserved_bytes=float(breakdown.load_bytes + load))


def pipeline_split_dict(layout: Layout, num_layers: int) -> dict[str, Any]:
    """Layers per pipeline rank and per virtual stage (domain.stages)."""
    virtual = virtual_stage_layers(layout.split, num_layers, layout.pp, layout.vpp)
    per_rank = [sum(virtual[k] for k in range(r, len(virtual), layout.pp)) for r in range(layout.pp)]
    return {"stage_layers": per_rank, "virtual_stage_layers": list(virtual)}


def memory(request: MemoryRequest, catalog: Catalog | None = None) -> MemoryResult:
    """Per-GPU peak memory of a training job, whether it fits, and optionally the largest batch/sequence."""
    return memory_of(build_setup(request, catalog), request.ecc, find_max=request.find_max)


def memory_of(setup: TrainingSetup, ecc: bool | None, *, find_max: bool = False) -> MemoryResult:
    """Memory result for an already built setup (shared by memory, estimate and plan)."""
    usable = setup.gpu.usable_bytes(ecc)
    breakdown = _within_device(_calibrated(peak_memory(setup.arch, setup.job, setup.layout), setup), usable)
    max_mb = max_seq = None
    if find_max:
        max_mb = _largest(setup, usable, "micro_batch", 1, MAX_SEARCH_BATCH)
        seq_step = 128 * setup.layout.cp
        limit = MAX_SEARCH_SEQ
        if setup.arch.positions == "learned" and setup.arch.max_positions:
            limit = setup.arch.max_positions
        max_seq = _largest(setup, usable, "seq_len", seq_step, limit)
    return MemoryResult(setup=setup, breakdown=breakdown, usable_bytes=usable,
                        max_micro_batch=max_mb, max_seq_len=max_seq)


def allocator_pressure_note(result: MemoryResult) -> str | None:
    """ALLOCATOR_RETRY_NOTE where the job fits only within the fit model's uncertainty (flow.fit.fit_verdict); None
    elsewhere."""
    total, usable = float(result.breakdown.total_bytes), float(result.usable_bytes)
    if fit_verdict(total, usable)["verdict"] != "fits-borderline":
        return None
    return ALLOCATOR_RETRY_NOTE.format(needed=format_bytes(total), usable=format_bytes(usable))
