"""The seed article's cloud-vs-own example (§4), as it computed it and then corrected step by step.

The article: "for 1,000 training hours, cloud A100 at $6.5/h = $6,500; own server
$25,000 / (3 years × 2,000 h) = $4.17/h"; residual value "about 30% after 3 years" is named but
not applied. Fact-check: hardware-facts.md Part C row 9.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rigplan.catalog.schema import GpuRecord, as_of_text
from rigplan.cost.breakeven import BreakEven, breakeven, breakeven_months, cost_per_useful_gpu_hour_usd
from rigplan.cost.cloud import CloudOffer, offers_for
from rigplan.cost.money import Money
from rigplan.cost.onprem import LICENCE_PRESETS_USD_PER_GPU_YEAR, OnPremScenario
from rigplan.cost.power import HOURS_PER_MONTH, HOURS_PER_YEAR

SEED_GPU_ID = "a100-80gb-sxm"
SEED_CLOUD_USD_PER_GPU_HOUR = 6.5
SEED_GPU_PRICE_USD = 25_000.0
SEED_YEARS = 3.0
SEED_HOURS_PER_YEAR = 2_000.0
SEED_JOB_HOURS = 1_000.0
SEED_RESIDUAL_FRACTION = 0.3
SEED_OFFER = CloudOffer(provider="seed article (§4)", pricing="on-demand", usd_per_gpu_hour=SEED_CLOUD_USD_PER_GPU_HOUR,
                        as_of=None, source="seed article §4 (undated; AWS p4d A100 40GB was $4.10/GPU-h in 2024)")


def seed_article_scenario(gpu_tdp_w: float = 400.0) -> OnPremScenario:
    """The article's own inputs: $25,000 per GPU, 3 years, 2,000 busy hours a year, nothing else."""
    return OnPremScenario(
        gpu_price_usd=SEED_GPU_PRICE_USD, gpu_tdp_w=gpu_tdp_w, server_share_fraction=0.0, fabric_fraction=0.0,
        depreciation_years=SEED_YEARS, residual_fraction=0.0, utilisation=SEED_HOURS_PER_YEAR / HOURS_PER_YEAR,
        pue=1.0, host_w_per_gpu=0.0, usd_per_kwh=0.0, colo_usd_per_kw_month=0.0, staff_usd_per_gpu_year=0.0,
        capital_rate=0.0,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class SeedArticle:
    """The §4 arithmetic exactly as the article did it."""

    cloud_usd_per_gpu_hour: float
    own_usd_per_gpu_hour: float
    """25,000 / (3 × 2,000) = 4.1667."""
    job_hours: float
    cloud_job_usd: float
    own_job_usd: float
    breakeven_busy_hours: float
    """25,000 / 6.5 = 3,846 h of use."""
    breakeven_months_at_2000h_per_year: float
    breakeven_months_continuous: float
    """The article's rule "continuous training beyond about 6 months is cheaper on-premises"."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SeedStep:
    label: str
    own_usd_per_useful_gpu_hour: float
    breakeven_months_vs_article_cloud: float
    scenario: OnPremScenario = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        months = self.breakeven_months_vs_article_cloud
        return {"label": self.label, "own_usd_per_useful_gpu_hour": self.own_usd_per_useful_gpu_hour,
                "breakeven_months_vs_article_cloud": months if months != float("inf") else None}


@dataclass(frozen=True, kw_only=True, slots=True)
class SeedScenario:
    gpu_id: str
    article: SeedArticle
    steps: tuple[SeedStep, ...]
    """Cumulative corrections; the last non-optional step is the corrected scenario."""
    optional_licence_step: SeedStep | None
    """+ NVIDIA AI Enterprise, shown when the corrected scenario has no licence."""
    current_offers: tuple[BreakEven, ...]
    """The corrected scenario against today's catalog offers for the GPU."""
    left_out: tuple[str, ...]

    def verdict(self, money: Money | None = None) -> str:
        """One line: the article's figure, the corrected one, and whether owning still beats the cheapest offer."""
        m = money or Money()
        a, last = self.article, self.steps[-1]
        cheapest = min(self.current_offers, key=lambda b: b.usd_per_gpu_hour)
        u = last.scenario.utilisation
        need = cheapest.breakeven_utilisation
        seed_u = SEED_HOURS_PER_YEAR / HOURS_PER_YEAR
        at_seed = "would" if need <= seed_u else "would not"
        beaten = f"is beaten from {need:.0%} utilisation" if math.isfinite(need) else "is never beaten"
        return (f"The article's {m.rate(a.own_usd_per_gpu_hour)}/h becomes {m.rate(last.own_usd_per_useful_gpu_hour)} "
                f"per useful GPU-hour corrected at {u:.0%} utilisation; the cheapest current offer, "
                f"{cheapest.provider} {cheapest.pricing} at {m.rate(cheapest.usd_per_gpu_hour)}, {beaten} - at the "
                f"article's 2,000 h/yr ({seed_u:.0%}) owning {at_seed} win.")

    def to_dict(self) -> dict[str, Any]:
        a = self.article
        return {
            "gpu_id": self.gpu_id,
            "article": {k: getattr(a, k) for k in SeedArticle.__dataclass_fields__},
            "steps": [s.to_dict() for s in self.steps],
            "optional_licence_step": self.optional_licence_step.to_dict() if self.optional_licence_step else None,
            "corrected_vs_current_offers": [b.to_dict() for b in self.current_offers],
            "left_out": list(self.left_out),
            "verdict": self.verdict(),
        }


def seed_article(gpu_tdp_w: float = 400.0) -> SeedArticle:
    s = seed_article_scenario(gpu_tdp_w)
    own = cost_per_useful_gpu_hour_usd(s)
    return SeedArticle(
        cloud_usd_per_gpu_hour=SEED_CLOUD_USD_PER_GPU_HOUR, own_usd_per_gpu_hour=own, job_hours=SEED_JOB_HOURS,
        cloud_job_usd=SEED_CLOUD_USD_PER_GPU_HOUR * SEED_JOB_HOURS, own_job_usd=own * SEED_JOB_HOURS,
        breakeven_busy_hours=SEED_GPU_PRICE_USD / SEED_CLOUD_USD_PER_GPU_HOUR,
        breakeven_months_at_2000h_per_year=breakeven_months(s, SEED_CLOUD_USD_PER_GPU_HOUR),
        breakeven_months_continuous=SEED_GPU_PRICE_USD / SEED_CLOUD_USD_PER_GPU_HOUR / HOURS_PER_MONTH,
    )


def _fields(s: OnPremScenario, *names: str) -> dict[str, Any]:
    return {name: getattr(s, name) for name in names}


def seed_scenario(record: GpuRecord, corrected: OnPremScenario, num_gpus: int = 1) -> SeedScenario:
    """The article's example, then moved one group of inputs at a time to `corrected` (normally the
    catalog price of `record` and rigplan's defaults), each step priced per useful GPU-hour and
    compared with the article's $6.5/h; finally the corrected scenario against current offers."""
    base = seed_article_scenario(corrected.gpu_tdp_w)
    gpu_price = corrected.gpu_price_usd
    price_note = f"{record.price.kind}, {as_of_text(record.price.as_of)}" if record.price else "given"
    u_hours = corrected.utilisation * HOURS_PER_YEAR
    groups: list[tuple[str, dict[str, Any]]] = [
        (f"GPU price ${gpu_price:,.0f} ({price_note}) instead of $25,000", _fields(corrected, "gpu_price_usd")),
        (f"resale value {corrected.residual_fraction:.0%} after {corrected.depreciation_years:g} y "
         "(the article names 30% but does not apply it)",
         _fields(corrected, "residual_fraction", "depreciation_years")),
        ("+ server share and network fabric (chassis, CPUs, RAM, NICs, storage, switches)",
         _fields(corrected, "server_share_fraction", "server_share_usd_per_gpu", "fabric_fraction",
                 "fabric_usd_per_gpu")),
        (f"+ power: {corrected.gpu_tdp_w:g} W GPU when busy + {corrected.host_w_per_gpu:g} W host, "
         f"PUE {corrected.pue:g}, "
         + ("time-of-use tariff" if corrected.tariff else f"${corrected.usd_per_kwh:g}/kWh"),
         _fields(corrected, "gpu_tdp_w", "host_w_per_gpu", "pue", "usd_per_kwh", "tariff")),
        (f"{corrected.utilisation:.0%} utilisation ({u_hours:,.0f} h/yr) instead of 2,000 h/yr (23%)",
         _fields(corrected, "utilisation")),
    ]
    if corrected.colo_usd_per_kw_month:
        groups.append((f"+ colocation ${corrected.colo_usd_per_kw_month:g} per IT kW-month",
                       _fields(corrected, "colo_usd_per_kw_month")))
    if corrected.staff_usd_per_gpu_year or corrected.staff_usd_per_year:
        groups.append(("+ operations staff", _fields(corrected, "staff_usd_per_gpu_year", "staff_usd_per_year")))
    if corrected.capital_rate:
        groups.append((f"+ cost of capital {corrected.capital_rate:.1%} a year", _fields(corrected, "capital_rate")))
    if corrected.licence_usd_per_gpu_year:
        groups.append(("+ licence", _fields(corrected, "licence_usd_per_gpu_year")))

    def step(label: str, s: OnPremScenario) -> SeedStep:
        return SeedStep(label=label, own_usd_per_useful_gpu_hour=cost_per_useful_gpu_hour_usd(s, None, num_gpus),
                        breakeven_months_vs_article_cloud=breakeven_months(s, SEED_CLOUD_USD_PER_GPU_HOUR, num_gpus),
                        scenario=s)

    steps = [step("as the article computed it: $25,000 / (3 y x 2,000 h)", base)]
    current = base
    for label, update in groups:
        current = current.model_copy(update=update)
        steps.append(step(label, current))
    optional = None
    if not corrected.licence_usd_per_gpu_year:
        nvaie = LICENCE_PRESETS_USD_PER_GPU_YEAR["nvaie"]
        optional = step("+ NVIDIA AI Enterprise $4,500/GPU-yr (only if you use it)",
                        current.model_copy(update={"licence_usd_per_gpu_year": nvaie}))
    offers = (SEED_OFFER, *offers_for(record))
    return SeedScenario(
        gpu_id=record.id, article=seed_article(corrected.gpu_tdp_w), steps=tuple(steps), optional_licence_step=optional,
        current_offers=tuple(breakeven(current, o, num_gpus) for o in offers),
        left_out=(
            "spares, repairs and support contracts; GPU failures and the downtime they cause",
            "facility build-out when colocation is 0",
            "data storage and egress on the cloud side unless given",
            "cloud prices are dated snapshots; the article's $6.5/h matches no listed A100 price",
        ),
    )
