"""Pydantic records of server builds: one YAML file per build (built-in or a user overlay).

Human units live in the field names (`_gib`, `_tb`, `_gbit_per_s`, `_w`); the lint rules convert them to
base units once. Unknown keys are errors; every record carries `sources` and `as_of`.

A field the build's author did not state is left out (None), never filled with a guess: the article's
builds are recorded exactly as the article states them, and the lint rules say what is missing. Facts
that follow from a named part (the socket of a named CPU, the PSUs of a fixed-configuration SKU) are
recorded with a source.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from rigplan.bounds import BOUNDS, Bounded
from rigplan.catalog.schema import Record, RecordId, Sources

LinkKind = Literal["pcie", "nvlink-bridge", "nvlink", "infinity-fabric"]
"""Intra-node GPU link as the build states it: PCIe only, NVLink bridges between card pairs, NVLink on an SXM
baseboard (direct mesh or NVSwitch), AMD Infinity Fabric on an OAM baseboard."""


class BaseboardRecord(Record):
    """A GPU baseboard (HGX, AMD UBB): sold populated, so the GPU count and family are fixed."""

    name: str
    gpus: Annotated[int, Bounded("part_count")]
    gpu_family: str
    """Substring every GPU id on this board contains ('a100', 'h100', 'mi300x')."""
    form_factor: Literal["sxm", "oam"]
    link: Literal["nvlink", "infinity-fabric"]
    topology: str
    """'NVSwitch', 'direct NVLink mesh', 'Infinity Fabric mesh'."""
    switch_chips: bool = False
    """The board carries NVSwitch / NVLink-switch chips (more power and airflow than a direct mesh)."""


class ChassisRecord(Record):
    vendor: str
    model: str
    form: Literal["rack", "tower", "open-frame"]
    rack_units: Annotated[int, Bounded("part_count")] | None = None
    cpu_sockets: Annotated[int, Bounded("part_count")]
    cpu_socket: str
    """Socket name as the CPU vendor writes it: SP3, SP5, LGA4189, LGA4677, sTR5."""
    cpu_vendor: Literal["amd", "intel"]
    cpu_families: list[str] = Field(default_factory=list)
    one_socket_skus: bool = False
    """Whether the platform takes single-socket-only SKUs (AMD EPYC 'P' parts); False on 2-socket boards
    unless the vendor says otherwise."""
    max_gpus: Annotated[int, Bounded("part_count")]
    """Double-width GPU slots, or the baseboard's GPU count."""
    baseboard: BaseboardRecord | None = None
    pcie_switches: bool = False
    """GPUs, NICs and NVMe hang off PCIe switches (HGX designs), so CPU root lanes are shared."""
    pcie_lanes_available: Annotated[int, Bounded("pcie_lanes")] | None = None
    """PCIe lanes the board wires to devices with all sockets populated (Dell R7525: 160)."""
    max_gpu_power_w: Annotated[float, Bounded("power_w")] | None = None
    """Largest per-GPU board power the chassis is validated to cool and feed."""
    note: str | None = None


class CpuRecord(Record):
    model: str
    vendor: Literal["amd", "intel"]
    socket: str
    count: Annotated[int, Bounded("part_count")]
    """CPUs per node."""
    max_sockets: Annotated[int, Bounded("part_count")]
    """Largest socket count the SKU runs in (1 for AMD EPYC 'P' parts)."""
    cores: Annotated[int, Bounded("part_count")]
    """Per CPU."""
    pcie_lanes: Annotated[int, Bounded("pcie_lanes")]
    """Per CPU, as the vendor lists it for a 1-socket system."""
    pcie_gen: Annotated[int, Field(ge=3, le=6)]
    tdp_w: Annotated[float, Bounded("power_w")]


class GpuSetRecord(Record):
    id: str
    """GPU catalog id (rigplan gpus)."""
    count: Annotated[int, Bounded("gpus_per_node")]
    """GPUs per node."""
    link: LinkKind
    power_w: Annotated[float, Bounded("power_w")] | None = None
    """Board power per GPU where it differs from the catalog TDP (Max-Q cards, power-capped builds)."""


class HostMemoryRecord(Record):
    ram_gib: Annotated[float, Bounded("host_memory_gib")]
    kind: str
    dimms: Annotated[int, Bounded("part_count")] | None = None


