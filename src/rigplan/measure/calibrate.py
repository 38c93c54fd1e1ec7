"""`rigplan calibrate`: fit rigplan's efficiency and overhead parameters to a user's measured runs.

Each run is an estimate request (model, recipe, layout, GPU) plus what was measured: the step time
(or tokens/s, total or per GPU) and, optionally, the peak memory torch reports (allocated and/or
reserved). The fit moves only parameters the estimators declare as measured quantities:

    compute scale c   multiplies every compute efficiency of the GPU family (gemm_max, fp8_gemm_max,
                      attention, attention_eager): step-time runs determine it
    comm scale k      multiplies the scale-up and scale-out link efficiencies (estimate/comm.py); fitted
                      only from two or more runs, where it is identifiable, and capped at line rate
    fragmentation     reserved / allocated - 1 when both are given (a direct measurement); from reserved
                      alone, the part of it the model's allocated bytes do not explain

Fit: least squares on log(step time), a grid over c in [0.1, 2] (and k in [0.1, 1/default]) refined
around the best point. Reported: the parameters, and each run's error before and after.
All runs must be on one GPU type: a calibration is for one device.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigplan.calibration.file import SCHEMA, CalibrationFile
from rigplan.errors import InvalidSpec
from rigplan.estimate import comm
from rigplan.estimate.calibration import Calibration
from rigplan.estimate.efficiency import attention_ceiling, efficiency_for
from rigplan.estimate.step import step_time
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.units import parse_bytes

MEASURED_KEYS = ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "peak_allocated", "peak_reserved")


@dataclass(frozen=True)
class Run:
    request: EstimateRequest
    step_time_s: float | None
    peak_allocated_bytes: float | None
    peak_reserved_bytes: float | None


def parse_run(values: dict[str, Any]) -> Run:
    """One run: estimate fields plus measured figures (step_time_s | tokens_per_s | tokens_per_s_per_gpu,
    peak_allocated / peak_reserved as sizes like 61.2GiB)."""
    fields = {k: v for k, v in values.items() if k not in MEASURED_KEYS and v is not None}
    if fields.get("calibration") is not None:
        raise InvalidSpec("rigplan calibrate fits from rigplan's defaults; leave out --calibration")
    request = EstimateRequest.model_validate(fields)
    result = estimate(request)
    tokens_per_step = float(result.step.tokens_per_step)
    step = values.get("step_time_s")
    if step is None and values.get("tokens_per_s"):
        step = tokens_per_step / float(values["tokens_per_s"])
    if step is None and values.get("tokens_per_s_per_gpu"):
        step = tokens_per_step / (float(values["tokens_per_s_per_gpu"]) * result.num_gpus)
    alloc = values.get("peak_allocated")
    reserved = values.get("peak_reserved")
    run = Run(request=request, step_time_s=float(step) if step is not None else None,
              peak_allocated_bytes=parse_bytes(str(alloc)) if alloc is not None else None,
              peak_reserved_bytes=parse_bytes(str(reserved)) if reserved is not None else None)
    if run.step_time_s is None and run.peak_allocated_bytes is None and run.peak_reserved_bytes is None:
        raise InvalidSpec("a run needs a measured figure: step_time_s, tokens_per_s, tokens_per_s_per_gpu, "
                          "peak_allocated or peak_reserved")
    if run.step_time_s is not None and not run.step_time_s > 0:
        raise InvalidSpec(f"measured step time must be > 0 s, got {run.step_time_s}")
    return run


def _calibration(gpu_id: str, base: Any, link_default: float, nic_default: float, c: float,
                 k: float | None) -> Calibration:
    eff = {"gemm_max": base.gemm_max * c, "attention": attention_ceiling(base, "fused") * c,
           "attention_eager": attention_ceiling(base, "eager") * c}
    if base.fp8_gemm_max:
        eff["fp8_gemm_max"] = base.fp8_gemm_max * c
    if base.fp4_gemm_max:
        eff["fp4_gemm_max"] = base.fp4_gemm_max * c
    return Calibration(gpu_id=gpu_id, efficiency=eff,
                       link_efficiency=min(link_default * k, 1.0) if k is not None else None,
                       nic_efficiency=min(nic_default * k, 1.0) if k is not None else None, source="rigplan calibrate")


def fit(runs: list[Run]) -> CalibrationFile:
    """Fit the parameters (module docstring) and return the calibration with its fit report."""
    if not runs:
        raise InvalidSpec("rigplan calibrate needs at least one measured run")
    results = [estimate(r.request) for r in runs]
    gpus = {res.setup.gpu.id for res in results}
    if len(gpus) > 1:
        raise InvalidSpec(f"all runs must be on one GPU type (a calibration is per device); got {', '.join(gpus)}")
    gpu = results[0].setup.gpu
    base = efficiency_for(gpu)
    link_default = comm.link_tier(gpu.link).efficiency
    nic_default = comm.nic_tier(gpu).efficiency
    timed = [(r, res) for r, res in zip(runs, results, strict=True) if r.step_time_s is not None]

    def predicted(res: Any, cal: Calibration | None) -> float:
        s = res.setup
        return float(step_time(s.arch, s.job, s.layout, s.gpu, global_batch=s.job.global_batch,
                               calibration=cal).step_time_s)

    def loss(c: float, k: float | None) -> float:
        cal = _calibration(gpu.id, base, link_default, nic_default, c, k)
        return sum(math.log(predicted(res, cal) / r.step_time_s) ** 2 for r, res in timed)

    report: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    if timed:
        fit_comm = len(timed) >= 2
        k_max = 1.0 / max(link_default, nic_default)
        cs = np.linspace(0.1, 2.0, 39)
        ks = np.linspace(0.1, k_max, 10) if fit_comm else [None]
        best = min(((loss(c, k), c, k) for c in cs for k in ks), key=lambda t: t[0])
        _, c_best, k_best = best
        for _ in range(3):  # refine around the best grid point
            dc = (cs[1] - cs[0]) / 2
            cs = np.linspace(max(c_best - dc, 0.01), c_best + dc, 9)
            if fit_comm and k_best is not None:
                dk = (ks[1] - ks[0]) / 2  # type: ignore[operator]
                ks = np.linspace(max(k_best - dk, 0.01), min(k_best + dk, k_max), 7)
            best = min(((loss(c, k), c, k) for c in cs for k in ks), key=lambda t: t[0])
            _, c_best, k_best = best
        cal = _calibration(gpu.id, base, link_default, nic_default, float(c_best),
                           float(k_best) if k_best is not None else None)
        overrides["efficiency"] = dict(cal.efficiency)
        if k_best is not None:
            overrides["link_efficiency"], overrides["nic_efficiency"] = cal.link_efficiency, cal.nic_efficiency
        rows = []
        for r, res in timed:
            before, after = predicted(res, None), predicted(res, cal)
            rows.append({"run": r.request.model, "measured_step_time_s": r.step_time_s,
                         "estimated_before_s": before, "estimated_after_s": after,
                         "error_before": before / r.step_time_s - 1, "error_after": after / r.step_time_s - 1})
        report["step_time"] = {"compute_scale": float(c_best), "comm_scale": float(k_best) if k_best else None,
                               "runs": rows,
                               "residual_rms_log": math.sqrt(best[0] / len(timed)),
                               "note": "one run fits the compute scale only" if not fit_comm else ""}
    memory_rows = []
    fragments = []
    for r, res in zip(runs, results, strict=True):
        mem = res.memory.breakdown
        if r.peak_allocated_bytes and r.peak_reserved_bytes:
            fragments.append(r.peak_reserved_bytes / r.peak_allocated_bytes - 1.0)
        elif r.peak_reserved_bytes:
            fragments.append(r.peak_reserved_bytes / mem.allocated_bytes - 1.0)
        if r.peak_allocated_bytes or r.peak_reserved_bytes:
            memory_rows.append({"run": r.request.model, "estimated_allocated_bytes": mem.allocated_bytes,
                                "measured_allocated_bytes": r.peak_allocated_bytes,
                                "estimated_reserved_bytes": mem.reserved_bytes,
                                "measured_reserved_bytes": r.peak_reserved_bytes})
    if fragments:
        mean = float(np.mean(fragments))
        report["memory"] = {"fragmentation_fraction": None, "spread": float(np.ptp(fragments)), "runs": memory_rows}
        if mean >= 0:
            overrides["fragmentation_fraction"] = min(mean, 0.5)
            report["memory"]["fragmentation_fraction"] = overrides["fragmentation_fraction"]
        else:
            report["memory"]["note"] = ("measured reserved memory is below rigplan's allocated estimate: the "
                                        "estimate is high for this run, which no overhead parameter can fix; "
                                        "fragmentation not fitted")
    return CalibrationFile.model_validate({
        "schema": SCHEMA, "device": {"name": gpu.name, "kind": "cuda", "gpu_id": gpu.id},
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "source": "rigplan calibrate",
        "measured": {"runs": [{**r.request.model_dump(exclude_none=True, exclude_defaults=True),
                               "step_time_s": r.step_time_s, "peak_allocated_bytes": r.peak_allocated_bytes,
                               "peak_reserved_bytes": r.peak_reserved_bytes} for r in runs]},
        "catalog": {"gpu_id": gpu.id, "peak_flop_per_s": dict(gpu.peak_flop_per_s),
                    "memory_bandwidth_bytes_per_s": gpu.memory_bandwidth_bytes_per_s},
        "overrides": overrides, "fit": report,
    })
