"""Hardware compatibility: the GPU link, GPUs vs chassis, CPU vs board, PCIe lanes."""

from __future__ import annotations

from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding, finding
from rigplan.lint.registry import rule
from rigplan.units import format_number

PCIE_X16_GB_PER_S_BIDIR = {3: 32.0, 4: 64.0, 5: 128.0, 6: 256.0}
"""PCIe x16, both directions added, decimal GB/s (Gen4 31.5 GB/s each way; hardware-facts.md B1)."""
NVME_LANES = 4
GPU_LANES = 16
AMD_2P_DEFAULT_LANES = 128
"""AMD EPYC 2-socket boards expose 128 lanes (4 xGMI links) to 160 (3 links); 128 unless the board says."""

LINK_NAMES = {"pcie": "PCIe", "nvlink-bridge": "NVLink bridges", "nvlink": "NVLink (SXM baseboard)",
              "infinity-fabric": "Infinity Fabric", "nvlink-c2c": "NVLink-C2C", "roce": "on-die RoCE"}


@rule("gpu.link", "GPU-to-GPU link supported by the GPU")
def gpu_link(ctx: LintContext) -> list[Finding]:
    """The stated intra-node link must exist for the card: Ada/Blackwell workstation cards have no NVLink,
    bridges exist only for A100/H100 PCIe-class cards and join pairs, SXM NVLink needs a baseboard.
    Source: catalog link.kind (NVIDIA datasheets; hardware-facts.md A2)."""
    b, g = ctx.build, ctx.gpu
    stated, native = b.gpus.link, g.link.kind
    pcie_bw = PCIE_X16_GB_PER_S_BIDIR[g.pcie_gen]
    values = {"stated_link": stated, "gpu_link": native, "gpu_link_bytes_per_s_bidirectional":
              g.link.bandwidth_gb_per_s_bidirectional * 1e9, "pcie_bytes_per_s_bidirectional": pcie_bw * 1e9}
    code = "gpu.link"
    fallback = (f"GPU-to-GPU traffic goes over PCIe {g.pcie_gen}.0 x16 at {format_number(pcie_bw)} GB/s "
                f"bidirectional per GPU (~{format_number(pcie_bw / 2)} GB/s each way)")
    if stated == "pcie":
        return []
    if stated == "nvlink-bridge":
        if native == "nvlink-bridge":
            out = []
            if b.gpus.count % 2:
                out.append(finding(code, "warning", f"NVLink bridges join {g.name} cards in pairs; with "
                                   f"{b.gpus.count} GPUs one card has no bridge partner.", **values))
            if b.gpus.count > 2:
                out.append(finding(code, "info", f"{b.gpus.count} bridged {g.name} cards form "
                                   f"{b.gpus.count // 2} NVLink pairs at "
                                   f"{format_number(g.link.bandwidth_gb_per_s_bidirectional)} "
                                   f"GB/s; between pairs {fallback}.", **values))
            return out
        if native in ("nvlink", "nvlink-c2c"):
            return [finding(code, "warning", f"{g.name} is an SXM module: its NVLink runs through the "
                            "baseboard, not through bridges; state the link as 'nvlink'.", **values)]
        return [finding(code, "error", f"{g.name} has no NVLink connector ({LINK_NAMES.get(native, native)} "
                        f"only), so no NVLink bridge exists for it; {fallback}, not over NVLink.", **values)]
    if stated == "nvlink":
        if native in ("nvlink", "nvlink-c2c"):
            if b.chassis.baseboard is None:
                return [finding(code, "error", f"{g.name} NVLink needs an SXM baseboard (HGX); the chassis "
                                f"{b.chassis.model} records none.", **values)]
            return []
        if native == "nvlink-bridge":
            return [finding(code, "error", f"{g.name} is a PCIe card: NVLink only through 2-way bridges "
                            f"(state 'nvlink-bridge'); full NVLink connectivity of {b.gpus.count} cards is not "
                            "possible.", **values)]
        return [finding(code, "error", f"{g.name} has no NVLink ({LINK_NAMES.get(native, native)} only); "
                        f"{fallback}.", **values)]
    if native != "infinity-fabric":  # stated infinity-fabric
        return [finding(code, "error", f"{g.name} has no Infinity Fabric link; {fallback}.", **values)]
    return []


