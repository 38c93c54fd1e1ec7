"""FLOPs of one training micro-batch, from the architecture (not 6·N alone).

A matmul of an m×k by a k×n matrix costs 2·m·k·n FLOP. Counted: every matmul of the decoder
(attention projections, attention scores and attention over values, MLP or experts, router,
LM head) and of LoRA adapters. Not counted: element-wise work (norms, activations, softmax,
rotary, residual adds, dropout, the optimizer step), the embedding lookup (a gather, 0 FLOP),
QLoRA dequantization. Multi-token-prediction modules (DeepSeek-V3) are counted on the last
stage. See docs/methodology/flops.md.

Every function takes seq_len, micro_batch and the parallel degrees as numbers or numpy arrays
(broadcast together); the architecture is always one scalar value.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec
from rigplan.estimate import linear_attention, peft_experts, recompute_modules, sparse_attention
from rigplan.estimate.arrays import as_num as _num
from rigplan.estimate.band_kernels import skips_window_blocks
from rigplan.estimate.params import adapted_attention_shapes, count_params

Num: TypeAlias = "float | npt.NDArray[np.float64]"
"""A float, or an array of them when an argument was an array."""
NumIn: TypeAlias = "int | float | npt.NDArray[Any]"

FLASH_CAUSAL_FRACTION = 0.5
"""Share of the s×s score matrix computed under a causal mask by a kernel that skips fully masked
blocks (FlashAttention; Dao 2023, arXiv 2307.08691, Sec. 3.1.1 'causal masking'). Diagonal blocks,
computed whole, add about block/(2·s) more, which is left out."""
EAGER_CAUSAL_FRACTION = 1.0
"""Eager attention materializes and masks the full s×s matrix."""



def _where(cond: Any, x: Num, y: Num) -> Num:
    out: npt.NDArray[np.float64] = np.where(cond, x, y).astype(np.float64)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True, kw_only=True, slots=True)
class OpFlops:
    """FLOPs split by kind of operation, so each kind can be timed at its own efficiency."""

    attention_proj_flop: Num = 0.0
    """Q, K, V and output projections (MLA: the low-rank down and up projections too)."""
    attention_core_flop: Num = 0.0
    """Scores Q·K^T and attention over values P·V."""
    mlp_flop: Num = 0.0
    """Dense MLP, shared experts, and the multi-token-prediction input projection."""
    expert_flop: Num = 0.0
    """Routed experts (top_k per token): grouped GEMMs of thin shapes, timed apart (estimate.moe)."""
    router_flop: Num = 0.0
    lm_head_flop: Num = 0.0
    adapter_flop: Num = 0.0
    """LoRA A and B matrices (0 for full training)."""
    linear_core_flop: Num = 0.0
    """The chunked gated delta rule of a hybrid model's linear-attention layers (estimate.linear_attention)."""

    @property
    def total_flop(self) -> Num:
        return (self.attention_proj_flop + self.attention_core_flop + self.mlp_flop + self.expert_flop
                + self.router_flop + self.lm_head_flop + self.adapter_flop + self.linear_core_flop)

    def __add__(self, other: OpFlops) -> OpFlops:
        return OpFlops(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def times(self, factor: NumIn) -> OpFlops:
        """Every kind multiplied by `factor`."""
        k = _num(factor)
        return OpFlops(**{f.name: getattr(self, f.name) * k for f in fields(self)})


@dataclass(frozen=True, kw_only=True, slots=True)
class StepFlops:
    """FLOPs of forward, backward and recomputation for one micro-batch (whole model or one GPU)."""

    forward: OpFlops
    backward: OpFlops
    recompute: OpFlops
    """Extra forward work: activation recomputation and FlashAttention's backward score recompute."""
    tokens: Num
    """Tokens this count covers (micro_batch·seq_len, divided by cp per GPU)."""

    @property
    def model_flop(self) -> Num:
        """Forward + backward without recomputation: the MFU numerator."""
        return self.forward.total_flop + self.backward.total_flop

    @property
    def hardware_flop(self) -> Num:
        """Everything executed, recomputation included: the HFU numerator."""
        return self.model_flop + self.recompute.total_flop


def causal_fraction_for(attention: str) -> float:
    """Default share of the causal score matrix computed: 0.5 for flash, 1.0 for eager.

    FlashAttention skips key blocks entirely above the diagonal (Dao 2023, arXiv 2307.08691,
    Sec. 3.1.1); eager attention computes the full matrix and masks it afterwards.
    """
    if attention == "flash":
        return FLASH_CAUSAL_FRACTION
    if attention == "eager":
        return EAGER_CAUSAL_FRACTION
    raise InvalidSpec(f"unknown attention implementation '{attention}'; choose flash or eager")


def window_pair_share(seq_len: NumIn, window: NumIn) -> Num:
    """Share of the causal query-key pairs that a sliding window of `window` tokens keeps (0 = full).

    Causal attention over s tokens has s²/2 pairs; with a window w < s query i sees min(i + 1, w) keys,
    s·w - w²/2 pairs in all (Beltagy et al. 2020, Longformer, arXiv 2004.05150, Sec. 3.1: O(s·w) for a
    band of width w), so the share is 2·x - x² with x = w/s, and 1 when w >= s. FlashAttention-2 skips the
    key blocks outside the band as it skips those above the diagonal (window_size, flash-attn 2.3); the
    partial blocks at the band's edge, like the diagonal blocks, are left out.
    """
    s, w = _num(seq_len), _num(window)
    x = np.minimum(w / s, 1.0)
    return _where((w > 0) & (w < s), 2.0 * x - x * x, 1.0)


def attention_window_scale(arch: Architecture, seq_len: NumIn, job: Job) -> Num:
    """Mean over the model's layers of window_pair_share: what the attention core costs against full causal
    attention in every layer. 1 without sliding windows, and 1 when the kernel does not skip the blocks
    outside the band (skips_window_blocks: eager attention computes the whole s×s matrix and masks it; SDPA
    gets the window as a mask). Taken as the same for each pipeline stage (Gemma 3's 5:1 pattern spreads
    evenly over stages of six or more layers); a last-stage MTP layer counts as the model's mean.
    DeepSeek Sparse Attention keeps window_pair_share(s, topk) on every layer: query i attends to min(i + 1, topk)
    keys, as many as a window of topk tokens keeps (on a stack with sparse kernels, the same test).
    Left out: a dense mask makes SDPA compute the whole matrix, not the causal half rigplan counts."""
    if arch.sparse_attention is not None and sparse_attention.runs_sparse_kernels(arch, job):
        return window_pair_share(seq_len, arch.sparse_attention.topk)
    if not arch.attention_windows or not skips_window_blocks(job):
        return 1.0
    total: Num = 0.0
    for window, layers in arch.window_counts.items():
        total = total + window_pair_share(seq_len, window) * layers
    return total / arch.num_layers


def paper_flop_per_token(arch: Architecture, seq_len: NumIn) -> Num:
    """Training FLOPs per token as published MFU figures count them: 6·N + 6·l·s·a·(d_qk + d_v).

    PaLM (Chowdhery et al. 2022, arXiv 2204.02311, Appendix B) defines MFU with 6·N + 12·L·H·Q·T per
    token (H heads of width Q, T the sequence length); Megatron-LM (Narayanan et al. 2021, arXiv 2104.04473,
    Sec. 5.1: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))), torchtitan (utils.get_num_flop_per_token: 6·N + 12·l·h·q·t
    with N without the input embedding) and the Llama 3 paper's 38-43% (Sec. 3.3.2, Table 4) count the same.
    N is count_params(...).active_matmul: the weights that meet a matmul (routed experts at top-k, the output
    head once, the input embedding lookup not). The attention term is the full s×s score matrix: no causal
    half, no sliding window, no recompute, which is why it differs from rigplan's own `mfu` (what the
    kernels compute: flash attention skips the masked half and the blocks outside a window). A hybrid model's
    attention term counts its full-attention layers, and its linear-attention layers add Megatron-LM's nominal
    3·2·4·H_v·d_v² (training.py's num_floating_point_operations), Mamba-2 layers its 3·7·d_in·N (mamba_layer_flops,
    whose d_in is 2h; rigplan takes the layer's heads x head channels).
    """
    d_qk, d_v = _core_widths(arch)
    attention_layers = arch.num_layers - arch.num_linear_attention_layers
    linear: Num = 0.0
    la = arch.linear_attention
    if la is not None and la.kind == "mamba2":  # Megatron-LM's mamba_layer_flops scan term, 7·d_in·N a token
        linear = 3.0 * 7.0 * la.value_dim * la.key_head_dim * arch.num_linear_attention_layers
    elif la is not None:  # Megatron-LM's nominal 4·H_v·d_v² multiply-adds per token and layer
        linear = 6.0 * 2.0 * 4.0 * la.num_value_heads * la.value_head_dim ** 2 * arch.num_linear_attention_layers
    return 6.0 * count_params(arch).active_matmul + linear + 6.0 * attention_layers * _num(seq_len) * (
        arch.num_heads * (d_qk + d_v))


def _mlp_matmuls(arch: Architecture) -> int:
    return 3 if arch.mlp == "gated" else 2


def _core_widths(arch: Architecture, sparse: bool = False) -> tuple[int, int]:
    """Per-head widths of the score (q·k) and value products; `sparse`: DeepSeek Sparse Attention's MLA in MQA mode
    (sparse_attention.mqa_core_widths)."""
    if sparse and arch.sparse_attention is not None:
        return sparse_attention.mqa_core_widths(arch)
    if arch.mla is not None:
        return arch.mla.qk_head_dim, arch.mla.v_head_dim
    return arch.dim_per_head, arch.dim_per_head


def attention_head_dims(arch: Architecture) -> tuple[float, float]:
    """(query-key, value) head dimensions of the attention core: MLA's (d_nope + d_rope, d_v), else d_head."""
    d_qk, d_v = _core_widths(arch)
    return float(d_qk), float(d_v)


def layer_forward_flops(
    arch: Architecture, *, seq_len: NumIn, micro_batch: NumIn, moe: bool,
    causal_fraction: NumIn = FLASH_CAUSAL_FRACTION, tp: NumIn = 1, cp: NumIn = 1,
    sequence_parallel: bool = False, window_scale: NumIn = 1.0, full_attention: bool = False, sparse: bool = False,
) -> OpFlops:
    """Forward FLOPs of one decoder layer on one GPU, for b sequences of s tokens (T = b·s/cp).

    Attention projections (GQA: g kv heads of width d; a query heads):
      2·T·h·a·d (Q) + 2·2·T·h·g·d (K, V) + 2·T·a·d·h (out); an output gate (Qwen3-Next) 2·T·h·a·d more.
    A hybrid model's linear-attention layers (estimate.linear_attention): their projections and chunked rule
      (linear_core_flop) in place of attention, each averaged over the layers by their share (a layer of the
      model's mix; full_attention: a full-attention layer, as an MTP module's).
    MLA (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1): 2·T·(h·r_q + r_q·a·d_qk) or 2·T·h·a·d_qk (Q),
      2·T·h·(r_kv + d_rope) (KV down), 2·T·r_kv·a·(d_nope + d_v) (KV up), 2·T·a·d_v·h (out).
    Core: 2·b·s²·a·d_qk (scores) + 2·b·s²·a·d_v (P·V), times causal_fraction and window_scale (the
      share of causal pairs a sliding window keeps, attention_window_scale), divided by cp. sparse: DeepSeek Sparse
      Attention's MQA-mode widths (d_qk = r_kv + d_rope, d_v = r_kv); its indexer is counted by _indexer_flops.
    MLP: gated 3·2·T·h·f, plain 2·2·T·h·f, times a dense model's MLP blocks per layer
      (Architecture.ffn_blocks_per_layer: a Nemotron-H layer may have none or several). MoE layer: top_k routed experts
      (expert_ffn, in expert_flop) plus shared experts (mlp_flop), and the router 2·T·h·E. A latent MoE's routed
      experts work at its latent width l in place of h, and its two projections h -> l -> h add 2·2·T·h·l to
      mlp_flop (split by tp as the shared experts are).
    Tensor parallel (Megatron-LM, Shoeybi et al. 2019, arXiv 1909.08053, Sec. 3) divides heads, MLP
    and experts by tp; K/V projections of fewer kv heads than tp are replicated (max(g/tp, 1) heads
    per rank); MLA down-projections are replicated (Megatron-Core MLA); the router is split only with
    sequence parallelism. Context parallel divides tokens and, causal load-balanced, the core.
    Routed-expert FLOPs per GPU are the balanced share: however the experts are split (ep x etp x
    expert-dp, Megatron-Core parallel folding) a stage's GPUs share its token copies evenly; the
    busiest rank's extra load (imbalance) is time, not work, and estimate.moe charges it.
    Left out: element-wise ops, uneven head splits.
    """
    s, b, t, c, cf = _num(seq_len), _num(micro_batch), _num(tp), _num(cp), _num(causal_fraction)
    tokens = b * s / c
    h, a = arch.hidden, arch.num_heads
    if arch.mla is not None:
        m = arch.mla
        q_rep = 2.0 * tokens * h * m.q_lora_rank if m.q_lora_rank else 0.0 * tokens
        q_split = 2.0 * tokens * (m.q_lora_rank or h) * a * m.qk_head_dim
        kv_rep = 2.0 * tokens * h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_split = 2.0 * tokens * m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim)
        out = 2.0 * tokens * a * m.v_head_dim * h
        proj = q_rep + kv_rep + (q_split + kv_split + out) / t
    else:
        d, g = arch.dim_per_head, arch.kv_heads
        q_and_out = (3.0 if arch.attention_output_gate else 2.0) * 2.0 * tokens * h * a * d / t
        kv = 2.0 * 2.0 * tokens * h * d * np.maximum(g / t, 1.0)
        proj = q_and_out + kv
    d_qk, d_v = _core_widths(arch, sparse)
    core = 2.0 * b * s * s * a * (d_qk + d_v) * cf * _num(window_scale) / (c * t)
    linear_core: Num = 0.0  # a scalar where no layer is linear: the search adds it to every layout for free
    if arch.linear_attention is not None and not full_attention:
        proj = linear_attention.blend(arch, proj, tokens * linear_attention.projection_flop_per_token(arch) / t)
        core = linear_attention.blend(arch, core, 0.0 * core)
        linear_core = arch.linear_attention_share * tokens * linear_attention.core_flop_per_token(arch)[0] / t
    ffn_fwd = 2.0 * tokens * h * _mlp_matmuls(arch)
    router: Num = 0.0
    if moe and arch.moe is not None:
        mo = arch.moe
        mlp = (ffn_fwd * mo.num_shared_experts * mo.shared_ffn + 2.0 * 2.0 * tokens * h * mo.latent_size) / t
        experts = ffn_fwd * arch.expert_hidden / h * mo.top_k * mo.expert_ffn / t
        router = 2.0 * tokens * h * mo.num_experts / (t if sequence_parallel else 1.0)
    else:  # on the model's mean: a dense model's layers without a feed-forward block (ffn_blocks_per_layer) have none
        mlp = ffn_fwd * arch.ffn * arch.ffn_blocks_per_layer / t
        experts = 0.0 * mlp
    return OpFlops(attention_proj_flop=_num(proj), attention_core_flop=core, mlp_flop=mlp,
                   expert_flop=experts, router_flop=router, linear_core_flop=linear_core)


