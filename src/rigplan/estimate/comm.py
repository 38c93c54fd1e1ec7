"""Times of collective operations: the alpha-beta model with NCCL's bus-bandwidth conventions.

time = steps·latency + traffic_factor·size / (efficiency·bandwidth), with the ring traffic factors
of nccl-tests doc/PERFORMANCE.md ("bus bandwidth"): all-reduce 2(n-1)/n, reduce-scatter and
all-gather (n-1)/n, all-to-all (n-1)/n, point-to-point 1. `size_bytes` is the whole buffer as
nccl-tests counts it: the reduced buffer (all-reduce), the input (reduce-scatter), the output
(all-gather), one rank's send buffer (all-to-all). Bandwidths are per GPU, one direction.

Two fabrics differ from a switch. In a full mesh (MI300X/MI325X/MI355X Infinity Fabric, Gaudi's
RoCE ports, NVLink bridges across 4 cards) each pair of GPUs has its own link(s), so a group of k
members of a D-GPU mesh drives k-1 links: (k-1)/(D-1) of the per-GPU aggregate (place_group); a
point-to-point transfer gets one link. On PCIe-only servers (L40S, RTX, A40) the NIC hangs off the
same PCIe switch or root complex as the GPUs: a collective's network bytes cross the GPU's x16 link
too, so they share it with the node-local bytes instead of streaming beside them (Tier.via_intra).

Left out: NVLink SHARP and tree algorithms, in-network reduction, the per-call launch latency
(NCCL's baseLat, ~8 µs), small-message protocol choice, congestion from other traffic, and
overlap with compute (estimate.overlap). See docs/methodology/communication.md.
size_bytes, n and the per-domain counts may be numpy arrays (broadcast together); so may a tier's
bandwidth (a full mesh's share for groups of several sizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from rigplan.domain.hardware import Gpu, Link
from rigplan.errors import InvalidSpec
from rigplan.estimate import arrays as xp
from rigplan.estimate.arrays import as_num as _num
from rigplan.estimate.arrays import scalar_or_array as _out

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Num: TypeAlias = "float | npt.NDArray[np.float64]"
NumIn: TypeAlias = "int | float | npt.NDArray[Any]"

NVLINK_EFFICIENCY = 0.80
"""Ring busbw / line rate on NVLink. H100: ~370 of 450 GB/s ("with the protocol overhead (~20%)
NCCL can get an effective NVLink bandwidth of 370GB/s", NVIDIA/nccl-tests issue #212); A100:
NCCL's own tuning model caps busbw at 235 of 300 GB/s (NVIDIA/nccl src/graph/tuning.cc,
`if (compCap80) busBw = std::min(busBw, 235.0f)`)."""
NIC_EFFICIENCY = 0.94
"""busbw / line rate per NIC: NDR 400 Gb/s (50 GB/s) reaches 46-48 GB/s per NIC (NVIDIA/nccl-tests
issues #290 and #267, NCCL maintainers); HDR 200 Gb/s ~24 of 25 GB/s (NVIDIA/nccl issue #412)."""
PCIE_EFFICIENCY = 0.70
"""Assumed, not measured here: PCIe rings also cross the CPU root complex (nccl issue #1639)."""
INFINITY_FABRIC_EFFICIENCY = 0.75
"""Achievable / line rate on one MI300-class xGMI link: "after protocol and error correction overheads, the
max theoretical per-direction bandwidth for gfx94 devices is 48GB/s" of the 64 GB/s link (AMD's RCCL
maintainer, ROCm/rccl issue #1210, 2024-07-02; RCCL's topology model, ncclTopoXGMISpeed, uses 48). A
point-to-point mesh link of its own, not NVLink's switched figure; the mesh share is `mesh_share`."""
NVLINK_STEP_LATENCY_S = 3.4e-6
"""Per ring step, NCCL's tuning model (src/graph/tuning.cc hwLat, NVLink, Ring, Simple protocol)."""
PCIE_STEP_LATENCY_S = 5.7e-6
"""Per ring step, same table, PCI row."""
NET_STEP_LATENCY_S = 9.6e-6
"""Per ring step, same table, network row (InfiniBand/RoCE)."""

_LINK_DEFAULTS: dict[str, tuple[float, float]] = {
    "nvlink": (NVLINK_EFFICIENCY, NVLINK_STEP_LATENCY_S),
    "nvlink-bridge": (NVLINK_EFFICIENCY, NVLINK_STEP_LATENCY_S),
    "infinity-fabric": (INFINITY_FABRIC_EFFICIENCY, NVLINK_STEP_LATENCY_S),
    "pcie": (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S),
    "roce": (NIC_EFFICIENCY, NET_STEP_LATENCY_S),
    # No published collective efficiency for TPU ICI, Ascend HCCS, Cambricon MLU-Link, Moore Threads MTLink or
    # Biren B-Link: PCIe's assumed figure stands in.
    "ici": (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S),
    "hccs": (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S),
    "mlu-link": (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S),
    "mtlink": (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S),
    "blink": (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S),
}




@dataclass(frozen=True, kw_only=True, slots=True)
class Tier:
    """One level of the fabric as one GPU sees it."""

    name: str
    bandwidth_bytes_per_s: Num
    """Peak line rate per GPU, one direction (an array when it depends on the group, full mesh)."""
    latency_s: float = 0.0
    """Latency of one ring step (one hop)."""
    efficiency: float = 1.0
    """Achievable fraction of the line rate (nccl-tests ring busbw / peak)."""
    via_intra_bytes_per_s: float = 0.0
    """Scale-out tier only: effective bandwidth of the scale-up link its bytes also cross (the GPU's
    PCIe link on a PCIe-only server, whose NIC shares the switch/root complex); 0 = a path of its own."""

    def __post_init__(self) -> None:
        if (xp.any_true(xp.asarray(self.bandwidth_bytes_per_s) < 0) or self.latency_s < 0
                or not 0 < self.efficiency <= 1 or self.via_intra_bytes_per_s < 0):
            raise InvalidSpec(
                f"tier {self.name}: bandwidth ({self.bandwidth_bytes_per_s}) and latency ({self.latency_s}) "
                f"must be >= 0 and efficiency ({self.efficiency}) in (0, 1]"
            )

    @property
    def effective_bytes_per_s(self) -> Num:
        return self.bandwidth_bytes_per_s * self.efficiency


def link_tier(link: Link, *, efficiency: float | None = None, latency_s: float | None = None) -> Tier:
    """The intra-node (scale-up) tier of a GPU's link, with defaults by link kind."""
    eff, lat = _LINK_DEFAULTS.get(link.kind, (PCIE_EFFICIENCY, PCIE_STEP_LATENCY_S))
    return Tier(name=link.kind, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s,
                latency_s=lat if latency_s is None else latency_s,
                efficiency=eff if efficiency is None else efficiency)


def nic_tier(gpu: Gpu, *, efficiency: float | None = None, latency_s: float | None = None) -> Tier:
    """The scale-out tier: one NIC per GPU, bandwidth Gpu.nic_bits_per_s / 8 (0 when none). On a
    PCIe-only server its bytes also cross the GPU's PCIe link (via_intra_bytes_per_s)."""
    shared = float(link_tier(gpu.link).effective_bytes_per_s) if gpu.link.kind == "pcie" else 0.0
    return Tier(name="network", bandwidth_bytes_per_s=gpu.nic_bits_per_s / 8.0,
                latency_s=NET_STEP_LATENCY_S if latency_s is None else latency_s,
                efficiency=NIC_EFFICIENCY if efficiency is None else efficiency,
                via_intra_bytes_per_s=shared)


def mesh_share(link: Link, members: NumIn) -> Num:
    """Share of the per-GPU link bandwidth a group of `members` GPUs of one scale-up domain can drive:
    1 through a switch; (k-1)/(D-1) in a D-GPU full mesh, where each peer pair has its own link(s) and
    a member reaches the k-1 others over k-1 of its D-1 links (MI300X: 7 links of 64 GB/s each way,
    so TP2 gets one link, 1/7 of the 448 GB/s aggregate). members=2 is one point-to-point link."""
    k = _num(members)
    if link.topology != "full-mesh" or link.domain_size <= 1:
        return _out(xp.ones_like_float(k))
    links = xp.clip(xp.asfloat(k) - 1.0, 1.0, link.domain_size - 1.0)
    return _out(links / (link.domain_size - 1.0))


def scaled_tier(tier: Tier, share: NumIn) -> Tier:
    """The tier with its bandwidth multiplied by `share` (a full mesh's share for a group)."""
    s = _num(share)
    if xp.all_true(xp.asarray(s) == 1.0):
        return tier
    return Tier(name=tier.name, bandwidth_bytes_per_s=tier.bandwidth_bytes_per_s * s, latency_s=tier.latency_s,
                efficiency=tier.efficiency, via_intra_bytes_per_s=tier.via_intra_bytes_per_s)


def _check(size_bytes: Num, n: Num) -> None:
    if xp.any_true(xp.asarray(n) < 1) or xp.any_true(xp.asarray(size_bytes) < 0):
        raise InvalidSpec("collective needs a group size n >= 1 and a size >= 0 bytes")


def _wire_s(volume_bytes: Num, tier: Tier) -> Num:
    """volume / effective bandwidth; infinite over a tier with no bandwidth, 0 for no volume."""
    bw = tier.effective_bytes_per_s
    if xp.ndim(bw) == 0:
        if bw <= 0:
            return _out(xp.where(xp.asarray(volume_bytes) > 0, xp.inf, 0.0))
        return volume_bytes / bw
    bw_a, vol = xp.asfloat(bw), xp.asfloat(volume_bytes)
    with xp.errstate(divide="ignore", invalid="ignore"):
        return _out(xp.where(bw_a > 0, vol / xp.where(bw_a > 0, bw_a, 1.0), xp.where(vol > 0, xp.inf, 0.0)))


def _ring_s(size_bytes: NumIn, n: NumIn, tier: Tier, traffic: float) -> Num:
    s, g = _num(size_bytes), _num(n)
    _check(s, g)
    return traffic * (g - 1) * tier.latency_s + _wire_s(traffic * (g - 1) / g * s, tier)


def all_reduce_s(size_bytes: NumIn, n: NumIn, tier: Tier) -> Num:
    """Ring all-reduce: 2(n-1)·α + 2(n-1)/n·S/B (nccl-tests PERFORMANCE.md; Patarasuk & Yuan 2009)."""
    return _ring_s(size_bytes, n, tier, 2.0)


def reduce_scatter_s(size_bytes: NumIn, n: NumIn, tier: Tier) -> Num:
    """Ring reduce-scatter of an S-byte input: (n-1)·α + (n-1)/n·S/B."""
    return _ring_s(size_bytes, n, tier, 1.0)


def all_gather_s(size_bytes: NumIn, n: NumIn, tier: Tier) -> Num:
    """Ring all-gather to an S-byte output: (n-1)·α + (n-1)/n·S/B."""
    return _ring_s(size_bytes, n, tier, 1.0)


def all_to_all_s(size_bytes: NumIn, n: NumIn, tier: Tier) -> Num:
    """All-to-all of an S-byte send buffer per rank: (n-1)·α + (n-1)/n·S/B.

    Each rank keeps S/n and sends S/n to each of the n-1 others (nccl-tests PERFORMANCE.md);
    one latency per peer is charged, as NCCL posts one send/receive pair per peer.
    """
    return _ring_s(size_bytes, n, tier, 1.0)


def p2p_s(size_bytes: NumIn, n: NumIn, tier: Tier) -> Num:
    """One send/receive of S bytes between two ranks: α + S/B; 0 when the group has one rank (n=1)."""
    s, g = _num(size_bytes), _num(n)
    _check(s, g)
    return _out(xp.where(xp.asarray(g) > 1, tier.latency_s + _wire_s(s, tier), 0.0))


def _levels(n: NumIn, per_node: NumIn) -> tuple[Num, Num]:
    g = _num(n)
    k = _out(xp.clip(_num(per_node), 1.0, g))
    return k, g / k


def _combine(intra_s: Num, inter_s: Num, pipelined: bool, inter_bytes: Num = 0.0, inter: Tier | None = None) -> Num:
    """Both levels' wire time: streamed side by side (max) or staged (sum). When the network bytes also
    cross the scale-up link (PCIe-only server), that link carries both: max(intra + inter bytes over it,
    network) streamed; staged, the network phase is the slower of the NIC and the PCIe link."""
    shared = inter.via_intra_bytes_per_s if inter is not None else 0.0
    if shared > 0:
        over_link = _out(_num(inter_bytes) / shared)
        if pipelined:
            return _out(xp.maximum(intra_s + over_link, inter_s))
        return intra_s + _out(xp.maximum(inter_s, over_link))
    return _out(xp.maximum(intra_s, inter_s)) if pipelined else intra_s + inter_s


def hierarchical_all_reduce_s(size_bytes: NumIn, n: NumIn, per_node: NumIn, intra: Tier, inter: Tier,
                              *, pipelined: bool = True) -> Num:
    """All-reduce over n GPUs, k = per_node of them per NVLink domain, N = n/k domains.

    Intra reduce-scatter of S over k, inter all-reduce of S/k over N (each of the k GPUs on its own
    NIC, rail-aligned), intra all-gather of S over k: bandwidth terms 2(k-1)/k·S/B_intra and
    2(N-1)/N·(S/k)/B_inter, latency 2(k-1)·α_intra + 2(N-1)·α_inter. pipelined=True takes the larger
    bandwidth term, as NCCL's multi-node ring streams both levels at once (DGX-A100, 8×200 Gb/s:
    192 GB/s all-reduce busbw, i.e. the node's NIC aggregate; NVIDIA/nccl issue #812);
    pipelined=False adds them (staged, as in Horovod/2D hierarchical all-reduce).
    k = n is the flat intra ring; k = 1 the flat ring over NICs.
    """
    s = _num(size_bytes)
    k, nodes = _levels(n, per_node)
    _check(s, _num(n))
    lat = 2.0 * (k - 1) * intra.latency_s + 2.0 * (nodes - 1) * inter.latency_s
    intra_bw = _wire_s(2.0 * (k - 1) / k * s, intra)
    inter_bytes = 2.0 * (nodes - 1) / nodes * s / k
    return lat + _combine(intra_bw, _wire_s(inter_bytes, inter), pipelined, inter_bytes, inter)


def _hierarchical_half_s(size_bytes: NumIn, n: NumIn, per_node: NumIn, intra: Tier, inter: Tier,
                         pipelined: bool) -> Num:
    s = _num(size_bytes)
    k, nodes = _levels(n, per_node)
    _check(s, _num(n))
    lat = (k - 1) * intra.latency_s + (nodes - 1) * inter.latency_s
    intra_bw = _wire_s((k - 1) / k * s, intra)
    inter_bytes = (nodes - 1) / nodes * s / k
    return lat + _combine(intra_bw, _wire_s(inter_bytes, inter), pipelined, inter_bytes, inter)


def hierarchical_reduce_scatter_s(size_bytes: NumIn, n: NumIn, per_node: NumIn, intra: Tier, inter: Tier,
                                  *, pipelined: bool = True) -> Num:
    """Intra reduce-scatter of S over k, then inter reduce-scatter of S/k over N = n/k domains:
    (k-1)/k·S/B_intra and (N-1)/N·(S/k)/B_inter, latency (k-1)·α_intra + (N-1)·α_inter."""
    return _hierarchical_half_s(size_bytes, n, per_node, intra, inter, pipelined)


def hierarchical_all_gather_s(size_bytes: NumIn, n: NumIn, per_node: NumIn, intra: Tier, inter: Tier,
                              *, pipelined: bool = True) -> Num:
    """Inter all-gather of S/k over N = n/k domains, then intra all-gather of S over k (the
    reduce-scatter mirrored: same terms)."""
    return _hierarchical_half_s(size_bytes, n, per_node, intra, inter, pipelined)


def hierarchical_all_to_all_s(size_bytes: NumIn, n: NumIn, per_node: NumIn, intra: Tier, inter: Tier,
                              *, pipelined: bool = True) -> Num:
    """All-to-all of S bytes per rank over n GPUs, k per domain: (k-1)/n·S goes over the intra tier
    and (n-k)/n·S over the rank's own NIC (NCCL all-to-all cannot aggregate several NICs per rank,
    NVIDIA/nccl-tests issue #267); latency (k-1)·α_intra + (n-k)·α_inter."""
    s, g = _num(size_bytes), _num(n)
    k, _ = _levels(n, per_node)
    _check(s, g)
    lat = (k - 1) * intra.latency_s + (g - k) * inter.latency_s
    inter_bytes = (g - k) / g * s
    return lat + _combine(_wire_s((k - 1) / g * s, intra), _wire_s(inter_bytes, inter), pipelined, inter_bytes, inter)


@dataclass(frozen=True, kw_only=True, slots=True)
class Placement:
    """Where a parallel group's n GPUs sit: per_node of them share each NVLink domain."""

    n: Num
    per_node: Num
    intra: Tier
    inter: Tier

    @property
    def domains(self) -> Num:
        return self.n / self.per_node


def place_group(gpu: Gpu, n: NumIn, *, stride: NumIn = 1, domain_size: int | None = None,
                intra: Tier | None = None, inter: Tier | None = None) -> Placement:
    """Place a group of n ranks whose members are `stride` ranks apart in the global rank order.

    Ranks fill NVLink domains in order (Megatron order tp, cp, ep/dp, pp: the tp group has stride 1,
    cp stride tp, dp stride tp·cp, pp stride tp·cp·dp). A domain of D GPUs holds
    k = clip(floor(D/stride), 1, n) members of the group: k = n keeps the group on the link; k = 1
    puts every member behind its own NIC, which bounds the inter-domain part. D defaults to
    Gpu.link.domain_size (8 on HGX, 72 on NVL72). In a full mesh the intra tier carries the group's
    share of the links (mesh_share). Left out: partially filled domains and non-power-of-two strides
    that straddle domain boundaries.
    """
    g = _num(n)
    domain = float(domain_size or gpu.link.domain_size)
    k = _out(xp.clip(xp.floor(domain / xp.asarray(_num(stride))), 1.0, g))
    link = scaled_tier(intra or link_tier(gpu.link), mesh_share(gpu.link, k))
    return Placement(n=g, per_node=k, intra=link, inter=inter or nic_tier(gpu))


def ring_attention_block_bytes(*, seq_len: NumIn, micro_batch: NumIn, cp: NumIn, kv_heads: NumIn,
                               head_dim: NumIn, dtype_bytes: NumIn) -> Num:
    """One rank's K and V block: 2·b·(s/cp)·g·d·bytes (pass g = kv heads per tp rank)."""
    return (2.0 * _num(micro_batch) * _num(seq_len) / _num(cp) * _num(kv_heads) * _num(head_dim)
            * _num(dtype_bytes))


def ring_attention_s(block_bytes: NumIn, cp: NumIn, per_node: NumIn, intra: Tier, inter: Tier,
                     *, backward: bool = False) -> Num:
    """Ring-attention K/V exchange of one layer (Liu et al. 2023, arXiv 2310.01889, Sec. 3).

    Forward: (cp-1) steps, each rank sending its current K,V block to the next rank; every step
    moves at the pace of the slowest hop, the NIC once the ring leaves an NVLink domain
    (per_node < cp). Step time: block/B + α. Backward also circulates dK, dV: twice the bytes.
    Left out: overlap with the attention compute of the same step (the step model decides how much
    hides); the all-to-all variant is ulysses_all_to_all_s.
    """
    c, k = _num(cp), _num(per_node)
    block = _num(block_bytes) * (2.0 if backward else 1.0)
    _check(block, c)
    on_link = xp.asarray(k) >= xp.asarray(c)
    bw = xp.where(on_link, intra.effective_bytes_per_s, inter.effective_bytes_per_s)
    lat = xp.where(on_link, intra.latency_s, inter.latency_s)
    with xp.errstate(divide="ignore", invalid="ignore"):
        step = xp.where(xp.asarray(block) > 0, xp.divide(xp.asarray(block), bw), 0.0) + lat
        return _out(xp.where(xp.asarray(c) > 1, (xp.asarray(c) - 1) * step, 0.0))


def ulysses_all_to_all_s(*, tokens: NumIn, qkv_width: NumIn, out_width: NumIn, tp: NumIn, cp: NumIn,
                         dtype_bytes: NumIn, per_node: NumIn, intra: Tier, inter: Tier) -> Num:
    """All-to-all context parallelism of one layer, forward and backward (Jacobs et al. 2023, DeepSpeed-Ulysses,
    arXiv 2309.14509, Sec. 3; Transformer Engine cp_comm_type 'a2a').

    Forward: one all-to-all of the rank's q, k and v, T·qkv_width/tp elements for its T = b·s/cp tokens (qkv_width
    = a·d_qk + g·(d_qk + d_v) for a query and g kv heads), turns sequence shards into head shards, and one of the
    attention output, T·out_width/tp (a·d_v), turns them back; backward moves the same volumes for the gradients.
    Each is a hierarchical_all_to_all_s over the cp group.
    Left out: overlap of one tensor's exchange with another's reshaping (Transformer Engine's cp stream), taken
    as exposed.
    """
    t, c, p_ = _num(tokens), _num(cp), _num(dtype_bytes)
    qkv = t * _num(qkv_width) / _num(tp) * p_
    out = t * _num(out_width) / _num(tp) * p_
    one_pass = (hierarchical_all_to_all_s(qkv, c, per_node, intra, inter)
                + hierarchical_all_to_all_s(out, c, per_node, intra, inter))
    return _out(xp.where(xp.asarray(c) > 1, 2.0 * one_pass, 0.0))
