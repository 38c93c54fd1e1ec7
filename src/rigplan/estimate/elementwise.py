"""Memory-bound work of a transformer layer: element-wise HBM traffic, fp8 casts and kernel launches.

Per token and layer, the bytes the norms, residual adds, rotary embedding, MLP activation, MoE router
and eager softmax move through HBM (`elementwise_bytes_per_token`), the bytes of quantizing
GEMM operands to fp8 (`fp8_cast_bytes_per_token`), and the kernels a layer's forward launches
(`kernels_per_layer`, each followed by KERNEL_GAP_S of idle GPU). estimate.step turns them into
seconds at the part's achievable HBM bandwidth. Each constant's source is next to it.

"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import linear_attention, moe

Num = Any


EAGER_RMSNORM_TRAFFIC = 9.0
"""Bytes moved by an eager PyTorch RMSNorm over the fused minimum (read h, write h, bf16): the
composite op of torchtitan / Hugging Face (x.float(), pow(2), mean, x * rsqrt, type_as, * weight)
reads and writes 6+8+4+8+6+4 = 36 bytes per element against 4. nn.LayerNorm is one native kernel (1x)."""
EAGER_ROPE_TRAFFIC = 5.0
"""Eager rotary embedding (float upcast, complex multiply, view back, type_as): ~20 bytes per q/k element
against 4 for a fused kernel."""
UNFUSED_SCALED_ROPE_TRAFFIC = 25.0 / 6.0
"""Megatron-Core's unfused rotary embedding (_apply_rotary_pos_emb_bshd, taken for a YaRN attention factor,
domain.job.Job.rope_factor_unfused) over the fused kernel's, counted from its ops in q- or k-sized elements read
plus written. Forward: t·cos (2), _rotate_half's negation of one half (1) and cat (2), ·sin (2), the add (3) and
the final cat with the empty pass-through part (2): 12. Backward: the gradient times sin (2) and cos (2), the
negation (1), the halves' gradients put back together (2), the two paths' gradients added (3) and the full-width
slice's backward, zeros and a copy (3): 13. A fused kernel reads and writes once each way and rigplan moves an
element-wise op's forward bytes once forward and twice backward (6 for 2), so the 25 count as 25/6 of it."""
UNFUSED_SCALED_ROPE_KERNELS = 23.0
"""Forward kernels that unfused rotary adds to a layer over the fused one: per call (q, then k) cos, its scaling
and cast and the same for sin on the (s, d) frequencies (6) and the six ops above (6): 24, less the one fused
kernel counted in FUSED_KERNELS_PER_LAYER."""
EAGER_GATED_ACT_TRAFFIC = 5.0 / 3.0
"""Eager SwiGLU: silu(gate) (read f, write f) then multiply by up (read 2f, write f) = 5f against the
fused 3f. A plain GeLU MLP activation is one kernel in either stack (1x)."""


FP8_STORE_CAST_TRAFFIC = 1.0
"""Forward traffic charged per element of the gated activation's 2f input for Megatron-Core's fp8 activation store
(Job.fp8_activation_store), in compute-dtype elements: its casts, input.to(torch.float8_e4m3fn) before saving (read
2 bytes, write 1) and .to(bf16) in backward (read 1, write 2), move 6 bytes, 3 bf16 elements, over the step
(megatron/core/fusions/fused_bias_swiglu.py); rigplan moves an element-wise op's forward bytes once forward and
twice backward, so 1 forward element stands for the pair: 2f per token and MLP. One kernel more each way
(kernels_per_layer)."""


EAGER_SOFTMAX_TRAFFIC = 38.0 / 3.0 / 2.0
"""bf16 elements moved per attention score and pass by eager PyTorch attention (transformers'
eager_attention_forward; plain torch ops), against Megatron's fused scale-mask-softmax (read + write, 2).
Forward, bytes per score: the scaling multiply (read 2, write 2), the mask add (read 2, write 2), softmax
in fp32 (read 2, write 4) and the cast back (read 4, write 2): 18. Backward: the cast's (read 2, write 4),
softmax's (read the fp32 output and gradient, write the bf16 gradient: 10) and the scaling's (read 2,
write 2): 20. The step model moves each element-wise op's bytes once forward and twice backward, so the 38
bytes are spread over its 3 passes. Measured on an H200: Llama 3.2 1B with eager attention at 2 x 2048
tokens ran 187 ms a step where rigplan said 121 ms with the fused count
(docs/measurements/h200-2026-12.md, section 2)."""