def mtp_forward_flops(
    arch: Architecture, *, seq_len: NumIn, micro_batch: NumIn, causal_fraction: NumIn = FLASH_CAUSAL_FRACTION,
    tp: NumIn = 1, cp: NumIn = 1, sequence_parallel: bool = False, window_scale: NumIn = 1.0, sparse: bool = False,
) -> OpFlops:
    """One multi-token-prediction module, forward (DeepSeek-V3, arXiv 2412.19437, Sec. 2.2): the
    projection of [norm(h); norm(emb)] 2h -> h (2·T·2h·h), one transformer layer of the MoE kind and
    the shared output head once more (2·T·h·V). 0 for a model without MTP."""
    if arch.moe is None or not arch.moe.mtp_layers:
        return OpFlops()
    kw: dict[str, Any] = {"seq_len": seq_len, "micro_batch": micro_batch, "tp": tp, "cp": cp}
    layer = layer_forward_flops(arch, moe=arch.num_moe_layers > 0, causal_fraction=causal_fraction,
                                sequence_parallel=sequence_parallel, window_scale=window_scale, full_attention=True,
                                sparse=sparse, **kw)
    tokens = _num(micro_batch) * _num(seq_len) / _num(cp)
    proj = 2.0 * tokens * 2 * arch.hidden * arch.hidden / _num(tp)
    head = lm_head_forward_flop(arch, **kw)
    return (layer + OpFlops(mlp_flop=proj, lm_head_flop=head)).times(arch.moe.mtp_layers)