@rule("chassis.gpu_fit", "GPUs fit the chassis or baseboard")
def chassis_gpu_fit(ctx: LintContext) -> list[Finding]:
    """SXM/OAM modules need a baseboard of their family, sold populated (HGX A100 4- or 8-GPU, HGX H100 8-GPU,
    AMD UBB 8-GPU); PCIe cards need free double-width slots and a slot power the chassis can feed."""
    b, g = ctx.build, ctx.gpu
    ch, board = b.chassis, b.chassis.baseboard
    code = "chassis.gpu_fit"
    values = {"gpus": b.gpus.count, "max_gpus": ch.max_gpus, "gpu_form_factor": g.form_factor,
              "baseboard_gpus": board.gpus if board else None}
    out: list[Finding] = []
    if board:
        if board.gpu_family not in g.id:
            out.append(finding(code, "error", f"The {board.name} baseboard carries {board.gpu_family.upper()} "
                               f"modules, not {g.name}.", **values))
        if b.gpus.count != board.gpus:
            out.append(finding(code, "error", f"The {board.name} baseboard of the {ch.model} ships populated "
                               f"with {board.gpus} GPUs; {b.gpus.count} GPUs is not a configuration of it "
                               f"(a {b.gpus.count}-GPU build needs a {b.gpus.count}-GPU baseboard and chassis).",
                               **values))
        if g.form_factor not in (board.form_factor, "superchip"):
            out.append(finding(code, "error", f"{g.name} is a {g.form_factor.upper()} part; the {board.name} "
                               f"takes {board.form_factor.upper()} modules.", **values))
    else:
        if g.form_factor in ("sxm", "oam", "superchip", "mezzanine"):
            out.append(finding(code, "error", f"{g.name} is a {g.form_factor.upper()} module and needs a GPU "
                               f"baseboard; the {ch.model} records none.", **values))
        elif b.gpus.count > ch.max_gpus:
            out.append(finding(code, "error", f"{b.gpus.count} GPUs but the {ch.model} takes at most "
                               f"{ch.max_gpus} double-width GPUs.", **values))
    if ch.max_gpu_power_w and ctx.gpu_power_w > ch.max_gpu_power_w:
        out.append(finding(code, "warning", f"{g.name} draws {format_number(ctx.gpu_power_w)} W; the {ch.model} "
                                            f"is specified "
                           f"for GPUs up to {format_number(ch.max_gpu_power_w)} W per "
                           f"slot.", gpu_power_w=ctx.gpu_power_w,
                           max_gpu_power_w=ch.max_gpu_power_w, **values))
    return out


@rule("cpu.compat", "CPU matches the board's socket and socket count")
def cpu_compat(ctx: LintContext) -> list[Finding]:
    """CPU vendor and socket must match the board; the CPU count must not exceed the sockets or the SKU's
    socket limit; single-socket-only SKUs (AMD EPYC 'P') do not belong in dual-socket platforms; an
    unpopulated socket disables the slots and DIMM channels wired to it."""
    b = ctx.build
    cpu, ch = b.cpu, b.chassis
    code = "cpu.compat"
    values = {"cpu": cpu.model, "cpu_socket": cpu.socket, "cpu_count": cpu.count, "cpu_max_sockets":
              cpu.max_sockets, "board_socket": ch.cpu_socket, "board_sockets": ch.cpu_sockets}
    out: list[Finding] = []
    if cpu.vendor != ch.cpu_vendor or cpu.socket.lower() != ch.cpu_socket.lower():
        families = ", ".join(ch.cpu_families) or ch.cpu_socket
        out.append(finding(code, "error", f"{cpu.model} ({cpu.vendor.upper()}, {cpu.socket}) does not fit the "
                           f"{ch.model}: its board has {ch.cpu_sockets} x {ch.cpu_socket} sockets for "
                           f"{ch.cpu_vendor.upper()} {families}.", **values))
    if cpu.count > ch.cpu_sockets:
        out.append(finding(code, "error", f"{cpu.count} CPUs but the {ch.model} has {ch.cpu_sockets} socket(s).",
                           **values))
    if cpu.count > cpu.max_sockets:
        out.append(finding(code, "error", f"{cpu.model} runs in at most {cpu.max_sockets}-socket systems; "
                           f"{cpu.count} of them cannot be linked.", **values))
    elif cpu.max_sockets < ch.cpu_sockets and not ch.one_socket_skus and not out:
        out.append(finding(code, "error", f"{cpu.model} is a single-socket-only SKU; the {ch.model} is a "
                           f"{ch.cpu_sockets}-socket platform that does not take it. Fit {ch.cpu_sockets} "
                           "dual-socket-capable CPUs, or use the vendor's 1-socket platform.", **values))
    elif cpu.count < ch.cpu_sockets and not out:
        out.append(finding(code, "warning", f"{cpu.count} of {ch.cpu_sockets} sockets populated: the PCIe slots "
                           "and DIMM channels wired to the empty socket are unusable; check the board's block "
                           "diagram that every GPU and NIC hangs off the populated one.", **values))
    return out


