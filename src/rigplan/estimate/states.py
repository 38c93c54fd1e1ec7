"""Model states per GPU: weights, gradients and optimizer states, with ZeRO/FSDP, TP, PP and EP.

Bytes per parameter (Rajbhandari et al. 2020, ZeRO, Sec. 3.1; EleutherAI "Transformer Math 101"):

    recipe        weights  grads  master  AdamW moments
    fp32             4       4      0        8
    bf16/fp16-mixed  2       2      4        8      -> 16 B/param ("K = 12")
    bf16-true        2       2      0        4      (moments kept in bf16, as torch AdamW does
                                                      for bf16 parameters)
    fp8              2+1     2      4        8      (TransformerEngine keeps an fp8 weight copy)

Optimizers: 8-bit AdamW (bitsandbytes, Dettmers et al. 2022) 2 B/param of moments plus one fp32
absmax per 256-value block; SGD none; SGD with momentum one buffer; Adafactor a factored second
moment (rows + columns per matrix, Shazeer & Stern 2018), about 4·2/hidden B/param.

Sharding: weights and the non-expert states are split by tp and by pipeline stage; routed experts
by ep·etp (etp defaults to tp, as Megatron-Core's expert_tensor_parallel_size). ZeRO-1 splits
optimizer states, ZeRO-2 also gradients, ZeRO-3 (FSDP) also weights, over the data-parallel group
dp·cp, and expert parameters over their expert-data-parallel group tp·cp·dp/(ep·etp)
(Megatron-Core MoE parallel folding; the distributed optimizer shards expert states over it).

LoRA (Hu et al. 2021): frozen base weights in the compute dtype, no gradients or optimizer states
for them; adapters A (r×d_in) and B (d_out×r) per target module are trained with the recipe's
bytes. Under mixed precision the autocast stacks keep the frozen base in fp32 with a bf16 copy (4 + 2
B/param); the fused (Megatron-Core / NeMo) stack keeps it in bf16, its block linears under fp8 as
Transformer Engine holds them (megatron_frozen_base_bytes). QLoRA (Dettmers et al. 2023): base linear
layers in NF4, 0.5 B/param plus one fp32 absmax
per 64 weights (0.0625 B/param), or with double quantization 8-bit absmax per 64 and one fp32
constant per 256 blocks (about 0.127 bits/param, Sec. 3 of the paper); embeddings, norms and the
LM head stay in bf16.

QLoRA through PEFT's prepare_model_for_kbit_training (kbit_fp32_upcast): the weights that are not 4-bit
(embeddings, LM head, norms) are cast to fp32, 4 B/param (peft/utils/other.py: "cast all non INT8
parameters to fp32").

Switches (estimate/framework_buffers.py): Megatron's fp32 main grads (main_grads_fp32, 4 B/param of
gradients), TransformerEngine's fp8 transpose cache (fp8_transpose_cache, +1 B/param), Megatron's
--fp8-param-gather (fp8_param_gather: the weights are fp8 tensors, no bf16 copy: -2 B/param), Megatron's
precision-aware optimizer with bf16 moments (bf16_moments: 4 B/param of moments instead of 8). Left out:
DeepSpeed's contiguous gradient buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.domain.stages import DEFAULT_SPLIT, DensePattern, rank_layer_counts
from rigplan.estimate import arrays as xp
from rigplan.estimate import linear_attention, muon, peft_experts
from rigplan.estimate.arrays import scalar_or_array as _out
from rigplan.estimate.fp8_inputs import quantized_bytes
from rigplan.estimate.params import (
    ParamCounts,
    adapted_attention_shapes,
    adapted_shapes,
    count_params,
    dense_mlp_linears,
    mlp_lora_shapes,
)

Num = Any
"""A float, or a numpy array of floats when many layouts are evaluated at once."""

NF4_BYTES_PER_PARAM = 0.5 + 4 / 64
NF4_DOUBLE_QUANT_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
BNB_8BIT_STATE_BYTES = 2 + 2 * 4 / 256


def nf4_bytes_per_param(job: Job) -> float:
    """Bytes per NF4 weight of a QLoRA base: with or without double quantization."""
    return NF4_DOUBLE_QUANT_BYTES_PER_PARAM if job.qlora_double_quant else NF4_BYTES_PER_PARAM


def fp8_copy_bytes_per_param(job: Job) -> float:
    """Bytes of the quantized copy Transformer Engine keeps of each of its linear weights under fp8: one layout,
    twice when it keeps a second (fp8_transpose_cache: per-tensor scaling on Hopper, or MXFP8's column-wise
    data), plus MXFP8's scale byte per 32 elements (Transformer Engine's weight-cache size, which its test checks
    against the allocations it measures: tests/pytorch/test_cpu_offloading.py _estimate_cached_weight_size, 2
    bytes per element for tensor scaling where non-TN fp8 GEMMs are unsupported, else 1; 2 x (1 + 1/32) for
    MXFP8; NVFP4 keeps row- and column-wise 4-bit data with a scale byte per 16 x 16 block, 2 x (0.5 + 1/256)).
    Only the transformer blocks' linears have one: embeddings, norms and Megatron's output layer (its own
    ColumnParallelLinear, not a Transformer Engine module) stay bf16."""
    return quantized_bytes(job, weight=True) * (2.0 if job.fp8_transpose_cache else 1.0)


def weight_bytes_per_param(job: Job) -> float:
    """Bytes per weight of a linear layer: the bf16 copy (none under Megatron's --fp8-param-gather) and, under
    fp8, the quantized copy (fp8_copy_bytes_per_param); the other weights keep the compute dtype."""
    if job.precision == "fp8":
        bf16_copy = 0.0 if job.fp8_param_gather else 2.0  # Megatron --fp8-param-gather: fp8 weights only
        return bf16_copy + fp8_copy_bytes_per_param(job)
    return 4.0 if job.precision == "fp32" else 2.0


def megatron_frozen_base_bytes(job: Job, local: Num, linear_local: Num) -> Num:
    """Bytes of a LoRA job's frozen base on the fused (Megatron-Core / NeMo) stack: the model is built in its
    params_dtype (bf16) and only trainable parameters get fp32 main weights, which the distributed optimizer
    creates for the parameters that require a gradient (Megatron-Core's DistributedOptimizer builds its shard
    groups from param.requires_grad); under fp8 the block linears are held as Transformer Engine holds them
    (weight_bytes_per_param: the bf16 copy unless fp8 params, and the quantized copy), the rest stays bf16.
    Where the base is kept in fp32 with autocast copies (Hugging Face Trainer) the caller's 4 + 2 B/param
    applies instead."""
    linear = linear_local if job.precision == "fp8" else 0.0 * linear_local
    return (local - linear) * float(job.compute_dtype_bytes) + linear * weight_bytes_per_param(job)


def grad_bytes_per_param(job: Job) -> float:
    return 4.0 if job.precision == "fp32" or job.main_grads_fp32 else 2.0


def master_bytes_per_param(job: Job) -> float:
    return 4.0 if job.precision in ("bf16-mixed", "fp16-mixed", "fp8") else 0.0


def optimizer_state_bytes_per_param(job: Job, arch: Architecture) -> float:
    """Optimizer moments per trainable parameter (master weights not included)."""
    moment = 2.0 if job.precision == "bf16-true" or job.bf16_moments else 4.0
    if job.optimizer in ("adamw", "paged-adamw"):
        return 2 * moment
    if job.optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        return BNB_8BIT_STATE_BYTES
    if job.optimizer == "sgd-momentum":
        return moment
    if job.optimizer == "adafactor":
        return 4 * 2 / arch.hidden
    if job.optimizer == "muon":  # one momentum per matrix parameter, AdamW's two on the rest (estimate.muon)
        share = muon.matrix_share(arch)
        return moment * share + 2 * moment * (1.0 - share)
    return 0.0


def lora_params_per_layer(arch: Architecture, job: Job) -> float:
    """Adapter parameters of one dense layer: r·(d_in + d_out) per targeted module (lora_layer_params)."""
    own, _ = lora_layer_params(arch, job, moe_layer=False)
    return own


def lora_layer_params(arch: Architecture, job: Job, *, moe_layer: bool) -> tuple[float, float]:
    """Adapter parameters of one layer: (those split like the dense weights, by tp; the routed experts', split like
    them, by ep·etp), r·(d_in + d_out) per targeted linear.

    On an MoE layer the MLP targets adapt every routed expert, each with its own A and B (peft's module LoRA on
    transformers 4's per-expert nn.Linear, torchtune's LoRAGroupedExperts, Megatron-Bridge's LoRA on grouped
    experts), and every shared expert; under peft's parameter adapters on transformers 5's fused gate_up_proj
    (estimate.peft_experts) gate and up share one adapter of r·(h + 2f). A dense layer's MLP targets adapt its MLP.
    In a hybrid model the mixer's adapters are the mean over its layers: the attention targets' on the full-attention
    layers, linear_attention.lora_linears' on the linear-attention ones; a dense layer's MLP adapters are counted
    per feed-forward block (Architecture.ffn_blocks_per_layer: Nemotron-H's mixer-only and double-MLP layers).
    """
    r = job.lora_rank
    attention = sum(r * (d_in + d_out) for d_in, d_out in adapted_attention_shapes(arch, job.lora_targets))
    column, row = linear_attention.job_lora_linears(arch, job)
    module_targets = peft_experts.module_mlp_targets(arch, job)  # the targets that reach nn.Linear MLPs
    mlp = 0.0 if moe_layer else sum(r * (d_in + d_out) for d_in, d_out in adapted_shapes(
        dense_mlp_linears(arch), module_targets)) * arch.ffn_blocks_per_layer
    own = linear_attention.blend(arch, attention, r * sum(d_in + d_out for d_in, d_out in column + row)) + mlp
    if not moe_layer or arch.moe is None:
        return own, 0
    moe = arch.moe
    shared = moe.num_shared_experts * sum(
        r * (d_in + d_out) for d_in, d_out in mlp_lora_shapes(arch, module_targets, arch.hidden, moe.shared_ffn))
    routed = (peft_experts.wrapped_shapes(arch, job) if peft_experts.applies(arch, job)
              else mlp_lora_shapes(arch, job.lora_targets, arch.expert_hidden, moe.expert_ffn))
    return own + shared, moe.num_experts * sum(r * (d_in + d_out) for d_in, d_out in routed)


def stage_lora_params(arch: Architecture, job: Job, *, layers: Num, dense_layers: Num, tp: Num = 1, ep: Num = 1,
                      etp: Num = 1) -> tuple[Num, Num]:
    """(adapter parameters split by tp, routed-expert adapter parameters split by ep·etp) of `layers` layers, of
    them `dense_layers` dense, on one GPU (lora_layer_params)."""
    dense, _ = lora_layer_params(arch, job, moe_layer=False)
    own, routed = lora_layer_params(arch, job, moe_layer=True)
    moe_layers = layers - dense_layers
    return (dense * dense_layers + own * moe_layers) / tp, routed * moe_layers / (ep * etp)


@dataclass(frozen=True, kw_only=True, slots=True)
class StageParams:
    """Parameters held by one pipeline rank before tp/ep/ZeRO division (arrays in batch mode)."""

    dense_weights: Num
    """Non-expert parameters (attention, dense MLP, router, shared experts, norms, embeddings)."""
    expert_weights: Num
    """Routed-expert parameters."""
    quantizable: Num
    """Linear-layer weights of the transformer blocks (what QLoRA stores in NF4)."""
    layers: Num
    dense_layers: Num


def first_dense_layers(arch: Architecture) -> DensePattern:
    """Which layers are dense (domain.stages.DensePattern): the leading count, or (leading, step) for
    interleaved dense and MoE layers; all of them for a dense model."""
    return arch.moe.dense_pattern() if arch.moe else arch.num_layers


def stage_layer_counts(arch: Architecture, layout: Any, rank: Num) -> tuple[Num, Num]:
    """(layers, dense layers) on pipeline rank `rank` under the layout's split (domain.stages)."""
    split = getattr(layout, "split", DEFAULT_SPLIT)
    return rank_layer_counts(split, arch.num_layers, first_dense_layers(arch), layout.pp, layout.vpp, rank)


def stage_params(arch: Architecture, counts: ParamCounts, layout: Any, rank: Num) -> StageParams:
    """Parameters on pipeline rank `rank` (0 holds the embedding, pp - 1 the final norm and head).

    Degrees and rank may be numpy arrays (the planner evaluates many layouts at once).
    """
    layers, dense_layers = stage_layer_counts(arch, layout, rank)
    moe_layers = layers - dense_layers
    dense = counts.dense_layer_mean * dense_layers
    expert: Num = 0.0
    quantizable = counts.dense_matmul_mean * dense_layers
    if counts.moe_layer is not None:
        dense = dense + (counts.moe_layer.total - counts.moe_layer.experts) * moe_layers
        expert = counts.moe_layer.experts * moe_layers
        quantizable = quantizable + (counts.moe_layer.attention + counts.moe_layer.mlp_dense) * moe_layers + expert
    rank_a = xp.asarray(rank)
    last = rank_a == xp.asarray(layout.pp) - 1
    dense = dense + xp.where(rank_a == 0, counts.embedding, 0)
    # A tied head is a second copy on the last stage when the pipeline separates them.
    head = counts.lm_head or xp.where(xp.asarray(layout.pp) > 1, arch.vocab * arch.hidden, 0)
    dense = dense + xp.where(last, counts.final_norm + head, 0)
    mtp = arch.moe.mtp_layers if arch.moe is not None else 0
    if mtp and counts.moe_layer is not None:
        # DeepSeek-V3 multi-token prediction (arXiv 2412.19437, Sec. 2.2), trained on the last stage: per
        # module an MoE decoder layer, the 2h -> h projection and two input norms (and its output norm);
        # the output head is the model's, and the embedding is a second copy there when pp > 1 (as
        # Megatron-Core keeps it for tied embeddings across stages).
        module = (counts.moe_layer.total - counts.moe_layer.experts) + 2 * arch.hidden * arch.hidden \
            + 3 * counts.final_norm
        dense = dense + xp.where(last, mtp * module + xp.where(xp.asarray(layout.pp) > 1, counts.embedding, 0), 0)
        expert = expert + xp.where(last, mtp * counts.moe_layer.experts, 0)
    return StageParams(dense_weights=_out(dense), expert_weights=_out(expert), quantizable=_out(quantizable),
                       layers=_out(layers), dense_layers=_out(dense_layers))



@dataclass(frozen=True, kw_only=True, slots=True)
class ModelStates:
    """Bytes of model states on one GPU, and what was moved to host memory."""

    weights_bytes: Num
    gradients_bytes: Num
    optimizer_bytes: Num
    host_bytes: Num
    trainable_params: Num
    """Trainable parameters held (after tp/pp/ep division, before ZeRO sharding)."""
    local_params: Num
    """All parameters held by this GPU (after tp/pp/ep division, before ZeRO sharding)."""
    largest_unit_params: Num
    """Largest all-gather unit (a layer or the embedding/head) for ZeRO-3 buffers."""
    unsharded_weight_bytes: Num
    """Weights of this GPU's share before ZeRO-3 sharding, as stored (NF4 for QLoRA bases)."""


def expert_tp_of(layout: Any) -> Num:
    """The expert-tensor-parallel degree of a layout (or layout arrays): etp, or tp where etp is 0."""
    etp = getattr(layout, "etp", 0)
    return xp.where(xp.asarray(etp) > 0, etp, layout.tp)


def model_states(arch: Architecture, job: Job, layout: Any, rank: Num) -> ModelStates:
    """Weights, gradients and optimizer bytes on one GPU of pipeline rank `rank` (layout degrees may
    be numpy arrays)."""
    counts = count_params(arch)
    stage = stage_params(arch, counts, layout, rank)
    tp, ep, etp = layout.tp, layout.ep, expert_tp_of(layout)
    dense_local = stage.dense_weights / tp
    expert_local = stage.expert_weights / (ep * etp)
    local = dense_local + expert_local
    dp_group = xp.asarray(layout.dp * layout.cp)
    expert_group = xp.maximum(xp.asarray(tp * layout.cp * layout.dp) // (ep * etp), 1)

    def shard(dense_part: Num, expert_part: Num, sharded: Any) -> Num:
        return xp.where(sharded, dense_part / dp_group + expert_part / expert_group, dense_part + expert_part)

    zero = xp.asarray(layout.zero)
    host: Num = 0.0
    if job.is_peft:
        own_adapters, routed_adapters = stage_lora_params(arch, job, layers=stage.layers,
                                                          dense_layers=stage.dense_layers, tp=tp, ep=ep, etp=etp)
        adapters = own_adapters + routed_adapters
        quant_local = (stage.quantizable - stage.expert_weights) / tp + (
            0.0 if peft_experts.experts_left_unquantized(arch, job) else stage.expert_weights / (ep * etp))
        # Mixed precision keeps the frozen base in fp32 and autocast holds a bf16 copy of each weight
        # it multiplies until backward has used it: 4 + 2 B/param (bf16-true: 2).
        base_per_param = 4.0 + 2.0 if master_bytes_per_param(job) else float(job.compute_dtype_bytes)
        if job.kernels == "fused" and job.method == "lora":
            base_bytes = megatron_frozen_base_bytes(job, local, quant_local)
        else:
            base_bytes = local * base_per_param
        if job.method == "qlora":
            nf4 = nf4_bytes_per_param(job)
            base_bytes -= quant_local * (base_per_param - nf4)
            if job.kbit_fp32_upcast and base_per_param < 4:
                # PEFT prepare_model_for_kbit_training casts every weight that is not Params4bit to fp32.
                base_bytes += (local - quant_local) * (4.0 - base_per_param)
        unsharded = base_bytes + adapters * weight_bytes_per_param(job)
        base_bytes = xp.where(zero == 3, base_bytes / dp_group, base_bytes)
        trainable = adapters
        weights = base_bytes + shard(own_adapters, routed_adapters, zero == 3) * weight_bytes_per_param(job)
        grads = shard(own_adapters, routed_adapters, zero >= 2) * grad_bytes_per_param(job)
        per_param_opt = master_bytes_per_param(job) + optimizer_state_bytes_per_param(job, arch)
        optimizer = shard(own_adapters, routed_adapters, zero >= 1) * per_param_opt
        trainable_expert = routed_adapters
    else:
        trainable = local
        trainable_expert = expert_local
        # under fp8 only the blocks' linears carry the quantized copy; the rest (embeddings, head, norms) is bf16
        linear_dense = xp.maximum(stage.quantizable - stage.expert_weights, 0.0) / tp if job.precision == "fp8" \
            else dense_local
        plain = float(job.compute_dtype_bytes)
        # Job.bf16_experts: the routed experts keep no quantized copy under fp8
        expert_bytes = plain if job.bf16_experts else weight_bytes_per_param(job)
        unsharded = ((dense_local - linear_dense) * plain + linear_dense * weight_bytes_per_param(job)
                     + expert_local * expert_bytes)
        weights = (shard(dense_local - linear_dense, 0.0, zero == 3) * plain
                   + shard(linear_dense, 0.0, zero == 3) * weight_bytes_per_param(job)
                   + shard(0.0 * linear_dense, expert_local, zero == 3) * expert_bytes)
        grads = shard(dense_local, expert_local, zero >= 2) * grad_bytes_per_param(job)
        per_param_opt = master_bytes_per_param(job) + optimizer_state_bytes_per_param(job, arch)
        optimizer = shard(dense_local, expert_local, zero >= 1) * per_param_opt
    if job.optimizer_in_backward:
        largest_tensor = xp.maximum(arch.vocab * arch.hidden / tp, (arch.ffn * arch.hidden) / tp)
        largest_trainable = xp.minimum(largest_tensor, trainable)
        grads = xp.minimum(grads, largest_trainable * grad_bytes_per_param(job))
    if job.optimizer.startswith("paged-"):
        # bitsandbytes paged optimizers keep their states in CUDA managed memory, outside the PyTorch
        # allocator, and page them to host memory under pressure: they never cause an OOM.
        host = host + optimizer
        optimizer = 0.0 * optimizer
    if job.offload in ("optimizer", "all"):
        host = host + optimizer + shard(trainable - trainable_expert, trainable_expert, zero >= 2) * 4
        optimizer = 0.0 * optimizer
    if job.offload == "all":
        host = host + weights + grads
        weights = 0.0 * weights
        grads = 0.0 * grads
    layer_units = counts.largest_dense_layer / tp
    if counts.moe_layer is not None:
        layer_units = xp.maximum(layer_units, (counts.moe_layer.total - counts.moe_layer.experts) / tp
                                 + counts.moe_layer.experts / (ep * etp))
    head_unit = max(counts.embedding, counts.lm_head) / tp
    return ModelStates(
        weights_bytes=_out(weights), gradients_bytes=_out(grads), optimizer_bytes=_out(optimizer),
        host_bytes=_out(host), trainable_params=_out(trainable), local_params=_out(local),
        largest_unit_params=_out(xp.maximum(layer_units, head_unit)), unsharded_weight_bytes=_out(unsharded),
    )