def lm_head_forward_flop(arch: Architecture, *, seq_len: NumIn, micro_batch: NumIn,
                         tp: NumIn = 1, cp: NumIn = 1) -> Num:
    """2·T·h·V (output projection, vocab-parallel over tp); the embedding lookup is 0 FLOP."""
    tokens = _num(micro_batch) * _num(seq_len) / _num(cp)
    return 2.0 * tokens * arch.hidden * arch.vocab / _num(tp)


def _adapted_shapes(arch: Architecture, targets: tuple[str, ...], moe: bool, routed: bool = True,
                    transformers_modules: bool = True,
                    mlp_targets: tuple[str, ...] | None = None) -> list[tuple[int, int, float]]:
    """(in, out, copies per token) of each weight matrix a LoRA target name adapts; `routed` False leaves out the
    routed experts' (peft's parameter adapters fold theirs into the weight, estimate.peft_experts). In a hybrid
    model the mixer's as the mean over the layers: the attention targets' on the full-attention share, those of
    linear_attention.lora_linears on the linear-attention share. `mlp_targets` (default `targets`) adapt the dense
    MLP and the shared experts (peft_experts.module_mlp_targets)."""
    h = arch.hidden
    shapes: list[tuple[int, int, float]] = [(k, n, 1.0) for k, n in adapted_attention_shapes(arch, targets)]
    if arch.linear_attention is not None:
        share = arch.linear_attention_share
        column, row = linear_attention.lora_linears(arch, targets, transformers_modules)
        shapes = [(k, n, copies * (1.0 - share)) for k, n, copies in shapes] + [
            (k, n, share) for k, n in column + row]
    modules = targets if mlp_targets is None else mlp_targets
    ffns: list[tuple[int, float, int, tuple[str, ...]]] = [(arch.ffn, arch.ffn_blocks_per_layer, h, modules)]
    if moe and arch.moe is not None:
        ffns = [(arch.moe.expert_ffn, arch.moe.top_k, arch.expert_hidden, targets)] if routed else []
        if arch.moe.num_shared_experts:
            ffns.append((arch.moe.shared_ffn, arch.moe.num_shared_experts, h, modules))
    for f, copies, width, names in ffns:
        if "gate" in names and arch.mlp == "gated":
            shapes.append((width, f, copies))
        if "up" in names:
            shapes.append((width, f, copies))
        if "down" in names:
            shapes.append((f, width, copies))
    return shapes