def rope_unfused_for_factor(arch: Architecture, job: Job) -> bool:
    """Whether a fused stack runs this model's rotary embedding as unfused ops because its kernel cannot apply the
    YaRN attention factor (domain.job.Job.rope_factor_unfused; eager stacks are unfused anyway)."""
    return (job.kernels == "fused" and job.rope_factor_unfused and arch.positions == "rope"
            and arch.rope_attention_factor != 1.0)


def elementwise_bytes_per_token(arch: Architecture, job: Job) -> tuple[float, float]:
    """HBM traffic of one layer's memory-bound ops, forward, per token: (replicated, split by tp).

    Replicated under tensor parallelism without sequence parallelism: the norms (read + write h), two
    residual adds (read 2h, write h) and an MoE layer's router scores (its token permutation is
    moe.permute_bytes_per_token, whose backward moves its bytes once). Split by tp (heads and MLP
    columns): rotary on q and k, the per-head RMSNorm of q and k of qk_norm models (Qwen3: read and write
    each; Megatron-Core's SelfAttention runs q_layernorm and k_layernorm, a TENorm each, after the qkv split,
    and transformers' Qwen3Attention a Qwen3RMSNorm each), the MLP activation (gated: read 2f, write f; plain:
    read f, write f) and the casts of an fp8 activation store (FP8_STORE_CAST_TRAFFIC)
    and, for eager attention, one fused scale-mask-softmax pass over the a·s scores (read + write,
    Megatron's fused kernel), plus one more with attention dropout. With the eager stack and no
    torch.compile, each op's traffic is multiplied by what its unfused PyTorch form moves
    (EAGER_*_TRAFFIC, counted from the ops); fused kernels (Transformer Engine, Liger) and Inductor's
    fusions move the minimum, except a YaRN model's rotary under Megatron-Core (UNFUSED_SCALED_ROPE_TRAFFIC).
    A dense model's MLP blocks per layer (Architecture.ffn_blocks_per_layer: a Nemotron-H layer may have none or
    several) scale the MLP block's norm, residual add, dropout and activation, on the model's mean.
    """
    p = job.compute_dtype_bytes
    h = arch.hidden
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    ffn_blocks = arch.ffn_blocks_per_layer
    f = arch.moe.top_k * arch.moe.expert_ffn if arch.moe else arch.ffn * ffn_blocks
    eager = job.kernels in ("eager", "hf", "litgpt", "torchtune") and not job.compile
    norm_x = EAGER_RMSNORM_TRAFFIC if eager and arch.norm == "rmsnorm" else 1.0
    rope_x = EAGER_ROPE_TRAFFIC if eager else UNFUSED_SCALED_ROPE_TRAFFIC if rope_unfused_for_factor(arch, job) else 1.0
    act_x = EAGER_GATED_ACT_TRAFFIC if eager and arch.mlp == "gated" else 1.0
    blocks = 1.0 + ffn_blocks  # the mixer's block and the feed-forward blocks
    replicated: float = ((arch.norms_per_layer - 1.0 + ffn_blocks) * 2 * h * norm_x + blocks * 3 * h
                         + (blocks * 2 * h if job.dropout else 0))
    activation = 3 * f * act_x if arch.mlp == "gated" else 2 * f
    if job.fp8_activation_store and arch.mlp == "gated":
        activation += FP8_STORE_CAST_TRAFFIC * 2 * f
    if arch.moe is not None and job.moe_fused_grouped_mlp:
        activation = 0.0  # in the fused grouped MLP's GEMM epilogues (domain.job.Job.moe_fused_grouped_mlp)
    mixer: float = 2 * (q_w + kv_w) * rope_x if arch.positions == "rope" else 0
    if arch.qk_norm and arch.mla is None:
        mixer += 2 * (q_w + kv_w) * (EAGER_RMSNORM_TRAFFIC if eager else 1.0)  # per-head RMSNorm of q and k
    if arch.attention_output_gate:
        mixer += 3 * q_w  # sigmoid(gate) times the attention output: read 2·q_w, write q_w
    if arch.moe is not None:
        replicated += moe.router_bytes_per_token(arch) / p
    if job.attention == "eager":
        scores = EAGER_SOFTMAX_TRAFFIC if eager else 2.0
        mixer += scores * arch.num_heads * job.seq_len * (2 if job.dropout else 1)
    if arch.linear_attention is not None:
        mixer = linear_attention.blend(arch, mixer, linear_attention.elementwise_elements_per_token(arch))
    split: float = mixer + activation
    if job.autocast and p == 2:
        # fp32 residual stream: norms and residual adds move twice the bytes; each matmul input is cast
        # (read fp32, write bf16: 3 bf16-element units): qkv and MLP-in from h, output and MLP-out split.
        replicated = replicated + arch.norms_per_layer * 2 * h + 2 * 3 * h + 2 * 3 * h
        split = split + 3 * (q_w + f)
    return float(replicated * p), float(split * p)


