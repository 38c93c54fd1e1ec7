"""Job-interrupting failures: rates per GPU-second by cause, and what a job of n GPUs sees.

Source of the default rates: Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783, Sec. 3.3.4,
Table 5): Llama 3 405B pre-training on 16,384 H100 80GB GPUs over a 54-day snapshot had 466 job
interruptions, 47 planned and 419 unexpected, with the unexpected ones broken down by root cause.
We turn each count into a rate per GPU-second:

    rate = count / (16,384 GPUs × 54 days × 86,400 s/day)      (= count / 21,233,664 GPU-hours)

so 419 unexpected interruptions give 1.97e-5 per GPU-hour, one per ~50,700 GPU-hours. The
percentages printed in the paper's table do not all equal count/419 (e.g. 148 faulty-GPU events are
printed as 30.1 %, 148/419 = 35.3 %); the counts sum to 419, so the counts are used.

A job's interruption rate is the per-GPU rate times its GPU count, λ = n · Σ rate_i, and its mean
time between interruptions is M = 1/λ. Kokolis et al. 2024 ("Revisiting Reliability in
Large-Scale Machine Learning Research Clusters", arXiv 2410.21680, HPCA 2025) fit job MTTF on two
Meta A100 clusters and find it falls roughly inversely with job size, which is this linear model.

Left out: per-host causes (PSU, NIC, CPU, host maintenance) are spread over the 8 GPUs of a Grand
Teton host, so a denser or sparser host would see them at a different per-GPU rate; failure rates
that change with age (infant mortality, wear-out) or with load; correlated failures (a rack PDU, a
switch taking out many hosts at once); failures that slow a job down without stopping it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from rigplan.errors import InvalidSpec

DAY_S = 86_400.0
HOUR_S = 3_600.0

LLAMA3_405B_GPUS = 16_384
LLAMA3_405B_SNAPSHOT_S = 54 * DAY_S
LLAMA3_405B_EXPOSURE_GPU_S = LLAMA3_405B_GPUS * LLAMA3_405B_SNAPSHOT_S
"""16,384 GPUs × 54 days, in GPU-seconds (21,233,664 GPU-hours)."""
LLAMA3_405B_SOURCE = "Meta, The Llama 3 Herd of Models, arXiv 2407.21783, Sec. 3.3.4 and Table 5"


@dataclass(frozen=True, kw_only=True, slots=True)
class FailureCause:
    """One root cause of job interruptions with its rate per GPU-second."""

    name: str
    """Stable snake_case id, e.g. 'faulty_gpu', 'power_supply'."""
    label: str
    """The cause as the source names it."""
    category: str
    """'gpu', 'network', 'host', 'software', 'power', 'maintenance' or 'planned'."""
    rate_per_gpu_s: float
    """Interruptions per GPU per second of job time."""
    planned: bool = False
    """Planned interruptions (firmware upgrades, config changes) are announced: the job saves a
    checkpoint first, so they cost a restart but no lost work."""
    count: int | None = None
    """Events observed in the source, where the rate was derived from a count."""

    @property
    def rate_per_gpu_hour(self) -> float:
        return self.rate_per_gpu_s * HOUR_S


@dataclass(frozen=True, kw_only=True, slots=True)
class FailureModel:
    """A set of named interruption causes; `scale` multiplies every rate (fleet maturity, margin)."""

    name: str
    causes: tuple[FailureCause, ...]
    source: str
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.scale) or self.scale < 0:
            raise InvalidSpec(f"failure model scale must be a finite number >= 0, got {self.scale}")
        names = [c.name for c in self.causes]
        if len(set(names)) != len(names):
            raise InvalidSpec(f"failure model '{self.name}' has duplicate cause names: {names}")
        for c in self.causes:
            if not math.isfinite(c.rate_per_gpu_s) or c.rate_per_gpu_s < 0:
                raise InvalidSpec(f"cause '{c.name}' rate must be finite and >= 0, got {c.rate_per_gpu_s}")

    @property
    def unexpected_rate_per_gpu_s(self) -> float:
        """Σ rate of unplanned causes × scale."""
        return self.scale * math.fsum(c.rate_per_gpu_s for c in self.causes if not c.planned)

    @property
    def planned_rate_per_gpu_s(self) -> float:
        """Σ rate of planned causes × scale."""
        return self.scale * math.fsum(c.rate_per_gpu_s for c in self.causes if c.planned)

    @property
    def rate_per_gpu_s(self) -> float:
        return self.unexpected_rate_per_gpu_s + self.planned_rate_per_gpu_s

    def cause(self, name: str) -> FailureCause:
        for c in self.causes:
            if c.name == name:
                return c
        raise InvalidSpec(f"failure model '{self.name}' has no cause '{name}'; known: "
                          f"{', '.join(c.name for c in self.causes)}")

    def scaled(self, factor: float) -> FailureModel:
        """The same causes with every rate multiplied by `factor` (on top of the current scale)."""
        return replace(self, scale=self.scale * factor)

    def with_cause_factor(self, name: str, factor: float) -> FailureModel:
        """One cause's rate multiplied by `factor`, e.g. PSU causes × `psu_redundancy_factor(...)`."""
        if not math.isfinite(factor) or factor < 0:
            raise InvalidSpec(f"cause factor must be finite and >= 0, got {factor}")
        self.cause(name)
        causes = tuple(replace(c, rate_per_gpu_s=c.rate_per_gpu_s * factor) if c.name == name else c
                       for c in self.causes)
        return replace(self, causes=causes)

    def without_planned(self) -> FailureModel:
        return replace(self, causes=tuple(c for c in self.causes if not c.planned))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "scale": self.scale,
            "unexpected_per_gpu_hour": self.unexpected_rate_per_gpu_s * HOUR_S,
            "planned_per_gpu_hour": self.planned_rate_per_gpu_s * HOUR_S,
            "causes": [{"name": c.name, "label": c.label, "category": c.category, "planned": c.planned,
                        "count": c.count, "per_gpu_hour": c.rate_per_gpu_s * self.scale * HOUR_S}
                       for c in self.causes],
        }


