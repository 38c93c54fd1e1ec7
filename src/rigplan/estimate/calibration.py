"""Measured overrides of the estimators' efficiency and overhead parameters, for one device.

A calibration replaces, for the one device it was measured on, the achievable fractions that
rigplan otherwise takes from its per-family tables (estimate/efficiency.py, estimate/comm.py,
estimate/memory.py):

    efficiency fields   gemm_max, gemm_half_dim, fp8_gemm_max, hbm (an Efficiency field -> the measured
                        value) and attention (the measured fwd+bwd fraction of peak: the ceiling of
                        the fused stack's attention kernels on this device) and attention_eager (the same for the kernel
                        PyTorch SDPA runs)
    link / network      achievable fraction of the catalog line rate and per-step latency of the
                        scale-up and scale-out tiers (ring bus bandwidth, nccl-tests convention)
    memory overheads    CUDA context bytes and the reserved/allocated fragmentation fraction

Nothing else changes: the FLOP counts, the traffic volumes and the memory parts stay the model's
own; a calibration moves only the parameters that the model declares as measured quantities. It
comes from `rigplan probe` (microbenchmarks) or `rigplan calibrate` (a fit on a user's run) and
is carried by the resolved setup, never written into the constants.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from rigplan.domain.hardware import Gpu
from rigplan.errors import InvalidSpec
from rigplan.estimate.comm import Tier, link_tier, nic_tier
from rigplan.estimate.efficiency import Efficiency, attention_kernel_for, efficiency_for

EFFICIENCY_FIELDS = (*(f.name for f in fields(Efficiency) if f.type in ("float", float)), "attention",
                     "attention_eager")


FITTED_FRACTION_CAP = 2.0
"""Largest fraction of the peak a calibration may give. A probe measures at most 1, but `rigplan calibrate` fits a
compute scale over [0.1, 2] (measure/calibrate.py) that multiplies the family's fractions (all below 1) and absorbs
what rigplan's model leaves out, so a fitted value may pass 1; beyond 2 no fit gives it (gemm_max 5 read as 188%
MFU before this bound)."""
HALF_DIM_CAP = 1e6
"""Largest GEMM half-efficiency dimension a calibration may give: a matrix side far beyond any layer's."""
RATE_RATIO_CAP = 100.0
"""Largest ratio of a kernel's rate on this device to its rate on the curve's reference part."""
LATENCY_CAP_S = 1.0
"""Largest per-step link or network latency a calibration may give (NCCL's own are microseconds)."""
CONTEXT_CAP_BYTES = 1e12
"""Largest CUDA context and workspace a calibration may give (measured ones are under a few GiB)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Calibration:
    """Overrides measured on one device (`gpu_id` is its catalog id)."""

    gpu_id: str
    efficiency: dict[str, float] = field(default_factory=dict)
    link_efficiency: float | None = None
    link_latency_s: float | None = None
    nic_efficiency: float | None = None
    nic_latency_s: float | None = None
    cuda_context_bytes: float | None = None
    fragmentation_fraction: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.efficiency) - set(EFFICIENCY_FIELDS))
        if unknown:
            raise InvalidSpec(f"calibration: unknown efficiency parameter(s) {', '.join(unknown)}; "
                              f"known: {', '.join(EFFICIENCY_FIELDS)}")
        for name, value in self.efficiency.items():
            if name.endswith("_half_dim"):  # 0 is a flat curve (a device whose GEMMs do not fall off with size)
                if not 0 <= value <= HALF_DIM_CAP:
                    raise InvalidSpec(f"calibration: efficiency {name} must be a matrix dimension from 0 to "
                                      f"{HALF_DIM_CAP:,.0f}, got {value}")
            elif name == "warp_mma_over_reference":
                if not 0 <= value <= RATE_RATIO_CAP:
                    raise InvalidSpec(f"calibration: efficiency {name} must be a rate ratio from 0 to "
                                      f"{RATE_RATIO_CAP:g}, got {value}")
            elif not 0 < value <= FITTED_FRACTION_CAP:  # a fraction of the peak, or fp8_backward_rate's share
                raise InvalidSpec(f"calibration: efficiency {name} must be a fraction from 0 to "
                                  f"{FITTED_FRACTION_CAP:g}, got {value}")
        for name in ("link_efficiency", "nic_efficiency"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise InvalidSpec(f"calibration: {name} must be in (0, 1], got {value}")
        for name in ("link_latency_s", "nic_latency_s"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= LATENCY_CAP_S:
                raise InvalidSpec(f"calibration: {name} must be from 0 to {LATENCY_CAP_S:g} s, got {value}")
        if self.cuda_context_bytes is not None and not 0 <= self.cuda_context_bytes <= CONTEXT_CAP_BYTES:
            raise InvalidSpec(f"calibration: cuda_context_bytes must be from 0 to {CONTEXT_CAP_BYTES / 1e12:g} TB, got "
                              f"{self.cuda_context_bytes}")
        if self.fragmentation_fraction is not None and not 0 <= self.fragmentation_fraction < 1:
            raise InvalidSpec(f"calibration: fragmentation_fraction must be in [0, 1), got "
                              f"{self.fragmentation_fraction}")

    def applies_to(self, gpu: Gpu) -> bool:
        return self.gpu_id == gpu.id


def calibrated_efficiency(gpu: Gpu, calibration: Calibration | None) -> Efficiency:
    """The family's efficiency with the calibration's measured fields put in (when it is for this GPU)."""
    base = efficiency_for(gpu)
    if calibration is None or not calibration.applies_to(gpu) or not calibration.efficiency:
        return base
    values: dict[str, Any] = dict(calibration.efficiency)
    fused_ceiling = values.pop("attention", None)
    eager_ceiling = values.pop("attention_eager", None)
    if fused_ceiling is not None or eager_ceiling is not None:
        eager_kernel = attention_kernel_for(base, "eager")
        curves = dict(base.attention)
        for name, curve in base.attention.items():
            ceiling = eager_ceiling if name == eager_kernel else fused_ceiling
            if ceiling is not None:
                # measured on this device: its softmax cost is in the figure (no move between parts)
                curves[name] = replace(curve, max_fraction=float(ceiling), source="calibrated on this device",
                                       reference_peak_flop_per_s=0.0, reference_exp_per_s=0.0)
        values["attention"] = curves
    return replace(base, **values, measured=True,
                   source=f"calibrated on this device ({calibration.source or 'calibration file'}); "
                          f"other fields from {base.family}")


def calibrated_tiers(gpu: Gpu, calibration: Calibration | None) -> tuple[Tier, Tier]:
    """(scale-up, scale-out) tiers of the GPU with measured efficiency and latency put in."""
    if calibration is None or not calibration.applies_to(gpu):
        return link_tier(gpu.link), nic_tier(gpu)
    return (link_tier(gpu.link, efficiency=calibration.link_efficiency, latency_s=calibration.link_latency_s),
            nic_tier(gpu, efficiency=calibration.nic_efficiency, latency_s=calibration.nic_latency_s))