def adapter_forward_flop(
    arch: Architecture, *, seq_len: NumIn, micro_batch: NumIn, rank: int, targets: tuple[str, ...],
    moe: bool, tp: NumIn = 1, cp: NumIn = 1, routed: bool = True, transformers_modules: bool = True,
    mlp_targets: tuple[str, ...] | None = None,
) -> Num:
    """LoRA adapters of one layer, forward: Σ over adapted k×n weights of 2·T·r·(k + n).

    LoRA (Hu et al. 2021, arXiv 2106.09685, Sec. 4.1): y = W·x + B·A·x with A r×k, B n×r. In MoE
    layers gate/up/down adapt the top_k routed and the shared experts a token passes through; MLA:
    'q' adapts the query path, 'k' or 'v' the KV down and up projections. Divided by tp (the
    adapters are taken as split with their base layer). Left out: dropout and scaling (element-wise).
    """
    tokens = _num(micro_batch) * _num(seq_len) / _num(cp)
    per_token = sum(2 * rank * (k + n) * copies
                    for k, n, copies in _adapted_shapes(arch, targets, moe, routed, transformers_modules, mlp_targets))
    return tokens * float(per_token) / _num(tp)


def op_recompute_matmul_share(arch: Architecture) -> float:
    """Share of a layer's projection and MLP FLOPs recomputed by torchtitan's per-op checkpointing.

    torchtitan saves every other matmul output (the 1st, 3rd, ...) and recomputes the rest; in a
    Llama layer the recomputed ones are K, the output projection and the MLP up projection. In an MoE
    model the alternation runs over the attention projections and the shared experts' (or a dense
    layer's) matmuls: the routed experts run torch._grouped_mm and the router gate is force-recomputed,
    neither counted (ROUTED_EXPERTS_OP_RECOMPUTED).
    """
    h = arch.hidden
    if arch.mla is not None:
        m = arch.mla
        weights = [h * m.q_lora_rank, m.q_lora_rank * arch.num_heads * m.qk_head_dim] if m.q_lora_rank else [
            h * arch.num_heads * m.qk_head_dim]
        weights += [h * (m.kv_lora_rank + m.qk_rope_head_dim),
                    m.kv_lora_rank * arch.num_heads * (m.qk_nope_head_dim + m.v_head_dim),
                    arch.num_heads * m.v_head_dim * h]
    else:
        q_w = arch.num_heads * arch.dim_per_head
        kv_w = arch.kv_heads * arch.dim_per_head
        weights = [h * q_w, h * kv_w, h * kv_w, q_w * h]
    f = (arch.moe.num_shared_experts * arch.moe.shared_ffn if arch.moe is not None else arch.ffn)
    if f:
        weights += [h * f, h * f, f * h] if arch.mlp == "gated" else [h * f, f * h]
    return sum(w for i, w in enumerate(weights) if i % 2 == 1) / sum(weights)


