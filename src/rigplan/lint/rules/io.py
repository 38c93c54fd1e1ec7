"""Host RAM, scale-out network and storage for checkpoints."""

from __future__ import annotations

from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding, finding
from rigplan.lint.registry import rule
from rigplan.units import format_bytes, format_duration, format_number

RAM_RATIO_FLOOR = 1.0
"""Host RAM below total GPU memory per node: checkpoints and offloaded states cannot be staged in RAM."""
RAM_RATIO_REFERENCE = 2.0
"""NVIDIA's DGX designs carry >= ~2x (DGX H100 2 TiB for 640 GiB = 3.2x; DGX H200 2 TiB for 1,128 GB)."""
NIC_ERROR_FRACTION = 0.25
"""Scale-out bandwidth per GPU below a quarter of the GPU's reference design (catalog node.nic) is an error
for multi-node training: gradient all-reduce across nodes takes >= 4x as long (rigplan convention)."""
CHECKPOINT_BYTES_PER_PARAM = 14.0
"""What a full-training checkpoint holds: bf16 weights (2) + fp32 master weights (4) + Adam m, v (8).
Gradients are not saved. Source: ZeRO paper (Rajbhandari et al. 2020) accounting of 16 B/param minus grads."""
TRAINING_BYTES_PER_PARAM = 16.0
CHECKPOINT_TARGET_S = 600.0
"""Write a checkpoint within 10 minutes; longer blocks training for >15% of a 1-hour checkpoint interval
unless checkpointing is asynchronous (rigplan convention)."""
CHECKPOINTS_KEPT = 3
DEFAULT_WRITE_GB_PER_S = {"nvme": 2.0, "sata-ssd": 0.5, "hdd": 0.2}
"""Assumed sustained sequential write per drive when the build does not give one (rigplan assumption:
datacenter PCIe 4.0 NVMe 2-4 GB/s, SATA SSD ~0.5, 7.2k HDD ~0.2)."""


@rule("memory.host_ram", "Host RAM vs total GPU memory")
def host_ram(ctx: LintContext) -> list[Finding]:
    """Host RAM per node against the node's GPU memory: below 1x checkpoints, data-loader buffers and any
    CPU offload cannot be staged in RAM (warning); below the ~2x of NVIDIA's DGX designs, info."""
    b = ctx.build
    code = "memory.host_ram"
    gpu_bytes = ctx.gpu_bytes_per_node
    values = {"gpu_bytes_per_node": gpu_bytes, "ram_bytes": ctx.ram_bytes}
    if ctx.ram_bytes is None:
        return [finding(code, "warning", f"Host RAM not stated; the node has {format_bytes(gpu_bytes)} of GPU memory "
                        f"and wants at least that much RAM, ~{format_number(RAM_RATIO_REFERENCE)}x as in "
                        "NVIDIA's DGX systems.", **values)]
    ratio = ctx.ram_bytes / gpu_bytes
    values["ratio"] = ratio
    text = (f"{format_bytes(ctx.ram_bytes)} host RAM for {b.gpus.count} x {format_number(ctx.gpu.memory_gib)} GiB = "
            f"{format_bytes(gpu_bytes)} of GPU memory ({ratio:.2f}x)")
    if ratio < RAM_RATIO_FLOOR:
        return [finding(code, "warning", f"{text}: less RAM than GPU memory, so a full checkpoint or offloaded "
                        "optimizer states cannot be staged in host memory.", **values)]
    if ratio < RAM_RATIO_REFERENCE:
        return [finding(code, "info", f"{text}; NVIDIA's DGX designs carry ~{format_number(RAM_RATIO_REFERENCE)}x "
                        "or more.", **values)]
    return [finding(code, "info", f"{text}.", **values)]


