"""Recompute granularity: how many layers of a pipeline chunk are checkpointed and run again.

With --recompute full, three ways to choose the layers (Job.recompute_method, Job.recompute_layers = N):

    uniform (Megatron-Core --recompute-method uniform --recompute-num-layers N): the chunk's layers
        are grouped N at a time and only each group's input is saved; backward recomputes one group
        at a time, so every layer is recomputed, ceil(L/N) inputs are saved and the working set is N
        layers' full activations. N = 1 is plain full recompute.
    block (Megatron-Core --recompute-method block --recompute-num-layers N): the first N layers of
        each chunk (each virtual pipeline stage) are recomputed, one at a time, and the others keep
        all their activations; min(N, L) layers recomputed.
    every (torchtitan activation_checkpoint mode "selective" with selective_ac_option = N, its
        layer-level 'ac_freq'; torchtitan/models/llama3/infra/parallelize.py): every N-th layer of
        the rank's model part is checkpointed (the counter runs 1, 2, ... and layer i is wrapped
        when i % N == 0), so floor(L/N) layers; the rest keep all their activations.

Source for Megatron: megatron/core/transformer/transformer_block.py `_checkpointed_forward`
(uniform: checkpoint custom(l, l + N) per group; block: checkpoint layer l only when l < N).
Left out: Megatron's --distribute-saved-activations (saved inputs split over tp) and
recompute of only some modules (--recompute-modules), and which of a chunk's layers are MoE when
only some are recomputed (the recomputed share is taken as the chunk's mix).
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.domain.stages import DEFAULT_SPLIT, virtual_stage_layers
from rigplan.estimate import arrays as xp

Num = Any


def is_granular(job: Job) -> bool:
    """Whether only part of the layers is recomputed, or inputs are saved per group of layers."""
    return job.recompute == "full" and (job.recompute_method != "uniform" or job.recompute_layers != 1)


def recomputed_layers(job: Job, chunk_layers: Num, rank_layers: Num | None = None) -> Num:
    """Layers of one chunk (virtual stage) whose forward runs again in the backward pass.

    'every' counts along the rank's layers (torchtitan's counter runs over all its model parts), so
    a chunk gets its share of floor(rank_layers / N); without rank_layers the chunk is the rank.
    """
    layers = xp.asfloat(chunk_layers)
    if job.recompute != "full":
        return 0.0 * layers
    n = job.recompute_layers
    if job.recompute_method == "block":
        return xp.minimum(float(n), layers)
    if job.recompute_method == "every":
        if rank_layers is None:
            return xp.floor(layers / n)
        whole = xp.asfloat(rank_layers)
        return layers * xp.floor(whole / n) / xp.maximum(whole, 1.0)
    return layers


def saved_inputs(job: Job, chunk_layers: Num, rank_layers: Num | None = None) -> Num:
    """Layer inputs one chunk saves per micro-batch for its recomputed layers."""
    layers = xp.asfloat(chunk_layers)
    if job.recompute == "full" and job.recompute_method == "uniform":
        return xp.ceil(layers / job.recompute_layers)
    return recomputed_layers(job, layers, rank_layers)


def working_layers(job: Job, chunk_layers: Num) -> Num:
    """Layers whose full activations exist at once while one is being recomputed."""
    layers = xp.asfloat(chunk_layers)
    if job.recompute == "full" and job.recompute_method == "uniform":
        return xp.minimum(float(job.recompute_layers), xp.maximum(layers, 1.0))
    return xp.ones_like_float(layers)


def whole_model_recompute_fraction(arch: Architecture, job: Job, layout: Any, pp: Num, vpp: Num) -> Num:
    """Share of all layers a full recompute runs again, summed over the virtual stages (a step-time helper: numpy is
    imported here so that `rigplan memory` does not load it, tests/unit/test_one_layout_without_numpy.py)."""
    if not is_granular(job):
        return 1.0
    import numpy as np

    split = getattr(layout, "split", DEFAULT_SPLIT)
    pp_i, vpp_i = np.broadcast_arrays(np.rint(np.asarray(pp)).astype(np.int64),
                                      np.rint(np.asarray(vpp)).astype(np.int64))
    out = np.ones(pp_i.shape)
    for p_, v_ in {(int(a), int(b)) for a, b in zip(pp_i.ravel(), vpp_i.ravel(), strict=True)}:
        counts = np.asarray(virtual_stage_layers(split, arch.num_layers, p_, v_))
        per_rank = np.asarray([counts[r::p_].sum() for r in range(p_)])
        redone = float(np.sum(recomputed_layers(job, counts, per_rank[np.arange(counts.size) % p_])))
        out[(pp_i == p_) & (vpp_i == v_)] = redone / arch.num_layers
    return float(out) if out.ndim == 0 else out
