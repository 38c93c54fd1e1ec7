"""Collective times: hand-computed ring cases, limits, hierarchy, placement, ring attention."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rigplan.domain.hardware import Gpu, Link
from rigplan.errors import InvalidSpec
from rigplan.estimate.comm import (
    NET_STEP_LATENCY_S,
    NIC_EFFICIENCY,
    NVLINK_EFFICIENCY,
    NVLINK_STEP_LATENCY_S,
    Tier,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    hierarchical_all_gather_s,
    hierarchical_all_reduce_s,
    hierarchical_all_to_all_s,
    hierarchical_reduce_scatter_s,
    link_tier,
    nic_tier,
    p2p_s,
    place_group,
    reduce_scatter_s,
    ring_attention_block_bytes,
    ring_attention_s,
)

GiB = 1024**3
IDEAL = Tier(name="ideal", bandwidth_bytes_per_s=100e9, latency_s=0.0, efficiency=1.0)
NVL = Tier(name="nvlink", bandwidth_bytes_per_s=450e9, latency_s=3e-6, efficiency=0.8)
NIC = Tier(name="network", bandwidth_bytes_per_s=50e9, latency_s=10e-6, efficiency=0.94)


def h100() -> Gpu:
    return Gpu(
        id="h100-sxm", name="H100 SXM", vendor="nvidia", architecture="Hopper (GH100)",
        memory_bytes=80 * GiB, memory_kind="HBM3",
        memory_bandwidth_bytes_per_s=3.35e12, peak_flop_per_s={"bf16": 989e12}, tdp_w=700,
        form_factor="sxm", link=Link(kind="nvlink", bandwidth_bytes_per_s=450e9, domain_size=8),
        host_bus_bytes_per_s=64e9, ecc_capacity_loss_fraction=0.0, ecc_default_on=True,
        nic_bits_per_s=400e9,
    )


def test_hand_computed_ring_collectives() -> None:
    assert all_reduce_s(GiB, 8, IDEAL) == pytest.approx(2 * 7 / 8 * GiB / 100e9)
    assert reduce_scatter_s(GiB, 8, IDEAL) == pytest.approx(7 / 8 * GiB / 100e9)
    assert all_gather_s(GiB, 8, IDEAL) == pytest.approx(7 / 8 * GiB / 100e9)
    assert all_to_all_s(GiB, 8, IDEAL) == pytest.approx(7 / 8 * GiB / 100e9)
    assert p2p_s(GiB, 2, IDEAL) == pytest.approx(GiB / 100e9)
    # Latency and efficiency: 2(n-1)·α + 2(n-1)/n·S/(e·B).
    assert all_reduce_s(GiB, 8, NVL) == pytest.approx(14 * 3e-6 + 1.75 * GiB / 360e9)
    assert reduce_scatter_s(1e6, 4, NIC) == pytest.approx(3 * 10e-6 + 0.75 * 1e6 / 47e9)
    assert p2p_s(1e6, 2, NIC) == pytest.approx(10e-6 + 1e6 / 47e9)


def test_single_rank_costs_nothing() -> None:
    for fn in (all_reduce_s, reduce_scatter_s, all_gather_s, all_to_all_s, p2p_s):
        assert fn(GiB, 1, NVL) == 0.0
    assert hierarchical_all_reduce_s(GiB, 1, 8, NVL, NIC) == 0.0
    assert ring_attention_s(GiB, 1, 8, NVL, NIC) == 0.0


def test_reduce_scatter_plus_all_gather_is_all_reduce() -> None:
    for n in (2, 8, 64):
        rs, ag = reduce_scatter_s(GiB, n, NVL), all_gather_s(GiB, n, NVL)
        assert rs + ag == pytest.approx(all_reduce_s(GiB, n, NVL))


def test_monotonic_in_size_and_latency_floor() -> None:
    sizes = np.array([0.0, 1e3, 1e6, 1e9, 1e10])
    for fn in (all_reduce_s, reduce_scatter_s, all_gather_s, all_to_all_s, p2p_s):
        t = fn(sizes, 16, NIC)
        assert isinstance(t, np.ndarray)
        assert np.all(np.diff(t) > 0)
    assert all_reduce_s(0, 16, NIC) == pytest.approx(2 * 15 * 10e-6)
    assert all_gather_s(0, 16, NIC) == pytest.approx(15 * 10e-6)


def test_array_group_sizes_match_scalar_calls() -> None:
    ns = np.array([1, 2, 8, 64])
    sizes = np.array([GiB, 1e6, 5e8, 1.0])
    vec = all_reduce_s(sizes, ns, NIC)
    hvec = hierarchical_all_reduce_s(sizes, ns, 8, NVL, NIC)
    for i in range(4):
        assert vec[i] == pytest.approx(all_reduce_s(float(sizes[i]), int(ns[i]), NIC))
        assert hvec[i] == pytest.approx(hierarchical_all_reduce_s(float(sizes[i]), int(ns[i]), 8, NVL, NIC))


def test_hierarchical_limits_are_the_flat_rings() -> None:
    pairs = ((hierarchical_all_reduce_s, all_reduce_s), (hierarchical_reduce_scatter_s, reduce_scatter_s),
             (hierarchical_all_gather_s, all_gather_s), (hierarchical_all_to_all_s, all_to_all_s))
    for fn, flat in pairs:
        assert fn(GiB, 8, 8, NVL, NIC) == pytest.approx(flat(GiB, 8, NVL))   # one domain
        assert fn(GiB, 16, 1, NVL, NIC) == pytest.approx(flat(GiB, 16, NIC))  # one GPU per domain


def test_hierarchical_beats_flat_ring_over_nics_for_large_groups() -> None:
    for n in (16, 64, 512):
        flat = all_reduce_s(GiB, n, NIC)
        staged = hierarchical_all_reduce_s(GiB, n, 8, NVL, NIC, pipelined=False)
        pipelined = hierarchical_all_reduce_s(GiB, n, 8, NVL, NIC)
        assert pipelined <= staged < flat
    # Hand check, staged, 2 nodes × 8: 2·7/8·S/360e9 + 2·1/2·(S/8)/47e9 + 14·3 µs + 2·10 µs.
    want = 1.75 * GiB / 360e9 + GiB / 8 / 47e9 + 14 * 3e-6 + 2 * 10e-6
    assert hierarchical_all_reduce_s(GiB, 16, 8, NVL, NIC, pipelined=False) == pytest.approx(want)
    want_pipe = max(1.75 * GiB / 360e9, GiB / 8 / 47e9) + 14 * 3e-6 + 2 * 10e-6
    assert hierarchical_all_reduce_s(GiB, 16, 8, NVL, NIC) == pytest.approx(want_pipe)


def test_all_to_all_scaling() -> None:
    # Flat: a fixed per-rank buffer costs (n-1)/n·S/B, approaching S/B.
    t = [all_to_all_s(GiB, n, IDEAL) for n in (2, 4, 8, 64)]
    assert t == pytest.approx([GiB / 100e9 * (n - 1) / n for n in (2, 4, 8, 64)])
    # Across domains the NIC share (n-k)/n grows with the node count.
    ideal_nvl = Tier(name="nvl", bandwidth_bytes_per_s=400e9)
    ideal_nic = Tier(name="nic", bandwidth_bytes_per_s=50e9)
    one_node = hierarchical_all_to_all_s(GiB, 8, 8, ideal_nvl, ideal_nic)
    two_nodes = hierarchical_all_to_all_s(GiB, 16, 8, ideal_nvl, ideal_nic)
    many = hierarchical_all_to_all_s(GiB, 256, 8, ideal_nvl, ideal_nic)
    assert one_node == pytest.approx(7 / 8 * GiB / 400e9)
    assert two_nodes == pytest.approx(8 / 16 * GiB / 50e9)
    assert many == pytest.approx(248 / 256 * GiB / 50e9)
    assert one_node < two_nodes < many


def test_tiers_from_gpu_and_placement() -> None:
    gpu = h100()
    intra, inter = link_tier(gpu.link), nic_tier(gpu)
    assert intra.effective_bytes_per_s == pytest.approx(450e9 * NVLINK_EFFICIENCY)
    assert intra.latency_s == NVLINK_STEP_LATENCY_S
    assert inter.bandwidth_bytes_per_s == 50e9
    assert inter.effective_bytes_per_s == pytest.approx(50e9 * NIC_EFFICIENCY)
    assert inter.latency_s == NET_STEP_LATENCY_S
    tp = place_group(gpu, 8)                 # tp=8, stride 1: inside the node
    assert tp.per_node == 8 and tp.domains == 1
    dp = place_group(gpu, 16, stride=8)      # dp over tp=8: one member per node
    assert dp.per_node == 1 and dp.domains == 16
    cp = place_group(gpu, 4, stride=2)       # cp=4 over tp=2: all four in one node
    assert cp.per_node == 4
    wide = place_group(gpu, 32, stride=2)    # 4 per node, 8 nodes
    assert wide.per_node == 4 and wide.domains == 8
    nvl72 = place_group(gpu, 64, stride=1, domain_size=72)
    assert nvl72.per_node == 64
    arr = place_group(gpu, np.array([2, 8, 64]), stride=np.array([1, 2, 8]))
    assert np.array_equal(arr.per_node, [2, 4, 1])
    no_nic = nic_tier(replace(gpu, nic_bits_per_s=0.0))
    assert all_reduce_s(GiB, 2, no_nic) == np.inf
    assert hierarchical_all_reduce_s(GiB, 8, 8, intra, no_nic) < np.inf


def test_ring_attention_exchange() -> None:
    block = ring_attention_block_bytes(seq_len=32768, micro_batch=1, cp=4, kv_heads=8, head_dim=128,
                                       dtype_bytes=2)
    assert block == 2 * 1 * 8192 * 8 * 128 * 2
    inside = ring_attention_s(block, 4, 4, NVL, NIC)
    assert inside == pytest.approx(3 * (block / 360e9 + 3e-6))
    across = ring_attention_s(block, 4, 2, NVL, NIC)
    assert across == pytest.approx(3 * (block / 47e9 + 10e-6))
    backward = ring_attention_s(block, 4, 4, NVL, NIC, backward=True)
    assert backward == pytest.approx(3 * (2 * block / 360e9 + 3e-6))
    vec = ring_attention_s(np.array([block, block]), np.array([4, 4]), np.array([4, 2]), NVL, NIC)
    assert vec == pytest.approx([inside, across])


def test_invalid_inputs() -> None:
    with pytest.raises(InvalidSpec):
        Tier(name="x", bandwidth_bytes_per_s=1e9, efficiency=0.0)
    with pytest.raises(InvalidSpec):
        Tier(name="x", bandwidth_bytes_per_s=-1.0)
    with pytest.raises(InvalidSpec):
        all_reduce_s(GiB, 0, NVL)
    with pytest.raises(InvalidSpec):
        all_gather_s(-1.0, 4, NVL)


def test_a_full_mesh_link_has_its_own_efficiency() -> None:
    """MI300X: 7 xGMI links of 64 GB/s each way; RCCL's model (and AMD's maintainer) gives 48 GB/s achievable per
    link, so the whole mesh reaches 7 x 48 = 336 GB/s each way, not NVLink's 80% of 448."""
    from rigplan.catalog.load import load_catalog

    mi300x = load_catalog().gpus["mi300x"].to_domain()
    assert link_tier(mi300x.link).effective_bytes_per_s == pytest.approx(7 * 48e9)
