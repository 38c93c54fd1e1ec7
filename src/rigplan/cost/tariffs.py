"""Named electricity tariffs, each priced in the currency its source quotes, with a dated source.

`rigplan tco --tou NAME` takes one of these instead of a band string. A tariff in CNY is converted at
the request's exchange rate (--fx), whatever currency the report is shown in.
"""

from __future__ import annotations

from dataclasses import dataclass

CN_INDUSTRIAL_AVERAGE_USD_PER_KWH = 0.088
"""China's average industrial power rate in 2024, about US$0.088/kWh (China Briefing, "China's Industrial
Power Rates: A Guide for Investors", china-briefing.com/news/china-electricity-prices-industrial-consumers,
2024 figure); at 7.1 CNY/USD that is 0.625 CNY/kWh, inside the 0.5-0.8 CNY/kWh range of rigplan's hardware
reference (hardware-facts.md, power table)."""
CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH = 0.625
NDRC_2021_SOURCE = (
    "NDRC notice on improving time-of-use pricing (发改价格〔2021〕1093号, July 2021): peak/valley price ratio of "
    "at least 4:1 where last year's system peak-valley gap exceeded 40%, at least 3:1 elsewhere")


@dataclass(frozen=True, kw_only=True, slots=True)
class NamedTariff:
    name: str
    description: str
    currency: str
    """'cny' or 'usd': the currency of the band prices."""
    bands: str
    """Band text as --tou reads it: NAME:HOURSh@PRICE,..."""
    as_of: str
    source: str


def _cn_tou(ratio: float) -> str:
    """8 h peak, 8 h flat, 8 h valley around the national average: peak = (1 + d), valley = (1 - d) times
    the average with (1 + d) / (1 - d) = ratio, so the day's mean price stays the average."""
    d = (ratio - 1.0) / (ratio + 1.0)
    avg = CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH
    return f"peak:8h@{avg * (1 + d):.3f},flat:8h@{avg:.3f},valley:8h@{avg * (1 - d):.3f}"


NAMED_TARIFFS: dict[str, NamedTariff] = {
    t.name: t for t in (
        NamedTariff(name="cn-industrial", description="China, industrial average, flat", currency="cny",
                    bands=f"flat:24h@{CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH}", as_of="2024",
                    source="China Briefing 2024 average industrial rate US$0.088/kWh = 0.625 CNY/kWh at 7.1"),
        NamedTariff(name="cn-tou-3to1", description="China, time-of-use at the NDRC minimum 3:1 peak/valley ratio",
                    currency="cny", bands=_cn_tou(3.0), as_of="2021-07 rule, 2024 average",
                    source=f"{NDRC_2021_SOURCE}; bands set around the 2024 average (0.625 CNY/kWh); a province's "
                           "own schedule differs (sharp-peak hours, seasons): give it with --tou BANDS"),
        NamedTariff(name="cn-tou-4to1", description="China, time-of-use at the 4:1 ratio of high-gap provinces",
                    currency="cny", bands=_cn_tou(4.0), as_of="2021-07 rule, 2024 average",
                    source=f"{NDRC_2021_SOURCE}; bands set around the 2024 average (0.625 CNY/kWh)"),
    )
}


def named_tariff(text: str) -> NamedTariff | None:
    """The named tariff `text` names, or None when `text` is a band string."""
    return NAMED_TARIFFS.get(text.strip().lower())