FP8_CAST_BYTES = {"delayed": 4.0, "current": 6.0, "blockwise": 4.0625, "mxfp8": 4.0625, "nvfp4": 6.25}
"""HBM bytes per element to quantize one GEMM operand to fp8: read bf16 (2) + write fp8 (1) + the
transposed fp8 copy Hopper's TN-only fp8 GEMMs need (1; Transformer Engine cast_transpose).
'delayed' takes amax from history, computed inside the cast (TE default on Hopper); 'current'
(per-tensor dynamic, torchao float8 tensorwise) reads the tensor once more for its amax (+2);
'mxfp8' (Blackwell, one e8m0 scale per 32 elements, TE MXFP8BlockScaling) adds 1/32 byte of scales per
copy (row- and column-wise: 2/32; 4.125 until 2026-12, which counted them twice). 'blockwise' (Transformer
Engine Float8BlockScaling) takes each 1 x 128 block's amax inside its one cast kernel and writes the row- and
column-wise fp8 copies with an fp32 scale per 128 elements each (2 + 2 x (1 + 4/128)); on Blackwell the scales
are then converted for MXFP8 GEMMs (left out). 'nvfp4' (Transformer Engine NVFP4BlockScaling) reads the tensor
once for the per-tensor amax its two-level scaling needs (2), then its cast kernel reads it again and writes row- and
column-wise 4-bit copies with an E4M3 scale per 16 elements (2 + 2 x (0.5 + 1/16) = 3.125), at 6.4 TB/s with
round-to-nearest (activations) and 4.5 TB/s with the stochastic rounding of gradients on an 8 TB/s B300
(TransformerEngine PR #2412, its tuned NVFP4 cast kernel): against the 0.9 of HBM rigplan takes for a
memory-bound pass, 3.125 x 1.125 and 3.125 x 1.6 bytes' worth; the mean of the two with the amax read, 6.25.
The random Hadamard transform of the wgrad operands is taken as fused into the cast."""


def fp8_cast_bytes_per_token(arch: Architecture, job: Job, tp: Num) -> Num:
    """HBM traffic of fp8 casts of one layer per token (forward inputs, backward output gradients).

    Quantized: the inputs of the qkv, output, MLP-in and MLP-out projections (h, q_w/tp, h, f/tp) and,
    in backward, the gradients of their outputs ((q_w + 2 kv_w)/tp, h, f_in/tp, h). In an MoE layer the
    expert GEMMs take the k routed copies of each token (k·h/tp per token on the busiest rank, times
    its load), each cast separately after the dispatch (Transformer Engine's GroupedLinear quantizes
    its input split by expert), plus h for a shared expert. Not quantized: the LM head, the attention
    core and the router, which stay in bf16. With the fused grouped MLP the expert GEMMs' inner operands
    (fc2's input, fc1's output gradient) are quantized in GEMM epilogues and leave this count. Weight casts
    are per step under Transformer Engine (first micro-batch) and left out; with 'current' scaling
    (torchao) they are per micro-batch and added per token as params / tokens elsewhere. With Job.fp8_experts
    only the routed experts' operands are cast (their weights per micro-batch in estimate.stage_time); with
    Job.bf16_experts every operand but theirs.
    """
    h = arch.hidden
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    f = arch.moe.top_k * arch.moe.expert_ffn if arch.moe else arch.ffn * arch.ffn_blocks_per_layer
    f_in = (2 if arch.mlp == "gated" else 1) * f
    mlp_side: Num = h * arch.ffn_blocks_per_layer  # a dense model's mixer-only layers cast no MLP input
    if arch.moe is not None:
        mlp_side = (arch.moe.top_k * arch.expert_hidden / tp * moe.load_factor(job)
                    + (h if arch.moe.num_shared_experts else 0.0)
                    + ((h + arch.moe.latent_size) if arch.moe.latent_size else 0.0))  # a latent MoE's projections
    between = f / tp + f_in / tp  # fc2's input forward, fc1's output gradient backward
    if arch.moe is not None and job.moe_fused_grouped_mlp:
        between = 0.0  # quantized in the fused grouped MLP's GEMM epilogues (domain.job.Job.moe_fused_grouped_mlp)
    if job.bf16_experts and arch.moe is not None:
        # the routed experts stay bf16 (Job.bf16_experts): only a shared expert's input and output gradient are cast
        mlp_side, between = (h if arch.moe.num_shared_experts else 0.0), 0.0
    gate = q_w if arch.attention_output_gate else 0
    mixer = 2 * h + q_w / tp + (q_w + gate + 2 * kv_w) / tp
    if arch.linear_attention is not None:
        mixer = linear_attention.blend(arch, mixer, linear_attention.cast_elements_per_token(arch, tp))
    elements = mixer + 2 * mlp_side + between
    if job.fp8_experts and arch.moe is not None:
        # only the routed experts' grouped GEMMs (Job.fp8_experts): their inputs, fc1's output gradient and fc2's
        # input, and fc2's output gradient; the shared expert and every other linear stay bf16
        routed = arch.moe.top_k * arch.expert_hidden / tp * moe.load_factor(job)
        elements = 2 * routed + between
    recipe = job.fp8_recipe
    if recipe == "current" and job.compile:
        recipe = "delayed"  # Inductor fuses the amax reduction into the producing kernel (torchao float8 README)
    return elements * FP8_CAST_BYTES[recipe]


