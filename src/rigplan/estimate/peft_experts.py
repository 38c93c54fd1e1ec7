"""LoRA on a transformers 5 MoE's routed experts through peft's parameter adapters (LoraConfig.target_parameters).

transformers 5 holds each MoE layer's routed experts as two 3-D parameters, gate_up_proj (E, 2f, h) and down_proj
(E, h, f) (the models' Experts classes under @use_experts_implementation), so peft's module LoRA cannot wrap them;
target_parameters wraps each in a ParamWrapper (peft/tuners/lora/layer.py). On every forward of the experts module
(and again when gradient checkpointing recomputes it) the wrapper registers a parametrization that rebuilds the whole
expert stack as W' = W + s·B·A, E experts at once, which the experts' grouped GEMMs then read in place of W. Since
peft PR #3577 (2026-08, "Fold the MoE LoRA delta into a single baddbmm") that is one torch.baddbmm from W and the
low-rank factors; before it the product B·A was materialised separately and added. So, against module LoRA:

- W' is a new tensor the size of the wrapped expert weights: the baddbmm reads W and writes W' every forward pass,
  and autograd keeps W' for the grouped GEMM's input gradient until the layer's backward (activation memory of
  N·p per MoE layer, N the wrapped weights' elements, p the compute dtype's bytes).
- W' needs a gradient (A and B are behind it), so the grouped GEMMs compute the full weight gradient of every
  wrapped expert linear, as in full fine-tuning, where module LoRA on a frozen base computes the input gradient
  only; the baddbmm's backward then reads that gradient twice (B's and A's gradients).
- No per-token adapter product: the adapters are folded into the weight.

Per MoE layer and rank, in a bf16 base: forward bytes 4·N per forward pass (W read, W' written), backward bytes 6·N
(the weight gradient written, read for each factor), backward FLOPs the wrapped linears' forward expert FLOPs
once more; fp32 experts (hf_experts.expert_weights_fp32) move twice the bytes (pass_bytes). peft's own
benchmark on one 128 x 2048 x 768 expert parameter (LoRA r 16, 4,096 tokens, bf16, one H100) measures 2.56 ms
forward and backward with the fold and 4.97 ms without it, peak memory 1.30 and 2.02 GB (PR #3577); the
comparison is in docs/methodology/moe.md.

Applies to LoRA and QLoRA jobs on transformers' grouped_mm experts (Job.routed_experts_implementation); under QLoRA
the experts are not 4-bit there (experts_left_unquantized). Left out: the eager loop's transformers 4 modules
(per-expert nn.Linear, module LoRA: hf_experts counts their host ops), the baddbmm's FLOPs (2·N·r forward, 4·N·r
backward, at an inner or outer dimension of r they are bound by the bytes counted), the parametrization's Python
registration each forward, and peft before #3577 (its separate delta and add move about twice the forward bytes).
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp

Num = Any
"""A float, or a numpy array of floats when many layouts are evaluated at once."""

HOST_OPS = {"forward": 3.0, "backward": 4.0}
"""Host ops one wrapped expert parameter adds a pass: forward, the two factors' casts to the weight dtype and the
baddbmm; backward, the baddbmm's two factor gradients (bmm) and the casts' backward."""


def experts_left_unquantized(arch: Architecture, job: Job) -> bool:
    """Whether a QLoRA job's routed experts stay out of 4-bit: transformers 5 holds them as 3-D parameters and its
    bitsandbytes integration (replace_with_bnb_linear, transformers 5.25) converts nn.Linear and Conv1D modules only,
    so they keep the load dtype (bitsandbytes issue #1849, 2026-01; its Experts4bit, PR #1965, is open), and peft's
    prepare_model_for_kbit_training casts them to fp32 with the other weights that are not 4-bit. transformers 4's
    per-expert nn.Linear modules (--experts-implementation eager) are quantized, and Unsloth quantizes its own
    (unsloth-zoo PR #527; moe_expert_module 'unsloth')."""
    return (arch.moe is not None and job.method == "qlora" and job.routed_experts_implementation == "grouped_mm"
            and job.moe_expert_module != "unsloth")


def applies(arch: Architecture, job: Job) -> bool:
    """Whether peft's parameter adapters run the job's routed-expert LoRA: a LoRA or QLoRA job (whose experts stay
    unquantized there, experts_left_unquantized) targeting an expert linear (gate, up or down) of an MoE model on
    transformers' grouped_mm experts; not under Unsloth, whose split LoRA applies the adapters to the routed tokens
    (Unsloth's MoE guide, 2026-02)."""
    return (arch.moe is not None and job.is_peft and job.routed_experts_implementation == "grouped_mm"
            and job.moe_expert_module != "unsloth" and bool({"gate", "up", "down"} & set(job.lora_targets)))


PEFT_MLP_NAME_REWRITE_FAMILIES = frozenset({
    "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1", "ernie4_5_moe", "glm4_moe", "glm4v_moe_text", "glm_moe_dsa",
    "hunyuan_v1_moe", "olmoe", "qwen3_moe", "qwen3_next"})
"""Model types (Architecture.family) on which peft 0.21 rewrites the target module names gate_proj, up_proj and
down_proj onto the routed experts' 3-D parameters and drops them from target_modules, so no dense-layer MLP or shared
expert carries a module adapter, whatever its path (peft utils/transformers_weight_conversion.py,
_convert_peft_config_moe: every model_type of _MODEL_TO_CONVERSION_PATTERN mapped to qwen2_moe that transformers 5.25
gives a checkpoint conversion mapping, here the ones rigplan reads; glm4v_moe_text for its wrapper glm4v_moe; peft
issue #3711, open, its fix PR #3715 keeps dotted names). The rewrite also doubles gate_up_proj's rank and alpha."""


def module_mlp_targets(arch: Architecture, job: Job) -> tuple[str, ...]:
    """The job's LoRA targets that reach the nn.Linear MLPs (dense layers, shared experts): all of them, but on a
    model type whose MLP names peft rewrites onto the routed experts (PEFT_MLP_NAME_REWRITE_FAMILIES) the MLP ones
    reach no such module, since they cannot be named without the rewrite; rigplan's hf-trainer export names the
    experts' parameters instead (target_parameters), which leaves their rank as given."""
    if applies(arch, job) and arch.family in PEFT_MLP_NAME_REWRITE_FAMILIES:
        return tuple(t for t in job.lora_targets if t not in ("gate", "up", "down"))
    return job.lora_targets


def wrapped_shapes(arch: Architecture, job: Job) -> list[tuple[int, int]]:
    """(d_in, d_out) of each expert parameter a ParamWrapper wraps, per expert: gate_up_proj (h, 2f gated or f) when
    gate or up is targeted, down_proj (f, h) when down is."""
    if not applies(arch, job):
        return []
    assert arch.moe is not None
    h, f = arch.expert_hidden, arch.moe.expert_ffn
    shapes = []
    if {"gate", "up"} & set(job.lora_targets):
        shapes.append((h, 2 * f if arch.mlp == "gated" else f))
    if "down" in job.lora_targets:
        shapes.append((f, h))
    return shapes


def wrapped_elements(arch: Architecture, job: Job, ep: Num = 1.0, etp: Num = 1.0, *, largest: bool = False) -> Num:
    """N: elements of one MoE layer's wrapped expert weights a rank holds, its E/ep experts (each split by etp); with
    `largest` those of its largest wrapped parameter alone (the backward's transient weight gradient)."""
    sizes = [d_in * d_out for d_in, d_out in wrapped_shapes(arch, job)]
    if arch.moe is None or not sizes:
        return 0.0 * xp.asfloat(ep)
    per_expert = float(max(sizes) if largest else sum(sizes))
    return arch.moe.num_experts / (xp.asfloat(ep) * xp.asfloat(etp)) * per_expert


def weight_bytes(job: Job, fp32: Num = 0.0) -> Num:
    """Bytes per element of W and W': peft folds the adapters in the frozen base's dtype with autocast off
    (_LoraFactorsProxy), so 4 where the experts are held in fp32 (`fp32`, hf_experts.expert_weights_fp32), else the
    compute dtype's."""
    return xp.where(xp.asarray(fp32) > 0, 4.0, float(job.compute_dtype_bytes))


def wrapped_share(arch: Architecture, job: Job) -> float:
    """Share of a routed expert's weights the wrappers cover (0 where they do not apply), and so of the routed
    experts' forward FLOPs whose weight gradient the backward adds (a gated expert: gate_up two thirds, down one
    third)."""
    if not applies(arch, job):
        return 0.0
    assert arch.moe is not None
    per_expert = (3.0 if arch.mlp == "gated" else 2.0) * arch.expert_hidden * arch.moe.expert_ffn
    return sum(d_in * d_out for d_in, d_out in wrapped_shapes(arch, job)) / per_expert


def pass_bytes(arch: Architecture, job: Job, local_expert_params: Num, fp32: Num = 0.0) -> tuple[Num, Num]:
    """HBM bytes of one MoE layer for W', N the wrapped share of the rank's `local_expert_params` and w its bytes
    (weight_bytes): each forward pass, the baddbmm reading W and writing W' (2·w·N); the backward, the weight
    gradient written and read for each factor (3·w·N). transformers runs the experts' GEMMs in the weights' dtype
    (it casts their input to it: grouped_mm is not autocast-enabled), so nothing is cast in between."""
    n = local_expert_params * wrapped_share(arch, job)
    w = weight_bytes(job, fp32)
    return n * 2.0 * w, n * 3.0 * w


def layer_memory_bytes(arch: Architecture, job: Job, ep: Num, etp: Num, fp32: Num = 0.0) -> tuple[Num, Num]:
    """(kept for backward, transient) bytes of one MoE layer on a rank: W', N·w, which the grouped GEMMs save for
    their input gradient, with, where w is the compute dtype's, the factors' copies in it the baddbmm saves for
    theirs (peft keeps the adapters in fp32, autocast_adapter_dtype), r·(d_in + d_out)·p an expert and parameter;
    and the backward's weight gradient of the largest wrapped parameter."""
    if arch.moe is None or not applies(arch, job):
        return 0.0 * xp.asfloat(ep), 0.0 * xp.asfloat(ep)
    p = float(job.compute_dtype_bytes)
    w = weight_bytes(job, fp32)
    factors = float(sum(job.lora_rank * (d_in + d_out) for d_in, d_out in wrapped_shapes(arch, job)))
    experts = arch.moe.num_experts / (xp.asfloat(ep) * xp.asfloat(etp))
    copies = xp.where(w == p, experts * factors * p, 0.0)
    return (wrapped_elements(arch, job, ep, etp) * w + copies,
            wrapped_elements(arch, job, ep, etp, largest=True) * w)


def host_ops(arch: Architecture, job: Job, phase: str) -> float:
    """Host ops the wrappers add to one MoE layer in `phase` ('forward' or 'backward'): HOST_OPS per wrapped
    parameter."""
    return HOST_OPS[phase] * len(wrapped_shapes(arch, job))
