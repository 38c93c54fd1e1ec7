"""Cost: cloud rental, on-prem total cost of ownership, power and cooling, break-even.

Amounts are USD inside (`_usd`); CNY only on input and output (`money`).

May import: servers, catalog, domain, bounds, files, units, errors.
"""

from rigplan.cost.breakeven import (
    BreakEven,
    breakeven,
    breakeven_months,
    breakeven_utilisation,
    cost_per_useful_gpu_hour_usd,
)
from rigplan.cost.cloud import CloudExtras, CloudOffer, cloud_cost_usd, cloud_job_cost, offers_for
from rigplan.cost.money import CNY_PER_USD_DEFAULT, Currency, Money, format_cny, format_usd
from rigplan.cost.onprem import (
    OnPremScenario,
    OnPremTco,
    onprem_cost_usd,
    onprem_tco,
    scenario_for_gpu,
    unit_costs,
    usd_per_useful_gpu_hour,
)
from rigplan.cost.power import TariffBand, TimeOfUseTariff, airflow_cfm, heat_btu_per_h, parse_tariff

__all__ = [
    "CNY_PER_USD_DEFAULT",
    "BreakEven",
    "CloudExtras",
    "CloudOffer",
    "Currency",
    "Money",
    "OnPremScenario",
    "OnPremTco",
    "TariffBand",
    "TimeOfUseTariff",
    "airflow_cfm",
    "breakeven",
    "breakeven_months",
    "breakeven_utilisation",
    "cloud_cost_usd",
    "cloud_job_cost",
    "cost_per_useful_gpu_hour_usd",
    "format_cny",
    "format_usd",
    "heat_btu_per_h",
    "offers_for",
    "onprem_cost_usd",
    "onprem_tco",
    "parse_tariff",
    "scenario_for_gpu",
    "unit_costs",
    "usd_per_useful_gpu_hour",
]