ROUTED_EXPERTS_OP_RECOMPUTED = 1.0
"""Share of the routed experts' and the router's forward FLOPs torchtitan's per-op checkpointing runs again:
all of it. Its save list (_op_sac_save_list in torchtitan/models/{gpt_oss,deepseek_v3}/infra/parallelize.py,
2026) holds aten.mm, the attention kernels, max and the collectives, not aten._grouped_mm, which the routed
experts run, and ActivationCheckpoint.per_op_sac_force_recompute_mm_shapes_by_fqns defaults to
['moe.router.gate']. With Job.op_save_grouped_mm the grouped GEMMs are saved and not run again (0 for the
experts); the router gate stays force-recomputed."""


def _stage_flops(
    arch: Architecture, job: Job, *, seq_len: Num, micro_batch: Num, causal_fraction: Num,
    flash_backward_recompute: bool, n_dense: Num, n_moe: Num, lm_head: Num,
    tp: Num, cp: Num, sequence_parallel: bool, recompute_fraction: Num = 1.0,
) -> StepFlops:
    """`lm_head` is 1 on the stage holding the output head (and the MTP modules), 0 elsewhere."""
    kw: dict[str, Any] = {"seq_len": seq_len, "micro_batch": micro_batch, "tp": tp, "cp": cp}
    sparse = sparse_attention.runs_sparse_kernels(arch, job)
    core_kw = {**kw, "causal_fraction": causal_fraction, "sequence_parallel": sequence_parallel,
               "window_scale": attention_window_scale(arch, seq_len, job), "sparse": sparse}
    dense = layer_forward_flops(arch, moe=False, **core_kw)
    layers = dense.times(n_dense)
    moe_layer = OpFlops()
    if arch.moe is not None:
        moe_layer = layer_forward_flops(arch, moe=True, **core_kw)
        layers = layers + moe_layer.times(n_moe)
    if job.is_peft:
        modules = linear_attention.transformers_modules(job)
        mlp = peft_experts.module_mlp_targets(arch, job)
        ad_dense = adapter_forward_flop(arch, rank=job.lora_rank, targets=job.lora_targets, moe=False,
                                        transformers_modules=modules, mlp_targets=mlp, **kw)
        ad_moe = adapter_forward_flop(arch, rank=job.lora_rank, targets=job.lora_targets, moe=True,
                                      routed=not peft_experts.applies(arch, job), transformers_modules=modules,
                                      mlp_targets=mlp, **kw)
        layers = layers + OpFlops(adapter_flop=ad_dense * n_dense + ad_moe * n_moe)
    head = OpFlops(lm_head_flop=lm_head_forward_flop(arch, **kw) * lm_head)
    layers = layers + mtp_forward_flops(arch, **core_kw).times(lm_head)
    mtp = float(arch.moe.mtp_layers) if arch.moe is not None else 0.0
    # layers that run an indexer: the stage's share of the model's, and a DSA model's MTP layers with the head
    indexers = ((n_dense + n_moe) * sparse_attention.indexer_share(arch) + mtp * lm_head
                if arch.sparse_attention is not None else 0.0)
    indexer_fwd, indexer_bwd = _indexer_flops(arch, job, seq_len=seq_len, micro_batch=micro_batch,
                                              causal_fraction=causal_fraction, cp=cp)
    forward = layers + head + indexer_fwd.times(indexers)
    if job.is_peft:
        # Frozen base weights: input gradient only (1× forward); adapters and the core: 2×.
        backward = (layers + head).times(1.0) + OpFlops(attention_core_flop=layers.attention_core_flop,
                                                        adapter_flop=forward.adapter_flop,
                                                        linear_core_flop=forward.linear_core_flop)
        # peft's parameter adapters: the wrapped expert weights' full weight gradient (estimate.peft_experts)
        backward = backward + OpFlops(expert_flop=layers.expert_flop * peft_experts.wrapped_share(arch, job))
    else:
        backward = (layers + head).times(2.0) + indexer_bwd.times(indexers)
    if job.recompute == "full":
        recompute = (layers + indexer_fwd.times(indexers)).times(recompute_fraction)
    elif job.recompute == "selective":
        recompute = OpFlops(attention_core_flop=layers.attention_core_flop)
    elif job.recompute == "op":
        share = op_recompute_matmul_share(arch)
        experts = 0.0 if job.op_save_grouped_mm else ROUTED_EXPERTS_OP_RECOMPUTED
        recompute = OpFlops(attention_proj_flop=layers.attention_proj_flop * share,
                            mlp_flop=layers.mlp_flop * share,
                            expert_flop=layers.expert_flop * experts,
                            router_flop=layers.router_flop * ROUTED_EXPERTS_OP_RECOMPUTED)
    else:
        recompute = OpFlops()
    # Megatron's per-module recompute (estimate.recompute_modules): MLA's up-projections on every layer,
    # the dense layers' MLP
    if recompute_modules.mla_up_proj_recomputed(arch, job):
        up = recompute_modules.mla_up_proj_flop_per_token(arch) * micro_batch * seq_len / (cp * tp)
        recompute = recompute + OpFlops(attention_proj_flop=up * (n_dense + n_moe))
    if recompute_modules.dense_mlp_recomputed(job):
        recompute = recompute + OpFlops(mlp_flop=dense.mlp_flop * n_dense)
    if recompute_modules.moe_layer_recomputed(arch, job):  # the MoE block: router, routed and shared experts
        recompute = recompute + OpFlops(expert_flop=moe_layer.expert_flop, router_flop=moe_layer.router_flop,
                                        mlp_flop=moe_layer.mlp_flop).times(n_moe)
    if arch.linear_attention is not None:  # the chunked rule's backward runs its state pass again
        forward_core, again = linear_attention.core_flop_per_token(arch)
        recompute = recompute + OpFlops(linear_core_flop=layers.linear_core_flop * again / forward_core)
    if flash_backward_recompute and job.attention == "flash":
        d_qk, d_v = _core_widths(arch, sparse)
        scores = layers.attention_core_flop * d_qk / (d_qk + d_v)
        recompute = recompute + OpFlops(attention_core_flop=scores)
        if sparse_attention.trains_indexer(arch, job):  # the KL target: the scores over the selected keys
            indexed = indexers / np.maximum(n_dense + n_moe + mtp * lm_head, 1.0)
            recompute = recompute + OpFlops(attention_core_flop=scores * indexed)
    return StepFlops(forward=forward, backward=backward, recompute=recompute,
                     tokens=micro_batch * seq_len / cp)


