"""`estimate`: step time, throughput, MFU, time-to-train, GPU-hours and energy for one job and layout."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rigplan.catalog.load import Catalog
from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec
from rigplan.estimate import muon
from rigplan.estimate.band_kernels import skips_window_blocks
from rigplan.estimate.calibration import calibrated_efficiency
from rigplan.estimate.efficiency import (
    AMPERE,
    Efficiency,
    attention_kernel_for,
    efficiency_for,
    sustained_tensor_scale,
    warp_mma_speedup,
)
from rigplan.estimate.elementwise import rope_unfused_for_factor
from rigplan.estimate.flops import attention_head_dims, paper_flop_per_token
from rigplan.estimate.hf_experts import fused_grouped_mm
from rigplan.estimate.moe import (
    DISPATCH_EINSUMS,
    FLEX_DISPATCHERS,
    dispatch_einsum_flop_per_token,
    dispatcher,
    ep_ranks_per_domain,
    expected_destinations,
    gate_shard,
    load_factor,
    megatron_expert_path,
)
from rigplan.estimate.overlap import grad_reduce_bytes_per_param
from rigplan.estimate.sparse_attention import runs_sparse_kernels
from rigplan.estimate.states import master_bytes_per_param, optimizer_state_bytes_per_param, weight_bytes_per_param
from rigplan.estimate.step import StepBreakdown, step_time, with_network
from rigplan.flow.evidence import (
    BLACKWELL_GPT_OSS_EVIDENCE,
    GB300_MOE_EVIDENCE,
    HOPPER_GPT_OSS_EVIDENCE,
    HOST_PACED_NOTE_SHARE,
    SMALL_MICROBATCH_MOE_EVIDENCE,
    blackwell_gpt_oss_evidence_applies,
    gb300_moe_evidence_applies,
    hopper_gpt_oss_evidence_applies,
    host_paced_note,
    small_microbatch_moe,
    transformers_experts_notes,
)
from rigplan.flow.memory import MemoryResult, allocator_pressure_note, memory_of
from rigplan.flow.model_source import ResolvedModel
from rigplan.flow.regime import host_load_note, moe_accuracy, moe_accuracy_note, setup_regime
from rigplan.flow.resolve import TrainingSetup, build_setup
from rigplan.reliab import DEFAULT_RESTART_S, ReliabilityResult, reliability_for_job
from rigplan.reliab.failures import DEFAULT_FAILURE_MODEL, with_preemptions
from rigplan.reliab.storage import (
    StorageRequirements,
    StorageSpec,
    ceph,
    default_storage_for,
    nvme_gen4,
    nvme_gen5,
    raid0,
    storage_requirements,
    tectonic_llama3,
)
from rigplan.units import parse_count

if TYPE_CHECKING:
    from rigplan.flow.request import EstimateRequest

DEFAULT_BATCH_TOKENS = 4 * 2**20
"""Default global batch of about 4M tokens (GPT-3 175B used 3.2M, Llama 3 405B 4M-16M)."""


TOKENIZED_BYTES_PER_TOKEN = 4.0
"""Pre-tokenized training data as uint32 token ids (uint16 suffices below 65,536 vocabulary entries)."""

STORAGE_PRESETS = {
    "nvme": nvme_gen4, "nvme-gen5": nvme_gen5, "raid0-4": lambda: raid0(nvme_gen4(), 4),
    "ceph-4": lambda: ceph(4), "tectonic": tectonic_llama3,
}


def reliability_notes(gpu: Gpu, storage: StorageSpec, *, auto: bool) -> list[str]:
    """Say whose failure rate is used, and where checkpoints go when rigplan chose."""
    notes = ["interruption rate: Llama 3 405B's on 16,384 H100 (one per ~50,700 GPU-hours, Meta 2024), "
             + ("as measured" if "H100" in gpu.name else f"applied unchanged to {gpu.name}")]
    if auto:
        where = ("node-local NVMe (one node)" if storage.per_node else
                 f"shared storage ({storage.name}): a checkpoint on a failed node's local disk is lost with it")
        notes.append(f"checkpoints to {where}; set --storage")
    return notes


def checkpoint_bytes(setup: TrainingSetup) -> float:
    """A resumable checkpoint: trainable parameters with their master copy and optimizer states, plus
    the weights (frozen base weights are not rewritten for LoRA/QLoRA)."""
    from rigplan.estimate.params import count_params
    from rigplan.estimate.states import stage_lora_params

    job, arch = setup.job, setup.arch
    per_param = (weight_bytes_per_param(job) + master_bytes_per_param(job)
                 + optimizer_state_bytes_per_param(job, arch))
    if job.is_peft:
        own, routed = stage_lora_params(arch, job, layers=arch.num_layers, dense_layers=arch.num_dense_layers)
        return (own + routed) * per_param
    return count_params(arch).total * per_param


@dataclass(frozen=True)
class EstimateResult:
    setup: TrainingSetup
    memory: MemoryResult
    step: StepBreakdown
    tokens: float
    host_power_w: float
    reliability: ReliabilityResult | None = None
    storage: StorageRequirements | None = None

    @property
    def num_gpus(self) -> int:
        return self.setup.layout.num_gpus

    def to_dict(self, with_advice: bool = True) -> dict[str, Any]:
        """The result as JSON values; without `with_advice` the memory remedies are not searched."""
        st = self.step
        n = self.num_gpus
        step_s = float(st.step_time_s)
        tokens_per_s = float(st.tokens_per_step) / step_s
        model_tflops = float(st.model_flop_per_step) / step_s / n / 1e12
        hardware_tflops = float(st.hardware_flop_per_step) / step_s / n / 1e12
        peak_tflops = st.peak_flop_per_s / 1e12
        job = self.setup.job
        paper_tflops = (float(paper_flop_per_token(self.setup.arch, job.seq_len)) * float(st.tokens_per_step)
                        / step_s / n / 1e12) if not job.is_peft else None
        time_s = self.tokens / tokens_per_s if self.tokens else None
        gpu_hours = time_s * n / 3600 if time_s else None
        gpu = self.setup.gpu
        power_w = n * (gpu.tdp_w + self.host_power_w) if gpu.tdp_w else None  # 0: no published power figure
        eff = calibrated_efficiency(gpu, self.setup.calibration)
        memory = self.memory.to_dict(with_advice)
        return {
            "step_time_s": step_s,
            "tokens_per_s": tokens_per_s,
            "tokens_per_s_per_gpu": tokens_per_s / n,
            "model_tflops_per_gpu": model_tflops,
            "hardware_tflops_per_gpu": hardware_tflops,
            "mfu": model_tflops / peak_tflops,
            "hfu": hardware_tflops / peak_tflops,
            "mfu_paper": paper_tflops / peak_tflops if paper_tflops is not None else None,
            # As PaLM, Megatron-LM, torchtitan and the Llama 3 paper count it (flops.paper_flop_per_token):
            # 6·N + the full s×s attention term; None for LoRA/QLoRA, which papers do not report this way.
            "paper_tflops_per_gpu": paper_tflops,
            "peak_tflops_per_gpu": peak_tflops,
            "global_batch": round(float(st.micro_batches)) * self.setup.job.micro_batch * self.setup.layout.dp,
            "micro_batches_per_step": float(st.micro_batches),
            "breakdown": {
                "compute_s": float(st.compute_s),
                "exposed_comm_s": float(st.exposed_comm_s),
                "bubble_s": float(st.bubble_s),
                "optimizer_s": float(st.optimizer_s),
                "host_s": float(st.host_s),
                "host_load": float(st.host_load),
                "offload_s": float(st.offload_s),
                "comm": {"tp_s": float(st.tp_comm_s), "cp_s": float(st.cp_comm_s), "ep_s": float(st.ep_comm_s),
                         "pp_s": float(st.pp_comm_s), "dp_s": float(st.dp_comm_s)},
                "comm_by_axis": comm_by_axis(st),
                "overlap_tax_s": float(st.overlap_tax_s),
            },
            "tokens": self.tokens or None,
            "time_to_train_s": time_s,
            "wall_time_s": self.reliability.wall_time_s if self.reliability else None,
            "reliability": self.reliability.to_dict() if self.reliability else None,
            "storage": self.storage.to_dict() if self.storage else None,
            "gpu_hours": gpu_hours,
            "power_w": power_w,
            "energy_kwh": power_w * time_s / 3.6e6 if time_s and power_w is not None else None,
            "wall_gpu_hours": self.reliability.wall_time_s * n / 3600 if self.reliability else None,
            "pipeline": {"stage_layers": memory["layout"]["stage_layers"],
                         "pace_stage": int(st.pace_stage), "pace_stage_layers": int(st.pace_stage_layers),
                         "memory_peak_stage": int(self.memory.breakdown.stage)},
            "efficiency": {"family": eff.family, "measured": eff.measured, "source": eff.source,
                           "attention_kernel": (attention_kernel_for(eff, self.setup.job.kernels,
                                                                     self.setup.job.attention_kernel,
                                                                     attention_head_dims(self.setup.arch))
                                                if self.setup.job.attention == "flash" else "eager")},
            "gpus": n,
            "fits": self.memory.fits,
            "violations": self.memory.violations(),
            "memory": memory,
            "assumptions": list(self.setup.assumptions),
            "framework": self.setup.framework.to_dict() if self.setup.framework else None,
            "moe_accuracy": (moe_accuracy(setup_regime(self.setup, float(self.step.host_load)), time_s, gpu_hours)
                             if self.setup.arch.moe is not None else None),
        }


def comm_by_axis(st: StepBreakdown) -> dict[str, dict[str, float]]:
    """Per axis: all communication seconds of a step, the part hidden under compute, the exposed part."""
    exposed = {"tp": st.tp_comm_s, "cp": st.cp_comm_s, "ep": st.ep_comm_s, "pp": st.pp_comm_s, "dp": st.dp_comm_s}
    totals = st.comm_total_s or {}
    out = {}
    for axis, shown in exposed.items():
        total = max(float(totals.get(axis, shown)), float(shown))
        out[axis] = {"total_s": total, "hidden_s": total - float(shown), "exposed_s": float(shown)}
    return out


def overlap_note(job: Job, layout: Layout) -> str:
    """One line naming the overlap switches in force and the gradient reduction's dtype."""
    def on(flag: bool) -> str:
        return "on" if flag else "off"

    gather = job.overlap_param_gather
    gather_on = (layout.zero >= 3 and job.fsdp_prefetch > 0) if gather is None else gather
    tp = on(job.tp_comm_overlap and layout.sequence_parallel)
    if job.tp_comm_overlap and not layout.sequence_parallel and layout.tp > 1:
        tp += " (--tp-comm-overlap needs --sequence-parallel)"
    async_backward = job.kernels == "fused" if job.tp_async_backward is None else job.tp_async_backward
    if layout.tp > 1 and not (job.tp_comm_overlap and layout.sequence_parallel):
        tp += ", backward beside GEMMs" if async_backward else ", all in line"
    dtype = {4.0: "fp32", 2.0: "bf16"}.get(grad_reduce_bytes_per_param(job), "bf16")
    cp = "all-to-all, exposed" if job.cp_comm_type == "a2a" else on(job.cp_comm_overlap)
    return (f"communication overlap: tp {tp}, cp {cp}, pp {on(job.pp_comm_overlap)}, "
            f"grad reduce {on(job.overlap_grad_reduce)}, param gather {on(gather_on)}; gradients reduced in "
            f"{dtype} (docs/methodology/communication.md)")