KERNEL_GAP_S = 3e-6
"""Idle time between two dependent kernels on the GPU (launch latency plus the last wave's tail):
NVIDIA's 'Getting Started with CUDA Graphs' (2019) measures ~3-4 us per short kernel launched in a
stream, against ~2 us of work; rigplan charges 3 us per kernel launched."""
FUSED_KERNELS_PER_LAYER = 14.0
"""Kernels one layer's forward launches in a fused stack (Megatron / Transformer Engine): two norms,
qkv, rotary, attention, output projection, bias/residual adds, MLP in, activation, MLP out (~14)."""
FFN_BLOCK_KERNELS = 5.0
"""Of FUSED_KERNELS_PER_LAYER, the feed-forward block's: its norm, MLP in, activation, MLP out and residual add
(a dense model's layer without one launches 5 fewer)."""


def kernels_per_layer(arch: Architecture, job: Job) -> float:
    """Forward kernels of one layer: the fused count, plus what eager PyTorch splits each op into
    (an RMSNorm +5: cast, pow, mean, rsqrt-mul, weight-mul; rotary +7; SwiGLU +1), and Qwen3's q and k norms
    (one kernel each fused, six each eager). nn.LayerNorm and
    GeLU are single kernels in either stack; torch.compile fuses back to about the fused count."""
    qk_norms = float(linear_attention.blend(arch, 2.0 if arch.qk_norm and arch.mla is None else 0.0, 0.0))  # q, k
    store_cast = 1.0 if job.fp8_activation_store and arch.mlp == "gated" else 0.0  # FP8_STORE_CAST_TRAFFIC's cast
    # a hybrid model's linear-attention layers (their share) launch their own mixer's kernels instead of attention's
    gdn = linear_attention.kernels_over_attention(arch) if arch.linear_attention else 0.0
    mixer = float(linear_attention.blend(arch, 1.0 if arch.attention_output_gate else 0.0, gdn))
    missing = 1.0 - arch.ffn_blocks_per_layer  # a dense model's feed-forward blocks short of one a layer
    fused = FUSED_KERNELS_PER_LAYER - missing * FFN_BLOCK_KERNELS
    if job.kernels == "fused" or job.compile:
        return (fused + qk_norms + store_cast + mixer
                + (UNFUSED_SCALED_ROPE_KERNELS if rope_unfused_for_factor(arch, job) else 0.0))
    extra = qk_norms * 6.0 + (5.0 * (arch.norms_per_layer - missing) if arch.norm == "rmsnorm" else 0.0) + (
        7.0 if arch.positions == "rope" else 0.0) + ((1.0 - missing) if arch.mlp == "gated" else 0.0)
    return fused + extra + mixer
