"""When owning becomes cheaper than renting: break-even months, busy hours and utilisation."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rigplan.cost.cloud import CloudOffer
from rigplan.cost.onprem import OnPremScenario, unit_costs, usd_per_useful_gpu_hour
from rigplan.cost.power import HOURS_PER_MONTH


def cost_per_useful_gpu_hour_usd(s: OnPremScenario, utilisation: float | None = None, num_gpus: int = 1) -> float:
    """Owned cost per busy GPU-hour at `utilisation` (default: the scenario's); see
    `onprem.usd_per_useful_gpu_hour` for the formula."""
    if utilisation is not None:
        s = s.model_copy(update={"utilisation": utilisation})
    return float(usd_per_useful_gpu_hour(s, float(num_gpus)))


def own_running_usd_per_month(s: OnPremScenario, num_gpus: int = 1) -> float:
    """Per GPU: (host power + colo + licence + staff/N)/12 + TDP·PUE·p_busy · u · 730."""
    unit = unit_costs(s)
    fixed = (unit.fixed_usd_per_year + s.staff_usd_per_year / num_gpus) / 12
    return fixed + unit.energy_usd_per_busy_hour * s.utilisation * HOURS_PER_MONTH


def breakeven_months(s: OnPremScenario, usd_per_gpu_hour: float, num_gpus: int = 1) -> float:
    """Months after purchase at which owning has cost the same as renting the same busy hours.

    Per GPU, owning costs capex·(1 − r) up front (resale value netted) plus R a month; renting costs
    p · u · 730 a month. They meet at

        m* = capex·(1 − r) / (p · u · 730 − R),   R = fixed/12 + TDP·PUE·p_busy · u · 730

    and never (inf) when renting's monthly bill does not exceed owning's running cost. At
    m* = 12·Y the cloud price equals the owned cost per useful GPU-hour. Leaves out: residual value
    falling with time (the full-period residual is netted however early you stop; `tco`'s
    buy-and-sell view prices an early sale), interest as it really accrues (the period's financing
    cost is spread evenly over the months in R), and delivery and installation lead time.
    """
    net_capex = unit_costs(s).net_capex_usd
    margin = usd_per_gpu_hour * s.utilisation * HOURS_PER_MONTH - own_running_usd_per_month(s, num_gpus)
    if margin <= 0:
        return math.inf
    return net_capex / margin


def breakeven_utilisation(s: OnPremScenario, usd_per_gpu_hour: float, num_gpus: int = 1) -> float:
    """Lowest utilisation at which the owned cost per useful GPU-hour over the full period is at most
    the cloud price (inf when not even u = 1 gets there). Bisection; the cost falls with u whenever
    fixed costs are positive (a shiftable time-of-use tariff can bend that at extreme prices)."""

    def own(u: float) -> float:
        return cost_per_useful_gpu_hour_usd(s, u, num_gpus)

    if own(1.0) > usd_per_gpu_hour:
        return math.inf
    low, high = 1e-6, 1.0
    if own(low) <= usd_per_gpu_hour:
        return 0.0
    for _ in range(60):
        mid = (low + high) / 2
        if own(mid) <= usd_per_gpu_hour:
            high = mid
        else:
            low = mid
    return high


@dataclass(frozen=True, kw_only=True, slots=True)
class BreakEven:
    """Owning vs one cloud offer at the scenario's utilisation."""

    provider: str
    pricing: str
    usd_per_gpu_hour: float
    own_usd_per_useful_gpu_hour: float
    cheaper: str
    """'own' or 'cloud' over the full depreciation period at the utilisation."""
    months: float
    """inf: owning never catches up."""
    busy_gpu_hours: float
    """Busy hours per GPU by the break-even month (u × 730 × months)."""
    within_period: bool
    """Break-even comes before the end of the depreciation period."""
    breakeven_utilisation: float
    """Lowest utilisation at which owning is at most this price over the period (inf: never)."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("months", "busy_gpu_hours", "breakeven_utilisation"):
            if not math.isfinite(data[key]):
                data[key] = None
        return data


def breakeven(s: OnPremScenario, offer: CloudOffer, num_gpus: int = 1) -> BreakEven:
    """Break-even of owning `num_gpus` GPUs against one offer (see `breakeven_months`)."""
    own = cost_per_useful_gpu_hour_usd(s, None, num_gpus)
    months = breakeven_months(s, offer.usd_per_gpu_hour, num_gpus)
    hours = months * s.utilisation * HOURS_PER_MONTH if math.isfinite(months) else math.inf
    return BreakEven(
        provider=offer.provider, pricing=offer.pricing, usd_per_gpu_hour=offer.usd_per_gpu_hour,
        own_usd_per_useful_gpu_hour=own, cheaper="own" if own < offer.usd_per_gpu_hour else "cloud",
        months=months, busy_gpu_hours=hours, within_period=months <= 12 * s.depreciation_years + 1e-9,
        breakeven_utilisation=breakeven_utilisation(s, offer.usd_per_gpu_hour, num_gpus),
    )