def default_global_batch(micro_batch: int, dp: int, seq_len: int) -> int:
    """About DEFAULT_BATCH_TOKENS per step, a multiple of micro_batch·dp."""
    unit = micro_batch * dp
    return max(round(DEFAULT_BATCH_TOKENS / seq_len / unit), 1) * unit


def moe_routing_note(arch: Architecture, job: Job, layout: Layout) -> str:
    """One line saying how the MoE layers were routed and laid out."""
    load = load_factor(job)
    how = ("balanced routing" if job.moe_imbalance == 1.0 else
           f"busiest expert rank at {load:g}x the mean load" + ("" if job.moe_imbalance else
                                                                 " (dropless default; --balanced-routing, "
                                                                 "--moe-imbalance)"))
    if dispatcher(job) == "einsum":
        shard = gate_shard(layout.tp, layout.cp, bool(layout.sequence_parallel))
        pair = DISPATCH_EINSUMS[0] * dispatch_einsum_flop_per_token(arch, job, shard) / 1e9
        how = (f"expert inputs padded to capacity factor {job.capacity_factor:g}, dispatched and combined by one-hot "
               f"einsums (GShard, MaxText's dense_matmul): {pair:.2f} GFLOP a token in each MoE layer's forward, "
               "beside the experts")
    elif job.experts_padded:
        how = f"expert inputs padded to capacity factor {job.capacity_factor:g}"
    elif layout.ep == 1:
        how = "one expert rank holds every expert (ep=1), so it carries the mean load whatever the routing"
        if job.capacity_factor:
            how += f", capacity factor {job.capacity_factor:g}"
    elif job.capacity_factor:
        how += f", capacity factor {job.capacity_factor:g}"
    flex = FLEX_DISPATCHERS.get(dispatcher(job))
    if dispatcher(job) == "allgather":
        ranks = layout.ep * layout.expert_tp
        a2a = (f"none: the allgather dispatcher gathers every token of the {ranks} expert tensor x expert "
               "parallel ranks and reduce-scatters the experts' output (--moe-dispatcher alltoall sends only the "
               "routed copies)" if ranks > 1 else "none (one rank holds every expert)")
    elif layout.ep == 1:
        a2a = "none (ep=1)"
    elif job.a2a_overlap and job.a2a_overlap_schedule == "dualpipe":
        a2a = "hidden behind computation (DualPipe)"
    elif job.a2a_overlap:
        a2a = (f"partly overlapped (Megatron-Core 1F1B EP overlap, {flex})" if flex
               else "partly overlapped (Megatron-Core 1F1B EP overlap), NCCL all-to-all dispatcher")
    else:
        a2a = (f"exposed, {flex} dispatcher (--a2a-overlap to overlap)" if flex
               else "exposed (--a2a-overlap to overlap)")
    return (f"MoE: {how}; experts laid out ep={layout.ep} x etp={layout.expert_tp} x expert-dp={layout.expert_dp}; "
            f"all-to-all {a2a}")


