"""Does a stated workload fit a build, and how long would it take? (through rigplan's memory and speed facades)

For the build's GPUs (all nodes) and the requested method, a few standard layouts are tried:
ZeRO-3/FSDP over every GPU with full or selective recompute, and tensor parallelism inside the node
with ZeRO-1. The lowest per-GPU memory found is compared with the GPU's capacity. When no plain layout
fits, ZeRO-3 with CPU offload (optimizer states, then parameters too) is tried and its host-memory need
is compared with the build's RAM. With a token count, the fastest fitting layout gives the time.

Left out: layouts beyond these (pipeline, context parallel, 8-bit optimizers) which may fit where these
do not; the PCIe traffic of CPU offload (rigplan's step-time model does not slow an offloaded job down,
so offloaded times are optimistic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rigplan.errors import InvalidSpec
from rigplan.flow.estimate import estimate
from rigplan.flow.memory import memory
from rigplan.flow.request import EstimateRequest, MemoryRequest
from rigplan.servers.schema import ServerRecord


@dataclass(frozen=True, kw_only=True, slots=True)
class Workload:
    text: str
    model: str
    method: str = "full"
    tokens: str | None = None
    seq: int | None = None
    origin: str = "--for"
    """'--for' (command line) or 'claim' (the build record's own claim)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LayoutTry:
    label: str
    options: dict[str, Any]
    fits: bool
    per_gpu_bytes: float
    host_bytes_per_node: float
    offload: bool

    def to_dict(self) -> dict[str, Any]:
        return {"layout": self.label, "options": dict(self.options), "fits": self.fits,
                "per_gpu_bytes": self.per_gpu_bytes, "host_bytes_per_node": self.host_bytes_per_node}


@dataclass(frozen=True, kw_only=True)
class WorkloadEval:
    workload: Workload
    gpu_id: str
    gpu_name: str
    gpus: int
    usable_bytes: float
    host_ram_bytes: float | None
    params: float
    tries: tuple[LayoutTry, ...]
    lora_try: LayoutTry | None = None
    time_s: float | None = None
    time_layout: str | None = None
    mfu: float | None = None
    assumptions: tuple[str, ...] = field(default=())

    @property
    def plain(self) -> tuple[LayoutTry, ...]:
        return tuple(t for t in self.tries if not t.offload)

    @property
    def best(self) -> LayoutTry:
        """Lowest per-GPU memory among the layouts without offload."""
        return min(self.plain, key=lambda t: t.per_gpu_bytes)

    @property
    def fits_plain(self) -> bool:
        return any(t.fits for t in self.plain)

    @property
    def offload_fit(self) -> LayoutTry | None:
        """First offload layout whose GPU part fits (host RAM is judged separately)."""
        return next((t for t in self.tries if t.offload and t.fits), None)

    @property
    def host_ok(self) -> bool:
        fit = self.offload_fit
        if fit is None or self.host_ram_bytes is None:
            return False
        return fit.host_bytes_per_node <= self.host_ram_bytes

    def to_dict(self) -> dict[str, Any]:
        w = self.workload
        return {
            "text": w.text, "origin": w.origin, "model": w.model, "method": w.method, "tokens": w.tokens,
            "seq": w.seq, "gpu": self.gpu_id, "gpus": self.gpus, "params": self.params,
            "usable_bytes_per_gpu": self.usable_bytes, "fits": self.fits_plain,
            "fits_with_offload": (not self.fits_plain) and self.offload_fit is not None and self.host_ok,
            "best_layout": self.best.to_dict(), "tries": [t.to_dict() for t in self.tries],
            "lora": self.lora_try.to_dict() if self.lora_try else None,
            "time_to_train_s": self.time_s, "time_layout": self.time_layout, "mfu": self.mfu,
            "assumptions": list(self.assumptions),
        }


def _candidate_layouts(gpus_per_node: int) -> list[tuple[str, dict[str, Any], bool]]:
    layouts: list[tuple[str, dict[str, Any], bool]] = [
        ("ZeRO-3/FSDP over all GPUs, full recompute", {"zero": 3, "recompute": "full"}, False),
        ("ZeRO-3/FSDP over all GPUs, selective recompute", {"zero": 3, "recompute": "selective"}, False),
    ]
    tp = min(gpus_per_node, 8)
    if tp > 1:
        layouts.append((f"TP={tp} inside the node + ZeRO-1, full recompute",
                        {"tp": tp, "zero": 1, "recompute": "full", "sequence_parallel": True}, False))
    layouts += [
        ("ZeRO-3 + CPU offload of optimizer states", {"zero": 3, "recompute": "full", "offload": "optimizer"}, True),
        ("ZeRO-3 + CPU offload of parameters and optimizer states",
         {"zero": 3, "recompute": "full", "offload": "all"}, True),
    ]
    return layouts


def _base_values(build: ServerRecord, workload: Workload, overlays: tuple[str, ...]) -> dict[str, Any]:
    return {"model": workload.model, "gpu": build.gpus.id, "gpus": build.total_gpus, "method": workload.method,
            "seq": workload.seq, "catalog": list(overlays)}


def _network(build: ServerRecord) -> dict[str, Any]:
    scale_out = [n for n in build.nics if n.role == "scale-out" and n.count]
    values: dict[str, Any] = {"gpus_per_node": build.gpus.count}
    if scale_out:
        values["nic_gbit"] = max(n.gbit_per_s for n in scale_out)
        values["nics_per_node"] = sum((n.count or 0) * n.ports for n in scale_out)
    return values


def evaluate(build: ServerRecord, workload: Workload, overlays: tuple[str, ...] = ()) -> WorkloadEval:
    """Try the standard layouts for `workload` on `build`'s GPUs; time it when tokens are given."""
    base = _base_values(build, workload, overlays)
    tries: list[LayoutTry] = []
    results = {}
    first = True
    for label, options, offload in _candidate_layouts(build.gpus.count):
        if offload and workload.method != "full":
            continue
        try:
            result = memory(MemoryRequest(**base, **options))
        except InvalidSpec:
            if first:
                raise  # the model or the request itself is bad, not just this layout
            continue
        first = False
        data = result.to_dict()
        tries.append(LayoutTry(label=label, options=options, fits=result.fits,
                               per_gpu_bytes=float(result.breakdown.total_bytes),
                               host_bytes_per_node=float(data["host_bytes_per_node"]), offload=offload))
        results[label] = (result, data)
    first_result, first_data = next(iter(results.values()))
    ev_fields: dict[str, Any] = {
        "workload": workload, "gpu_id": build.gpus.id, "gpu_name": first_result.setup.gpu.name,
        "gpus": build.total_gpus, "usable_bytes": float(first_result.usable_bytes),
        "host_ram_bytes": build.memory.ram_gib * 2**30 if build.memory else None,
        "params": float(first_data["model"]["params_total"]), "tries": tuple(tries),
        "assumptions": tuple(first_result.setup.assumptions),
    }
    plain_fit = any(t.fits for t in tries if not t.offload)
    if workload.method == "full" and not plain_fit:
        lora = memory(MemoryRequest(**{**base, "method": "lora"}, zero=3, recompute="full"))
        ev_fields["lora_try"] = LayoutTry(label="LoRA r=16 (q,v) + ZeRO-3, full recompute",
                                          options={"method": "lora", "zero": 3, "recompute": "full"},
                                          fits=lora.fits, per_gpu_bytes=float(lora.breakdown.total_bytes),
                                          host_bytes_per_node=0.0, offload=False)
    if workload.tokens:
        ev_fields.update(_time(build, workload, base, tries, ev_fields["host_ram_bytes"]))
    return WorkloadEval(**ev_fields)


def _time(build: ServerRecord, workload: Workload, base: dict[str, Any], tries: list[LayoutTry],
          host_ram_bytes: float | None) -> dict[str, Any]:
    """Fastest fitting layout (plain first, then offload that the host RAM holds); else the lowest-memory one."""
    plain = [t for t in tries if not t.offload]
    offload = [t for t in tries if t.offload and t.fits and host_ram_bytes is not None
               and t.host_bytes_per_node <= host_ram_bytes]
    candidates = [t for t in plain if t.fits] or offload[:1] or [min(plain, key=lambda t: t.per_gpu_bytes)]
    best: tuple[float, str, float] | None = None
    for t in candidates:
        result = estimate(EstimateRequest(**base, **t.options, tokens=workload.tokens, **_network(build)))
        data = result.to_dict()
        time_s = data["time_to_train_s"]
        if time_s is not None and (best is None or time_s < best[0]):
            best = (float(time_s), t.label, float(data["mfu"]))
    if best is None:
        return {}
    return {"time_s": best[0], "time_layout": best[1], "mfu": best[2]}