@rule("network.scale_out", "NIC bandwidth per GPU for multi-node training")
def scale_out(ctx: LintContext) -> list[Finding]:
    """Scale-out bandwidth per GPU = sum(scale-out NIC ports x Gb/s) / GPUs per node, against the GPU's
    reference node (catalog node.nic_gbit_per_s_per_gpu: 400 Gb/s per H100/H200/B200, one ConnectX-7 per GPU;
    hardware-facts.md B1). Multi-node: error below a quarter of it, warning below it."""
    b, g = ctx.build, ctx.gpu
    code = "network.scale_out"
    reference = g.node.nic_gbit_per_s_per_gpu
    scale = [n for n in b.nics if n.role == "scale-out"]
    unknown = [n for n in scale if n.count is None]
    total_gbit = sum((n.count or 0) * n.ports * n.gbit_per_s for n in b.nics if n.role in ("scale-out", "storage"))
    scale_gbit = sum((n.count or 0) * n.ports * n.gbit_per_s for n in scale)
    best_gbit = scale_gbit or total_gbit
    per_gpu = best_gbit / b.gpus.count
    values = {"bits_per_s_per_gpu": per_gpu * 1e9, "reference_bits_per_s_per_gpu": reference * 1e9,
              "nodes": b.nodes, "scale_out_bits_per_s_per_node": scale_gbit * 1e9}
    if b.nodes == 1:
        # Only scale-out NICs are compute fabric; storage, front-end and management NICs are named apart.
        fabric = scale_gbit or total_gbit
        others = sum((n.count or 0) * n.ports * n.gbit_per_s for n in b.nics if n.role != "scale-out")
        kind = "scale-out NICs" if scale_gbit else "NICs (none is marked scale-out)"
        apart = (f"; its other NICs ({format_number(others)} Gb/s: storage, front-end) are not counted"
                 if scale_gbit and others else "")
        return [finding(code, "info", f"Single node: NVLink/PCIe carries the training traffic. For multi-node "
                        f"training its {kind} ({format_number(fabric)} Gb/s in all) would give "
                        f"{format_number(fabric / b.gpus.count)} Gb/s "
                        f"per GPU vs {format_number(reference)} Gb/s in the {g.name} reference design{apart}.",
                        **{**values, "bits_per_s_per_gpu": fabric / b.gpus.count * 1e9})]
    if unknown:
        return [finding(code, "warning", f"{b.nodes} nodes but the number of scale-out NICs per node is not stated "
                        f"({unknown[0].model}); the {g.name} reference is {format_number(reference)} Gb/s per "
                        f"GPU, i.e. {b.gpus.count} x {format_number(reference)} Gb/s NICs per node (one per GPU, "
                        "rail-optimized).", **values)]
    if not scale and not total_gbit:
        return [finding(code, "error", f"{b.nodes} nodes with no scale-out NIC: multi-node training has no "
                        "fabric.", **values)]
    text = (f"{format_number(best_gbit)} Gb/s of scale-out per node / {b.gpus.count} GPUs = "
            f"{format_number(per_gpu)} Gb/s per GPU vs "
            f"{format_number(reference)} Gb/s in the {g.name} reference design")
    if per_gpu < NIC_ERROR_FRACTION * reference:
        return [finding(code, "error", f"{text}: under a quarter of it, so cross-node gradient all-reduce takes "
                        f">= {reference / per_gpu:.0f}x as long.", **values)]
    if per_gpu < reference:
        return [finding(code, "warning", f"{text}.", **values)]
    return [finding(code, "info", f"{text}.", **values)]