def group_routing_note(arch: Architecture, job: Job, layout: Layout, domain_size: int) -> str | None:
    """A line on group-limited routing where the EP group spans several scale-up domains (None otherwise): the
    domains a token reaches (estimate.moe.expected_destinations) with DeepEP/HybridEP, or that NCCL's all-to-all
    sends every copy anyway."""
    moe = arch.moe
    domains = layout.ep / float(ep_ranks_per_domain(layout.ep, layout.expert_tp, domain_size))
    if moe is None or moe.routing_groups <= 1 or domains <= 1 or dispatcher(job) == "allgather":
        return None  # the allgather dispatcher gathers every token whatever its groups
    reached = float(expected_destinations(moe, domains))
    free = float(expected_destinations(replace(moe, routing_groups=1, routing_group_topk=1), domains))
    if free - reached < 0.05:  # every node reached either way (few nodes, many experts a token)
        return None
    if dispatcher(job) in FLEX_DISPATCHERS:
        return (f"MoE: group-limited routing (a token's experts in at most {moe.routing_group_topk} of "
                f"{moe.routing_groups} groups) sends a token to {reached:.1f} of the {domains:g} nodes its EP group "
                f"spans, against {free:.1f} without it (docs/methodology/moe.md)")
    return (f"MoE: NCCL's all-to-all sends every routed copy, so group-limited routing (at most "
            f"{moe.routing_group_topk} of {moe.routing_groups} groups) saves no network traffic here; DeepEP or "
            f"HybridEP (--moe-dispatcher deepep) would send a token to {reached:.1f} of the {domains:g} nodes, not "
            f"{free:.1f}")


