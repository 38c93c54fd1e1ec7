"""`reliability_for_job`: interruptions, checkpoint interval, goodput and expected wall time of one job.

Model (each step documented in docs/methodology/reliability.md):

1. Rates: λ_u = n·Σ unexpected rate_i, λ_p = n·Σ planned rate_i (failures.py); M = 1/λ_u.
2. Checkpoint write δ_w = C / aggregate write bandwidth (storage.py). With asynchronous
   checkpointing only a fraction f of it blocks training: δ = f·δ_w. The rest, (1 − f)·δ_w, is the
   time a checkpoint is in flight and not yet usable; a failure then rolls back one checkpoint
   further, which to first order adds (1 − f)·δ_w of lost work per failure, so it is added to R.
3. Interval τ: given, or Daly's higher-order optimum for (δ, M) (checkpoint.py); an async
   checkpoint cannot start before the previous one is persisted, so τ ≥ δ_w − δ; with a step
   time, τ is a whole number of steps (at least one).
4. Unexpected failures: Daly's exact expected wall time
   W_u = M·e^{R'/M}·(e^{(τ+δ)/M} − 1)·T_s/τ with R' = R + (1 − f)·δ_w.
5. Planned interruptions are announced, so the job checkpoints and stops: each costs δ + R and no
   rework. They arrive at λ_p per second of wall time: W = W_u / (1 − λ_p·(δ + R)).
6. goodput = T_s / W; expected lost time = W − T_s, attributed to checkpoint writes
   (T_s/τ·δ + λ_p·W·δ), restarts (W_u·(1 − e^{−R/M}) + λ_p·W·R: in Daly's model a restart hit by
   another failure is cut short, so a restart lasts M·(1 − e^{−R/M}) on average) and rework (the
   rest: lost compute, half-written checkpoints, in-flight async checkpoints).

Left out: a job that shrinks and continues instead of restarting (elastic training), hot spares
that cut the restart, failures that only slow the job, the time to first start, and the final
checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rigplan.errors import InvalidSpec
from rigplan.reliab.checkpoint import IntervalRule, daly_wall_time_s, optimal_interval_s
from rigplan.reliab.failures import DAY_S, DEFAULT_FAILURE_MODEL, FailureModel, job_interruption_rate_per_s
from rigplan.reliab.storage import StorageSpec, checkpoint_write_s, default_storage_for

DEFAULT_RESTART_S = 600.0
"""Restart after an interruption: 10 min to detect, reschedule, re-initialise and load the checkpoint.
rigplan ASSUMPTION; a purpose-built recovery system reached 150 s on 4,800 accelerators
(FlashRecovery, arXiv 2509.03047); ordinary job restarts take tens of minutes."""

DEFAULT_GPUS_PER_NODE = 8


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReliabilityResult:
    """Expected effect of interruptions and checkpointing on one training job."""

    num_gpus: int
    ideal_time_s: float
    """Failure-free, checkpoint-free time to train (T_s)."""
    wall_time_s: float
    """Expected wall-clock time including checkpoints, rework and restarts; inf when the job can
    never finish (interruptions faster than it can restart)."""
    goodput: float
    """ideal_time_s / wall_time_s."""
    interruptions_per_day: float
    """All interruptions (unexpected + planned) of this job per day."""
    unexpected_per_day: float
    planned_per_day: float
    mtbf_s: float
    """Job mean time between interruptions, all causes (86,400 / interruptions_per_day)."""
    mtbf_unexpected_s: float
    """Mean time between unexpected interruptions (M in Daly's model; drives the interval)."""
    checkpoint_interval_s: float
    """Compute time between two checkpoints (τ); inf when there are no failures to guard against."""
    checkpoint_write_s: float
    """Time to write one checkpoint to storage (δ_w)."""
    checkpoint_blocking_s: float
    """The part of the write that stalls training (δ = f·δ_w)."""
    restart_s: float
    expected_interruptions: float
    """Interruptions expected over the whole wall time."""
    expected_lost_s: float
    """wall_time_s − ideal_time_s."""
    lost_checkpointing_s: float
    lost_restarts_s: float
    lost_rework_s: float
    storage: StorageSpec
    failure_model: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; infinite values become None."""
        return {
            "num_gpus": self.num_gpus,
            "ideal_time_s": self.ideal_time_s,
            "wall_time_s": _finite_or_none(self.wall_time_s),
            "goodput": self.goodput,
            "interruptions_per_day": self.interruptions_per_day,
            "unexpected_per_day": self.unexpected_per_day,
            "planned_per_day": self.planned_per_day,
            "mtbf_s": _finite_or_none(self.mtbf_s),
            "mtbf_unexpected_s": _finite_or_none(self.mtbf_unexpected_s),
            "checkpoint_interval_s": _finite_or_none(self.checkpoint_interval_s),
            "checkpoint_write_s": self.checkpoint_write_s,
            "checkpoint_blocking_s": self.checkpoint_blocking_s,
            "restart_s": self.restart_s,
            "expected_interruptions": _finite_or_none(self.expected_interruptions),
            "expected_lost_s": _finite_or_none(self.expected_lost_s),
            "lost_breakdown": {
                "checkpointing_s": _finite_or_none(self.lost_checkpointing_s),
                "restarts_s": _finite_or_none(self.lost_restarts_s),
                "rework_s": _finite_or_none(self.lost_rework_s),
            },
            "storage": self.storage.to_dict(),
            "failure_model": self.failure_model,
        }


def reliability_for_job(*, num_gpus: int, ideal_time_s: float, checkpoint_bytes: float,
                        storage: StorageSpec | None = None, failure_model: FailureModel = DEFAULT_FAILURE_MODEL,
                        restart_s: float = DEFAULT_RESTART_S, interval_s: float | None = None,
                        gpus_per_node: int = DEFAULT_GPUS_PER_NODE, blocking_fraction: float = 1.0,
                        interval_rule: IntervalRule = "daly", step_time_s: float | None = None) -> ReliabilityResult:
    """Expected wall time, goodput and checkpoint plan of a job of `num_gpus` GPUs (model: module doc).

    `storage` defaults to one PCIe 4.0 NVMe drive for a one-node job and to shared storage for a
    multi-node one (`default_storage_for`: a local checkpoint dies with its node);
    `failure_model` to the Llama 3 405B rates; `restart_s` to 10 min (assumption);
    `interval_s` to Daly's optimum; `blocking_fraction` is the share of the write that stalls
    training: 1.0 for a synchronous checkpoint, less for an asynchronous one (only the
    device-to-host copy blocks; measure it for your framework). With `step_time_s` the interval
    is rounded to a whole number of training steps, at least one (checkpoints fall between steps).
    """
    if num_gpus < 1:
        raise InvalidSpec(f"num_gpus must be >= 1, got {num_gpus}")
    if not math.isfinite(ideal_time_s) or ideal_time_s < 0:
        raise InvalidSpec(f"ideal time must be finite and >= 0 s, got {ideal_time_s}")
    if not math.isfinite(restart_s) or restart_s < 0:
        raise InvalidSpec(f"restart time must be finite and >= 0 s, got {restart_s}")
    if not 0 <= blocking_fraction <= 1:
        raise InvalidSpec(f"blocking_fraction must be in [0, 1], got {blocking_fraction}")
    if interval_s is not None and not (interval_s > 0 and math.isfinite(interval_s)):
        raise InvalidSpec(f"checkpoint interval must be finite and > 0 s, got {interval_s}")
    if step_time_s is not None and not (step_time_s > 0 and math.isfinite(step_time_s)):
        raise InvalidSpec(f"step time must be finite and > 0 s, got {step_time_s}")
    store = default_storage_for(num_gpus, gpus_per_node) if storage is None else storage

    write_s = checkpoint_write_s(checkpoint_bytes, store, num_gpus=num_gpus, gpus_per_node=gpus_per_node)
    delta_s = blocking_fraction * write_s
    in_flight_s = write_s - delta_s
    lam_u = job_interruption_rate_per_s(num_gpus, failure_model.without_planned())
    lam_p = job_interruption_rate_per_s(num_gpus, failure_model) - lam_u
    mtbf_u = math.inf if lam_u == 0 else 1.0 / lam_u
    lam = lam_u + lam_p

    tau_s = interval_s if interval_s is not None else optimal_interval_s(delta_s, mtbf_u, interval_rule)
    tau_s = max(tau_s, in_flight_s)
    if step_time_s is not None and math.isfinite(tau_s):
        tau_s = max(1, round(tau_s / step_time_s)) * step_time_s

    wall_u = daly_wall_time_s(ideal_s=ideal_time_s, tau_s=tau_s, delta_s=delta_s, restart_s=restart_s + in_flight_s,
                              mtbf_s=mtbf_u)
    planned_busy = lam_p * (delta_s + restart_s)
    wall_s = wall_u / (1 - planned_busy) if planned_busy < 1 else math.inf

    if ideal_time_s == 0:
        goodput = 1.0
    elif math.isinf(wall_s):
        goodput = 0.0
    else:
        goodput = ideal_time_s / wall_s
    lost_s = wall_s - ideal_time_s
    if math.isinf(wall_s):
        ckpt_s = restarts_s = rework_s = math.inf
    else:
        periodic_s = ideal_time_s / tau_s * delta_s if 0 < tau_s < math.inf else 0.0
        ckpt_s = periodic_s + lam_p * wall_s * delta_s
        # A restart cut short by another failure lasts M·(1 − e^{−R/M}) on average; over W_u/M
        # failures that is W_u·(1 − e^{−R/M}), the part of W_u that the e^{R'/M} factor adds for R.
        unexpected_restarts_s = -wall_u * math.expm1(-restart_s / mtbf_u) if lam_u else 0.0
        restarts_s = unexpected_restarts_s + lam_p * wall_s * restart_s
        rework_s = max(0.0, lost_s - ckpt_s - restarts_s)

    return ReliabilityResult(
        num_gpus=num_gpus, ideal_time_s=ideal_time_s, wall_time_s=wall_s, goodput=goodput,
        interruptions_per_day=lam * DAY_S, unexpected_per_day=lam_u * DAY_S, planned_per_day=lam_p * DAY_S,
        mtbf_s=math.inf if lam == 0 else 1.0 / lam, mtbf_unexpected_s=mtbf_u,
        checkpoint_interval_s=tau_s, checkpoint_write_s=write_s, checkpoint_blocking_s=delta_s,
        restart_s=restart_s, expected_interruptions=lam * wall_s if lam else 0.0,
        expected_lost_s=lost_s, lost_checkpointing_s=ckpt_s, lost_restarts_s=restarts_s, lost_rework_s=rework_s,
        storage=store, failure_model=failure_model.name,
    )