def _write_bytes_per_s(ctx: LintContext) -> tuple[float | None, list[str]]:
    """Checkpoint write bandwidth per node (local data drives) or for the cluster (shared storage)."""
    b = ctx.build
    notes: list[str] = []
    if b.shared_storage is not None:
        if b.shared_storage.write_gb_per_s is None:
            return None, [f"{b.shared_storage.kind} write bandwidth not stated"]
        return b.shared_storage.write_gb_per_s * 1e9 / b.nodes, notes
    best = 0.0
    for d in b.storage:
        if d.role == "os":
            continue
        per_drive = d.write_gb_per_s
        if per_drive is None:
            per_drive = DEFAULT_WRITE_GB_PER_S[d.kind]
            notes.append(f"{d.kind} write {format_number(per_drive)} GB/s per drive assumed")
        stripes = {"raid0": d.count, "raid10": d.count // 2, "raid5": d.count - 1, "raid6": d.count - 2}
        width = max(stripes.get(d.raid, 1), 1)
        best = max(best, per_drive * width * 1e9)
    return (best or None), notes


@rule("storage.checkpoint", "Storage bandwidth and space for checkpoints")
def storage_checkpoint(ctx: LintContext) -> list[Finding]:
    """Checkpoint = 14 B per parameter for full training (bf16 weights + fp32 master + Adam m, v). With a
    workload, its parameter count; otherwise the largest model whose 16 B/param training state fills the
    GPUs (7/8 of GPU memory). Warn when one checkpoint takes over 10 min to write or the data drives
    hold fewer than 3."""
    b = ctx.build
    code = "storage.checkpoint"
    full = [e for e in ctx.evals if e.workload.method == "full"]
    if full:
        params = max(e.params for e in full)
        basis = f"{full[0].workload.model} ({params / 1e9:.1f}B parameters)"
    else:
        params = ctx.gpu_bytes_per_node * b.nodes / TRAINING_BYTES_PER_PARAM
        basis = f"the largest model the GPUs hold for full training (~{params / 1e9:.0f}B parameters)"
    ckpt = params * CHECKPOINT_BYTES_PER_PARAM
    ckpt_node = ckpt / b.nodes
    rate, notes = _write_bytes_per_s(ctx)
    values = {"checkpoint_bytes": ckpt, "checkpoint_bytes_per_node": ckpt_node, "write_bytes_per_s_per_node": rate,
              "target_s": CHECKPOINT_TARGET_S}
    assumed = f" ({'; '.join(notes)})" if notes else ""
    if rate is None:
        need = ckpt / CHECKPOINT_TARGET_S
        values["needed_bytes_per_s"] = need
        if b.shared_storage is None and not b.storage:
            return [finding(code, "error", f"No storage recorded: a {format_bytes(ckpt)} checkpoint of {basis} has "
                            "nowhere to go.", **values)]
        return [finding(code, "warning", f"A checkpoint of {basis} is {format_bytes(ckpt)}; storage write bandwidth is "
                        f"not known{assumed}: writing it within {format_duration(CHECKPOINT_TARGET_S)} needs "
                        f"{need / 1e9:.1f} GB/s aggregate.", **values)]
    write_s = ckpt_node / rate
    values["write_s"] = write_s
    out: list[Finding] = []
    text = (f"A checkpoint of {basis} is {format_bytes(ckpt)} ({format_bytes(ckpt_node)} per node); at "
            f"{rate / 1e9:.1f} GB/s per node it takes {format_duration(write_s)}{assumed}")
    if write_s > CHECKPOINT_TARGET_S:
        out.append(finding(code, "warning", f"{text}, over the {format_duration(CHECKPOINT_TARGET_S)} target: "
                           "checkpoint less often, asynchronously, or add drives/bandwidth.", **values))
    else:
        out.append(finding(code, "info", f"{text}.", **values))
    if b.shared_storage is None:
        data_tb = sum(d.count * d.capacity_tb for d in b.storage if d.role != "os")
        space = data_tb * 1e12 * (0.5 if any(d.raid in ("raid1", "raid10") for d in b.storage) else 1.0)
        values["data_bytes"] = space
        if space < CHECKPOINTS_KEPT * ckpt_node:
            out.append(finding(code, "warning", f"Data drives hold {space / 1e12:.1f} TB, under {CHECKPOINTS_KEPT} "
                               f"checkpoints of {format_bytes(ckpt_node)}.", **values))
    return out


@rule("storage.redundancy", "Checkpoint volume survives a drive failure")
def storage_redundancy(ctx: LintContext) -> list[Finding]:
    """A RAID0 data volume loses every checkpoint on it when one drive fails (probability grows with the
    drive count); keep checkpoints on a redundant volume or copy them off the node."""
    out = []
    for d in ctx.build.storage:
        if d.raid == "raid0" and d.count > 1 and d.role != "scratch":
            out.append(finding("storage.redundancy", "warning",
                               f"RAID0 over {d.count} x {format_number(d.capacity_tb)} TB "
                               f"{d.kind.upper()}: one drive failure loses the whole volume and every checkpoint "
                               "on it; use RAID10/RAID1 for checkpoints or copy them off the node.",
                               drives=d.count, raid=d.raid, capacity_bytes=d.count * d.capacity_tb * 1e12))
    return out