NVL_TRAY_GPUS = 4
"""GPUs in one GB200/GB300 NVL72 compute tray (two Grace CPUs and four Blackwell GPUs per tray)."""
NVL_RACK_GPUS = 36
"""Smallest multi-node NVLink domain (NVL36); at or above it the EP all-to-all may cross trays on NVLink."""
MNNVL_EP_NOTE = ("EP all-to-all on multi-node NVLink: each EP group of {n} GPUs must sit inside one NVLink domain of "
                 "{domain} (a Slurm segment per rack, as Megatron-LM's DeepSeek-V3 GB200 guide sets it) with NCCL's "
                 "multi-node NVLink (IMEX) on; where it is not, --gpus-per-node 4 times it over the network between "
                 "4-GPU trays (NeMo 25.04's published DeepSeek-V3 GB200 runs are 2.8x slower than the NVLink estimate "
                 "and within 5-13% of the tray one: rigplan validate --suite moe)")

KV_REPLICA_NOTE = ("tp={tp} exceeds the model's {kv} kv heads: each kv group's fused QKV rows are split over {r} "
                   "tensor-parallel ranks, which all-gather the group's output before attention and reduce-scatter its "
                   "gradient after (Megatron-Core 0.16 and later; earlier versions and most other stacks need tp to "
                   "divide the kv heads)")

NVFP4_NOTE = ("NVFP4: the linear layers' GEMMs at the fp4 peak (E2M1 with E4M3 scales per 16 elements, Transformer "
              "Engine's NVFP4BlockScaling); attention, the LM head and the router stay bf16. On Megatron-Bridge's ten "
              "published NVFP4 rows (Llama 3 70B and 405B on GB300 and GB200) this step runs 18-37% faster than "
              "measured, median +30% (python benchmarks/bridge_nvfp4_check.py): read it as a bound")
BRIDGE_NO_DEEPEP_PARTS = ("gb200", "gb300")
BRIDGE_NO_DEEPEP_NOTE = ("DeepEP in Megatron-Bridge: its flex-dispatcher gate runs DeepEP only on compute capability "
                         "8.x and 9.x and on devices named NVIDIA B200 or B300, and on a GB200 or GB300 falls back to "
                         "the NCCL all-to-all with a warning (Megatron-Bridge issue #5992): give --moe-dispatcher "
                         "hybridep for HybridEP, the flex backend its NVL72 recipes use, or alltoall for the fallback")
LINEAR_ATTENTION_NOTE = ("linear-attention layers: timed as flash-linear-attention's chunked kernels, which "
                         "Megatron-Core and transformers call (transformers through the fla package or its Hub kernel; "
                         "without either it runs a PyTorch loop, torch_chunk_gated_delta_rule, which rigplan does not "
                         "model); their rate is the GEMM curve's at the kernels' 64-wide chunks, 1.4-2x above "
                         "published forward timings of the Triton kernels (docs/methodology/flops.md)")
