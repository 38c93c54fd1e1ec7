"""Mixture-of-experts as it trains: routed tokens per expert, expert GEMM shapes, router and
permutation traffic, and the expert all-to-all on the links it crosses.

Layout (Megatron-Core MoE parallel folding, arXiv 2504.14960, Sec. 3): the GPUs of one pipeline
stage, tp·cp·dp of them, run the attention layers as tp x cp x dp and the expert layers as
etp x ep x expert-dp, ranks ordered etp fastest, then ep. A micro-batch of b sequences of s tokens
leaves T = b·s/cp tokens on each GPU of a cp group; with sequence parallelism (required by
Megatron-Core for MoE with tp > 1) each GPU routes T/tp of them and sends k copies of each to the
experts chosen.

Per GPU, balanced routing gives each local expert (E/ep experts of width f/etp per GPU)

    m = (T/tp)·k·ep·etp / E     token copies per micro-batch,

the M dimension of its grouped GEMM; the expert GEMMs run at the dense shape model's efficiency
of their smallest dimension min(h, f/etp, m·load) (estimate.step). `load` is the busiest rank's
share over the mean: 1 with forced balancing (benchmarks), DEFAULT_IMBALANCE for dropless routing
with a load-balancing loss, at most the capacity factor when tokens over capacity are dropped.
The busiest rank sets the pace: expert GEMMs, permutation and the all-to-all of every rank wait
for it, so their time is multiplied by `load`.

Each expert GEMM also moves its expert's weights through HBM once per micro-batch, however few tokens it
computes (local_expert_params, expert_weight_bytes): the forward, recompute and data-gradient GEMMs read
them, and the weight-gradient GEMM reads and writes the fp32 main grad it accumulates into. A GEMM takes
the longer of its FLOPs at the shape model's efficiency and these bytes at the HBM bandwidth (a roofline,
as for any GEMM; estimate.stage_time). Per parameter that is 2·m FLOPs against 8 bytes for the weight
gradient, so it binds below m = 4·rate/bandwidth tokens per expert: about 1,180 on an H100 in bf16, 2,250
on a B200 in fp8, where EP 8 with 16-32 experts per GPU and one sequence per micro-batch gives 256-512.

All-to-all per MoE layer and micro-batch: dispatch and combine forward, their gradients backward
(and one more forward pair in each layer that full recomputation runs again). Each carries (T/tp)·k·h elements per rank;
dispatch in fp8 for fp8 recipes (DeepSeek-V3 Sec. 3.3.2 and DeepEP), everything else in bf16.
The EP group's members are etp ranks apart, so ep·etp consecutive GPUs per scale-up domain keep it
on NVLink; beyond, the (ep - k)/ep share of each rank's copies leaves over its NIC
(comm.hierarchical_all_to_all_s, with its per-peer latency at small messages). NCCL's all-to-all
(Megatron-Core's alltoall dispatcher) permutes first and sends every copy; DeepEP's normal kernels and
HybridEP (the flex dispatcher, `moe_dispatcher` 'deepep') send a token to each rank that holds any of
its experts once (DeepEP's get_dispatch_layout marks is_token_in_rank per token and rank; the receiver
expands it to its local experts, and combine sums them before sending one token back), and across the
scale-out network once per destination domain, forwarding it over NVLink inside it: for uniform
routing N·(1 - (1 - 1/N)^k)/k of the k copies move, N being the EP ranks on NVLink and the domains
over the NICs (deduplicated_copy_share; 0.66 for EP 8 and top-8).
Megatron-Core's allgather dispatcher (`moe_dispatcher` 'allgather', Megatron-LM's default) sends no routed copies:
it all-gathers every token, its routing map and probabilities over the etp·ep ranks that together hold the experts,
each rank permutes out the copies for its own experts, and the unpermuted output of all the gathered tokens is
reduce-scattered back (allgather_dispatch_s).
With a2a_overlap (Megatron-Core's 1F1B EP A2A overlap, or DualPipe) the all-to-all hides behind the other
micro-batch's computation, which loses the SMs the communication kernels take (A2A_OVERLAP_SM_SHARE).

A group-limited router (DeepSeek's node-limited routing: each token's experts in at most 4 of 8 groups, one
group a node at EP 64 on 8-GPU nodes) reaches fewer destinations than uniform picks: 4.0 of 8 nodes for
DeepSeek-V3 against 5.25 (expected_destinations).

Left out: token dropping's effect on the loss, expert placement that follows the load, and uneven expert
counts per rank.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture, MoE
from rigplan.estimate import arrays as xp
from rigplan.estimate import comm, fp8_inputs
from rigplan.estimate.moe_allgather import allgather_dispatch_s

Num = Any

DEFAULT_IMBALANCE = 1.5
"""Busiest expert-parallel rank's load over the mean for dropless routing with a load-balancing
loss. Source: Megatron-MoE-ModelZoo best_practice/Qwen3 (yanring/Megatron-MoE-ModelZoo, 'Long
Context' table), Qwen3-235B-A22B on 256 H100 (TP4 PP8 VP4 EP8, DeepEP, --recompute-modules layernorm moe),
forced balance against dropless: 295 vs 237 TFLOP/s at 16K tokens (dropless at 0.803 of the forced run) and
389 vs 357 at 128K (0.918). Only the load-paced part of a step stretches (expert GEMMs, permutation,
all-to-all). Estimated as the recipe runs (its rows in the MoE suite, with Job.recompute_moe), a load of
1.5 reproduces both ratios: 0.799 at 16K and 0.916 at 128K (1.6 gives 0.768 and 0.901, 1.4 gives 0.832 and
0.932; tests/unit/test_moe.py::test_default_imbalance_against_the_modelzoo_dropless_rows). An earlier
stand-in without the MoE recompute (PP 2, selective recompute) put it at 1.6-1.8 at 16K, with the longer
rows implying more; the recompute's expert work is load-paced too, which reconciles the two lengths."""
A2A_OVERLAP_SM_SHARE = 20.0 / 132.0
"""Share of the SMs the overlapped all-to-all kernels take from computation: DeepSeek-V3 runs
its dispatch and combine on 20 of the H800's 132 SMs (arXiv 2412.19437, Sec. 3.2.2)."""
ROUTER_BYTES_PER_EXPERT = 4.0 * 5.0
"""Router traffic per token and expert, forward: fp32 logits written, read and written by the
softmax/sigmoid, read by top-k and by the auxiliary loss (5 passes of 4 bytes; Megatron-Core
keeps router logits in fp32 with --moe-router-dtype fp32)."""


def load_factor(job: Job) -> float:
    """Busiest rank's routed tokens over the mean: the job's imbalance (1 = forced balance) or
    DEFAULT_IMBALANCE, capped by the capacity factor when tokens over capacity are dropped; exactly the
    capacity factor when inputs are padded to capacity (every expert then computes and receives
    capacity tokens, Megatron-Core's drop-and-pad path)."""
    if job.experts_padded:
        return float(job.capacity_factor)
    load = job.moe_imbalance or DEFAULT_IMBALANCE
    if job.capacity_factor:
        load = min(load, job.capacity_factor)
    return float(load)


@functools.lru_cache(maxsize=256)
def single_rank_job(job: Job) -> Job:
    """The job as it runs where one expert rank holds every expert (ep = 1): the rank receives all k copies of
    every token, the mean load, whatever the routing imbalance between experts; tokens over an expert's capacity
    are still dropped, and padding to capacity still pads. load_factor of it: 1, min(1, capacity factor), or the
    capacity factor when padded."""
    if job.experts_padded:
        return job
    return replace(job, moe_imbalance=1.0)


def by_expert_ranks(ep: Num, job: Job, value: Callable[[Job], Any]) -> Any:
    """value(job) where the experts are spread over ep > 1 ranks, value(single_rank_job(job)) where ep = 1
    (arrays of ep allowed; a tuple value is chosen element by element)."""
    if isinstance(ep, int | float):  # one layout: no numpy (rigplan memory stays free of it)
        return value(job) if ep > 1 else value(single_rank_job(job))
    ep_a = xp.asarray(ep)
    if not xp.numpy().any(ep_a <= 1):
        return value(job)
    single = value(single_rank_job(job))
    if xp.numpy().all(ep_a <= 1):
        return single
    spread = value(job)
    if isinstance(spread, tuple):
        return tuple(xp.where(ep_a > 1, a, b) for a, b in zip(spread, single, strict=True))
    return xp.where(ep_a > 1, spread, single)


def dispatcher(job: Job) -> str:
    """The token dispatcher that runs: the job's, or DeepEP with the 1F1B all-to-all overlap (Megatron-Core
    overlaps EP communication with the flex dispatcher) and NCCL's all-to-all otherwise."""
    return job.moe_dispatcher or ("deepep" if job.a2a_overlap else "alltoall")


FLEX_DISPATCHERS = {"deepep": "DeepEP", "hybridep": "HybridEP"}
"""Megatron-Core's flex dispatcher backends, option value to name: DeepEP's normal kernels and NVIDIA's HybridEP,
which send one copy of a token to each rank holding any of its experts and cross each destination node once (timed
alike)."""


def flex_dispatched(job: Job) -> bool:
    """Whether routed tokens go through a flex-dispatcher backend (FLEX_DISPATCHERS), not NCCL's all-to-all."""
    return dispatcher(job) in FLEX_DISPATCHERS


def host_syncs(job: Job) -> bool:
    """Whether the host waits for the routing result once per MoE layer: dropless and capacity-capped
    routing need the tokens per expert on the host (all-to-all splits, grouped-GEMM sizes), so
    Megatron-Core's dispatchers copy them device-to-host and synchronise; padded capacity has static
    shapes (token_dispatcher.py: drop_and_pad sets no cuda_sync_point), and so does the static-shape MoE of
    Job.moe_rank_capacity_factor (fixed HybridEP receive buffers, split sizes kept on the device)."""
    return not job.experts_padded and not static_expert_shapes(job)


def static_expert_shapes(job: Job) -> bool:
    """Whether Megatron-Core's static-shape MoE runs the experts (Job.moe_rank_capacity_factor): fixed receive
    buffers, one grouped GEMM a linear through Transformer Engine's operation fuser, no host sync."""
    return job.moe_rank_capacity_factor is not None


def tokens_per_local_expert(arch: Architecture, tokens: Num, tp: Num, ep: Num, etp: Num) -> Num:
    """Balanced token copies per local expert and micro-batch: (T/tp)·k·ep·etp/E, T = b·s/cp."""
    if arch.moe is None:
        return 0.0 * xp.asarray(tokens)
    mo = arch.moe
    return xp.asarray(tokens) / xp.asarray(tp) * mo.top_k * xp.asarray(ep) * xp.asarray(etp) / mo.num_experts


def expert_gemm_dims(arch: Architecture, tokens: Num, tp: Num, ep: Num, etp: Num, load: float) -> Num:
    """Smallest dimension of the busiest rank's expert GEMMs: min(h, f/etp, m·load), m >= 1 (h: a latent MoE's
    latent width)."""
    if arch.moe is None:
        return xp.asarray(float(arch.hidden))
    m = tokens_per_local_expert(arch, tokens, tp, ep, etp) * load
    width = arch.moe.expert_ffn / xp.asfloat(etp)
    return xp.minimum(xp.minimum(float(arch.expert_hidden), width), xp.maximum(m, 1.0))


def local_expert_params(arch: Architecture, ep: Num, etp: Num) -> Num:
    """Routed-expert weights one GPU holds per MoE layer: (E/ep) experts of (3 gated | 2)·h·f/etp."""
    if arch.moe is None:
        return 0.0 * xp.asarray(ep)
    matrices = 3.0 if arch.mlp == "gated" else 2.0
    per_expert = matrices * arch.expert_hidden * arch.moe.expert_ffn
    return arch.moe.num_experts / xp.asfloat(ep) * per_expert / xp.asfloat(etp)


def expert_weight_bytes(job: Job, fp8: bool) -> tuple[float, float]:
    """HBM bytes per local expert parameter and micro-batch: (read by one GEMM pass over the weights, moved by
    the weight-gradient GEMM). A forward, a recompute and a data-gradient GEMM each read the weights once (the
    quantized copies under an fp8 or NVFP4 recipe, fp8_inputs.quantized_bytes, else the compute dtype). The
    weight-gradient GEMM with Megatron-Core's gradient-accumulation fusion (TE GroupedLinear
    fuse_wgrad_accumulation, on with fp32 main grads) adds its product into the fp32 main grad in its epilogue,
    reading and writing it: 8 B; otherwise it writes its output in the compute dtype."""
    read = fp8_inputs.quantized_bytes(job, weight=True) if fp8 else float(job.compute_dtype_bytes)
    grads = 8.0 if job.main_grads_fp32 else float(job.compute_dtype_bytes)
    return read, grads


def act_recomputed(job: Job) -> bool:
    """Whether the routed experts' activation output is freed and recomputed (Megatron --recompute-modules
    moe_act, Job.recompute_moe_act): beside recompute 'none' or 'selective'; full and op recompute keep their
    own saved sets and already rerun the activation."""
    return job.recompute_moe_act and job.recompute in ("none", "selective")


def activation_bytes_per_token(arch: Architecture, job: Job) -> float:
    """HBM traffic of one pass of the routed experts' activation per token on the busiest rank (before tp):
    load·k copies, each reading fc1's output and writing the activation (gated: read 2·f_e, write f_e; plain:
    read and write f_e), in the compute dtype. moe_act recompute runs it once more in backward (one fused
    kernel, as the forward's; TEGroupedMLP in megatron/core/transformer/moe/experts.py), and with it the clamp
    of a clamped GLU on Megatron-Core's expert path (megatron_expert_path), which sits inside the checkpointed
    function (TEGroupedMLP.bias_act_func -> weighted_bias_quick_geglu_impl): CLAMPED_GLU_TRAFFIC's forward
    8·f_e more per copy. The fc2 bias loop runs after fc2, outside the checkpoint, and is not repeated."""
    if arch.moe is None:
        return 0.0
    per_copy = (3.0 if arch.mlp == "gated" else 2.0) * arch.moe.expert_ffn
    if clamped_glu(arch) and megatron_expert_path(arch, job):
        per_copy += CLAMPED_GLU_TRAFFIC[0] * arch.moe.expert_ffn
    return load_factor(job) * arch.moe.top_k * per_copy * float(job.compute_dtype_bytes)


CLAMPED_GLU_TRAFFIC = (8.0, 10.0)
"""(forward, backward) HBM traffic per routed copy, in f_e elements, of the clamp Megatron-Core puts before
a clamped GLU (weighted_bias_quick_geglu_impl, megatron/core/fusions/fused_bias_geglu.py @1fb2a0c): outside
the jit-fused activation it chunks fc1's output, clamps the gate half from above and the linear half both
ways (read f_e, write f_e each) and concatenates them back (read 2f_e, write 2f_e): 8. Backward: each clamp's
gradient reads the incoming gradient and the input and writes f_e (3 each) and the chunk's backward
concatenates the two halves (read 2f_e, write 2f_e): 10."""
EXPERT_BIAS_LOOP_TRAFFIC = (6.0, 6.0)
"""(forward, backward) HBM traffic per routed copy, in h elements, of the fc2 bias of biased experts in
Megatron-Core's TEGroupedMLP: fc2 runs with skip_bias_add and the bias is added per local expert in a
Python loop, torch.cat([t + b * p for t, b, p in zip(split(out), biases, split(probs))]): b·p writes h,
the add reads 2h and writes h, the cat reads and writes h: 6. Backward: the bias gradient (g·p summed over
the expert's tokens) and the probability gradient (g·b summed over h) each read g, write a product and
reduce it: 6."""
EAGER_CLAMPED_GLU_TRAFFIC = (13.0, 32.0)
"""(forward, backward) HBM traffic per routed copy, in f_e elements, that an eager clamped GLU moves beyond the
plain eager SwiGLU (elementwise.EAGER_GATED_ACT_TRAFFIC: 5 forward, 10 backward), as torchtitan's gpt-oss experts
run it (torchtitan/models/gpt_oss/model/moe.py @ 09e93ca, swiglu): the gate and linear halves are strided views of
fc1's output, so each clamp reads 2f_e and writes f_e (3 each), then alpha·x, sigmoid, x·sigmoid, linear + 1 and
the product (2, 2, 3, 2, 3): 18 against 5. Backward, op by op: the product's two gradients (6), x·sigmoid's (6),
sigmoid's (3), alpha's (2), the sum of the gate's two gradients (3), the two clamps' (read g, the strided input
and write: 4 each) and the two slices' (a zeroed 2f_e gradient each, the strided write into it and their sum: 14):
42 against 10."""
EAGER_EXPERT_BIAS_TRAFFIC = ((8.0, 2.0), (4.0, 1.0))
"""((forward, backward) of fc1's bias in f_e elements, (forward, backward) of fc2's in h) per routed copy, as
torchtitan's gpt-oss experts add them after the grouped GEMMs (_run_experts_grouped_mm): the bias repeated over each
expert's tokens is materialised (repeat_interleave: writes 2f_e, h) and added (reads twice that, writes it once):
8 f_e and 4 h; backward, the repeat's gradient sums each expert's rows (reads 2f_e, h)."""
CLAMPED_GLU_HOST_OPS = (5.0, 4.0)
"""Host ops of that clamp per MoE layer, (forward, backward): chunk, two clamps, cat and the GLU's offset made a
device tensor; the two clamps' gradients, the chunk's and the cat's."""
EXPERT_BIAS_LOOP_HOST_OPS = (2.0, 4.0)
"""Host ops of the fc2 bias loop per local expert, (forward, backward): a multiply and an add; two products and
two sums (its splits and cat are a few more per layer, left out)."""


def megatron_expert_path(arch: Architecture, job: Job) -> bool:
    """Whether the routed experts run Megatron-Core's TEGroupedMLP element by element around the grouped GEMMs
    with a clamped GLU or biased experts (gpt-oss): the fused stack ('fused' kernels) with Job.moe_expert_module
    'megatron', outside Transformer Engine's operation fuser (Job.moe_fused_grouped_mlp, whose GEMM epilogues
    hold the clamp, the bias and the activation). The static-shape MoE (static_expert_shapes) and a full-iteration
    CUDA graph both imply the fuser: TEGroupedMLP reads tokens_per_expert.tolist() on the host, which a graph cannot
    hold, and Megatron-Core's static-shape MoE (moe_expert_rank_capacity_factor) requires
    use_transformer_engine_op_fuser."""
    if (arch.moe is None or job.kernels != "fused" or job.moe_fused_grouped_mlp or static_expert_shapes(job)
            or job.moe_expert_module != "megatron" or job.cuda_graphs == "full"):
        return False
    return _biased_or_clamped(arch)


def eager_expert_path(arch: Architecture, job: Job) -> bool:
    """Whether clamped or biased experts (gpt-oss) run op by op in plain PyTorch: the eager stack (torchtitan's
    modules, 'eager' kernels) without torch.compile, whose Inductor fuses the activation and the bias adds."""
    if arch.moe is None or job.kernels != "eager" or job.compile:
        return False
    return _biased_or_clamped(arch)


def _biased_or_clamped(arch: Architecture) -> bool:
    return arch.moe is not None and (arch.moe.expert_bias or arch.moe.expert_act_clamp > 0.0)


def expert_path_bytes_per_token(arch: Architecture, job: Job) -> tuple[float, float]:
    """(forward, backward) HBM bytes per token of one MoE layer's expert clamp and biases beyond a plain GLU, on the
    busiest rank before tp, in the compute dtype, for load·k routed copies (0 for other experts):
    - Megatron-Core's path (megatron_expert_path): CLAMPED_GLU_TRAFFIC f_e elements (clamped gated experts) and
      EXPERT_BIAS_LOOP_TRAFFIC h elements (biased experts). Left out: the host-to-device copy of the GLU's linear
      offset (torch.tensor on the device each forward), a stream synchronisation that the dispatcher's own per-layer
      sync mostly covers;
    - the eager path (eager_expert_path): EAGER_CLAMPED_GLU_TRAFFIC f_e and EAGER_EXPERT_BIAS_TRAFFIC (fc1's in f_e,
      fc2's in h). Left out: the host syncs of its int(offsets[-1]) and tensor-count repeat_interleave, and the
      extra tensors the chain saves for backward (none under full recompute, as the suite's eager runs use)."""
    if arch.moe is None:
        return 0.0, 0.0
    copies = load_factor(job) * arch.moe.top_k * float(job.compute_dtype_bytes)
    f_e = float(arch.moe.expert_ffn) if clamped_glu(arch) else 0.0
    h = float(arch.expert_hidden) if arch.moe.expert_bias else 0.0
    if megatron_expert_path(arch, job):
        return (copies * (CLAMPED_GLU_TRAFFIC[0] * f_e + EXPERT_BIAS_LOOP_TRAFFIC[0] * h),
                copies * (CLAMPED_GLU_TRAFFIC[1] * f_e + EXPERT_BIAS_LOOP_TRAFFIC[1] * h))
    if eager_expert_path(arch, job):
        fc1_bias = float(arch.moe.expert_ffn) if arch.moe.expert_bias else 0.0
        (fc1_f, fc1_b), (fc2_f, fc2_b) = EAGER_EXPERT_BIAS_TRAFFIC
        return (copies * (EAGER_CLAMPED_GLU_TRAFFIC[0] * f_e + fc1_f * fc1_bias + fc2_f * h),
                copies * (EAGER_CLAMPED_GLU_TRAFFIC[1] * f_e + fc1_b * fc1_bias + fc2_b * h))
    return 0.0, 0.0


def clamped_glu(arch: Architecture) -> bool:
    """Whether the experts are gated with a clamped activation (gpt-oss: expert_act_clamp > 0)."""
    return arch.moe is not None and arch.mlp == "gated" and arch.moe.expert_act_clamp > 0.0


def router_bytes_per_token(arch: Architecture) -> float:
    """HBM traffic of the router's score function, top-k and auxiliary loss per token, forward."""
    return 0.0 if arch.moe is None else ROUTER_BYTES_PER_EXPERT * arch.moe.num_experts


DISPATCH_EINSUMS = (2.0, 3.0)
"""Einsums of the einsum dispatcher (GShard's one-hot dispatch, arXiv 2006.16668 Sec. 3) per MoE layer, (forward,
backward), counted from MaxText's RoutedMoE.dense_matmul with a capacity factor in training (src/MaxText/layers/moe.py,
2025): forward the dispatch 'BSM,BSEC -> EBCM' and the combine 'EBCM,BSEC -> BSM'; backward the dispatch's input
gradient (its mask is boolean and takes none) and the combine's two, for the expert outputs and for the routing
weights its mask carries. A recomputed layer runs the forward pair again."""


def capacity_slots(arch: Architecture, job: Job, shard: Num = 1.0) -> Num:
    """E·C, the capacity slots of one gate call on a rank, whose S tokens are one sequence's on that rank (seq_len /
    shard; gate_shard): C = max(ceil(S·k/E)·cf, cf) truncated to an integer, as MaxText's generate_masks sizes
    expert_capacity_per_batch per sequence and DeepSpeed-style top-2 gates (ceil(S/E·2·cf)) size theirs over the
    tokens they see (0 for a dense model or without a capacity factor). A gate over a micro-batch of b > 1
    sequences (DeepSpeed) has b times the slots: left out."""
    if arch.moe is None or not job.capacity_factor:
        return 0.0 * xp.asfloat(shard)
    mo = arch.moe
    tokens = job.seq_len / xp.asfloat(shard)
    per_expert = xp.floor(xp.maximum(xp.ceil(tokens * mo.top_k / mo.num_experts) * job.capacity_factor,
                                     job.capacity_factor))
    return mo.num_experts * per_expert


def gate_shard(tp: Num, cp: Num, sequence_parallel: bool) -> Num:
    """How many ways one sequence's tokens are split before the router sees them: context parallelism, and tensor
    parallelism under sequence parallelism (the MoE block takes the sequence-parallel shard)."""
    return xp.asfloat(cp) * (xp.asfloat(tp) if sequence_parallel else 1.0)


def dispatch_einsum_flop_per_token(arch: Architecture, job: Job, shard: Num = 1.0) -> Num:
    """FLOPs per token of one dispatch or combine einsum (DISPATCH_EINSUMS) under the einsum dispatcher, 0 under any
    other: a token's row of the [S, E, C] one-hot mask meets its whole hidden vector at every slot, 2·E·C·h, so the
    cost per token grows with the tokens a gate sees (E·C ≈ S·k·cf, capacity_slots). XLA and torch run these as
    dense (batched) GEMMs and skip none of the mask's zeros. DeepSeek-V3 at 4,096 tokens and capacity factor 1:
    0.94 GFLOP a token for the forward pair of each MoE layer, beside 0.70 for its routed experts. These FLOPs are
    work the model's count leaves out (MFU excludes them). Left out: the top-k, cumsum and one-hot passes that build
    the masks (their memory: dispatch_mask_bytes_per_token)."""
    if arch.moe is None or dispatcher(job) != "einsum":
        return 0.0 * xp.asfloat(shard)
    return 2.0 * capacity_slots(arch, job, shard) * arch.expert_hidden


def dispatch_mask_bytes_per_token(arch: Architecture, job: Job, shard: Num = 1.0) -> Num:
    """Activation bytes per token of the einsum dispatcher's masks, 0 under any other: each token's row of the
    boolean dispatch mask (1 byte a slot) and of the combine mask in the compute dtype (the routing weights), E·C
    slots each (capacity_slots), which the dispatch and combine einsums keep for their backward (MaxText
    dense_matmul's dispatch_mask and combine_mask, [S, E, C] per sequence). DeepSeek-V3 at 4,096 tokens and
    capacity factor 1: 96 KiB a token and MoE layer."""
    if arch.moe is None or dispatcher(job) != "einsum":
        return 0.0 * xp.asfloat(shard)
    return (1.0 + job.compute_dtype_bytes) * capacity_slots(arch, job, shard)


def permute_bytes_per_token(arch: Architecture, job: Job, ep: Num, etp: Num = 1) -> Num:
    """HBM bytes of one MoE layer's token permutation per token and pass (forward; backward moves as many), on
    the busiest expert rank before tensor parallelism (array-friendly in ep).

    In units of h elements of the compute dtype, k the top-k and `load` the busiest rank's share (load_factor):
    - the global permute of Megatron-Core's AlltoAll dispatcher (and of the all-to-all paths of torchtitan and
      NeMo AutoModel) gathers k copies of each token in expert order before the dispatch (read k, write k) and
      the unpermute sums them back after the combine (read k, write 1): 3k + 1, on the sender's own tokens;
    - with ep > 1 the AlltoAll dispatcher sorts the received copies by local expert after the dispatch and
      back before the combine (sort_chunks_by_idxs; read and write k each way): 4k·load;
    - DeepEP and HybridEP (the flex dispatcher) fuse the global permute into the communication kernels and
      leave a local permute on the receiver ("Optimizing DeepSeek-V3 Training Performance on NVIDIA GB200
      NVL72", Megatron-LM docs/discussions, Sec. 2.1.1): it reads each token once per rank that holds one of
      its experts (deduplicated_copy_share of k) and writes its k copies, and the unpermute the reverse:
      2k·load·(1 + share).
    - the allgather dispatcher permutes the copies for its own experts out of all n = ep·etp ranks' gathered
      tokens, etp·k·load a token of its own (read and write each), and unpermutes them into a buffer of every
      gathered token (read the copies, write n rows) for the reduce-scatter: 3·etp·k·load + n (3k + 1 on one
      rank, as the global permute).
    The backward of a row gather is the scatter-add of the same rows and that of the sum a broadcast, so each
    pass moves the forward's bytes once (the routing probabilities are applied in the expert activation, not
    in the unpermute: estimate.activations), not the twice of an element-wise op's backward."""
    if arch.moe is None:
        return 0.0 * xp.asfloat(ep)
    k = float(arch.moe.top_k)
    ep_a = xp.asfloat(ep)
    load = by_expert_ranks(ep, job, load_factor)
    if dispatcher(job) == "allgather":
        etp_a = xp.asfloat(etp)
        return (3.0 * etp_a * k * load + ep_a * etp_a) * arch.expert_hidden * float(job.compute_dtype_bytes)
    global_permute = 3.0 * k + 1.0
    if flex_dispatched(job):
        spread = 2.0 * k * load * (1.0 + deduplicated_copy_share(arch, ep_a, True))
    else:
        spread = global_permute + 4.0 * k * load
    elements = xp.where(ep_a > 1, spread, global_permute)
    return elements * arch.expert_hidden * float(job.compute_dtype_bytes)


def deduplicated_copy_share(arch: Architecture, destinations: Num, dedup: bool) -> Num:
    """Share of a token's k copies sent when each of N destinations (ranks, or scale-out domains) receives
    a token once however many of its experts chose it: 1 without deduplication, else
    expected_destinations / k."""
    if arch.moe is None or not dedup:
        return xp.ones_like_float(destinations)
    return xp.minimum(expected_destinations(arch.moe, destinations) / arch.moe.top_k, 1.0)


def expected_destinations(moe: MoE, destinations: Num) -> Num:
    """Distinct destinations among N (EP ranks, or the scale-out domains they fill, experts laid out in order)
    that a token's k routed experts reach.

    A group-limited router (MoE.routing_groups G, routing_group_topk M; DeepSeek's node-limited routing, arXiv
    2412.19437 Sec. 2.1.2, Megatron-Core group_limited_topk) first keeps the M groups of consecutive experts with the
    highest sums of their best k/M scores, then the top k experts inside them, so each kept group takes about
    p = k/M of the k. Where N >= G each group spans r = N/G destinations and a token reaches
    M·r·(1 - (1 - 1/r)^p); where N < G each destination holds g = G/N groups and a token reaches
    N·(1 - Π_{i<M} (G - g - i)/(G - i)), the destinations holding at least one of M groups drawn from G. Without
    groups (G = M = 1) this is N·(1 - (1 - 1/N)^k), k uniform picks. Against a simulation of the router on random
    scores (the forced-balance benchmarks' routing; tests/unit/test_moe_group_routing.py), DeepSeek-V3's 256
    experts, top-8, 8 groups of which 4: 3.96 of 8 nodes (this formula 4.00; uniform picks 5.25), 3.13 of 4 (3.14),
    5.72 of 16 (6.00), 7.49 of 64 ranks (7.50). Left out: routing that follows the load rather than uniform scores,
    and expert placements that do not keep a group's experts together."""
    k = float(moe.top_k)
    groups, kept = float(moe.routing_groups), float(moe.routing_group_topk)
    n = xp.maximum(xp.asfloat(destinations), 1.0)
    per_group = k / kept
    span = xp.maximum(n / groups, 1.0)
    spread = kept * span * (1.0 - (1.0 - 1.0 / span) ** per_group)
    held = groups / n  # groups per destination where n < G
    missed = xp.ones_like_float(n)
    for i in range(int(kept)):
        missed = missed * xp.maximum(groups - held - i, 0.0) / (groups - i)
    gathered = n * (1.0 - missed)
    return xp.minimum(xp.where(n >= groups, spread, gathered), k)


def ep_ranks_per_domain(ep: Num, etp: Num, domain: int) -> Num:
    """EP ranks of one EP group inside one scale-up domain of `domain` GPUs: the group's members are etp ranks apart
    (Megatron-Core's order, etp fastest), so floor(domain / etp) of them, between 1 and ep."""
    return xp.clip(xp.floor(domain / xp.asfloat(etp)), 1.0, xp.asfloat(ep))


def expert_all_to_all_s(arch: Architecture, job: Job, *, tokens: Num, tp: Num, ep: Num, etp: Num,
                        domain: int, intra: comm.Tier, inter: comm.Tier, recomputed_share: Num | None = None) -> Num:
    """All-to-all seconds of one MoE layer for one micro-batch (forward, backward, recompute), on the
    busiest rank, before any overlap (formula in the module docstring). `recomputed_share`: the share of the
    layers whose forward runs again (full recomputation of some layers, Megatron --recompute-num-layers);
    default 1 under full recomputation, else 0."""
    if arch.moe is None:
        return 0.0 * xp.asarray(tokens)
    if recomputed_share is None:
        recomputed_share = 1.0 if job.recompute == "full" else 0.0
    if dispatcher(job) == "allgather":
        return allgather_dispatch_s(arch, job, tokens=tokens, tp=tp, ep=ep, etp=etp, domain=domain, intra=intra,
                                    inter=inter, recomputed_share=recomputed_share)
    ep_a = xp.asfloat(ep)
    etp_a = xp.asfloat(etp)
    per_domain = ep_ranks_per_domain(ep_a, etp_a, domain)
    domains = ep_a / per_domain
    elements = xp.asarray(tokens) / xp.asarray(tp) * arch.moe.top_k * arch.expert_hidden
    dedup = flex_dispatched(job)
    rank_share = deduplicated_copy_share(arch, ep_a, dedup)
    domain_share = deduplicated_copy_share(arch, domains, dedup)

    def one(bytes_per_element: float) -> Num:
        # comm.hierarchical_all_to_all_s, with the intra- and inter-domain bytes scaled by their shares.
        size = elements * bytes_per_element
        k = per_domain
        lat = (k - 1.0) * intra.latency_s + (ep_a - k) * inter.latency_s
        intra_s = (k - 1.0) / ep_a * size * rank_share / intra.effective_bytes_per_s
        with xp.errstate(divide="ignore", invalid="ignore"):
            inter_bytes = (ep_a - k) / ep_a * size * domain_share
            inter_s = xp.where(ep_a > k, xp.divide(inter_bytes, inter.effective_bytes_per_s), 0.0)
        return lat + xp.maximum(intra_s, inter_s)

    dispatch_bytes = 1.0 if job.precision == "fp8" and not job.bf16_experts else float(job.compute_dtype_bytes)
    forward = one(dispatch_bytes) + one(float(job.compute_dtype_bytes))
    backward = 2.0 * one(float(job.compute_dtype_bytes))
    a2a = forward + backward + forward * xp.asfloat(recomputed_share)
    # Expert tensor parallelism: the ep-received copies are all-gathered over etp before the experts
    # and reduce-scattered after (forward), and the reverse backward: 4 collectives of m·h per rank.
    gathered = elements * etp_a * float(job.compute_dtype_bytes)
    etp_s = 4.0 * comm.hierarchical_all_gather_s(gathered, etp_a, xp.minimum(etp_a, domain), intra, inter)
    return a2a * load_factor(job) + xp.where(etp_a > 1, etp_s, 0.0)


A2A_1F1B_HIDDEN_SHARE = 1.0 / 3.0
"""Share of the all-to-all that Megatron-Core's 1F1B EP A2A overlap hides (the forward of one
micro-batch merged with the backward of another, --overlap-moe-expert-parallel-comm with
--delay-wgrad-compute). Source: Megatron-MoE-ModelZoo best_practice/Qwen3 (yanring/Megatron-MoE-ModelZoo),
Qwen3-235B-A22B on 256 H100 with DeepEP, TP2 EP32 PP8 VPP4: 19.7 s per step without the overlap and
17.6 s with it ('+1f1b overlap'). rigplan puts that layout's all-to-all at 6.9 s a step and its
no-overlap step at 19.5 s; saving 2.1 s at the A2A_OVERLAP_SM_SHARE tax means hiding 2.3 s, a third
(tests/unit/test_moe.py::test_1f1b_hidden_share_against_the_modelzoo_pair). Checked on an independent
row: Megatron-Bridge 25.09's DeepSeek-V3 on 1,024 H100 (DeepEP with the overlap, as its performance
script runs it) comes within 1% with this share and 28% too fast with the whole all-to-all hidden. And on a
profile: Megatron-Bridge's Nsight comparison of Qwen3-30B-A3B on 16 H100 with HybridEP, PP1, overlap off and
on (skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md @ 228e9a3e) counts 36.55% of the communication time
hidden by compute with the overlap (0.11% without), where rigplan hides 32.8% of that run's all-to-all; the
same profile's communication, about 10.8 s a step (3.96 s concurrent at 36.55%), is nearly twice rigplan's
5.6 s, which is why rigplan's step gains less from the overlap there (1.0 s against 3.7 s measured).
The 1F1B merge leaves the first forward and last backward of each chunk unpaired, waits on the
other micro-batch's dependencies and splits kernels smaller; DeepSeek's DualPipe (a2a_overlap_schedule
'dualpipe') hides it all ('near-zero all-to-all communication overhead', arXiv 2412.19437 Sec. 3.2.1)."""


def exposed_all_to_all_s(job: Job, a2a_s: Num, compute_s: Num) -> tuple[Num, Num]:
    """(exposed all-to-all seconds, extra compute seconds) of one micro-batch on the busiest stage.

    Without overlap the all-to-all is on the critical path. With a2a_overlap it runs under the
    computation of another micro-batch: DualPipe hides all of it up to that computation, Megatron-Core's
    1F1B merge A2A_1F1B_HIDDEN_SHARE of it; the overlapped computation runs on
    (1 - A2A_OVERLAP_SM_SHARE) of the SMs.
    """
    a2a = xp.asfloat(a2a_s)
    if not job.a2a_overlap:
        return a2a, 0.0 * a2a
    compute = xp.asfloat(compute_s)
    share = 1.0 if job.a2a_overlap_schedule == "dualpipe" else A2A_1F1B_HIDDEN_SHARE
    overlapped = xp.minimum(a2a * share, compute)
    slowdown = overlapped * A2A_OVERLAP_SM_SHARE / (1.0 - A2A_OVERLAP_SM_SHARE)
    return a2a - overlapped, slowdown


def unpaired_all_to_all_s(job: Job, a2a_s: Num, exposed_s: Num) -> Num:
    """Seconds a step adds, without pipeline parallelism, for the one micro-batch whose all-to-all Megatron-Core's
    1F1B EP overlap cannot pair. The schedule merges the forward of micro-batch i+1 with the backward of micro-batch
    i (megatron/core/pipeline_parallel combined 1F1B): m micro-batches a step make m - 1 pairs, and the first
    forward and last backward, one micro-batch's worth, run alone, so the part exposed_all_to_all_s hid (a2a_s less
    exposed_s) is exposed once a step, less the SM tax it no longer pays. At one micro-batch a step nothing hides.
    With a pipeline the warm-up and cool-down already hold such chunks (A2A_1F1B_HIDDEN_SHARE was measured on one):
    0 there, and 0 without the overlap or under DualPipe."""
    if not job.a2a_overlap or job.a2a_overlap_schedule != "1f1b":
        return 0.0 * xp.asfloat(a2a_s)
    hidden = xp.asfloat(a2a_s) - xp.asfloat(exposed_s)
    return hidden * (1.0 - A2A_OVERLAP_SM_SHARE / (1.0 - A2A_OVERLAP_SM_SHARE))
