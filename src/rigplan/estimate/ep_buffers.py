"""Communication buffers DeepEP allocates beside PyTorch's allocator for its normal-mode dispatch and combine.

Megatron-Core's flex dispatcher sizes one DeepEP buffer per process from the expert-parallel group (its EP x ETP
ranks, n) and the hidden size (megatron/core/transformer/moe/fused_a2a.py get_buffer: the larger of the dispatch
and combine configs' size hints, hidden_bytes = h x max(element size, 2) = 2h). DeepEP's hints (deepseek-ai/DeepEP
csrc/config.hpp @ 030cdf0a, get_nvl_buffer_size_hint and get_rdma_buffer_size_hint), with c = num_sms / 2 channels
(Megatron-Core's moe_deepep_num_sms, 20), r = max(n / 8, 1) RDMA ranks and v = min(n, 8) NVLink peers:

    NVLink buffer = c·v·[(2r + 3)·4 + R_nvl·(2h + 8 + 128·8 + 128·4 + 128·4)]
    RDMA buffer   = c·r·[18·2·4 + 2·R_rdma·(2h + 8 + 128·8 + 128·4 + 128·4 + 16)] + 1 MiB   (n > 8 only)

per token slot the hidden row, its 8-byte source metadata and room for 128 top-k indices (int64), 128 weights and 128
scales (fp32). R_nvl, the NVLink receive tokens a channel holds, is 256 up to 8 ranks, 288 up to 64, 560 at 128 and
720 beyond; R_rdma is 128 (deep_ep/buffer.py get_dispatch_config and get_combine_config, the same receive sizes in
both). DeepSeek-V3 at EP 64: 0.38 GB NVLink and 0.34 GB RDMA a GPU; Qwen3-30B-A3B at EP 8: 0.13 GB.

Left out: NVSHMEM's own symmetric-heap reservation beyond the RDMA buffer, DeepEP's low-latency buffers (inference
decoding) and HybridEP's buffers (--moe-dispatcher hybridep), which are sized otherwise.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate.arrays import scalar_or_array as _out
from rigplan.estimate.moe import dispatcher
from rigplan.estimate.states import expert_tp_of

Num = Any

DEEPEP_NUM_SMS = 20
"""SMs DeepEP's normal kernels use under Megatron-Core (TransformerConfig.moe_deepep_num_sms default 20)."""
NVL_PEERS = 8
"""DeepEP's NUM_MAX_NVL_PEERS: the NVLink peers of one rank; larger groups add RDMA ranks of 8."""
TOKEN_SLOT_EXTRA_BYTES = 8 + 128 * 8 + 128 * 4 + 128 * 4
"""Bytes a receive slot holds beside the hidden row: source metadata and 128 top-k indices, weights and scales."""
RDMA_RECV_TOKENS = 128
"""num_max_rdma_chunked_recv_tokens of every DeepEP config."""


def nvl_recv_tokens(ranks: Num) -> Num:
    """num_max_nvl_chunked_recv_tokens of DeepEP's recommended configs for an EP group of `ranks`."""
    r = xp.asarray(ranks)
    return xp.where(r <= 8, 256.0, xp.where(r <= 64, 288.0, xp.where(r <= 128, 560.0, 720.0)))


def deepep_buffer_bytes(arch: Architecture, job: Job, layout: Any) -> Num:
    """Bytes of DeepEP's NVLink and RDMA buffers on one GPU (module docstring): 0 for a dense model, without expert
    parallelism or with another dispatcher."""
    if arch.moe is None or dispatcher(job) != "deepep":
        return 0.0
    ranks = xp.asarray(layout.ep) * xp.asarray(expert_tp_of(layout))
    channels = DEEPEP_NUM_SMS / 2
    hidden_bytes = 2.0 * arch.expert_hidden  # a latent MoE dispatches at its latent width
    rdma_ranks = xp.maximum(ranks / NVL_PEERS, 1.0)
    nvl_ranks = xp.minimum(ranks, NVL_PEERS)
    nvl = channels * nvl_ranks * ((2 * rdma_ranks + 3) * 4 + nvl_recv_tokens(ranks) * (hidden_bytes
                                                                                      + TOKEN_SLOT_EXTRA_BYTES))
    rdma = channels * rdma_ranks * ((NVL_PEERS * 2 + 2) * 2 * 4
                                    + 2 * RDMA_RECV_TOKENS * (hidden_bytes + TOKEN_SLOT_EXTRA_BYTES + 16)) + 2.0 ** 20
    total = nvl + xp.where(ranks > NVL_PEERS, rdma, 0.0)
    return _out(xp.where(xp.asarray(layout.ep) > 1, total, 0.0))
