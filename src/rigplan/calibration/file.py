"""The calibration file (YAML or JSON): measured figures of one device and the overrides they give.

Schema `rigplan-calibration/1` (docs/calibration.md):

    schema: rigplan-calibration/1
    device:  {name, kind: cuda|cpu|..., gpu_id: catalog id or null, count, torch}
    created: ISO time;  source: what produced it (rigplan probe / rigplan calibrate)
    measured:
      gemm:        [{m, n, k, dtype, time_s, flop_per_s}]          (dense C = A·B, 2·m·n·k FLOP)
      attention:   [{batch, heads, seq, head_dim, dtype, causal, time_s, flop_per_s}]  (fwd+bwd)
      memory_bandwidth_bytes_per_s: float (device copy, read + write counted)
      collectives: [{op, backend, ranks, size_bytes, time_s, bus_bandwidth_bytes_per_s}]
      runs:        [{...}] the user's runs a `calibrate` fit used
    catalog:   the catalog's figures for the same device (shown side by side), null when uncatalogued
    overrides: {efficiency: {field: value}, link_efficiency, link_latency_s, nic_efficiency, nic_latency_s,
                cuda_context_bytes, fragmentation_fraction}
    fit:       {parameter: {value, points, residual_rms}} how each override was obtained

Only `schema`, `device` and `overrides` are needed to apply a file; the rest documents it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigplan.domain.hardware import Gpu, Link
from rigplan.errors import InvalidSpec
from rigplan.estimate.calibration import Calibration
from rigplan.files import load_json, load_yaml, read_text, user_path, write_text

SCHEMA = "rigplan-calibration/1"


class DeviceInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str = Field(description="torch device type: cuda, cpu, ...")
    gpu_id: str | None = Field(None, description="The catalog id this device is, when it is catalogued")
    count: int = Field(1, ge=1, description="Devices (processes) the collectives ran over")
    torch: str | None = None


class Overrides(BaseModel):
    model_config = ConfigDict(extra="forbid")

    efficiency: dict[str, float] = Field(default_factory=dict)
    link_efficiency: float | None = None
    link_latency_s: float | None = None
    nic_efficiency: float | None = None
    nic_latency_s: float | None = None
    cuda_context_bytes: float | None = None
    fragmentation_fraction: float | None = None


class CalibrationFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["rigplan-calibration/1"] = Field(SCHEMA, alias="schema")
    device: DeviceInfo
    created: str | None = None
    source: str = ""
    measured: dict[str, Any] = Field(default_factory=dict)
    catalog: dict[str, Any] | None = None
    overrides: Overrides = Field(default_factory=Overrides)
    fit: dict[str, Any] = Field(default_factory=dict)

    def to_domain(self) -> Calibration:
        o = self.overrides
        return Calibration(
            gpu_id=self.device.gpu_id or f"device:{self.device.name}", efficiency=dict(o.efficiency),
            link_efficiency=o.link_efficiency, link_latency_s=o.link_latency_s, nic_efficiency=o.nic_efficiency,
            nic_latency_s=o.nic_latency_s, cuda_context_bytes=o.cuda_context_bytes,
            fragmentation_fraction=o.fragmentation_fraction, source=self.source)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


def load_calibration(path: str | Path) -> CalibrationFile:
    """Read and validate a calibration file; InvalidSpec with the reason when it is not one."""
    p = user_path(path, "calibration", "send the calibration's content inline")
    if not p.exists():
        raise InvalidSpec(f"--calibration {path}: no such file (write one with `rigplan probe` or `rigplan calibrate`)")
    text = read_text(p, "--calibration")
    data = load_json(text, f"--calibration {path}") if p.suffix == ".json" else load_yaml(text, f"--calibration {path}")
    if not isinstance(data, dict):
        raise InvalidSpec(f"--calibration {path}: expected a mapping with schema: {SCHEMA}")
    try:
        calibration = CalibrationFile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "file"
        raise InvalidSpec(f"--calibration {path}: {where}: {first['msg']} (schema {SCHEMA}, docs/calibration.md)") \
            from err
    try:
        calibration.to_domain()  # the overrides' ranges (estimate.calibration.Calibration)
    except InvalidSpec as err:
        raise InvalidSpec(f"--calibration {path}: {err}") from None
    return calibration


def write_calibration(calibration: CalibrationFile, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write YAML (or JSON for a .json name); refuses to replace an existing file unless told to."""
    p = Path(path)
    if p.exists() and not overwrite:
        raise InvalidSpec(f"{path} exists; choose another --output or pass --force to replace it")
    data = calibration.to_dict()
    text = json.dumps(data, indent=2) + "\n" if p.suffix == ".json" else yaml.safe_dump(data, sort_keys=False)
    write_text(p, text, "--output")
    return p


