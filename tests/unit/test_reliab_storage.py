"""Storage presets, checkpoint write time, and storage sizing."""

from __future__ import annotations

import pytest

from rigplan.errors import InvalidSpec
from rigplan.reliab.checkpoint import optimal_interval_s
from rigplan.reliab.storage import (
    TOKEN_BYTES_UINT32,
    StorageSpec,
    ceph,
    checkpoint_write_s,
    nvme_gen4,
    nvme_gen5,
    parallel_fs,
    raid0,
    storage_requirements,
    tectonic_llama3,
)


def test_node_local_storage_scales_with_nodes() -> None:
    """1 TB over 16 nodes of one 3.5 GB/s drive each: 1e12 / (16 × 3.5e9) = 17.86 s."""
    assert checkpoint_write_s(1e12, nvme_gen4(), num_gpus=128, gpus_per_node=8) == pytest.approx(1e12 / 56e9)
    # a partial node still counts as a node
    assert checkpoint_write_s(1e12, nvme_gen4(), num_gpus=9, gpus_per_node=8) == pytest.approx(1e12 / 7e9)


def test_shared_storage_does_not_scale_with_nodes() -> None:
    """Llama 3 405B checkpoint, 5.67 TB at Tectonic's 2 TB/s sustained: 2.835 s, any job size."""
    for gpus in (8, 16_384):
        assert checkpoint_write_s(5.67e12, tectonic_llama3(), num_gpus=gpus) == pytest.approx(2.835)


def test_raid0_multiplies_drive_bandwidth() -> None:
    r = raid0(nvme_gen5(), 4)
    assert r.write_bytes_per_s == pytest.approx(4 * 6.6e9) and r.read_bytes_per_s == pytest.approx(52e9)
    assert r.per_node and r.assumption
    with pytest.raises(InvalidSpec, match="node-local"):
        raid0(tectonic_llama3(), 2)


def test_ceph_write_is_read_over_replication() -> None:
    c = ceph(10)
    assert c.read_bytes_per_s == pytest.approx(166e9)
    assert c.write_bytes_per_s == pytest.approx(166e9 / 3)
    assert not c.per_node and c.assumption


def test_invalid_storage_is_rejected() -> None:
    with pytest.raises(InvalidSpec, match="write bandwidth"):
        StorageSpec(name="x", write_bytes_per_s=0, read_bytes_per_s=1, per_node=False, source="t")
    with pytest.raises(InvalidSpec, match="checkpoint size"):
        checkpoint_write_s(-1, nvme_gen4(), num_gpus=8)


def test_requirements_with_a_fixed_interval() -> None:
    """1M tokens/s × 4 B = 4 MB/s; 1 TB every hour at 1 % overhead: δ = 36 s -> 27.8 GB/s; 3 kept = 3 TB."""
    r = storage_requirements(tokens_per_s=1e6, bytes_per_token=TOKEN_BYTES_UINT32, checkpoint_bytes=1e12,
                             target_overhead=0.01, n_checkpoints=3, interval_s=3600, dataset_tokens=15e12)
    assert r.dataset_read_bytes_per_s == 4e6
    assert r.checkpoint_write_s == pytest.approx(36)
    assert r.checkpoint_write_bytes_per_s == pytest.approx(1e12 / 36)
    assert r.checkpoint_capacity_bytes == 3e12
    assert r.capacity_bytes == pytest.approx(3e12 + 60e12)
    assert r.to_dict()["capacity_bytes"] == pytest.approx(63e12)


def test_requirements_with_the_daly_interval() -> None:
    """M = 10⁴ s, 1 %: δ = 2M·o²/(1+o)² = 1.9606 s and τ = √(2δM) − δ = 196.06 s, so δ/τ = 1 %."""
    r = storage_requirements(tokens_per_s=0, bytes_per_token=4, checkpoint_bytes=1e12, target_overhead=0.01,
                             n_checkpoints=1, mtbf_s=1e4)
    assert r.checkpoint_write_s == pytest.approx(1.960592, rel=1e-6)
    assert r.checkpoint_interval_s == pytest.approx(optimal_interval_s(r.checkpoint_write_s, 1e4, "daly-first-order"))
    assert r.checkpoint_write_s / r.checkpoint_interval_s == pytest.approx(0.01)


def test_requirements_need_an_interval_or_mtbf() -> None:
    with pytest.raises(InvalidSpec, match=r"interval_s .* or mtbf_s"):
        storage_requirements(tokens_per_s=1, bytes_per_token=4, checkpoint_bytes=1, target_overhead=0.01,
                             n_checkpoints=1)
    with pytest.raises(InvalidSpec, match="target overhead"):
        storage_requirements(tokens_per_s=1, bytes_per_token=4, checkpoint_bytes=1, target_overhead=1.5,
                             n_checkpoints=1, interval_s=10)


def test_parallel_fs_is_shared() -> None:
    fs = parallel_fs(write_bytes_per_s=100e9, read_bytes_per_s=200e9, name="lustre")
    assert fs.aggregate_write_bytes_per_s(1000) == 100e9
    assert fs.to_dict()["name"] == "lustre"
