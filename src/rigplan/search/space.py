"""The layouts worth trying for one model, GPU type and GPU count, as numpy arrays.

Divisor generators in the style of Calculon's get_all_* (Isaev et al., SC'23): tensor parallelism
inside one NVLink domain and dividing heads and kv-heads; any pipeline degree up to the layers,
split unevenly by rigplan's default rule where it does not divide them (domain.stages), with
interleaving where every virtual stage keeps a layer; context parallelism for long sequences;
expert parallelism dividing the experts, folded over the stage's tp*cp*dp GPUs with expert tensor
parallelism 1 or tp (Megatron-Core MoE parallel folding, EP_OPTIONS_MAX ranks at most); the
remaining GPUs are data parallel, with each ZeRO stage; micro-batches 1-8; recompute
none/selective/full.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigplan.domain.layout import heads_per_cp_problem, linear_heads_problem
from rigplan.domain.model import Architecture
from rigplan.domain.stages import DEFAULT_SPLIT, PipelineSplit, split_problem, virtual_stage_layers

MICRO_BATCHES = (1, 2, 4, 8)
RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
MAX_PP = 64
VPP_OPTIONS = (1, 2, 4)
CP_OPTIONS = (1, 2, 4, 8)
MAX_EP = 64
"""Largest expert-parallel degree tried (the published MoE runs in the validation set go to 64)."""
MIN_TOKENS_PER_CP_RANK = 4096
"""Context parallelism is only tried when each rank keeps at least this many tokens."""


def divisors(n: int) -> list[int]:
    return list(_divisors(n))


@functools.lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


EVERY_NODE_COUNT_UP_TO = 16
"""Every whole node count up to this many nodes is a candidate (3, 5, 6 ... nodes included)."""
STEPS_PER_DOUBLING = 4
"""Beyond EVERY_NODE_COUNT_UP_TO nodes, 4 node counts per doubling (20, 24, 28, 32, 40 ...): gaps of at
most 25%, which keeps the search about 3x the powers-of-two one (each count multiplies the layouts
evaluated). A stated cluster (--cluster, --gpus-exact) is evaluated as given."""


def gpu_counts(gpus_per_node: int, gpus_max: int, gpus_min: int = 1) -> list[int]:
    """GPU counts to try: the powers of two below one node (1, 2, 4 on an 8-GPU server; up to 64 on a
    72-GPU NVL72 rack, up to 128 in a 256-chip TPU slice), every whole node count up to
    EVERY_NODE_COUNT_UP_TO nodes, then STEPS_PER_DOUBLING node counts per doubling."""
    counts = [1 << k for k in range(max(gpus_per_node - 1, 0).bit_length()) if 1 << k < gpus_per_node]
    nodes = 1
    while nodes * gpus_per_node <= gpus_max:
        counts.append(nodes * gpus_per_node)
        if nodes < EVERY_NODE_COUNT_UP_TO:
            nodes += 1
        else:
            power = 1 << (nodes.bit_length() - 1)
            nodes += max(1, power // STEPS_PER_DOUBLING)
    return [c for c in counts if gpus_min <= c <= gpus_max]


def tensor_parallel_options(arch: Architecture, domain: int, num_gpus: int) -> list[int]:
    """TP degrees that divide heads and kv-heads and fit inside one NVLink domain (and the job)."""
    return [t for t in divisors(min(domain, num_gpus, 16))
            if arch.num_heads % t == 0 and arch.kv_heads % t == 0]


def pipeline_options(num_layers: int, gpus_left: int, max_pp: int = MAX_PP) -> list[int]:
    """Pipeline degrees up to `max_pp` (MAX_PP; 1 for a framework without a pipeline schedule) and the layers; those
    that do not divide the layers use the default uneven split (domain.stages)."""
    return [p for p in range(1, min(max_pp, num_layers, gpus_left) + 1) if gpus_left % p == 0]


@functools.lru_cache(maxsize=4096)
def fills_stages(num_layers: int, pp: int, vpp: int) -> bool:
    """Every virtual stage of the default split gets at least one layer."""
    if split_problem(DEFAULT_SPLIT, num_layers, pp, vpp):
        return False
    return min(virtual_stage_layers(DEFAULT_SPLIT, num_layers, pp, vpp)) >= 1


@dataclass(frozen=True)
class LayoutArrays:
    """Parallel arrays, one entry per layout; duck-compatible with domain.layout.Layout."""

    tp: Any
    pp: Any
    vpp: Any
    dp: Any
    cp: Any
    ep: Any
    etp: Any
    """Expert-tensor-parallel degree per layout (1 or tp)."""
    zero: Any
    micro_batch: Any
    sequence_parallel: bool
    split: PipelineSplit = DEFAULT_SPLIT

    def __len__(self) -> int:
        return int(np.size(self.tp))

    @property
    def gpus(self) -> Any:
        return self.tp * self.pp * self.dp * self.cp

    def take(self, mask: Any) -> LayoutArrays:
        return LayoutArrays(tp=self.tp[mask], pp=self.pp[mask], vpp=self.vpp[mask], dp=self.dp[mask],
                            cp=self.cp[mask], ep=self.ep[mask], etp=self.etp[mask], zero=self.zero[mask],
                            micro_batch=self.micro_batch[mask], sequence_parallel=self.sequence_parallel,
                            split=self.split)


def _count_blocks(arch: Architecture, domain: int, num_gpus: int, seq_len: int,
                  zero_stages: tuple[int, ...], heads_split_by_cp: bool = False,
                  max_pp: int = MAX_PP, max_ep: int = MAX_EP) -> Iterator[Any]:
    """The layouts of one GPU count as (9, n) blocks of (tp, pp, vpp, dp, cp, ep, etp, zero, micro_batch),
    in the order of nested loops tp, pp, cp, then vpp x (ep, etp) x zero x micro-batch. With
    `heads_split_by_cp` (all-to-all context parallelism) cp must also divide the heads and kv-heads of a tp rank."""
    for tp in tensor_parallel_options(arch, domain, num_gpus):
        for pp in pipeline_options(arch.num_layers, num_gpus // tp, max_pp):
            vpps = [v for v in VPP_OPTIONS if v == 1 or (pp > 1 and fills_stages(arch.num_layers, pp, v))]
            for cp in CP_OPTIONS:
                if cp > 1 and (seq_len % cp or seq_len // cp < MIN_TOKENS_PER_CP_RANK):
                    continue
                if heads_split_by_cp and heads_per_cp_problem(arch.num_heads, arch.kv_heads, tp, cp):
                    continue
                linear = arch.linear_attention
                if linear and linear_heads_problem(linear.num_key_heads, linear.num_value_heads, tp, cp):
                    continue
                if num_gpus % (tp * pp * cp):
                    continue
                dp = num_gpus // (tp * pp * cp)
                experts = [(1, tp)]
                if arch.moe is not None:
                    stage = tp * cp * dp
                    experts = [(e, etp) for etp in sorted({1, tp}) for e in divisors(stage // etp)
                               if e <= max_ep and arch.moe.num_experts % e == 0
                               and arch.moe.expert_ffn % etp == 0]
                zeros = zero_stages if dp * cp > 1 else (0,)
                v, x, z, b = _product(tuple(vpps), len(experts), tuple(zeros))
                pairs = np.asarray(experts, dtype=np.int64)[x]
                block = np.empty((9, v.size), dtype=np.int64)
                block[0], block[1], block[2], block[3], block[4] = tp, pp, v, dp, cp
                block[5], block[6], block[7], block[8] = pairs[:, 0], pairs[:, 1], z, b
                yield block


@functools.lru_cache(maxsize=1024)
def _product(vpps: tuple[int, ...], experts: int, zeros: tuple[int, ...]) -> tuple[Any, Any, Any, Any]:
    """(vpp, expert option, zero, micro-batch) of itertools.product(vpps, range(experts), zeros,
    MICRO_BATCHES), as flat arrays."""
    grids = np.meshgrid(np.asarray(vpps), np.arange(experts), np.asarray(zeros), np.asarray(MICRO_BATCHES),
                        indexing="ij")
    return tuple(g.ravel() for g in grids)  # type: ignore[return-value]


def layout_space(arch: Architecture, domain: int, num_gpus: int | list[int], seq_len: int, *,
                 sequence_parallel: bool, zero_stages: tuple[int, ...] = ZERO_STAGES,
                 heads_split_by_cp: bool = False, max_pp: int = MAX_PP, max_ep: int = MAX_EP) -> LayoutArrays:
    """All layouts for `num_gpus` GPUs (or for each of several counts) whose NVLink domain holds
    `domain` GPUs (`heads_split_by_cp`: see _count_blocks; `max_pp`: pipeline_options; `max_ep`: the largest
    expert-parallel degree, MAX_EP, 1 for a framework whose expert parallelism rigplan does not model)."""
    counts = num_gpus if isinstance(num_gpus, list) else [num_gpus]
    blocks = [block for count in counts
              for block in _count_blocks(arch, domain, count, seq_len, zero_stages, heads_split_by_cp, max_pp,
                                         max_ep)]
    if not blocks:
        empty = np.zeros(0, dtype=np.int64)
        return LayoutArrays(tp=empty, pp=empty, vpp=empty, dp=empty, cp=empty, ep=empty, etp=empty, zero=empty,
                            micro_batch=empty, sequence_parallel=sequence_parallel)
    table = np.concatenate(blocks, axis=1)  # one contiguous row per column: the search reads columns
    return LayoutArrays(tp=table[0], pp=table[1], vpp=table[2], dp=table[3], cp=table[4],
                        ep=table[5], etp=table[6], zero=table[7], micro_batch=table[8],
                        sequence_parallel=sequence_parallel)
