"""Linear-attention layers of hybrid models: Gated DeltaNet (Qwen3-Next, Qwen3.5), Kimi Delta Attention (Kimi
Linear) and Mamba-2 (Nemotron-H). Parameters, FLOPs, saved activations, element-wise traffic and kernels of one such
layer's token mixer, per token, for the estimators, which average a layer over the model by its share of
linear-attention layers (`blend`; domain.model.Architecture.linear_attention_share).

Shapes: transformers' Qwen3NextGatedDeltaNet (modeling_qwen3_next.py: in_proj_qkvz h -> 2·k + 2·v, in_proj_ba
h -> 2·H_v, a depthwise causal conv1d over the 2·k + v channels of q, k and v without bias, dt_bias and A_log per
value head, a gated RMSNorm over the value head dim, out_proj v -> h, no biases; k = H_k·d_k, v = H_v·d_v) and
Megatron-Core's GatedDeltaNet (megatron/core/ssm/gated_delta_net.py: the same weights, in_proj column-parallel and
out_proj row-parallel, the heads split by tp; q and k L2-normalised by fla.modules.l2norm, then repeated to the
value heads, before the kernel). Kernel: flash-linear-attention's chunk_gated_delta_rule
(fla/ops/gated_delta_rule/chunk.py), chunks of CHUNK tokens.

Kimi Delta Attention (transformers' KimiLinearDeltaAttention, modeling_kimi_linear.py; Kimi Linear, arXiv
2510.26692): H heads of d for q, k and v alike (n = H·d), separate q, k and v projections and one causal conv over
their 3n channels, a decay per channel from a low-rank forget gate (f_a h -> d, f_b d -> n, dt_bias n, A_log H),
beta from b_proj (h -> H), a low-rank output gate (g_a h -> d, g_b d -> n) into a gated RMSNorm of d, o_proj
n -> h. Its chunked kernel (fla's chunk_kda) is counted as the gated delta rule's matmuls; the per-channel decay
adds element-wise work on the keys, counted in its traffic.

Mamba-2 (Dao & Gu 2024, arXiv 2405.21060, state-space duality; Megatron-Core's MambaMixer,
megatron/core/ssm/mamba_mixer.py): H heads of P channels (v = H·P), G groups of B and C of the state size N
(k = G·N), in_proj h -> z, x, B, C and dt (2v + 2k + H), a causal conv1d with bias over x, B and C (v + 2k
channels), dt_bias, A_log and D per head, a gated RMSNorm over v in G groups and out_proj v -> h, no projection
biases. Training runs mamba_ssm's mamba_split_conv1d_scan_combined (the conv, the chunked scan and the z gate in
one autograd function that keeps its input and the scan's ungated output for backward), then the norm and
out_proj. Its chunked scan (mamba_ssm/ops/triton/ssd_combined.py) per chunk of Q tokens: C·B^T within the chunk
per group, that matrix (masked by the decay) times x per head, each chunk's state B^T·x per head, and each
token's output from the previous state, C·S, per head.

Left out: the convolution's FLOPs (2·K per channel and token, under 0.1% of the projections'; its traffic is
counted) and the sequential walk over chunks of the state kernels (chunk_gated_delta_rule_fwd_h and its backward run
one chunk after another for each head and value block).

LoRA on these layers (lora_linears): peft matches target modules by name, so the attention targets q, k, v and o
adapt a full-attention layer's projections (and Kimi Delta Attention's own q_proj, k_proj, v_proj and o_proj), and
the targets in_proj and out_proj a Gated DeltaNet's or Mamba-2 mixer's input projections and out_proj.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture, LayerLinear, LinearAttention
from rigplan.estimate import comm
from rigplan.estimate.comm import Tier

Num = Any

CHUNK = 64
"""Tokens per chunk of flash-linear-attention's chunked gated delta rule: chunk_local_cumsum(g, chunk_size=64) and
the BT = 64 blocks of its kernels (fla/ops/gated_delta_rule/chunk.py). estimate.stage_time times the rule at the GEMM
curve's efficiency at this dimension (about 96 TFLOP/s on an H100, 88 on a B200, by core_flop_per_token's count);
published forward-only timings of the Triton kernels give 49 on an H100 (8 value heads, 65,536 tokens: flashinfer
PR #3866's FLA baseline, 1.954 ms) and 64 on an SM100 part (48 value heads, 8,192 tokens: vLLM PR #43273, 1.116 ms),
so this part of the estimate is optimistic by 1.4-2x (docs/methodology/flops.md)."""

MAMBA2_CHUNK = 128
"""Tokens per chunk of Mamba-2's scan where the model gives none: the chunk_size of Nemotron-H's config.json
(NVIDIA-Nemotron-3-Nano-30B-A3B: 128), which Megatron-Core's MambaMixer takes."""
MAMBA2_FORWARD_KERNELS = 9.0
"""Kernels the forward of one Megatron-Core Mamba-2 mixer launches: in_proj, the causal conv1d, the scan's five
(_chunk_cumsum_fwd, _chunk_state_fwd, _state_passing_fwd, _bmm_chunk_fwd, _chunk_scan_fwd), the gated RMSNorm
and out_proj."""

FORWARD_KERNELS = 13.0
"""Kernels the forward of one Gated DeltaNet mixer launches in Megatron-Core: in_proj, the causal conv1d with its
SiLU, two L2 norms (q, k), the gating (decay and beta), the chunked rule's six (chunk_local_cumsum,
chunk_scaled_dot_kkt_fwd, solve_tril, recompute_w_u_fwd, chunk_gated_delta_rule_fwd_h, chunk_fwd_o), the gated
RMSNorm and out_proj; two more (REPEAT_KERNELS) where the key heads are repeated to the value heads."""
REPEAT_KERNELS = 2.0
ATTENTION_MIXER_KERNELS = 4.0
"""Of elementwise.FUSED_KERNELS_PER_LAYER, the kernels of the attention mixer a Gated DeltaNet layer replaces: the
qkv projection, rotary, the attention kernel and the output projection."""


LORA_MIXER_TARGETS = ("in_proj", "out_proj")
"""LoRA target names of a Gated DeltaNet's or Mamba-2 mixer's linears: its input projection(s) and out_proj."""


def mixer_linears(arch: Architecture, transformers_modules: bool) -> list[LayerLinear]:
    """The linears of one linear-attention mixer, as the modules are named, with the LoRA targets that adapt each.
    Gated DeltaNet: its input projection ('in_proj') as transformers splits it, Qwen3-Next in_proj_qkvz (h -> 2k + 2v)
    and in_proj_ba (h -> 2·H_v), Qwen3.5 in_proj_qkv (2k + v), in_proj_z (v), in_proj_b and in_proj_a (H_v each)
    (LinearAttention.input_projections), or Megatron-Core's one in_proj (2k + 2v + 2·H_v); Mamba-2: in_proj
    (h -> 2v + 2k + H); both out_proj (v -> h, 'out_proj'). Kimi Delta Attention (transformers'
    KimiLinearDeltaAttention): q_proj, k_proj and v_proj (h -> n) and o_proj (n -> h), under the attention targets'
    names; its low-rank gate projections carry no target name rigplan takes."""
    la = _spec(arch)
    h, k, v, heads = arch.hidden, la.key_dim, la.value_dim, la.num_value_heads
    if la.kind == "kimi_delta":
        return [*(LayerLinear(f"{t}_proj", h, k, (t,)) for t in ("q", "k", "v")), LayerLinear("o_proj", k, h, ("o",))]
    if la.kind == "mamba2":
        inputs = [("in_proj", 2 * v + 2 * k + heads)]
    elif not transformers_modules:
        inputs = [("in_proj", 2 * k + 2 * v + 2 * heads)]
    elif la.input_projections == 4:
        inputs = [("in_proj_qkv", 2 * k + v), ("in_proj_z", v), ("in_proj_b", heads), ("in_proj_a", heads)]
    else:
        inputs = [("in_proj_qkvz", 2 * k + 2 * v), ("in_proj_ba", 2 * heads)]
    return [*(LayerLinear(name, h, width, ("in_proj",)) for name, width in inputs),
            LayerLinear("out_proj", v, h, ("out_proj",))]


def transformers_modules(job: Job) -> bool:
    """Whether the mixers are transformers' modules (peft on Hugging Face models, Unsloth: Job.transformers_modules;
    NeMo AutoModel on MoE models, Job.moe_expert_module), not Megatron-Core's (the fused stack). A dense hybrid under
    NeMo AutoModel, whose own LoRA this does not follow, is taken as the fused stack's (one in_proj module)."""
    return job.kernels != "fused" or job.transformers_modules or job.moe_expert_module in ("own", "unsloth")


def peft_adapters(job: Job) -> bool:
    """Whether peft attaches the job's LoRA adapters to transformers' modules: the stacks other than 'fused' and
    Unsloth (Job.transformers_modules, moe_expert_module 'unsloth'), not Megatron-Core's LoRA or NeMo AutoModel's.
    peft refuses an adapter on a Mamba model's out_proj (_check_lora_target_modules_mamba: transformers' fused scan
    kernel reads that weight itself, mamba_split_conv1d_scan_combined's outproj_weight)."""
    return job.kernels != "fused" or job.transformers_modules or job.moe_expert_module == "unsloth"


def job_lora_linears(arch: Architecture, job: Job) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """lora_linears for the job's targets and module stack; ([], []) for a model without linear attention."""
    if arch.linear_attention is None:
        return [], []
    return lora_linears(arch, job.lora_targets, transformers_modules(job))


def lora_linears(arch: Architecture, targets: tuple[str, ...], transformers_modules: bool
                 ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(d_in, d_out) of the linears LoRA adapts in one linear-attention mixer (mixer_linears): (those whose input is
    the layer's input, replicated under tp; the output projection, whose input is split by tp). Under peft a Mamba-2
    model's out_proj is no target (peft_adapters; flow.resolve drops it)."""
    adapted = [lin for lin in mixer_linears(arch, transformers_modules) if set(lin.targets) & set(targets)]
    output = ("o_proj", "out_proj")
    return ([(lin.d_in, lin.d_out) for lin in adapted if lin.module not in output],
            [(lin.d_in, lin.d_out) for lin in adapted if lin.module in output])


def _spec(arch: Architecture) -> LinearAttention:
    assert arch.linear_attention is not None
    return arch.linear_attention


def chunk(la: LinearAttention) -> int:
    """Tokens per chunk of the layer's chunked kernel: the model's, else CHUNK (the delta rules) or MAMBA2_CHUNK."""
    return la.chunk_size or (MAMBA2_CHUNK if la.kind == "mamba2" else CHUNK)


def core_gemm_dim(arch: Architecture) -> float:
    """The smaller GEMM dimension of the chunked kernel's matmuls, at which estimate.stage_time takes their
    efficiency: CHUNK for the delta rules; Mamba-2's smallest of the chunk, the head's channels and the state
    (Nemotron-3 Nano: 64)."""
    la = arch.linear_attention
    if la is None or la.kind != "mamba2":
        return float(CHUNK)
    return float(min(chunk(la), la.value_head_dim, la.key_head_dim))


def blend(arch: Architecture, full: Num, linear: Num) -> Num:
    """The mean over the model's layers of a per-layer figure that is `full` on full-attention layers and `linear`
    on linear-attention ones: full itself for a model without linear attention."""
    share = arch.linear_attention_share
    if not share:
        return full
    return full * (1.0 - share) + linear * share


def mixer_params(arch: Architecture) -> int:
    """Weights of one linear-attention mixer. Gated DeltaNet: h·(2k + 2v + 2·H_v) + (2k + v)·K + 2·H_v + d_v + v·h
    (Qwen3-Next-80B-A3B: 33,718,464, transformers' module shapes). Kimi Delta Attention: 3·h·n + 3n·K + (h·d + d·n
    + n + H) (forget gate) + h·H + (h·d + d·n) (output gate) + d + n·h. Mamba-2: h·(2v + 2k + H) + (v + 2k)·(K + 1)
    + 3H + v + v·h (Nemotron-3 Nano: 38,742,208)."""
    la = _spec(arch)
    h = arch.hidden
    if la.kind == "kimi_delta":
        n, d, heads = la.key_dim, la.key_head_dim, la.num_key_heads
        forget = h * d + d * n + n + heads
        return 3 * h * n + 3 * n * la.conv_kernel + forget + h * heads + (h * d + d * n) + d + n * h
    if la.kind == "mamba2":  # in_proj, conv with bias, dt_bias / A_log / D, the norm, out_proj
        conv = la.value_dim + 2 * la.key_dim
        return (h * (2 * la.value_dim + 2 * la.key_dim + la.num_value_heads) + conv * (la.conv_kernel + 1)
                + 3 * la.num_value_heads + la.value_dim + la.value_dim * h)
    in_proj = h * (2 * la.key_dim + 2 * la.value_dim + 2 * la.num_value_heads)
    return in_proj + la.conv_dim * la.conv_kernel + 2 * la.num_value_heads + la.value_head_dim + la.value_dim * h


def projection_flop_per_token(arch: Architecture) -> float:
    """Forward FLOPs of the in and out projections per token (before the tp split): 2·h·(2k + 2v + 2·H_v) + 2·v·h
    (Kimi Delta Attention: 2·h·(3n + H + 2d) + 2·2·d·n for the gates' second halves + 2·n·h; Mamba-2:
    2·h·(2v + 2k + H) + 2·v·h)."""
    la = _spec(arch)
    h = arch.hidden
    if la.kind == "kimi_delta":
        n, d = la.key_dim, la.key_head_dim
        return 2.0 * h * (3 * n + la.num_key_heads + 2 * d) + 4.0 * d * n + 2.0 * n * h
    gates = la.num_value_heads if la.kind == "mamba2" else 2 * la.num_value_heads  # dt; or the decay and beta
    return 2.0 * h * (2 * la.key_dim + 2 * la.value_dim + gates) + 2.0 * la.value_dim * h


def _head_macs(la: LinearAttention) -> tuple[float, float]:
    """Multiply-adds per token and value head of the chunked rule's forward, and of the part its backward computes
    again, from its kernels' matmuls (C = CHUNK, d_k, d_v). Forward: K·K^T within the chunk (C·d_k), the triangular
    inverse (C²/3), W and U (C·d_k + C·d_v), the state pass (v_new = U - W·S and S += K^T·v_new: 2·d_k·d_v), the
    output (Q·S: d_k·d_v; Q·K^T: C·d_k; times v_new: C·d_v): 3·C·d_k + 2·C·d_v + 3·d_k·d_v + C²/3. The backward
    recomputes W, U and the state pass (recompute_w_u_fwd, chunk_gated_delta_rule_fwd_h):
    C·d_k + C·d_v + 2·d_k·d_v."""
    c, dk, dv = float(CHUNK), float(la.key_head_dim), float(la.value_head_dim)
    forward = 3.0 * c * dk + 2.0 * c * dv + 3.0 * dk * dv + c * c / 3.0
    return forward, c * dk + c * dv + 2.0 * dk * dv


def core_flop_per_token(arch: Architecture) -> tuple[float, float]:
    """(forward, backward recompute) FLOPs per token of the chunked rule over all value heads, before the tp
    split: 2·H_v·_head_macs. Qwen3-Next (H_v 32, d 128): 5.85 MFLOP forward, 3.1 MFLOP recomputed; Megatron-LM's
    MFU formula counts 4·H_v·d_v² multiply-adds (4.2 MFLOP forward), its nominal figure. Mamba-2's scan, Q the
    chunk, N the state, P a head's channels, G groups, H heads: forward G·Q·N (C·B^T) + H·(Q·P + 2·N·P) (the
    masked matrix times x, the chunk states, the output from the previous state) multiply-adds; its backward
    (_mamba_chunk_scan_combined_bwd) first recomputes C·B^T and the chunk states, G·Q·N + H·N·P (Nemotron-3 Nano:
    3.41 MFLOP forward, 1.31 recomputed)."""
    la = _spec(arch)
    if la.kind == "mamba2":
        q, n, p, heads, groups = float(chunk(la)), la.key_head_dim, la.value_head_dim, la.num_value_heads, \
            la.num_key_heads
        forward = groups * q * n + heads * (q * p + 2.0 * n * p)
        return 2.0 * forward, 2.0 * (groups * q * n + heads * n * p)
    forward, again = _head_macs(la)
    return 2.0 * la.num_value_heads * forward, 2.0 * la.num_value_heads * again


def saved_split_bytes(arch: Architecture, p: float, out_proj_input: float) -> float:
    """Bytes per token one Gated DeltaNet mixer keeps for backward between its column- and row-parallel linears
    (split by tp), at p bytes per element: the conv's input (2k + v; causal_conv1d saves it), z for the gated norm
    (v), the gating inputs a and b (2·H_v), the L2 norms' outputs q and k (2k) and their fp32 rstd per head
    (2·4·H_k), their copies repeated to the value heads where H_v > H_k (2·H_v·d_k), v (v), the decay's fp32
    chunk cumsum (4·H_v) and beta (H_v), the inverted chunk matrix A (H_v·C, in the input dtype: chunk.py's
    ctx.save_for_backward(q, k, v, g, beta, A, ...)), the rule's output for the gated norm (v), and the norm's
    output, out_proj's input, at out_proj_input bytes an element. Mamba-2: what mamba_split_conv1d_scan_combined
    keeps (in_proj's output z, x, B, C and dt, 2v + 2k + H; the scan's output before the z gate, v), the gated
    norm's input (v) and fp32 rstd per group, and out_proj's input."""
    la = _spec(arch)
    if la.kind == "kimi_delta":
        return _kimi_saved_bytes(la, p, out_proj_input)
    if la.kind == "mamba2":  # in_proj's output, the scan's ungated output, the norm's input and fp32 rstd per group
        elements = 2 * la.value_dim + 2 * la.key_dim + la.num_value_heads + la.value_dim + la.value_dim
        return p * elements + 4.0 * la.num_key_heads + out_proj_input * la.value_dim
    repeated = 2 * la.num_value_heads * la.key_head_dim if la.num_value_heads > la.num_key_heads else 0
    elements = (la.conv_dim + la.value_dim + 2 * la.num_value_heads + 2 * la.key_dim + repeated + la.value_dim
                + la.num_value_heads + la.num_value_heads * CHUNK + la.value_dim)
    return p * elements + 4.0 * (2 * la.num_key_heads + la.num_value_heads) + out_proj_input * la.value_dim


def _kimi_saved_bytes(la: LinearAttention, p: float, out_proj_input: float) -> float:
    """Kimi Delta Attention's saved bytes per token: the conv's input (3n), the low-rank gates' middles (f_a's and
    g_a's outputs, d each) and g_b's output for the gated norm (n), the forget gate's pre-activation (n), q, k and
    v after the conv (3n; the kernel L2-normalises q and k inside, keeping an fp32 rstd per head each), beta (H),
    the decay's fp32 chunk cumsum per channel (4·n: fla's chunk_kda keeps g of [T, H, d]), the inverted chunk
    matrix A (H·C), the rule's output (n) and the norm's output at out_proj_input bytes."""
    n, heads = la.key_dim, la.num_key_heads
    elements = 3 * n + 2 * la.key_head_dim + n + n + 3 * n + heads + heads * CHUNK + n
    return p * elements + 4.0 * (n + 2 * heads) + out_proj_input * n


def elementwise_elements_per_token(arch: Architecture) -> float:
    """Elements one Gated DeltaNet mixer's memory-bound ops read and write per token in the forward (split by tp):
    the conv with its SiLU (2·(2k + v)), the q and k L2 norms (2·2k), the repeat to the value heads where
    H_v > H_k (2k + 2·H_v·d_k), the gating and its chunk cumsum (6·H_v) and the gated RMSNorm (read the output and
    z, write: 3v). Mamba-2: the conv and its SiLU (2·(v + 2k)), the z gate in the scan (3v), the norm (2v) and dt's
    softplus and chunk cumsum (6·H)."""
    la = _spec(arch)
    if la.kind == "kimi_delta":
        # conv and SiLU (2·3n), the forget gate's decay (2n) and its cumsum (2n) per channel, the gated norm (3n)
        return float(2 * 3 * la.key_dim + 2 * la.key_dim + 2 * la.key_dim + 3 * la.key_dim)
    if la.kind == "mamba2":  # conv and SiLU over x, B, C; the z gate (read z and the output, write); the norm; dt
        return float(2 * la.conv_dim + 3 * la.value_dim + 2 * la.value_dim + 6 * la.num_value_heads)
    repeat = 2 * la.key_dim + 2 * la.num_value_heads * la.key_head_dim if la.num_value_heads > la.num_key_heads else 0
    return float(2 * la.conv_dim + 4 * la.key_dim + repeat + 6 * la.num_value_heads + 3 * la.value_dim)


KIMI_FORWARD_KERNELS = 19.0
"""Kernels the forward of one Kimi Delta Attention mixer launches (transformers' KimiLinearDeltaAttention with fla's
kernels): q, k and v projections (3), the conv (1), the forget gate's two projections and activation (3), b_proj
and its sigmoid (2), the output gate's two projections (2), the chunked rule's six as FORWARD_KERNELS counts
them, the gated RMSNorm and o_proj (2)."""


def kernels_over_attention(arch: Architecture) -> float:
    """Forward kernels one linear-attention layer launches beyond an attention layer of the fused stack."""
    la = _spec(arch)
    if la.kind == "kimi_delta":
        return KIMI_FORWARD_KERNELS - ATTENTION_MIXER_KERNELS
    if la.kind == "mamba2":
        return MAMBA2_FORWARD_KERNELS - ATTENTION_MIXER_KERNELS
    repeats = REPEAT_KERNELS if la.num_value_heads > la.num_key_heads else 0.0
    return FORWARD_KERNELS + repeats - ATTENTION_MIXER_KERNELS


def cast_elements_per_token(arch: Architecture, tp: Num) -> Num:
    """Elements an fp8 recipe quantizes per token in one Gated DeltaNet mixer: the inputs of in_proj (h) and
    out_proj (v/tp), and in backward the gradients of their outputs ((2k + 2v + 2·H_v)/tp, h)."""
    la = _spec(arch)
    h = arch.hidden
    if la.kind == "kimi_delta":  # q, k, v, gates' and o_proj's inputs (6h + 2d + n), their outputs' gradients
        n, d = la.key_dim, la.key_head_dim
        return 6.0 * h + (2 * d + n) / tp + (3 * n + la.num_key_heads + 2 * d + 2 * n) / tp + h
    if la.kind == "mamba2":  # in_proj's and out_proj's inputs, then the gradients of their outputs
        return 2.0 * h + (la.value_dim + 2 * la.value_dim + 2 * la.key_dim + la.num_value_heads) / tp
    return 2.0 * h + (la.value_dim + 2 * la.key_dim + 2 * la.value_dim + 2 * la.num_value_heads) / tp


def context_parallel_s(arch: Architecture, *, tokens: Num, tp: Num, cp: Num, dtype_bytes: Num, per_node: Num,
                       intra: Tier, inter: Tier) -> Num:
    """Context parallelism of one Gated DeltaNet layer, forward and backward: the rule and its causal convolution
    run along the whole sequence, so Megatron-Core's GatedDeltaNet turns the rank's sequence shard into a head
    shard by all-to-all before them (tensor_a2a_cp2hp; its context-parallel support, Megatron-LM PR #2642) and
    back after (tensor_a2a_hp2cp), as DeepSpeed-Ulysses does for attention (comm.ulysses_all_to_all_s): in, q, k,
    v, b and a (2k + v + 2·H_v per token); out, the rule's output (v). z is taken to stay sequence-sharded for
    the gated norm after the exchange back. Megatron-Core's MambaContextParallel does the same for a Mamba-2 layer
    (pre_conv_ssm and post_conv_ssm), z included: 2v + 2k + H in, v out."""
    la = _spec(arch)
    gates = {"kimi_delta": la.key_dim + la.num_key_heads,  # the decay's low-rank input and beta
             "mamba2": la.value_dim + la.num_value_heads,  # MambaContextParallel exchanges z and dt with x, B, C
             }.get(la.kind, 2 * la.num_value_heads)  # Gated DeltaNet's decay and beta
    return comm.ulysses_all_to_all_s(tokens=tokens, qkv_width=la.conv_dim + gates,
                                     out_width=la.value_dim, tp=tp, cp=cp, dtype_bytes=dtype_bytes,
                                     per_node=per_node, intra=intra, inter=inter)
