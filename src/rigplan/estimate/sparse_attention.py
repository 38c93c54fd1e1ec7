"""DeepSeek Sparse Attention (DSA): the lightning indexer's weights, FLOPs and saved bytes, and the width of the
sparse attention core (DeepSeek-V3.2, arXiv 2512.02556, Sec. 2; GLM-5's glm_moe_dsa).

The indexer of a layer projects MLA's query latent c_q (q_lora_rank r_q wide) to H_I query heads of d_I, the
hidden state to one key of d_I (LayerNorm with a bias after it) and to H_I head weights; it scores every earlier
token, I(t, s) = Σ_j w(t, j)·ReLU(q_I(t, j)·k_I(s)), and the query attends to its topk best keys only. The
indexer's input is detached from the model's graph: it learns from its own loss, a KL divergence to the main
attention's distribution over the selected keys (summed over heads), so its backward runs over the selected pairs
only and reaches its own weights only. The sparse core runs MLA in its MQA mode (the paper's Sec. 2.1: each latent
key-value entry, kv_lora_rank + rope dims, shared by all query heads; Megatron-Core's DSAttention takes the
absorbed layout for its fused kernels). Used by estimate.flops, estimate.params and estimate.activations.
"""

from __future__ import annotations

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate.band_kernels import skips_window_blocks

INDEX_BYTES = 4
"""Bytes of one selected key's index: int32, as the sparse MLA kernels take them (DeepSeek's FlashMLA sparse
prefill and decode kernels, `indices` int32)."""


def runs_sparse_kernels(arch: Architecture, job: Job) -> bool:
    """Whether this job runs DeepSeek Sparse Attention sparsely: a DSA model on a stack whose attention kernels skip
    the key blocks they are not given (band_kernels.skips_window_blocks: fused kernels, FlashAttention, cuDNN).
    transformers attends through a dense mask instead. Context parallelism then all-gathers the keys rather than
    passing blocks round a ring (Megatron-Core's DSAttention: the selected keys may be anywhere in the sequence)."""
    return arch.sparse_attention is not None and skips_window_blocks(job)


def indexer_params(arch: Architecture) -> int:
    """One layer's indexer: wq_b r_q×H_I·d_I, wk h×d_I, k_norm LayerNorm 2·d_I, weights_proj h×H_I (transformers'
    DeepseekV32Indexer and GlmMoeDsaIndexer); 0 without sparse attention."""
    sparse, mla = arch.sparse_attention, arch.mla
    if sparse is None or mla is None:
        return 0
    heads, dim = sparse.indexer_heads, sparse.indexer_head_dim
    return mla.q_lora_rank * heads * dim + arch.hidden * dim + 2 * dim + arch.hidden * heads


def indexer_share(arch: Architecture) -> float:
    """Share of the layers that run their own indexer (GLM's index sharing reuses the top-k on the others)."""
    sparse = arch.sparse_attention
    if sparse is None:
        return 0.0
    return sparse.indexer_count(arch.num_layers) / arch.num_layers


def mqa_core_widths(arch: Architecture) -> tuple[int, int]:
    """(query-key, value) widths per head of MLA in MQA mode: the latent and rope dims (DeepSeek-V3.2: 512 + 64),
    and the latent (512), where the MHA mode has d_nope + d_rope and d_v (192 and 128)."""
    assert arch.mla is not None
    return arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim, arch.mla.kv_lora_rank


def projection_flop_per_token(arch: Architecture) -> float:
    """Forward FLOPs of the indexer's three projections for one token: 2·(r_q·H_I·d_I + h·d_I + h·H_I), twice its
    weights less k_norm's 2·d_I."""
    sparse = arch.sparse_attention
    if sparse is None:
        return 0.0
    return 2.0 * (indexer_params(arch) - 2 * sparse.indexer_head_dim)


def score_flop_per_pair(arch: Architecture) -> float:
    """Forward FLOPs of one query-key index score: H_I dot products of d_I (2·H_I·d_I) and their weighted sum
    (2·H_I); the ReLU and the top-k selection are not counted."""
    sparse = arch.sparse_attention
    if sparse is None:
        return 0.0
    return 2.0 * sparse.indexer_heads * (sparse.indexer_head_dim + 1)


def trains_indexer(arch: Architecture, job: Job) -> bool:
    """Whether the step trains the indexer (its KL loss, the main attention's scores over the selected keys as its
    target, and its backward): full training on a stack with sparse kernels. transformers runs the indexer under
    torch.no_grad and attends through a dense mask, and LoRA/QLoRA leave the indexer frozen."""
    return runs_sparse_kernels(arch, job) and not job.is_peft


def saved_bytes_per_token(arch: Architecture, job: Job) -> float:
    """Bytes one indexer layer keeps per token for the backward, on every tensor-parallel rank (Megatron-Core's
    indexer gathers the sequence-parallel input and runs whole on each rank): the selected keys' indices,
    topk·INDEX_BYTES, which the sparse core's backward reads; when the indexer trains, its queries, key and head
    weights, p·(H_I·d_I + d_I + H_I). 0 for a stack that attends through a dense mask (transformers: the mask,
    not counted here, takes their place)."""
    sparse = arch.sparse_attention
    if sparse is None or not runs_sparse_kernels(arch, job):
        return 0.0
    saved = float(sparse.topk * INDEX_BYTES)
    if trains_indexer(arch, job):
        heads, dim = sparse.indexer_heads, sparse.indexer_head_dim
        saved += job.compute_dtype_bytes * (heads * dim + dim + heads)
    return saved


def cp_gathered_width(arch: Architecture) -> float:
    """Elements per token that the CP all-gather moves: MLA's latent key in MQA mode (r_kv + d_rope: it is the value
    too) and, on the layers with an indexer of their own, the indexer's key d_I; in the backward their gradients are
    reduce-scattered back. Compare a ring's 2·a·d per token of per-head keys and values."""
    sparse, mla = arch.sparse_attention, arch.mla
    if sparse is None or mla is None:
        return 0.0
    return mla.kv_lora_rank + mla.qk_rope_head_dim + indexer_share(arch) * sparse.indexer_head_dim
