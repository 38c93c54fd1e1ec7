"""Accelerators and their links, in base units (bytes, bytes/s, FLOP/s, watts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "fp4"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Link:
    """A GPU's intra-node link (NVLink, Infinity Fabric, PCIe, on-die RoCE)."""

    kind: str
    """'nvlink', 'nvlink-bridge', 'infinity-fabric', 'pcie', 'roce'."""
    bandwidth_bytes_per_s: float
    """Per GPU, one direction."""
    domain_size: int
    """GPUs that reach each other at this bandwidth (8 on HGX, 72 on NVL72, 2 with a bridge)."""
    topology: str = "switched"
    """'switched', 'full-mesh', 'partial-mesh', 'pair' or 'torus' (catalog/schema.py LinkRecord)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Gpu:
    """One accelerator model with dense peak rates."""

    id: str
    name: str
    vendor: str
    architecture: str
    """Vendor architecture name as in the datasheet (e.g. 'Hopper (GH100)'); selects efficiency data."""
    memory_bytes: int
    """Usable capacity as the driver reports it with ECC in its default state for HBM."""
    memory_kind: str
    memory_bandwidth_bytes_per_s: float
    peak_flop_per_s: dict[str, float]
    """Dense tensor peak per precision; bf16/fp16 are with fp32 accumulate."""
    tdp_w: float
    """Design power: the datasheet peaks hold at this power. 0 where the vendor publishes none (Cloud TPUs,
    a calibrated device): energy is then not estimated."""
    power_limit_w: float | None = None
    """Configured board power limit when below the TDP (e.g. 500 W-capped H100s); None = TDP."""
    form_factor: str
    link: Link
    host_bus_bytes_per_s: float
    """Achievable host<->device copy rate over PCIe x16, one direction (not the line rate); 0 if unknown."""
    ecc_capacity_loss_fraction: float
    """Fraction of capacity lost when ECC is turned on (1/16 on GDDR, 0 on HBM)."""
    ecc_default_on: bool
    gpudirect_rdma: bool | None = True
    """NIC reads/writes GPU memory directly; without it collectives stage through host memory. None:
    unpublished, estimated as staged."""
    host_cpu: str = "x86"
    """CPU family issuing the GPU's work: 'x86' or 'grace' (sets the host time per op, estimate.moe)."""
    exp_per_s: float = 0.0
    """Special-function-unit exponentials per second (MUFU.EX2), which pace softmax inside attention
    kernels (estimate.efficiency); 0 where unknown."""
    power_basis: tuple[float, float] | None = None
    """(dense bf16 peak in FLOP/s, board power in W) of the part whose SM design this one shares, when its
    sustained tensor rate is to follow that part's by power (estimate.efficiency.sustained_tensor_scale)."""
    gemm_power_fraction: float = 1.0
    """Sustained dense-GEMM rate over the family curve's at the datasheet peak, where the part's board power does
    not hold that peak's clock under GEMM load (measured; estimate.efficiency.gemm_clock_fraction)."""
    gpus_per_node: int = 8
    nic_bits_per_s: float = 0.0
    """Scale-out bandwidth per GPU (one direction), in bits/s, for the default node; 0 when none is known."""
    price_usd: float | None = None
    notes: tuple[str, ...] = field(default=())

    def usable_bytes(self, ecc: bool | None = None) -> int:
        """Capacity left for the job; `ecc=None` keeps the card's default ECC state."""
        ecc_on = self.ecc_default_on if ecc is None else ecc
        if ecc_on and not self.ecc_default_on:
            return int(self.memory_bytes * (1 - self.ecc_capacity_loss_fraction))
        if not ecc_on and self.ecc_default_on and self.ecc_capacity_loss_fraction:
            return int(self.memory_bytes / (1 - self.ecc_capacity_loss_fraction))
        return self.memory_bytes

    @property
    def fp8_gemm_any_layout(self) -> bool:
        """Whether the part's cuBLAS fp8 GEMMs take operands in any layout, so that Transformer Engine keeps no
        transposed copy of a per-tensor-scaled fp8 tensor: datacenter Blackwell (compute capability 10.x), by
        transformer_engine/pytorch/utils.py is_non_tn_fp8_gemm_supported, (10, 0) <= capability < (12, 0) or
        >= (13, 0). Hopper and Ada (9.0, 8.9) take only the TN layout, and so do the GB202 cards (RTX 5090,
        RTX PRO 6000 Blackwell: 12.0), read here from the architecture name the catalog gives."""
        return self.vendor == "nvidia" and "blackwell" in self.architecture.lower() and not self.workstation_blackwell

    @property
    def workstation_blackwell(self) -> bool:
        """A compute-capability 12.0 Blackwell (GB202: RTX 5090, RTX PRO 6000 Blackwell), read from the architecture
        name the catalog gives ('GB202' or 'sm_120')."""
        arch = self.architecture.lower()
        return self.vendor == "nvidia" and "blackwell" in arch and ("gb202" in arch or "sm_120" in arch)

    def has_precision(self, precision: str) -> bool:
        """Whether the part has tensor cores for this precision ('bf16', 'fp16', 'fp8', 'fp4')."""
        return bool(self.peak_flop_per_s.get(precision))

    def peak(self, precision: str) -> float:
        """Dense peak FLOP/s for a precision, falling back to the nearest slower one."""
        order = {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16"), "bf16": ("bf16", "fp16"),
                 "fp16": ("fp16", "bf16"), "tf32": ("tf32", "fp32"), "fp32": ("fp32",)}
        for key in order.get(precision, (precision,)):
            if self.peak_flop_per_s.get(key):
                return self.peak_flop_per_s[key]
        return 0.0