def _indexer_flops(arch: Architecture, job: Job, *, seq_len: Num, micro_batch: Num, causal_fraction: Num,
                   cp: Num) -> tuple[OpFlops, OpFlops]:
    """Forward and backward FLOPs of one DeepSeek Sparse Attention indexer on one GPU (estimate.sparse_attention);
    zero without one.

    Forward: its projections T·2·(r_q·H_I·d_I + h·d_I + h·H_I) (attention_proj_flop) and its scores over every
    causal pair, b·s²·causal_fraction/cp·2·H_I·(d_I + 1) (attention_core_flop: a fused attention-like kernel), on
    every tensor-parallel rank (the indexer is not split: Megatron-Core gathers its sequence-parallel input).
    Backward, only where the indexer trains (sparse_attention.trains_indexer): its input is detached, so the
    projections' weight gradients (1× forward) and the scores' gradients over the selected pairs only,
    2 × b·(s²/2)·window_pair_share(s, topk)/cp·2·H_I·(d_I + 1). Left out: the top-k selection itself, the ReLU."""
    spec = arch.sparse_attention
    if spec is None:
        return OpFlops(), OpFlops()
    tokens = micro_batch * seq_len / cp
    proj = tokens * sparse_attention.projection_flop_per_token(arch)
    per_pair = sparse_attention.score_flop_per_pair(arch)
    forward = OpFlops(attention_proj_flop=proj,
                      attention_core_flop=micro_batch * seq_len * seq_len * causal_fraction / cp * per_pair)
    if not sparse_attention.trains_indexer(arch, job):
        return forward, OpFlops()
    selected = micro_batch * seq_len * seq_len * FLASH_CAUSAL_FRACTION * window_pair_share(seq_len, spec.topk) / cp
    return forward, OpFlops(attention_proj_flop=proj, attention_core_flop=2.0 * selected * per_pair)