def failure_model_from_counts(*, name: str, counts: dict[str, tuple[str, str, int]], exposure_gpu_s: float,
                              source: str, planned: frozenset[str] = frozenset()) -> FailureModel:
    """Rates from event counts observed over `exposure_gpu_s` GPU-seconds: rate_i = count_i / exposure.

    `counts` maps a cause id to (label, category, count); ids in `planned` are planned causes.
    """
    if not exposure_gpu_s > 0:
        raise InvalidSpec(f"exposure must be > 0 GPU-seconds, got {exposure_gpu_s}")
    causes = tuple(FailureCause(name=k, label=label, category=cat, rate_per_gpu_s=n / exposure_gpu_s,
                                planned=k in planned, count=n) for k, (label, cat, n) in counts.items())
    return FailureModel(name=name, causes=causes, source=source)


def failure_model_from_mtbf(*, gpu_mtbf_s: float, name: str = "custom", source: str = "user input") -> FailureModel:
    """A single-cause model: one job interruption per `gpu_mtbf_s` GPU-seconds (e.g. 50,700 GPU-hours)."""
    if not gpu_mtbf_s > 0:
        raise InvalidSpec(f"per-GPU MTBF must be > 0 s, got {gpu_mtbf_s}")
    return FailureModel(name=name, source=source, causes=(
        FailureCause(name="any", label="all causes", category="any", rate_per_gpu_s=1.0 / gpu_mtbf_s),))


LLAMA3_405B_COUNTS: dict[str, tuple[str, str, int]] = {
    "faulty_gpu": ("Faulty GPU (incl. NVLink)", "gpu", 148),
    "gpu_hbm3": ("GPU HBM3 memory", "gpu", 72),
    "software_bug": ("Software bug", "software", 54),
    "network_switch_cable": ("Network switch/cable", "network", 35),
    "host_maintenance": ("Host maintenance (unplanned)", "maintenance", 32),
    "gpu_sram": ("GPU SRAM memory", "gpu", 19),
    "gpu_system_processor": ("GPU system processor", "gpu", 17),
    "nic": ("NIC", "network", 7),
    "nccl_watchdog": ("NCCL watchdog timeouts", "software", 7),
    "silent_data_corruption": ("Silent data corruption", "gpu", 6),
    "gpu_thermal": ("GPU thermal interface + sensor", "gpu", 6),
    "ssd": ("SSD", "host", 3),
    "power_supply": ("Power supply", "power", 3),
    "server_chassis": ("Server chassis", "host", 2),
    "io_expansion_board": ("IO expansion board", "host", 2),
    "dependency": ("Dependency", "software", 2),
    "cpu": ("CPU", "host", 2),
    "system_memory": ("System memory", "host", 2),
    "planned": ("Planned (firmware upgrades, operator-initiated changes)", "planned", 47),
}
"""Llama 3 405B interruption counts, 54-day snapshot (419 unexpected + 47 planned = 466)."""

LLAMA3_405B = failure_model_from_counts(name="llama3-405b", counts=LLAMA3_405B_COUNTS,
                                        exposure_gpu_s=LLAMA3_405B_EXPOSURE_GPU_S, source=LLAMA3_405B_SOURCE,
                                        planned=frozenset({"planned"}))
"""Default failure model: ~1 unexpected interruption per 50,700 H100 GPU-hours, plus planned ones."""

DEFAULT_FAILURE_MODEL = LLAMA3_405B