"""Shown with a hybrid model's estimate (estimate.linear_attention)."""
MAMBA2_NOTE = ("Mamba-2 layers: timed as mamba_ssm's chunked scan (the conv, the five SSD kernels, the gated norm), "
               "which Megatron-Core's MambaMixer calls; their matmuls at the GEMM curve's rate at their smallest side "
               "(the head's channels, the state or the chunk), not a measured rate of those Triton kernels; the scan's "
               "walk from chunk to chunk is left out (docs/methodology/flops.md); on the 9 published Nemotron 3 runs "
               "rigplan checks (Megatron-Bridge 26.04.01: Nano on 8 B200, B300, GB200 or GB300 in MXFP8 and 16 H100 "
               "in FP8, Super on 64 of the four Blackwell parts in MXFP8) its tokens/s were from 5% below to 24% "
               "above the measured, median 21% above (Nano 18% to 24% above on every run); on the 7 runs of the "
               "dense Nemotron-H 56B (DGX Cloud Benchmarking, NeMo 25.04, 32 to 2,048 H100 in FP8) 3% to 8% above, "
               "median 6%")
BLOCKWISE_FP8_NOTE = ("block-scaled fp8: one fp32 scale per 1 x 128 elements of activations and gradients and per "
                      "128 x 128 block of weights (Transformer Engine's Float8BlockScaling); its GEMMs at the fp8 "
                      "curve of per-tensor scaling, which DeepGEMM's block-scaled GEMMs on H800 exceed "
                      "(deepseek-ai/DeepGEMM PRs #73 and #81: 777-1,500 TFLOP/s on five 4,096-token shapes where the "
                      "curve gives 666-1,221)")
BLOCKWISE_ON_BLACKWELL_NOTE = ("on datacenter Blackwell Transformer Engine converts the 128-element scales and runs "
                               "the GEMMs as MXFP8 (TransformerEngine PR #2157); the conversion pass is left out")


def kernel_note(job: Job, eff: Efficiency, peak_flop_per_s: float, head_dims: tuple[float, float] | None = None) -> str:
    """How the kernels run: stack, torch.compile, autocast, the attention kernel (and when it is an sm80 warp-MMA
    kernel held near its H100 speed on this part, estimate.efficiency.warp_mma_speedup, or SDPA's memory-efficient
    fallback for unequal head dims), the fp8 recipe."""
    parts = [f"{job.kernels} kernels"]
    if job.compile:
        parts.append("torch.compile")
    if job.autocast:
        parts.append("torch.autocast (fp32 residual stream)")
    if job.attention == "flash":
        kernel = attention_kernel_for(eff, job.kernels, job.attention_kernel, head_dims)
        text = f"attention kernel {kernel}"
        if kernel == "sdpa_efficient":
            text += (" (PyTorch SDPA's flash backend needs query and value heads of one size so MLA runs its "
                     "memory-efficient backend: --attention-kernel cudnn where the stack runs cuDNN attention)")
        elif job.attention_kernel and job.attention_kernel != kernel:
            text += f" (--attention-kernel {job.attention_kernel} has no {eff.family} kernel in rigplan's data)"
        elif warp_mma_speedup(eff, eff.attention[kernel], peak_flop_per_s) < 1.0:
            text += (f" (sm80 warp-MMA kernels at about an H100's attention speed on {eff.family}: --attention-kernel "
                     "cudnn where the stack runs cuDNN attention as PyTorch's SDPA does from 2.11 on)")
        parts.append(text)
    if job.precision == "fp8" and job.fp8_recipe == "nvfp4":
        parts.append("NVFP4 linear layers")
    elif job.precision == "fp8":
        parts.append(f"fp8 {job.fp8_recipe} scaling" + (" (routed experts bf16)" if job.bf16_experts else ""))
    return ", ".join(parts)


def window_note(arch: Architecture, job: Job) -> str | None:
    """What sliding-window layers cost in this job, or None for a model without them."""
    local = {w: n for w, n in arch.window_counts.items() if w}
    if not local:
        return None
    layers = ", ".join(f"{n} of {arch.num_layers} layers a {w}-token window" for w, n in sorted(local.items()))
    if all(w >= job.seq_len for w in local):
        return f"sliding-window attention ({layers}): no saving at --seq {job.seq_len}"
    if skips_window_blocks(job):
        return f"sliding-window attention ({layers}): the attention core costs the band, not the sequence"
    return (f"sliding-window attention ({layers}): counted at full causal cost, since this kernel gets the window "
            "as a mask (--attention-kernel fa2, fa3 or cudnn skip the blocks outside it)")


def sparse_attention_note(arch: Architecture, job: Job) -> str | None:
    """How DeepSeek Sparse Attention is timed in this job, or None for a model without it."""
    sparse = arch.sparse_attention
    if sparse is None:
        return None
    if not runs_sparse_kernels(arch, job):
        return ("DeepSeek Sparse Attention counted as dense MLA plus the indexer's forward, since this stack attends "
                "through a mask (transformers); a stack with sparse kernels (--kernels fused) attends to the top-k "
                "keys only")
    trained = "frozen (LoRA/QLoRA)" if job.is_peft else "trained on its KL loss"
    return (f"DeepSeek Sparse Attention: each query attends to its top {sparse.topk:,} keys (MLA in MQA mode), the "
            f"indexer scores every earlier key and is {trained}; the sparse training stage")