def _available_lanes(ctx: LintContext) -> int:
    b = ctx.build
    cpu, ch = b.cpu, b.chassis
    if ch.pcie_lanes_available and cpu.count == ch.cpu_sockets:
        return ch.pcie_lanes_available
    if cpu.vendor == "amd":
        return cpu.pcie_lanes if cpu.count == 1 else AMD_2P_DEFAULT_LANES
    return cpu.pcie_lanes * cpu.count


@rule("pcie.lanes", "PCIe lanes for GPUs, NICs and NVMe")
def pcie_lanes(ctx: LintContext) -> list[Finding]:
    """Lanes wanted = 16 per GPU + each NIC's lanes + 4 per NVMe drive, against the CPU lanes the board
    exposes. Over budget is an error on a board without PCIe switches; with switches (HGX) the devices
    share the CPU root ports and the ratio is reported."""
    b, g = ctx.build, ctx.gpu
    code = "pcie.lanes"
    gpu_lanes = GPU_LANES * b.gpus.count
    nic_lanes = sum(n.pcie_lanes * (n.count or 0) for n in b.nics)
    nvme_lanes = sum((d.pcie_lanes if d.pcie_lanes is not None else NVME_LANES) * d.count
                     for d in b.storage if d.kind == "nvme")
    wanted = gpu_lanes + nic_lanes + nvme_lanes
    available = _available_lanes(ctx)
    values = {"lanes_wanted": wanted, "lanes_available": available, "gpu_lanes": gpu_lanes,
              "nic_lanes": nic_lanes, "nvme_lanes": nvme_lanes, "pcie_switches": b.chassis.pcie_switches}
    unknown = [n.model for n in b.nics if n.count is None]
    tail = f" (NIC count not stated for: {', '.join(unknown)})" if unknown else ""
    parts = f"{gpu_lanes} for GPUs + {nic_lanes} for NICs + {nvme_lanes} for NVMe"
    out: list[Finding] = []
    if wanted > available and not b.chassis.pcie_switches:
        out.append(finding(code, "error", f"Devices want {wanted} PCIe lanes ({parts}) but the "
                           f"{b.cpu.count} x {b.cpu.model} on this board give {available}{tail}.", **values))
    elif wanted > available:
        out.append(finding(code, "info", f"Devices want {wanted} lanes ({parts}) behind PCIe switches fed by "
                           f"{available} CPU lanes: {wanted / available:.2f}:1 oversubscribed toward the CPU; "
                           f"GPU-NIC traffic stays under the switches{tail}.", **values))
    else:
        out.append(finding(code, "info", f"PCIe lanes: {wanted} wanted ({parts}) of {available} "
                           f"available{tail}.", **values))
    if g.pcie_gen > b.cpu.pcie_gen:
        out.append(finding(code, "info", f"{g.name} is PCIe {g.pcie_gen}.0 but {b.cpu.model} is PCIe "
                           f"{b.cpu.pcie_gen}.0: host-GPU copies run at "
                           f"{format_number(PCIE_X16_GB_PER_S_BIDIR[b.cpu.pcie_gen])} "
                           f"GB/s instead of {format_number(PCIE_X16_GB_PER_S_BIDIR[g.pcie_gen])}.", **values))
    return out
