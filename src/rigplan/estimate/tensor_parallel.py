"""Tensor-parallel communication of one micro-batch on one pipeline rank: total, exposed and overlap tax.

Per transformer layer the attention and MLP blocks each sit between a column-parallel linear (qkv,
MLP-in) and a row-parallel one (output, MLP-out), so with an all-reduce of the activations costing A
(buffer T·h·p, T the micro-batch's tokens on the rank; Shoeybi et al. 2019 Sec. 3):

  - forward: the row-parallel outputs are all-reduced, 2A per layer (with sequence parallelism a
    reduce-scatter after each row-parallel linear and an all-gather before each column-parallel one,
    the same bytes: Korthikanti et al. 2022 Sec. 4.2.2); a full recompute repeats it;
  - backward: the column-parallel linears' input gradients are all-reduced, 2A per layer; with
    sequence parallelism they are reduce-scattered (A) and the row-parallel grad outputs all-gathered (A).

Megatron-Core and Transformer Engine issue the column-parallel backward collectives asynchronously:
the input-gradient all-reduce / reduce-scatter runs beside the weight-gradient GEMM, and with sequence
parallelism the input is all-gathered again for that weight gradient (it is not kept from the forward)
beside the input-gradient GEMM (megatron/core/tensor_parallel/layers.py,
LinearWithGradAccumulationAndAsyncCommunication.backward: "the reduce scatter of the input gradients is
done asynchronously with the calculation of the weight gradients", with CUDA_DEVICE_MAX_CONNECTIONS=1 so
that the collective is queued first). So in a Megatron/TE stack (`kernels: fused`) without userbuffers
overlap a layer exposes its forward collectives and, with sequence parallelism, the row-parallel
backward all-gathers, while the column-parallel backward ones (2A; with sequence parallelism A of
reduce-scatter plus A of re-gathered input) hide behind the column-parallel backward GEMMs: a layer
with sequence parallelism moves 5A and exposes 3A (against 4A, all exposed, in an eager stack).
PyTorch DTensor tensor parallelism (torchtitan, eager stacks) runs every collective in line.

With userbuffers / async-TP overlap (`tp_comm_overlap`, sequence parallelism only) every collective
hides behind the GEMM it feeds or drains, at most TP_OVERLAP_HIDDEN_SHARE of the traffic
(estimate.overlap, measured).

Left out: the all-reduce latency per call at small T, NCCL's SM share on the exposed collectives, and
the re-gather of the input when userbuffers overlap is on (it keeps the gathered input instead).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rigplan.domain.model import Architecture
from rigplan.estimate import comm, overlap

Num = Any

ASYNC_BACKWARD_SM_SHARE = overlap.DP_OVERLAP_SM_SHARE
"""SMs the NCCL collective holds while it runs beside a backward GEMM: NCCL's share, as for the
data-parallel collectives (estimate.overlap)."""


def column_parallel_share(q_width: float, kv_width: float, ffn_in: float, ffn: float) -> float:
    """Share of a dense layer's projection and MLP GEMM FLOPs in its column-parallel linears (qkv and
    MLP-in; the output projection and MLP-out are row-parallel): (q + 2kv + f_in) / (2q + 2kv + f_in + f),
    each width multiplying the same h·T."""
    column = q_width + 2.0 * kv_width + ffn_in
    return column / (column + q_width + ffn)


def tensor_parallel_s(all_reduce_s: Num, layers: Num, recomputed_layers: Num, *, sequence_parallel: bool,
                      async_backward: bool, overlap_on: Num, gemm_s: Num,
                      column_backward_gemm_s: Num) -> tuple[Num, Num, Num]:
    """(total, exposed, tax) seconds of one micro-batch's TP collectives (formula in the module docstring).

    `all_reduce_s` is one all-reduce of the rank's activations over the TP group; `gemm_s` the
    micro-batch's projection and MLP GEMMs (the userbuffers overlap window) and `column_backward_gemm_s`
    their column-parallel backward part (the async backward window). Arrays broadcast.
    """
    forward = 2.0 * all_reduce_s * (layers + recomputed_layers)
    if async_backward:
        # with sequence parallelism an all-reduce is a reduce-scatter + an all-gather (A/2 each): the two
        # column-parallel reduce-scatters and the two re-gathers are A each, the two row-parallel grad gathers A
        regather = 1.0 * all_reduce_s * layers if sequence_parallel else 0.0
        row_gather = 1.0 * all_reduce_s * layers if sequence_parallel else 0.0
        column = (1.0 if sequence_parallel else 2.0) * all_reduce_s * layers
        hideable = column + regather
        exposed_part, _, tax = overlap.hide(hideable, column_backward_gemm_s, ASYNC_BACKWARD_SM_SHARE, on=True)
        # userbuffers overlap, where on, replaces the async path for the whole traffic (no re-gather)
        total_async = forward + row_gather + hideable
        exposed_async = forward + row_gather + exposed_part
    else:
        total_async = forward + 2.0 * all_reduce_s * layers
        exposed_async = total_async
        tax = 0.0 * total_async
    total_plain = forward + 2.0 * all_reduce_s * layers
    ub_exposed, _, ub_tax = overlap.hide(total_plain, gemm_s, overlap.TP_OVERLAP_SM_SHARE, on=overlap_on,
                                         floor_s=total_plain * (1.0 - overlap.TP_OVERLAP_HIDDEN_SHARE))
    if overlap_on is False:
        return total_async, exposed_async, tax
    on = np.asarray(overlap_on, dtype=bool)
    return (np.where(on, total_plain, total_async), np.where(on, ub_exposed, exposed_async),
            np.where(on, ub_tax, tax))


def kv_replica_gather_s(arch: Architecture, *, tokens: Num, tp: Num, head_dims: tuple[float, float],
                        dtype_bytes: float, per_node: Num, intra: comm.Tier, inter: comm.Tier) -> Num:
    """Seconds of one layer's forward all-gather of a kv group's fused QKV output when the tensor-parallel ranks
    outnumber the kv heads (0 where they do not); its backward reduce-scatter takes the same.

    Megatron-Core (0.16 and later) slices the fused QKV weight by rows as always, so with tp = r·g for g kv heads
    each rank computes 1/r of one kv group's rows; the r ranks of a group all-gather the group's output (its
    a/g query heads and its key and value head, T tokens) before attention and reduce-scatter its gradient after
    (ms-swift issue #8219: 'num_query_groups must be a multiple of tensor_model_parallel_size' under
    Megatron-Core 0.15, running under 0.16; the gather described in ISEEKYAN/Megatron-LM PR #91 and
    ai-dynamo/modelexpress PR #650). The whole kv head each rank then keeps is in the memory estimate
    (estimate.activations.kv_replica_token_bytes)."""
    replicas = np.maximum(np.asarray(tp, dtype=np.float64) / arch.kv_heads, 1.0)
    if not np.any(replicas > 1.0):
        return 0.0 * replicas
    d_qk, d_v = head_dims  # query/key and value head dimensions
    group_width = arch.num_heads / arch.kv_heads * d_qk + d_qk + d_v
    gather = comm.hierarchical_all_gather_s(tokens * group_width * dtype_bytes, replicas,
                                            np.minimum(replicas, per_node), intra, inter)
    return np.where(replicas > 1.0, gather, 0.0)