FP8_EXPERTS_NOTE = ("fp8 experts ({recipe}): only the routed experts' grouped GEMMs run in fp8, their inputs, output "
                    "gradients and weights cast in every call (torchao's MoE recipe); every other linear, the saved "
                    "activations and the weights' memory stay bf16")
"""Shown with --fp8-experts (domain.job.Job.fp8_experts)."""
BF16_EXPERTS_NOTE = ("bf16 experts: the routed experts' grouped GEMMs, their weights and the all-to-all stay bf16; the "
                     "other linears of the blocks run in fp8 (torchao's float8 linears, as torchtitan converts them)")
"""Shown with --bf16-experts (domain.job.Job.bf16_experts)."""
ROPE_FACTOR_NOTE = ("YaRN rotary (cos and sin scaled by {factor:.4f}): Megatron-Core runs it as unfused ops, its fused "
                    "RoPE taking no factor, charged at 25/6 the fused kernel's traffic and 23 more kernels a layer; "
                    "--no-rope-factor-unfused if your stack fuses it or trains with plain RoPE")
"""Shown where estimate.elementwise.rope_unfused_for_factor holds (gpt-oss under the megatron and nemo presets)."""


MEGATRON_EXPERT_PATH_NOTE = (
    "MoE experts through Megatron-Core's TEGroupedMLP: the clamp of their GLU inputs and the per-expert fc2 bias loop "
    "are charged as memory traffic and host ops (docs/methodology/moe.md); Transformer Engine's operation fuser "
    "(--moe-fused-grouped-mlp with MXFP8, or --cuda-graphs full) runs them without")
"""Shown where estimate.moe.megatron_expert_path holds (gpt-oss's biased, clamped experts in the fused stack)."""
STATIC_MOE_NOTE = (
    "static-shape MoE (--moe-rank-capacity-factor {factor:g}): sync-free experts as Megatron-Core's paged-stash guide "
    "names them (HybridEP, Transformer Engine's operation fuser, --moe-expert-rank-capacity-factor): no host sync a "
    "layer and one grouped GEMM a linear, so the host paces the step far less; the receive buffers sized by the factor "
    "and the paged stash are not counted in memory")
STATIC_MOE_HOPPER = ("; on Hopper Transformer Engine's device-side grouped GEMM needs SM100, so the experts need a "
                     "layer spec that calls torch.grouped_mm, as Megatron-Bridge's Qwen3.5 H100 recipe has")
"""Shown with Job.moe_rank_capacity_factor (estimate.moe.static_expert_shapes)."""


