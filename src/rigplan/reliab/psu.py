"""The seed article's day-7 power-supply incident as a worked scenario.

The article (seed README §5): "a non-redundant power supply failed on day 7 of a run and 3 days of
progress were lost; the author now insists on 2+1 redundant PSUs". What the numbers imply:

- The last usable checkpoint was written 3 days before the failure (day 4), so checkpoints were at
  least 3 days apart; if they were periodic from the start of the run, only a 4-day period puts
  the last one at day 4 (`implied_periodic_interval_s`).
- With no spare PSU the server stops: the run loses the work since the last checkpoint and waits
  for the replacement part and a restart.
- With 2+1 PSUs the server keeps running on two; the failed unit is hot-swapped. Work is lost only
  if a second PSU fails before the replacement arrives.
- With checkpoints at Daly's interval for that server the expected loss is half an interval plus
  the write, hours instead of days, even without redundancy.

Assumptions (the article does not say): 8 GPUs in the server, a 7B model (the article's own §1
example) checkpointed at 14 B/param to the §3.2 build's RAID 0 of four PCIe 4.0 NVMe drives,
24 h to get a replacement PSU, 100,000 h PSU MTBF, rigplan's 10-minute restart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rigplan.errors import InvalidSpec
from rigplan.reliab.checkpoint import optimal_interval_s, training_checkpoint_bytes
from rigplan.reliab.failures import DAY_S, DEFAULT_FAILURE_MODEL, HOUR_S, FailureModel, job_mtbf_s
from rigplan.reliab.goodput import DEFAULT_RESTART_S
from rigplan.reliab.storage import StorageSpec, checkpoint_write_s, nvme_gen4, raid0

SEED_FAILURE_AT_S = 7 * DAY_S
SEED_LOST_PROGRESS_S = 3 * DAY_S
SEED_SERVER_GPUS = 8
"""ASSUMPTION: the article does not say which server failed; its builds have 2, 4 or 8 GPUs."""
SEED_CHECKPOINT_BYTES = training_checkpoint_bytes(7e9)
"""ASSUMPTION: the article's 7B example model, 14 B/param (98 GB)."""
ASSUMED_PSU_REPLACEMENT_S = 24 * HOUR_S
"""ASSUMPTION: a replacement PSU arrives and is fitted within a day (next-business-day part)."""
ASSUMED_PSU_MTBF_S = 100_000 * HOUR_S
"""ASSUMPTION: order of magnitude of server-PSU MTBF ratings; check the datasheet of the unit."""


def seed_storage() -> StorageSpec:
    """The article's §3.2 build: RAID 0 of 4 × 3.84 TB NVMe (PCIe 4.0 assumed)."""
    return raid0(nvme_gen4(), 4)


@dataclass(frozen=True, kw_only=True, slots=True)
class PsuOutcome:
    label: str
    psus_installed: int
    psus_required: int
    server_stays_up: bool
    lost_work_s: float
    """Training progress that must be recomputed."""
    downtime_s: float
    """Waiting for the part plus the restart (0 when the server stays up)."""
    p_outage_before_repair: float
    """Chance that the PSUs still running drop below the required count before the replacement."""

    @property
    def delay_s(self) -> float:
        """How much later the run finishes: lost work + downtime."""
        return self.lost_work_s + self.downtime_s

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "psus_installed": self.psus_installed, "psus_required": self.psus_required,
                "server_stays_up": self.server_stays_up, "lost_work_s": self.lost_work_s,
                "downtime_s": self.downtime_s, "delay_s": self.delay_s,
                "p_outage_before_repair": self.p_outage_before_repair}


@dataclass(frozen=True, kw_only=True, slots=True)
class PsuIncident:
    failure_at_s: float
    lost_progress_s: float
    implied_min_interval_s: float
    """Checkpoints were at least this far apart (= the reported loss)."""
    implied_periodic_interval_s: float | None
    """The shortest period τ, with checkpoints at k·τ from the run start, that leaves the last one
    exactly `lost_progress_s` before the failure; None when no periodic schedule fits."""
    daly_interval_s: float
    """Daly's optimal interval for this server (its MTBF and checkpoint write time)."""
    server_mtbf_s: float
    checkpoint_write_s: float
    outcomes: tuple[PsuOutcome, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"failure_at_s": self.failure_at_s, "lost_progress_s": self.lost_progress_s,
                "implied_min_interval_s": self.implied_min_interval_s,
                "implied_periodic_interval_s": self.implied_periodic_interval_s,
                "daly_interval_s": self.daly_interval_s, "server_mtbf_s": self.server_mtbf_s,
                "checkpoint_write_s": self.checkpoint_write_s, "outcomes": [o.to_dict() for o in self.outcomes]}