def micro_batch_flops(
    arch: Architecture, job: Job, *, seq_len: NumIn | None = None, micro_batch: NumIn | None = None,
    causal_fraction: NumIn | None = None, flash_backward_recompute: bool = True,
    recompute_fraction: NumIn = 1.0,
) -> StepFlops:
    """FLOPs of one micro-batch through the whole model (all layers, LM head), no parallelism.

    Forward: Σ layers of layer_forward_flops + LM head (+ adapters). Backward: 2× forward for every
    matmul (input and weight gradients; Narayanan et al. 2021, arXiv 2104.04473, Sec. 5.1); LoRA and
    QLoRA: frozen base matmuls 1× (input gradient only), attention core and adapters 2×.
    Recompute (hardware only): full = one more forward of every layer, LM head excluded; selective
    = the attention core again (Korthikanti et al. 2022, arXiv 2205.05198, Sec. 5 "Selective
    Activation Recomputation"); with flash attention the backward kernel also recomputes the scores
    Q·K^T (flash_backward_recompute; the FlashAttention benchmarks count backward = 2.5× forward,
    Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py). Megatron's per-module recompute
    (estimate.recompute_modules) adds MLA's q and kv up-projections on every layer (mla_up_proj), the dense
    layers' MLP (mlp) and the MoE layers' router, routed and shared experts (moe).
    For a GPT-style model with eager attention this reproduces Narayanan et al. Sec. 5.1:
    model = 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)); full recompute: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
    seq_len and micro_batch default to the job's; pass arrays to sweep them.
    """
    s = _num(job.seq_len if seq_len is None else seq_len)
    b = _num(job.micro_batch if micro_batch is None else micro_batch)
    cf = _num(causal_fraction_for(job.attention) if causal_fraction is None else causal_fraction)
    return _stage_flops(
        arch, job, seq_len=s, micro_batch=b, causal_fraction=cf,
        flash_backward_recompute=flash_backward_recompute,
        n_dense=float(arch.num_dense_layers), n_moe=float(arch.num_moe_layers), lm_head=1.0,
        tp=1.0, cp=1.0, sequence_parallel=False, recompute_fraction=_num(recompute_fraction),
    )


