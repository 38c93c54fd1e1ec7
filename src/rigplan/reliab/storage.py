"""Storage for training: checkpoint write time, and sizing (read bandwidth, write bandwidth, capacity).

Defaults and where they come from (decimal GB/s):

    preset              write / read per unit     unit          source
    nvme_gen4()         3.5 / 7.0 GB/s            drive         Samsung PM1733 (PCIe 4.0 x4): 7.0 GB/s
                                                                read; write derived from AnandTech's
                                                                PM1743 launch note (6.6 GB/s, "89 %
                                                                higher" than PM1733 -> ~3.5 GB/s)
    nvme_gen5()         6.6 / 13.0 GB/s           drive         Samsung PM1743 (PCIe 5.0 x4), AnandTech
                                                                2021-12-23
    raid0(d, k)         k × drive                 node          striping, ideal scaling (assumption:
                                                                no controller or PCIe-switch cap)
    ceph(nodes)         5.5 / 16.6 GB/s           storage node  read: Clyso/Ceph "1 TiB/s" cluster,
                                                                68 NVMe nodes, 1.025 TiB/s -> ~16.6 GB/s
                                                                per node; write = read / 3 for 3×
                                                                replication: ASSUMPTION
    tectonic_llama3()   2.0 / 2.0 TB/s            cluster       Llama 3 paper Sec. 3.3.1: Tectonic, 240 PB
                                                                on 7,500 SSD servers, 2 TB/s sustained,
                                                                7 TB/s peak

Write time of one checkpoint: δ = checkpoint_bytes / aggregate write bandwidth, where the aggregate
is `write × GPU nodes` for node-local storage (every node writes its own shard at once) and `write`
for shared storage. Left out: the device-to-host copy, serialization, file-system metadata, the
network between GPU nodes and shared storage, write amplification, and contention with other jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rigplan.errors import InvalidSpec

GB = 1e9
TB = 1e12

TOKEN_BYTES_UINT16 = 2.0
"""Pre-tokenized data stored as uint16 ids (vocab < 65,536, e.g. GPT-2)."""
TOKEN_BYTES_UINT32 = 4.0
"""Pre-tokenized data stored as uint32 ids (vocab > 65,536, e.g. Llama 3's 128,256)."""

DEFAULT_TARGET_OVERHEAD = 0.01
"""Checkpoint-write overhead to size for: 1 % of training time (rigplan assumption, a common target)."""
DEFAULT_KEPT_CHECKPOINTS = 3
"""Checkpoints kept on storage at once (rigplan assumption: latest, previous, one spare)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StorageSpec:
    """Where checkpoints go and where the dataset is read from."""

    name: str
    write_bytes_per_s: float
    """Sustained sequential write: per GPU node when `per_node`, else for the whole shared system."""
    read_bytes_per_s: float
    per_node: bool
    """True for storage inside each GPU server (local NVMe, RAID): bandwidth scales with nodes."""
    source: str
    assumption: bool = False
    """True when a figure is a rigplan assumption rather than a published number."""

    def __post_init__(self) -> None:
        for field_name, value in (("write", self.write_bytes_per_s), ("read", self.read_bytes_per_s)):
            if not math.isfinite(value) or value <= 0:
                raise InvalidSpec(f"storage '{self.name}' {field_name} bandwidth must be > 0 B/s, got {value}")

    def aggregate_write_bytes_per_s(self, num_nodes: int) -> float:
        return self.write_bytes_per_s * (num_nodes if self.per_node else 1)

    def aggregate_read_bytes_per_s(self, num_nodes: int) -> float:
        return self.read_bytes_per_s * (num_nodes if self.per_node else 1)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "write_bytes_per_s": self.write_bytes_per_s,
                "read_bytes_per_s": self.read_bytes_per_s, "per_node": self.per_node, "source": self.source,
                "assumption": self.assumption}


def nvme_gen4() -> StorageSpec:
    """One PCIe 4.0 x4 enterprise NVMe drive per GPU node (Samsung PM1733 class)."""
    return StorageSpec(name="nvme-gen4", write_bytes_per_s=3.5 * GB, read_bytes_per_s=7.0 * GB, per_node=True,
                       source="Samsung PM1733 7.0 GB/s read; write ~3.5 GB/s from AnandTech PM1743 note (2021-12-23)")


def nvme_gen5() -> StorageSpec:
    """One PCIe 5.0 x4 enterprise NVMe drive per GPU node (Samsung PM1743 class)."""
    return StorageSpec(name="nvme-gen5", write_bytes_per_s=6.6 * GB, read_bytes_per_s=13.0 * GB, per_node=True,
                       source="Samsung PM1743: 13 GB/s read, 6.6 GB/s write (AnandTech, 2021-12-23)")


def raid0(drive: StorageSpec, drives: int) -> StorageSpec:
    """`drives` node-local drives striped (RAID 0): bandwidth × drives, no redundancy (assumed ideal)."""
    if drives < 1:
        raise InvalidSpec(f"RAID 0 needs >= 1 drive, got {drives}")
    if not drive.per_node:
        raise InvalidSpec(f"RAID 0 stripes node-local drives; '{drive.name}' is shared storage")
    return StorageSpec(name=f"raid0-{drives}x-{drive.name}", write_bytes_per_s=drive.write_bytes_per_s * drives,
                       read_bytes_per_s=drive.read_bytes_per_s * drives, per_node=True,
                       source=f"{drives} × ({drive.source}); ideal striping assumed", assumption=True)


def ceph(storage_nodes: int, *, read_per_node_bytes_per_s: float = 16.6 * GB, replication: int = 3) -> StorageSpec:
    """A shared all-NVMe Ceph cluster of `storage_nodes` nodes with `replication`× replicated pools.

    Read per node: Clyso's Ceph cluster of 68 NVMe nodes (10 drives, 2×100 GbE each) reached
    1.025 TiB/s sequential read, ~16.6 GB/s per node. Write = read / replication is a rigplan
    ASSUMPTION (each client byte is written `replication` times).
    """
    if storage_nodes < 1 or replication < 1:
        raise InvalidSpec(f"ceph needs >= 1 node and replication >= 1, got {storage_nodes}, {replication}")
    return StorageSpec(name=f"ceph-{storage_nodes}n", per_node=False,
                       read_bytes_per_s=read_per_node_bytes_per_s * storage_nodes,
                       write_bytes_per_s=read_per_node_bytes_per_s * storage_nodes / replication,
                       source="read: Clyso 'Ceph: a journey to 1 TiB/s' (68 nodes); write = read / replication",
                       assumption=True)


def parallel_fs(*, write_bytes_per_s: float, read_bytes_per_s: float, name: str = "parallel-fs",
                source: str = "user input") -> StorageSpec:
    """A shared parallel file system (Lustre, GPFS, Weka, VAST...) with the vendor's sustained figures."""
    return StorageSpec(name=name, write_bytes_per_s=write_bytes_per_s, read_bytes_per_s=read_bytes_per_s,
                       per_node=False, source=source)


def tectonic_llama3() -> StorageSpec:
    """Meta's Tectonic as used for Llama 3: 2 TB/s sustained (7 TB/s peak)."""
    return StorageSpec(name="tectonic-llama3", write_bytes_per_s=2 * TB, read_bytes_per_s=2 * TB, per_node=False,
                       source="Llama 3 Herd of Models, Sec. 3.3.1: Tectonic, 240 PB, 7,500 servers, 2 TB/s sustained")


DEFAULT_STORAGE = nvme_gen4()
"""A single-node job's default: one PCIe 4.0 NVMe drive in the GPU node (rigplan assumption)."""
DEFAULT_SHARED_STORAGE = ceph(4)
"""A multi-node job's default: shared storage, because a checkpoint on a failed node's local disk is
lost with the node (Llama 3, Sec. 3.3.1, checkpoints to Tectonic, a shared file system). Four
all-NVMe Ceph nodes is a rigplan ASSUMPTION of a modest shared store (`ceph`)."""


HOST_GPUS_MAX = 8
"""The most GPUs one host (one OS, one set of local drives) carries in rigplan's catalog: the HGX/DGX 8-GPU
board. Rack-scale nodes are catalogued whole (an NVL72 rack is one 72-GPU node of 18 four-GPU trays; a TPU
v5e/v6e slice is one 256-chip node of 32 eight-chip hosts), but their local drives die with each tray or host."""


def default_storage_for(num_gpus: int, gpus_per_node: int) -> StorageSpec:
    """Node-local NVMe for a job on one host, shared storage (DEFAULT_SHARED_STORAGE) for more: on more
    than one node, or on more than HOST_GPUS_MAX GPUs of a rack-scale node."""
    one_host = num_nodes_for(num_gpus, gpus_per_node) <= 1 and num_gpus <= HOST_GPUS_MAX
    return DEFAULT_STORAGE if one_host else DEFAULT_SHARED_STORAGE


def num_nodes_for(num_gpus: int, gpus_per_node: int) -> int:
    if num_gpus < 1 or gpus_per_node < 1:
        raise InvalidSpec(f"num_gpus and gpus_per_node must be >= 1, got {num_gpus}, {gpus_per_node}")
    return math.ceil(num_gpus / gpus_per_node)


def checkpoint_write_s(checkpoint_bytes: float, storage: StorageSpec, *, num_gpus: int,
                       gpus_per_node: int = 8) -> float:
    """δ = checkpoint_bytes / aggregate write bandwidth (see module docstring for the aggregate)."""
    if not math.isfinite(checkpoint_bytes) or checkpoint_bytes < 0:
        raise InvalidSpec(f"checkpoint size must be finite and >= 0 bytes, got {checkpoint_bytes}")
    return checkpoint_bytes / storage.aggregate_write_bytes_per_s(num_nodes_for(num_gpus, gpus_per_node))


@dataclass(frozen=True, kw_only=True, slots=True)
class StorageRequirements:
    """What storage must deliver for one job."""

    dataset_read_bytes_per_s: float
    checkpoint_write_bytes_per_s: float
    """Sustained write needed so that checkpoint writes cost `target_overhead` of training time."""
    checkpoint_write_s: float
    """The write time per checkpoint that bandwidth gives."""
    checkpoint_interval_s: float
    target_overhead: float
    kept_checkpoints: int
    checkpoint_capacity_bytes: float
    dataset_capacity_bytes: float

    @property
    def capacity_bytes(self) -> float:
        return self.checkpoint_capacity_bytes + self.dataset_capacity_bytes

    def to_dict(self) -> dict[str, Any]:
        return {"dataset_read_bytes_per_s": self.dataset_read_bytes_per_s,
                "checkpoint_write_bytes_per_s": self.checkpoint_write_bytes_per_s,
                "checkpoint_write_s": self.checkpoint_write_s, "checkpoint_interval_s": self.checkpoint_interval_s,
                "target_overhead": self.target_overhead, "kept_checkpoints": self.kept_checkpoints,
                "checkpoint_capacity_bytes": self.checkpoint_capacity_bytes,
                "dataset_capacity_bytes": self.dataset_capacity_bytes, "capacity_bytes": self.capacity_bytes}


def storage_requirements(*, tokens_per_s: float, bytes_per_token: float, checkpoint_bytes: float,
                         target_overhead: float = DEFAULT_TARGET_OVERHEAD,
                         n_checkpoints: int = DEFAULT_KEPT_CHECKPOINTS, interval_s: float | None = None,
                         mtbf_s: float | None = None, dataset_tokens: float = 0.0) -> StorageRequirements:
    """Read bandwidth, checkpoint write bandwidth for a target overhead, and capacity.

    - Dataset read: tokens_per_s × bytes_per_token (4 B for uint32 token ids; raw text is ~4 B per
      token for English but must then be tokenized on the fly). Sequential, so no IOPS term.
    - Checkpoint write, fixed interval τ: overhead o = δ/τ, so δ = o·τ and bandwidth = C/δ.
    - Checkpoint write, interval chosen by the first-order Daly rule τ = √(2δM) − δ for job MTBF M:
      o = δ/τ gives √δ = o·√(2M)/(1 + o), so δ = 2M·o²/(1 + o)² and bandwidth = C/δ.
    - Capacity: n_checkpoints × C + dataset_tokens × bytes_per_token.

    Give `interval_s` or `mtbf_s` (interval wins). Left out: burst absorption (Llama 3 notes
    checkpoint writes are bursty and saturate the fabric briefly), replication/erasure overhead of
    the capacity, logs, evaluation outputs, and the extra read of a checkpoint at restart.
    """
    if not 0 < target_overhead < 1:
        raise InvalidSpec(f"target overhead must be in (0, 1), got {target_overhead}")
    if n_checkpoints < 0:
        raise InvalidSpec(f"n_checkpoints must be >= 0, got {n_checkpoints}")
    for what, value in (("tokens_per_s", tokens_per_s), ("bytes_per_token", bytes_per_token),
                        ("checkpoint_bytes", checkpoint_bytes), ("dataset_tokens", dataset_tokens)):
        if not math.isfinite(value) or value < 0:
            raise InvalidSpec(f"{what} must be finite and >= 0, got {value}")
    if interval_s is not None:
        if not interval_s > 0:
            raise InvalidSpec(f"checkpoint interval must be > 0 s, got {interval_s}")
        tau = interval_s
        delta = target_overhead * interval_s
    elif mtbf_s is not None:
        if not mtbf_s > 0 or not math.isfinite(mtbf_s):
            raise InvalidSpec(f"MTBF must be finite and > 0 s, got {mtbf_s}")
        delta = 2 * mtbf_s * target_overhead**2 / (1 + target_overhead) ** 2
        tau = delta / target_overhead
    else:
        raise InvalidSpec("storage_requirements needs interval_s (fixed checkpoint interval) or mtbf_s (job MTBF)")
    return StorageRequirements(
        dataset_read_bytes_per_s=tokens_per_s * bytes_per_token,
        checkpoint_write_bytes_per_s=checkpoint_bytes / delta,
        checkpoint_write_s=delta,
        checkpoint_interval_s=tau,
        target_overhead=target_overhead,
        kept_checkpoints=n_checkpoints,
        checkpoint_capacity_bytes=n_checkpoints * checkpoint_bytes,
        dataset_capacity_bytes=dataset_tokens * bytes_per_token,
    )
