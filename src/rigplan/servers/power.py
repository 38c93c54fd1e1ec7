"""Electrical load of one node and the heat and airflow it needs (pure functions, watts in, watts out).

Load: the vendor's maximum system power where the build records one; otherwise a bottom-up estimate
  load = fan factor x (GPUs + CPUs + RAM + drives + NICs + board)
with per-part figures below; the fan factor is larger for baseboards with NVSwitch chips (switches, fan
walls). GPU and CPU figures are datasheet TDPs; the others are rigplan's round
estimates (not measurements). Left out: PSU efficiency (PSU ratings are output watts), inrush, transients
above TDP (GPU power excursions can briefly exceed TDP; PSU headroom covers them).

Airflow: CFM = 3.16 x W / dT(F) (= 3412 BTU/h per kW / (1.085 x dT)); 158 CFM per kW at dT = 20 F.
Source: fanacdc.com, insidehpc.com (hardware-facts.md B3). 1 kW = 3,412 BTU/h.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigplan.errors import InvalidSpec
from rigplan.servers.schema import ServerRecord

RAM_W_PER_GIB = 0.15
"""DDR4/DDR5 RDIMM: ~5-10 W per 64 GB module (rigplan estimate)."""
DRIVE_W = {"nvme": 12.0, "sata-ssd": 5.0, "hdd": 8.0}
"""Active power per drive (rigplan estimate from typical datasheet ranges)."""
NIC_W = 20.0
"""Per NIC card (ConnectX-6/7 class: ~15-25 W; rigplan estimate)."""
BOARD_W = 100.0
"""Motherboard, BMC, chipset, PCIe switches (rigplan estimate)."""
FAN_AND_CONVERSION = 1.15
"""Fans and on-board conversion losses on top of the parts, PCIe-card servers and workstations (rigplan
estimate)."""
FAN_AND_CONVERSION_BASEBOARD = 1.35
"""The same for baseboards with NVSwitch chips (HGX 8-GPU, DGX): switch chips and fan walls (fans alone can
exceed 1 kW). Fitted so that DGX H100's parts (8 x 700 W GPUs, 2 x 350 W CPUs, 2 TiB RAM, 10 NVMe,
10 NICs ~ 7.0 kW) give ~9.5 kW against its 10.2 kW maximum (hardware-facts.md B2)."""
BTU_PER_H_PER_W = 3.412
CFM_COEFF = 3.16
DEFAULT_DELTA_T_F = 20.0


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeLoad:
    load_w: float
    """What the PSU rules compare against: the vendor maximum if known, else the estimate."""
    estimate_w: float
    gpu_w: float
    cpu_w: float
    other_w: float
    source: str
    """'vendor maximum' or 'estimate'."""


def gpu_power_w(build: ServerRecord, catalog_tdp_w: float | None) -> float:
    """Per-GPU board power: the build's override (Max-Q, power cap) or the catalog TDP (None: unpublished)."""
    power = build.gpus.power_w or catalog_tdp_w
    if not power:
        raise InvalidSpec(f"build '{build.id}': GPU '{build.gpus.id}' has no published power figure; "
                          "state its board power as gpus.power_w in the build")
    return power


def node_load(build: ServerRecord, catalog_tdp_w: float | None) -> NodeLoad:
    """Electrical load of one node at full training load."""
    gpu_w = build.gpus.count * gpu_power_w(build, catalog_tdp_w)
    cpu_w = build.cpu.count * build.cpu.tdp_w
    ram_w = (build.memory.ram_gib if build.memory else 0.0) * RAM_W_PER_GIB
    drive_w = sum(DRIVE_W[d.kind] * d.count for d in build.storage)
    nic_w = sum(NIC_W * (n.count or 0) for n in build.nics if n.pcie_lanes)
    other_w = ram_w + drive_w + nic_w + BOARD_W
    board = build.chassis.baseboard
    factor = FAN_AND_CONVERSION_BASEBOARD if board and board.switch_chips else FAN_AND_CONVERSION
    estimate_w = factor * (gpu_w + cpu_w + other_w)
    if build.max_power_w:
        return NodeLoad(load_w=build.max_power_w, estimate_w=estimate_w, gpu_w=gpu_w, cpu_w=cpu_w,
                        other_w=other_w, source="vendor maximum")
    return NodeLoad(load_w=estimate_w, estimate_w=estimate_w, gpu_w=gpu_w, cpu_w=cpu_w, other_w=other_w,
                    source="estimate")


def airflow_cfm(power_w: float, delta_t_f: float = DEFAULT_DELTA_T_F) -> float:
    """Air needed to carry `power_w` away with an inlet-to-outlet rise of `delta_t_f` degrees F."""
    return CFM_COEFF * power_w / delta_t_f


def heat_btu_per_h(power_w: float) -> float:
    return BTU_PER_H_PER_W * power_w