def estimate(request: EstimateRequest, catalog: Catalog | None = None, model: ResolvedModel | None = None,
             ) -> EstimateResult:
    """Speed, time and energy of one training job on one layout, with its memory check.

    `catalog` and `model`: already resolved for this request (plan passes them; see build_setup)."""
    setup = build_setup(request, catalog, model)
    gpu = with_network(setup.gpu, gpus_per_node=request.gpus_per_node, nic_gbit_per_s=request.nic_gbit,
                       nics_per_node=request.nics_per_node)
    assumptions = list(setup.assumptions)
    job = setup.job
    if not job.global_batch:
        gb = default_global_batch(job.micro_batch, setup.layout.dp, job.seq_len)
        assumptions.append(f"global batch {gb} sequences (~{gb * job.seq_len / 1e6:.1f}M tokens; set --global-batch)")
        job = replace(job, global_batch=gb)
    eff = calibrated_efficiency(gpu, setup.calibration)
    if not eff.measured:
        assumptions.append(f"{gpu.name}: efficiency data inherited, not fitted on runs of this GPU family "
                           f"({eff.source})")
    if gpu.power_basis is not None:
        basis_flop_per_s, basis_w = gpu.power_basis
        sustained = sustained_tensor_scale(gpu)
        assumptions.append(f"{gpu.name}: tensor work at {sustained:.3f}x the {gpu.peak('bf16') / 1e12:,.0f} TFLOP/s "
                           f"datasheet peak, from a {basis_flop_per_s / 1e12:,.0f} TFLOP/s part of the same SM design "
                           f"at {basis_w:,.0f} W by the square-root power law (catalog power_basis)")
    if gpu.gemm_power_fraction < 1.0:
        assumptions.append(f"{gpu.name}: dense GEMMs at {gpu.gemm_power_fraction:.2f} of the family curve's rate at "
                           "the datasheet peak, a measured shortfall at its board power (catalog gemm_power_limit)")
    assumptions.append(f"{gpu.gpus_per_node} GPUs per node, {gpu.nic_bits_per_s / 1e9:.0f} Gb/s scale-out per GPU, "
                       f"{kernel_note(job, eff, gpu.peak('bf16'), attention_head_dims(setup.arch))}")
    if setup.arch.linear_attention is not None:
        assumptions.append(MAMBA2_NOTE if setup.arch.linear_attention.kind == "mamba2" else LINEAR_ATTENTION_NOTE)
    if job.precision == "fp8" and job.fp8_recipe == "nvfp4":
        assumptions.append(NVFP4_NOTE)
    if job.precision == "fp8" and job.fp8_recipe == "blockwise":
        on_blackwell = eff.family == "blackwell" and not gpu.workstation_blackwell
        assumptions.append(BLOCKWISE_FP8_NOTE + ("; " + BLOCKWISE_ON_BLACKWELL_NOTE if on_blackwell else ""))
    if gb300_moe_evidence_applies(gpu.id, setup.arch, job):
        assumptions.append(GB300_MOE_EVIDENCE)
    if job.optimizer == "muon":
        share = muon.matrix_share(setup.arch)
        assumptions.append(f"Muon: one fp32 momentum on the hidden matrices ({share:.1%} of the parameters), AdamW on "
                           "embeddings, head and norms; five Newton-Schulz iterations a step on each rank's share of "
                           "the matrices, timed as bf16 GEMMs (optimizer row)")
    if setup.layout.tp > setup.arch.kv_heads:
        assumptions.append(KV_REPLICA_NOTE.format(tp=setup.layout.tp, kv=setup.arch.kv_heads,
                                                  r=setup.layout.tp // setup.arch.kv_heads))
    if not gpu.tdp_w:
        assumptions.append(f"{gpu.name}: no published power figure, so power and energy are not estimated")
    if setup.calibration is None and efficiency_for(gpu) is AMPERE and "ampere" not in gpu.architecture.lower():
        assumptions.append(f"{gpu.name}: rigplan has no efficiency data for {gpu.architecture}; the Ampere (A100) "
                           "fit and its CUDA kernels stand in for it, so treat the speed as rough")
    if setup.layout.num_gpus > gpu.gpus_per_node and gpu.gpudirect_rdma is None:
        assumptions.append(f"{gpu.name}: no published word on NIC access to device memory (GPUDirect-style "
                           "RDMA), so inter-node traffic is taken as staged through host memory")
    if setup.layout.num_gpus > gpu.gpus_per_node and not gpu.nic_bits_per_s:
        raise InvalidSpec(f"{setup.layout.num_gpus} {gpu.name} span more than one {gpu.gpus_per_node}-GPU node "
                          "and no scale-out network rate is published for it; give --nic (Gb/s per GPU)")
    if job.method == "qlora" and job.kbit_fp32_upcast and job.kernels == "hf" and not job.autocast:
        assumptions.append("QLoRA without autocast: the fp32 LM head, adapters and attention run fp32 matmuls that "
                           "rigplan times at bf16 rates, so this step time is low (40-67% under measured runs on an "
                           "H200); the Trainer's bf16=True runs under autocast (--autocast)")
    if setup.arch.moe is not None:
        assumptions.append(moe_routing_note(setup.arch, job, setup.layout))
        grouped = group_routing_note(setup.arch, job, setup.layout, gpu.link.domain_size)
        if grouped:
            assumptions.append(grouped)
        if eff.family == "hopper" and job.recompute != "full" and small_microbatch_moe(job, setup.layout):
            assumptions.append(SMALL_MICROBATCH_MOE_EVIDENCE)
        if hopper_gpt_oss_evidence_applies(eff.family, setup.arch, job):
            assumptions.append(HOPPER_GPT_OSS_EVIDENCE)
        if blackwell_gpt_oss_evidence_applies(gpu.id, setup.arch, job):
            assumptions.append(BLACKWELL_GPT_OSS_EVIDENCE)
        ep_group = setup.layout.ep * setup.layout.expert_tp
        if gpu.link.domain_size >= NVL_RACK_GPUS and ep_group > NVL_TRAY_GPUS and gpu.gpus_per_node > NVL_TRAY_GPUS:
            assumptions.append(MNNVL_EP_NOTE.format(n=ep_group, domain=gpu.link.domain_size))
        if (setup.framework is not None and setup.framework.name == "nemo" and dispatcher(job) == "deepep"
                and gpu.id in BRIDGE_NO_DEEPEP_PARTS and setup.layout.ep > 1):
            assumptions.append(BRIDGE_NO_DEEPEP_NOTE)
        if job.cuda_graphs == "full":
            assumptions.append("full-iteration CUDA graph: the host launches the step once, so dropless routing's "
                               "per-layer host sync no longer paces it")
            if job.cuda_graph_scope:
                assumptions.append("--cuda-graph-scope is ignored under --cuda-graphs full (the whole iteration is "
                                   "captured)")
        if megatron_expert_path(setup.arch, job):
            assumptions.append(MEGATRON_EXPERT_PATH_NOTE)
        if job.moe_rank_capacity_factor is not None:
            assumptions.append(STATIC_MOE_NOTE.format(factor=job.moe_rank_capacity_factor)
                               + (STATIC_MOE_HOPPER if eff.family == "hopper" else ""))
        if job.moe_fused_grouped_mlp:
            assumptions.append("MoE in fp8: the routed experts run Transformer Engine's fused grouped MLP (SwiGLU and "
                               "casts in the GEMM epilogues, grouped GEMMs at the dense fp8 curve)")
        elif (((job.precision == "fp8" and not job.bf16_experts) or job.fp8_experts) and eff.fp8_grouped_half_dim
              and gpu.peak_flop_per_s.get("fp8")):
            note = ("MoE in fp8: the grouped expert GEMMs reach half their fp8 ceiling at a smallest dimension of "
                    f"{eff.fp8_grouped_half_dim:,.0f} (fitted on paired fp8 / bf16 runs), so thin experts gain little "
                    "from fp8")
            if job.fp8_recipe == "mxfp8":
                note += "; --moe-fused-grouped-mlp when Transformer Engine's fused MXFP8 grouped MLP runs them"
            assumptions.append(note)
        if job.fp8_experts:
            assumptions.append(FP8_EXPERTS_NOTE.format(recipe=job.fp8_recipe))
        if job.bf16_experts:
            assumptions.append(BF16_EXPERTS_NOTE)
    windows = window_note(setup.arch, job)
    if windows:
        assumptions.append(windows)
    sparse_note = sparse_attention_note(setup.arch, job)
    if sparse_note:
        assumptions.append(sparse_note)
    if rope_unfused_for_factor(setup.arch, job):
        assumptions.append(ROPE_FACTOR_NOTE.format(factor=setup.arch.rope_attention_factor))
    if setup.layout.num_gpus > 1:
        assumptions.append(overlap_note(job, setup.layout))
    setup = replace(setup, gpu=gpu, job=job, assumptions=assumptions)
    tokens = parse_count(request.tokens, "--tokens") if request.tokens is not None else 0.0
    breakdown = step_time(setup.arch, job, setup.layout, gpu, global_batch=job.global_batch,
                          calibration=setup.calibration)
    assumptions.extend(transformers_experts_notes(setup.arch, job, gpu, setup.layout))
    if setup.arch.moe is not None:  # its cell narrows by the estimate's own host load (flow.regime.HOST_LOAD_AXIS)
        assumptions.append(moe_accuracy_note(setup_regime(setup, float(breakdown.host_load))))
    # the MoE layers' host pacing, without the training loop's per-step host time (Job.step_overhead_s)
    host_s, step_s = float(breakdown.host_s) - job.step_overhead_s, float(breakdown.step_time_s)
    if host_s > HOST_PACED_NOTE_SHARE * step_s:
        fused = bool(float(fused_grouped_mm(gpu, job, setup.layout.zero)))
        assumptions.append(host_paced_note(setup.arch, job, host_s / step_s, fused))
    elif note := host_load_note(float(breakdown.host_load)):
        assumptions.append(note)
    reliability = None
    storage = None
    if tokens:
        ideal_s = tokens / (float(breakdown.tokens_per_step) / float(breakdown.step_time_s))
        step_tokens = float(breakdown.tokens_per_step)
        if tokens < step_tokens:
            assumptions.append(f"--tokens {tokens:,.0f} is less than one step's {step_tokens:,.0f} tokens: the time "
                               "to train is that share of a step (a run takes whole steps)")
        store = (default_storage_for(setup.layout.num_gpus, gpu.gpus_per_node) if request.storage == "auto"
                 else STORAGE_PRESETS[request.storage]())
        assumptions.extend(reliability_notes(gpu, store, auto=request.storage == "auto"))
        reliability = reliability_for_job(
            num_gpus=setup.layout.num_gpus, ideal_time_s=ideal_s, checkpoint_bytes=checkpoint_bytes(setup),
            storage=store, restart_s=request.restart_s or DEFAULT_RESTART_S,
            failure_model=with_preemptions(DEFAULT_FAILURE_MODEL, request.preemptions_per_node_month,
                                           gpu.gpus_per_node),
            interval_s=request.checkpoint_interval_s, gpus_per_node=gpu.gpus_per_node,
            step_time_s=float(breakdown.step_time_s))
        storage = storage_requirements(
            tokens_per_s=float(breakdown.tokens_per_step) / float(breakdown.step_time_s),
            bytes_per_token=TOKENIZED_BYTES_PER_TOKEN, checkpoint_bytes=checkpoint_bytes(setup),
            interval_s=reliability.checkpoint_interval_s, dataset_tokens=tokens)
    memory = memory_of(setup, request.ecc)
    pressure = allocator_pressure_note(memory)
    if pressure:
        assumptions.append(pressure)
    return EstimateResult(setup=setup, memory=memory, step=breakdown, tokens=tokens,
                          host_power_w=request.host_power_w, reliability=reliability,
                          storage=storage if tokens else None)