class DriveRecord(Record):
    kind: Literal["nvme", "sata-ssd", "hdd"]
    count: Annotated[int, Bounded("part_count")]
    capacity_tb: Annotated[float, Bounded("drive_tb")]
    """Per drive, decimal TB as sold."""
    role: Literal["os", "data", "scratch", "bulk"] = "data"
    raid: Literal["none", "raid0", "raid1", "raid5", "raid6", "raid10"] = "none"
    write_gb_per_s: Annotated[float, Bounded("storage_gb_per_s")] | None = None
    """Sustained sequential write per drive, decimal GB/s; when absent the lint rules assume a class value."""
    pcie_lanes: Annotated[int, Field(ge=0, le=16)] | None = None
    """Per drive; default 4 for NVMe, 0 for SATA/SAS."""
    model: str | None = None


class SharedStorageRecord(Record):
    kind: str
    """'ceph', 'lustre', 'weka', 'vast', 'nfs', ..."""
    write_gb_per_s: Annotated[float, Bounded("storage_gb_per_s")] | None = None
    """Aggregate sustained write the whole cluster sees, decimal GB/s."""
    note: str | None = None


class NicRecord(Record):
    model: str
    count: Annotated[int, Bounded("part_count")] | None = None
    """Cards per node; None when the build does not say."""
    ports: Annotated[int, Bounded("part_count")] = 1
    gbit_per_s: Annotated[float, Bounded("nic_gbit")]
    """Per port, decimal Gb/s."""
    kind: Literal["ethernet", "infiniband", "vpi", "dpu"]
    role: Literal["scale-out", "storage", "frontend", "management"]
    pcie_lanes: Annotated[int, Field(ge=0, le=16)] = 16
    """Per card; 0 for ports on the motherboard (LOM)."""


class PsuRecord(Record):
    count: Annotated[int, Bounded("part_count")]
    watts_each: Annotated[float, Bounded("power_w")]
    """Output at the input voltage the build runs on (200-240 V unless `input` says otherwise)."""
    redundancy: str
    """'N+M': N supplies carry the load, M are spare ('4+2', '3+1', '1+1'; '2+0' = no redundancy)."""
    input: str | None = None

    @field_validator("redundancy")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if not re.fullmatch(r"\d+\+\d+", value.strip()):
            raise ValueError(f"redundancy must look like '4+2' (N working + M spare), got {value!r}")
        return value.strip()

    @property
    def scheme(self) -> tuple[int, int]:
        working, spare = self.redundancy.split("+")
        return int(working), int(spare)


class FabricRecord(Record):
    name: str
    kind: Literal["infiniband", "ethernet", "roce"]
    gbit_per_s_per_port: Annotated[float, Bounded("nic_gbit")]
    switch: str | None = None


class MoneyRecord(Record):
    amount: Annotated[float, Bounded("money")]
    currency: Literal["USD", "CNY"]
    kind: Literal["quote", "list", "street", "estimate"]
    scope: str
    """What the figure covers: 'whole build', 'per node', 'GPUs only'."""
    as_of: dt.date
    source: str


class BudgetRecord(Record):
    min: Annotated[float, Field(ge=0, le=BOUNDS["money"].high)] | None = None
    max: Annotated[float, Bounded("money")]
    currency: Literal["USD", "CNY"]
    source: str


class ClaimRecord(Record):
    """A statement about what the build can do; with `model` the workload rules check it."""

    text: str
    model: str | None = None
    """Catalog model id or a size such as '10b'."""
    method: Literal["full", "lora", "qlora"] = "full"
    tokens: str | None = None
    """Training tokens (e.g. '140B') for the time estimate."""
    seq: Annotated[int, Bounded("seq")] | None = None


class ServerRecord(Record):
    id: RecordId
    name: str
    category: Literal["article", "corrected", "standard", "user"]
    summary: str
    corrects: str | None = None
    """For a corrected build: the id of the build it fixes."""
    chassis: ChassisRecord
    cpu: CpuRecord
    gpus: GpuSetRecord
    memory: HostMemoryRecord | None = None
    storage: list[DriveRecord] = Field(default_factory=list)
    shared_storage: SharedStorageRecord | None = None
    nics: list[NicRecord] = Field(default_factory=list)
    psu: PsuRecord | None = None
    max_power_w: Annotated[float, Bounded("power_w")] | None = None
    """Vendor's maximum system power per node, where published."""
    nodes: Annotated[int, Bounded("nodes")] = 1
    nodes_per_rack: Annotated[int, Bounded("part_count")] | None = None
    cooling: Literal["air", "liquid"] = "air"
    fabric: FabricRecord | None = None
    price: MoneyRecord | None = None
    budget: BudgetRecord | None = None
    claims: list[ClaimRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    sources: Sources
    as_of: dt.date

    @property
    def total_gpus(self) -> int:
        return self.gpus.count * self.nodes