def _pick(cond: Any, x: StepFlops, y: StepFlops) -> StepFlops:
    def op(p: OpFlops, q: OpFlops) -> OpFlops:
        return OpFlops(**{f.name: _where(cond, getattr(p, f.name), getattr(q, f.name)) for f in fields(p)})
    return StepFlops(forward=op(x.forward, y.forward), backward=op(x.backward, y.backward),
                     recompute=op(x.recompute, y.recompute), tokens=_where(cond, x.tokens, y.tokens))


def stage_micro_batch_flops(
    arch: Architecture, job: Job, layout: Layout, *, layers: NumIn, dense_layers: NumIn, lm_head: NumIn,
    seq_len: NumIn | None = None, micro_batch: NumIn | None = None, tp: NumIn | None = None,
    cp: NumIn | None = None, causal_fraction: NumIn | None = None, flash_backward_recompute: bool = True,
    recompute_fraction: NumIn = 1.0,
) -> StepFlops:
    """FLOPs one GPU of a pipeline stage with `layers` decoder layers (`dense_layers` of them dense,
    the rest MoE) executes for one micro-batch; lm_head = 1 where the stage holds the LM head.
    recompute_fraction: share of the layers a full recompute runs again (estimate.recompute).

    The same counts as gpu_micro_batch_flops for a stage that domain.stages sized; the embedding
    lookup is 0 FLOP. Arguments may be numpy arrays.
    """
    s = _num(job.seq_len if seq_len is None else seq_len)
    b = _num(job.micro_batch if micro_batch is None else micro_batch)
    cf = _num(causal_fraction_for(job.attention) if causal_fraction is None else causal_fraction)
    n, d = _num(layers), _num(dense_layers)
    return _stage_flops(arch, job, seq_len=s, micro_batch=b, causal_fraction=cf,
                        flash_backward_recompute=flash_backward_recompute, n_dense=d, n_moe=n - d,
                        lm_head=_num(lm_head), tp=_num(layout.tp if tp is None else tp),
                        cp=_num(layout.cp if cp is None else cp), sequence_parallel=layout.sequence_parallel,
                        recompute_fraction=_num(recompute_fraction))


def gpu_micro_batch_flops(
    arch: Architecture, job: Job, layout: Layout, *, seq_len: NumIn | None = None,
    micro_batch: NumIn | None = None, tp: NumIn | None = None, pp: NumIn | None = None,
    cp: NumIn | None = None, causal_fraction: NumIn | None = None, flash_backward_recompute: bool = True,
) -> StepFlops:
    """FLOPs one GPU executes for one micro-batch, on the busiest pipeline stage.

    tp and cp divide the work inside each layer (see layer_forward_flops); pp gives each stage
    ceil(l/pp) layers: the first stage holds the leading (dense) layers and the embedding (0 FLOP),
    the last stage the trailing (MoE) layers and the LM head; the stage with more hardware FLOPs is
    reported. dp does not divide a micro-batch: each replica runs its own. This is the ceil(l/pp)
    bound; step time sizes each stage with domain.stages and stage_micro_batch_flops instead.
    Degrees default to the layout's; pass arrays to sweep them.
    """
    s = _num(job.seq_len if seq_len is None else seq_len)
    b = _num(job.micro_batch if micro_batch is None else micro_batch)
    t = _num(layout.tp if tp is None else tp)
    p = _num(layout.pp if pp is None else pp)
    c = _num(layout.cp if cp is None else cp)
    cf = _num(causal_fraction_for(job.attention) if causal_fraction is None else causal_fraction)
    per_stage = np.ceil(np.asarray(arch.num_layers / p))
    n_stage: Num = float(per_stage) if per_stage.ndim == 0 else per_stage.astype(np.float64)
    n_moe_total, n_dense_total = float(arch.num_moe_layers), float(arch.num_dense_layers)
    common: dict[str, Any] = {
        "seq_len": s, "micro_batch": b, "causal_fraction": cf, "tp": t, "cp": c,
        "flash_backward_recompute": flash_backward_recompute,
        "sequence_parallel": layout.sequence_parallel,
    }
    last_moe = np.minimum(n_stage, n_moe_total)
    last = _stage_flops(arch, job, n_moe=_num(last_moe), n_dense=_num(n_stage - last_moe),
                        lm_head=1.0, **common)
    first_dense = np.minimum(n_stage, n_dense_total)
    first = _stage_flops(arch, job, n_dense=_num(first_dense), n_moe=_num(n_stage - first_dense),
                         lm_head=_where(p <= 1, 1.0, 0.0), **common)
    return _pick(last.hardware_flop >= first.hardware_flop, last, first)