def job_interruption_rate_per_s(num_gpus: int, model: FailureModel = DEFAULT_FAILURE_MODEL, *,
                                include_planned: bool = True) -> float:
    """λ = n · Σ rate_i (interruptions per second of job time). Linear in GPUs (Kokolis et al. 2024)."""
    if num_gpus < 1:
        raise InvalidSpec(f"num_gpus must be >= 1, got {num_gpus}")
    rate = model.rate_per_gpu_s if include_planned else model.unexpected_rate_per_gpu_s
    return num_gpus * rate


def job_mtbf_s(num_gpus: int, model: FailureModel = DEFAULT_FAILURE_MODEL, *, include_planned: bool = False) -> float:
    """M = 1/λ, the job's mean time between (by default unexpected) interruptions; inf when λ = 0."""
    rate = job_interruption_rate_per_s(num_gpus, model, include_planned=include_planned)
    return math.inf if rate == 0 else 1.0 / rate


def k_of_n_failure_rate_per_s(*, installed: int, required: int, unit_mtbf_s: float, repair_s: float) -> float:
    """Rate at which a group of `installed` hot-swappable units drops below `required` working ones.

    No spares (installed == required): any unit failure takes the group down, rate = n·λ.
    With s = installed − required spares, the group fails when s+1 units are down at once; for
    λ·repair ≪ 1 the standard repairable k-out-of-n approximation is

        rate ≈ C(n, s+1) · (s+1) · λ^(s+1) · repair^s      (N+1: n·(n−1)·λ²·repair)

    with λ = 1/unit_mtbf_s and n = installed. Derivation (steady state, one repair crew per unit,
    repair time r ≪ 1/λ): P(s units down) ≈ C(n, s)·(λr)^s, and from there the next failure comes
    at (n − s)·λ; C(n, s)·(n − s) = C(n, s+1)·(s+1). Left out: common-cause failures (a shared feed
    or PDU), imperfect failover, non-exponential unit lifetimes.
    """
    if required < 1 or installed < required:
        raise InvalidSpec(f"need installed >= required >= 1, got installed={installed}, required={required}")
    if not unit_mtbf_s > 0 or repair_s < 0:
        raise InvalidSpec(f"unit MTBF must be > 0 and repair >= 0, got {unit_mtbf_s}, {repair_s}")
    lam = 1.0 / unit_mtbf_s
    spares = installed - required
    return math.comb(installed, spares + 1) * (spares + 1) * lam ** (spares + 1) * repair_s**spares


def psu_redundancy_factor(*, installed: int, required: int, unit_mtbf_s: float, repair_s: float) -> float:
    """How much a PSU set's power-loss rate changes against the same `required` PSUs with no spare.

    factor = k_of_n(installed, required) / (required · λ); for N+1 this is (N+1)·λ·repair, e.g. a
    2+1 set with 100,000 h PSUs replaced within 24 h: 3·24/100,000 = 7.2e-4. Multiply the
    'power_supply' cause by it (`FailureModel.with_cause_factor`) when the baseline fleet had no
    PSU redundancy; the Llama 3 report does not say what redundancy its hosts had.
    """
    base = k_of_n_failure_rate_per_s(installed=required, required=required, unit_mtbf_s=unit_mtbf_s,
                                     repair_s=repair_s)
    return k_of_n_failure_rate_per_s(installed=installed, required=required, unit_mtbf_s=unit_mtbf_s,
                                     repair_s=repair_s) / base


PREEMPTIONS_PER_NODE_MONTH = {"spot": 0.20, "community": 0.20}
"""Reclaims per rented node and month by pricing kind: AWS Spot Instance Advisor's highest band of
'frequency of interruption', >20% of instances a month, the usual band for GPU instance types
(taken as 20%); community hosts (vast.ai, RunPod community) assumed alike. rigplan ASSUMPTION
anchored to that band; give your provider's figure."""


def with_preemptions(model: FailureModel, per_node_month: float, gpus_per_node: int) -> FailureModel:
    """`model` plus reclaims of rented capacity: one interruption per node every 1/per_node_month
    months, unannounced for the job (a two-minute notice rarely covers a checkpoint write)."""
    if not math.isfinite(per_node_month) or per_node_month < 0 or gpus_per_node < 1:
        raise InvalidSpec(f"preemptions per node-month must be finite and >= 0, got {per_node_month}")
    if per_node_month == 0:
        return model
    rate = per_node_month / (730.0 * HOUR_S) / gpus_per_node
    cause = FailureCause(name="preemption", label="rented capacity reclaimed (spot / community host)",
                         category="preemption", rate_per_gpu_s=rate / model.scale if model.scale else rate)
    return replace(model, name=f"{model.name}+preemption", causes=(*model.causes, cause))