def implied_periodic_interval_s(*, failure_at_s: float, lost_progress_s: float) -> float | None:
    """Shortest τ = t_c/k (k ≥ 1, t_c = failure − loss) with τ > loss: the next checkpoint after
    t_c would have come after the failure. None when no such schedule exists (t_c = 0: nothing saved
    since the start; t_c < loss: a period of t_c or less would have saved again before the failure)."""
    if not 0 <= lost_progress_s <= failure_at_s:
        raise InvalidSpec(f"lost progress must be in [0, failure time], got {lost_progress_s} of {failure_at_s}")
    last_ckpt_s = failure_at_s - lost_progress_s
    if last_ckpt_s == 0:
        return None
    if lost_progress_s == 0:
        return 0.0
    k = math.ceil(last_ckpt_s / lost_progress_s) - 1
    return last_ckpt_s / k if k >= 1 else None


def psu_incident(*, failure_at_s: float = SEED_FAILURE_AT_S, lost_progress_s: float = SEED_LOST_PROGRESS_S,
                 num_gpus: int = SEED_SERVER_GPUS, checkpoint_bytes: float = SEED_CHECKPOINT_BYTES,
                 storage: StorageSpec | None = None, failure_model: FailureModel = DEFAULT_FAILURE_MODEL,
                 repair_s: float = ASSUMED_PSU_REPLACEMENT_S, restart_s: float = DEFAULT_RESTART_S,
                 psus_required: int = 2, psu_mtbf_s: float = ASSUMED_PSU_MTBF_S) -> PsuIncident:
    """Three outcomes of one PSU failure on one server (defaults: the seed's day-7 incident).

    1. No spare PSU, the article's checkpoints: lost = the reported loss; downtime = repair + R.
    2. No spare PSU, Daly's interval τ* for the server: expected lost = (τ* + δ)/2 (a failure lands
       uniformly inside a segment of compute + write); downtime = repair + R.
    3. One spare (N+1): the server stays up, nothing is lost; the outage risk is the chance that
       one of the `psus_required` running units fails during the repair,
       p = 1 − exp(−psus_required · repair / PSU MTBF).
    Left out: a PSU failure that also damages other parts, power events outside the server (PDU,
    feed, UPS), the time to notice the failure.
    """
    if psus_required < 1:
        raise InvalidSpec(f"psus_required must be >= 1, got {psus_required}")
    if not psu_mtbf_s > 0 or repair_s < 0 or restart_s < 0:
        raise InvalidSpec("PSU MTBF must be > 0 and repair/restart times >= 0")
    store = seed_storage() if storage is None else storage
    periodic = implied_periodic_interval_s(failure_at_s=failure_at_s, lost_progress_s=lost_progress_s)
    write_s = checkpoint_write_s(checkpoint_bytes, store, num_gpus=num_gpus, gpus_per_node=num_gpus)
    mtbf_s = job_mtbf_s(num_gpus, failure_model)
    tau_s = optimal_interval_s(write_s, mtbf_s)
    downtime_s = repair_s + restart_s
    p_outage = -math.expm1(-psus_required * repair_s / psu_mtbf_s)
    n = psus_required
    outcomes = (
        PsuOutcome(label=f"{n}+0, the article's checkpoints", psus_installed=n, psus_required=n,
                   server_stays_up=False, lost_work_s=lost_progress_s, downtime_s=downtime_s,
                   p_outage_before_repair=1.0),
        PsuOutcome(label=f"{n}+0, Daly interval (expected)", psus_installed=n, psus_required=n,
                   server_stays_up=False, lost_work_s=(tau_s + write_s) / 2, downtime_s=downtime_s,
                   p_outage_before_repair=1.0),
        PsuOutcome(label=f"{n}+1, hot-swap", psus_installed=n + 1, psus_required=n, server_stays_up=True,
                   lost_work_s=0.0, downtime_s=0.0, p_outage_before_repair=p_outage),
    )
    return PsuIncident(failure_at_s=failure_at_s, lost_progress_s=lost_progress_s,
                       implied_min_interval_s=lost_progress_s, implied_periodic_interval_s=periodic,
                       daly_interval_s=tau_s, server_mtbf_s=mtbf_s, checkpoint_write_s=write_s, outcomes=outcomes)
