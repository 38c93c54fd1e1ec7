"""Megatron-Core's allgather token dispatcher (MoEAllGatherTokenDispatcher, Megatron-LM's default
--moe-token-dispatcher-type): its collectives per MoE layer. Kept apart from estimate.moe, which times the other
dispatchers and calls this one for `moe_dispatcher` 'allgather'."""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate import comm
from rigplan.estimate.states import expert_tp_of

Num = Any

ALLGATHER_ROUTING_BYTES_PER_EXPERT = 1.0 + 2.0
"""Bytes per token and expert that the allgather dispatcher gathers beside the hidden states: the routing map (a
bool) and the routing probabilities, in the router's output dtype (bf16: the scores are cast back to the logits'
dtype, megatron/core/transformer/moe/moe_utils.py topk_softmax_with_capacity; fp32 with --moe-router-dtype fp32)."""


def allgather_dispatch_s(arch: Architecture, job: Job, *, tokens: Num, tp: Num, ep: Num, etp: Num, domain: int,
                         intra: comm.Tier, inter: comm.Tier, recomputed_share: Num) -> Num:
    """Seconds of one MoE layer's collectives for one micro-batch under Megatron-Core's allgather dispatcher
    (MoEAllGatherTokenDispatcher, megatron/core/transformer/moe/token_dispatcher.py; Megatron-LM's default
    --moe-token-dispatcher-type), on the busiest rank before any overlap.

    With T = tokens/tp tokens a rank and n = etp·ep ranks in the group that holds every expert once (contiguous
    ranks, etp fastest: min(n, domain) of them on one scale-up domain, `intra` placed so), token_dispatch
    all-gathers the routing map, the probabilities (n·T·E·ALLGATHER_ROUTING_BYTES_PER_EXPERT) and the hidden states
    (n·T·h in the compute dtype) over the group; token_combine reduce-scatters the unpermuted output of all n·T
    tokens (cast to the probabilities' dtype, the compute dtype by default) back to T. Backward, the gather's
    gradient is a reduce-scatter and the reduce-scatter's an all-gather of n·T·h, and the probabilities' gradient a
    reduce-scatter of n·T·E. A recomputed layer runs the forward's three again (recomputed_share). Every rank
    gathers every token, so the routing's imbalance does not stretch these (it does the experts'). Each collective
    is comm.hierarchical_all_gather_s of its gathered size (a reduce-scatter costs the same). 0 for a single rank.
    Left out: fp32 probabilities (--moe-router-dtype fp32), which double the combine's bytes."""
    n = xp.asfloat(ep) * xp.asfloat(etp)
    own = xp.asarray(tokens) / xp.asarray(tp)
    assert arch.moe is not None
    b = float(job.compute_dtype_bytes)
    per_domain = xp.minimum(n, float(domain))

    def collective(size: Num) -> Num:
        return comm.hierarchical_all_gather_s(size, n, per_domain, intra, inter)

    hidden = collective(own * n * arch.expert_hidden * b)
    forward = 2.0 * hidden + collective(own * n * arch.moe.num_experts * ALLGATHER_ROUTING_BYTES_PER_EXPERT)
    backward = 2.0 * hidden + collective(own * n * arch.moe.num_experts * b)
    return xp.where(n > 1, forward + backward + forward * xp.asfloat(recomputed_share), 0.0)


def allgather_buffer_bytes(arch: Architecture, job: Job, layout: Any) -> Num:
    """Bytes the allgather dispatcher holds while an MoE layer runs, forward and backward: the hidden states gathered
    from the n = etp·ep ranks (Megatron-Core's global memory buffer, use_global_buffer=True, one for every layer) and
    the unpermuted output of all n·T tokens before the reduce-scatter: 2·n·T·h in the compute dtype, T = b·s/(tp·cp)
    the micro-batch's tokens on a rank. 0 for a dense model, another dispatcher or a single rank. Left out: the
    gathered routing map and probabilities (n·T·E bytes each, E/h of the above)."""
    if arch.moe is None or job.moe_dispatcher != "allgather":
        return 0.0
    n = xp.asarray(layout.ep) * xp.asarray(expert_tp_of(layout))
    own = job.micro_batch * job.seq_len / (xp.asarray(layout.tp) * xp.asarray(layout.cp))
    return xp.where(n > 1, 2.0 * n * own * arch.expert_hidden * float(job.compute_dtype_bytes), 0.0)
