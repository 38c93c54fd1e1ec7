"""How fast the attention core runs over a model's layers: the kernel's efficiency at the keys each query walks,
weighted by each layer's FLOPs (sliding windows, DeepSeek Sparse Attention). Used by estimate.stage_time."""

from __future__ import annotations

from typing import Any

import numpy as np

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import sparse_attention
from rigplan.estimate.band_kernels import skips_window_blocks
from rigplan.estimate.efficiency import Efficiency, attention_efficiency
from rigplan.estimate.flops import window_pair_share

Num = Any


def attention_core_efficiency(arch: Architecture, job: Job, eff: Efficiency, kernel: str, cp: Num) -> Num:
    """Fraction of peak of the attention core over the model's layers.

    A kernel's efficiency grows with the keys each query block walks (efficiency.attention_efficiency, by
    sequence length for causal attention). Under ring context parallelism that is the rank's s/cp (all-to-all
    context parallelism attends over all s for heads/cp of the heads); in a
    sliding-window layer whose kernel skips the blocks outside the band it is min(w, s/cp), the same
    number of key blocks per query block as causal attention over w tokens. Layers are weighted by their
    FLOPs (window_pair_share): e = Σ F_l / Σ (F_l / e_l). Under DeepSeek Sparse Attention every query walks at
    most its top-k keys, min(topk, span), on every layer (on a stack with sparse kernels; the indexer's scores,
    timed with the core, walk all keys and are taken at the same rate).
    """
    span = job.seq_len if job.cp_comm_type == "a2a" else job.seq_len / cp
    head = float(arch.dim_per_head)
    if arch.sparse_attention is not None and sparse_attention.runs_sparse_kernels(arch, job):
        return attention_efficiency(eff, kernel, np.minimum(span, arch.sparse_attention.topk), head)
    if not arch.attention_windows or not skips_window_blocks(job):
        return attention_efficiency(eff, kernel, span, head)
    work: Num = 0.0
    time: Num = 0.0
    for window, layers in arch.window_counts.items():
        share = window_pair_share(job.seq_len, window) * layers
        keys = np.minimum(span, window) if window else span
        work = work + share
        time = time + share / attention_efficiency(eff, kernel, keys, head)
    return work / time