def device_gpu(calibration: CalibrationFile) -> Gpu:
    """A Gpu record for an uncatalogued device (a CPU, an unlisted card) from its measured figures.

    Its peaks are the asymptotes of the fitted GEMM curves (the best measured rates when no fit was
    made), so the efficiency overrides are fractions of what this device was seen to reach; its
    bandwidth is the measured copy bandwidth, its link the measured collective bus bandwidth.
    Memory capacity is not measured: the memory check is not meaningful.
    """
    m = calibration.measured
    gemm = [g for g in m.get("gemm", []) if g.get("flop_per_s")]
    if not gemm or not m.get("memory_bandwidth_bytes_per_s"):
        raise InvalidSpec("calibration file has no GEMM or bandwidth measurements to describe the device "
                          "(run `rigplan probe`)")
    peaks: dict[str, float] = {}
    fitted = calibration.fit.get("gemm_by_dtype", {})
    for g in gemm:
        key = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "fp8"}.get(g["dtype"])
        if key:
            peak = fitted.get(g["dtype"], {}).get("peak_flop_per_s") or float(g["flop_per_s"])
            peaks[key] = max(peaks.get(key, 0.0), float(peak))
    if "fp32" in peaks:
        peaks.setdefault("tf32", peaks["fp32"])
    busbw = [c["bus_bandwidth_bytes_per_s"] for c in m.get("collectives", []) if c.get("bus_bandwidth_bytes_per_s")]
    link_bw = max(busbw) if busbw else float(m["memory_bandwidth_bytes_per_s"])
    return Gpu(id=f"device:{calibration.device.name}", name=calibration.device.name, vendor="measured",
               architecture=calibration.device.kind, memory_bytes=0, memory_kind="host",
               memory_bandwidth_bytes_per_s=float(m["memory_bandwidth_bytes_per_s"]), peak_flop_per_s=peaks,
               tdp_w=0.0, form_factor=calibration.device.kind,
               link=Link(kind="measured", bandwidth_bytes_per_s=link_bw, domain_size=calibration.device.count),
               host_bus_bytes_per_s=0.0, ecc_capacity_loss_fraction=0.0, ecc_default_on=False,
               gpus_per_node=calibration.device.count)


def calibration_from(value: str | dict[str, Any]) -> CalibrationFile:
    """A calibration given as a file path (CLI) or as the file's mapping inline (HTTP API)."""
    if isinstance(value, dict):
        try:
            return CalibrationFile.model_validate(value)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "calibration"
            raise InvalidSpec(f"calibration: {where}: {first['msg']} (schema {SCHEMA})") from err
    return load_calibration(value)


def applied_note(calibration: CalibrationFile, gpu: Gpu) -> str:
    """One assumption line: what the calibration changed, or why it was not applied."""
    if not calibration.to_domain().applies_to(gpu):
        return (f"calibration of {calibration.device.name} ({calibration.device.gpu_id or 'uncatalogued'}) "
                f"not applied: it was measured on another device than {gpu.name}")
    o = calibration.overrides
    parts = [f"{k}={v:.3g}" for k, v in o.efficiency.items()]
    parts += [f"{k}={v:.3g}" for k, v in o.model_dump(exclude={"efficiency"}, exclude_none=True).items()]
    return f"calibrated on {calibration.device.name} ({calibration.source or 'file'}): " + (", ".join(parts) or
                                                                                         "no overrides")
