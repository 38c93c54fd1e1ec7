"""Electricity tariffs (flat or time-of-use), heat and airflow. Pure functions, SI units and USD."""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rigplan.bounds import check
from rigplan.errors import InvalidSpec

HOURS_PER_YEAR = 8760.0
"""365 × 24; leap days are left out."""
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
"""730 h."""
BTU_PER_H_PER_W = 3.412
"""1 kW = 3,412 BTU/h (insidehpc.com, Dell HPC blog; hardware-facts B3)."""
CFM_PER_W_F = 3.16
"""CFM = 3.16 × W / ΔT(°F), i.e. 3412·kW / (1.085·ΔT) for sea-level air (fanacdc.com; hardware-facts B3)."""


class TariffBand(BaseModel):
    """One band of a daily time-of-use tariff: its hours per day and its price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    hours_per_day: Annotated[float, Field(gt=0, le=24)]
    usd_per_kwh: Annotated[float, Field(ge=0, le=10)]


class TimeOfUseTariff(BaseModel):
    """A daily tariff, e.g. peak 8 h, flat 8 h, valley 8 h (China: NDRC 2021 rule, peak/valley ≥ 3:1 or 4:1).

    `shiftable`: the job can be scheduled into the cheapest hours (it pays valley prices first);
    otherwise its hours fall evenly over the day and it pays the time-weighted mean.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    bands: Annotated[list[TariffBand], Field(min_length=1)]
    shiftable: bool = False

    @model_validator(mode="after")
    def _hours_add_to_a_day(self) -> TimeOfUseTariff:
        total = sum(b.hours_per_day for b in self.bands)
        if abs(total - 24) > 1e-6:
            shown = " + ".join(f"{b.name} {b.hours_per_day:g}h" for b in self.bands)
            raise ValueError(f"time-of-use bands must cover 24 h a day; {shown} = {total:g} h")
        return self

    def mean_usd_per_kwh(self) -> float:
        """Σ hᵢ·pᵢ / 24: the price paid by a load that runs evenly around the clock."""
        return sum(b.hours_per_day * b.usd_per_kwh for b in self.bands) / 24

    def busy_usd_per_kwh(self, utilisation: float) -> float:
        """Mean price of the 24·u busy hours a day.

        Not shiftable: the mean over the day. Shiftable: the cheapest bands are filled first, so
        price = Σ min(hᵢ, remaining)·pᵢ / (24·u) over bands sorted by price. At u = 0 the marginal
        (cheapest) price. Leaves out: ramp limits, demand charges, and days with other tariffs.
        """
        if not self.shiftable:
            return self.mean_usd_per_kwh()
        bands = sorted(self.bands, key=lambda b: b.usd_per_kwh)
        busy = 24 * min(max(utilisation, 0.0), 1.0)
        if busy <= 0:
            return bands[0].usd_per_kwh
        remaining, paid = busy, 0.0
        for band in bands:
            hours = min(band.hours_per_day, remaining)
            paid += hours * band.usd_per_kwh
            remaining -= hours
            if remaining <= 1e-12:
                break
        return paid / busy


_NUMBER = r"([+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)"
_BAND = re.compile(rf"^\s*([a-z][a-z0-9_\-]*)\s*:\s*{_NUMBER}\s*h\s*@\s*{_NUMBER}\s*$", re.IGNORECASE)


def parse_tariff(text: str, *, shiftable: bool = False, usd_per_unit: float = 1.0) -> TimeOfUseTariff:
    """Parse "peak:8h@0.12,flat:8h@0.08,valley:8h@0.04" (prices per kWh, in a currency worth
    `usd_per_unit` USD each) into a tariff priced in USD."""
    bands: list[TariffBand] = []
    for part in text.split(","):
        match = _BAND.match(part)
        if not match:
            raise InvalidSpec(f"--tou: band '{part.strip()}' is not NAME:HOURSh@PRICE, e.g. valley:8h@0.04")
        name, hours, price = match.group(1), float(match.group(2)), float(match.group(3))
        if not 0 < hours <= 24:
            raise InvalidSpec(f"--tou: band '{name}' has {hours:g} h; each band needs 0 < hours <= 24")
        check("price_per_kwh", price, label=f"--tou: band '{name}': the price per kWh")
        if any(band.name.lower() == name.lower() for band in bands):
            raise InvalidSpec(f"--tou: band '{name}' is given twice; give each band once with all its hours")
        bands.append(TariffBand(name=name, hours_per_day=hours, usd_per_kwh=price * usd_per_unit))
    try:
        return TimeOfUseTariff(bands=bands, shiftable=shiftable)
    except ValidationError as err:
        detail = str(err.errors()[0]["msg"]).removeprefix("Value error, ")
        raise InvalidSpec(f"--tou: {detail}") from err


def heat_btu_per_h(it_w: float) -> float:
    """Heat the IT load gives off: BTU/h = 3.412 × W (all electrical power ends as heat)."""
    return it_w * BTU_PER_H_PER_W


def airflow_cfm(it_w: float, delta_t_f: float) -> float:
    """Air needed to carry `it_w` away with an inlet-to-outlet rise of `delta_t_f` °F:
    CFM = 3.16 × W / ΔT°F (158 CFM/kW at 20 °F; the seed's 300 CFM/kW implies ΔT ≈ 10.5 °F).

    Source: fanacdc.com, insidehpc.com (hardware-facts B3). Leaves out altitude (thinner air needs
    more CFM), bypass and recirculation; use the vendor's airflow spec for a real design.
    """
    if not (math.isfinite(delta_t_f) and delta_t_f > 0):
        raise InvalidSpec(f"temperature rise must be positive °F, got {delta_t_f}")
    return CFM_PER_W_F * it_w / delta_t_f
