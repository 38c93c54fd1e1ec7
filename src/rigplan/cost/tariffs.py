"""Named electricity tariffs, each priced in the currency its source quotes, with a dated source and its address.

`rigplan tco --tou NAME` takes one of these instead of a band string. A tariff in CNY is converted at
the request's exchange rate (--fx), whatever currency the report is shown in.

Two kinds sit here. The provincial ones are prices a dated source quotes for one place (a data-centre
rate quoted by a local official or a newspaper, not a grid company's full tariff table: demand charges,
voltage levels and the monthly agency-purchase price movements are left out), except Beijing's and Hubei's, one
month's rows of the grid company's agency-purchase table. The national ones
(`cn-industrial`, `cn-tou-*`) are China's 2024 average industrial rate, a US$ figure converted at
7.1 CNY/USD, and time-of-use shapes set around it: a country-wide yardstick, not any province's tariff.
A source text holds no ': ' (the Chinese note template reads that as the end of the message).
"""

from __future__ import annotations

from dataclasses import dataclass

CN_INDUSTRIAL_AVERAGE_USD_PER_KWH = 0.088
"""China's average industrial power rate in 2024, about US$0.088/kWh (China Briefing, "China's Industrial
Power Rates: A Guide for Investors", china-briefing.com/news/china-electricity-prices-industrial-consumers,
2024 figure); at 7.1 CNY/USD that is 0.625 CNY/kWh, inside the 0.5-0.8 CNY/kWh range of rigplan's hardware
reference (hardware-facts.md, power table)."""
CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH = 0.625
CN_INDUSTRIAL_AVERAGE_URL = "https://china-briefing.com/news/china-electricity-prices-industrial-consumers"
NDRC_2021_SOURCE = (
    "NDRC notice on improving time-of-use pricing (发改价格〔2021〕1093号, July 2021) - peak/valley price ratio of "
    "at least 4:1 where last year's system peak-valley gap exceeded 40%, at least 3:1 elsewhere")
NDRC_2021_URL = "https://www.ndrc.gov.cn/xxgk/zcfb/tz/202107/t20210729_1292067.html"

GUANGDONG_2021_TOU = (("peak", 7, 1.7), ("flat", 9, 1.0), ("valley", 8, 0.38))
"""Guangdong's time-of-use schedule (Guangdong DRC, 《关于进一步完善我省峰谷分时电价政策有关问题的通知》, as
a reprint dated 2021-09-06 reports it): peak 10-12 h and 14-19 h, valley 0-8 h, flat the other 9 hours;
peak:flat:valley price ratio 1.7:1:0.38 (was 1.65:1:0.5). Left out: the sharp peak, +25 % on the peak price
at 11-12 h and 15-17 h in July-September and on other days of 35 °C or more in Guangzhou (a band string has
no seasons)."""


BEIJING_2025_02_URL = "https://energydc.cn/policy/beijing/2025-02/6b885a88-d1dd-11f0-9e8e-46a1f660a16d"
BEIJING_2025_02_SOURCE = (
    "State Grid Beijing agency-purchase (代理购电) price table for industrial and commercial users, 2025-02, "
    "1-10 kV, read from energydc.cn's archive of the grid company's scan as transcribed in "
    "github.com/zlxshu/ReSETP (data/ChinaPrices/china_2025_02_tariff_register_v2.json); hours from the "
    "Beijing DRC notice 京发改规〔2023〕11号 (2023-08-18, "
    "fgw.beijing.gov.cn/fgwzwgk/2024zcwj/bwgfxwj/202308/t20230821_3718725.htm) - peak 10-13 and 17-22 h, "
    "flat 7-10, 13-17 and 22-23 h, valley 23-7 h")
BEIJING_TOU_HOURS = (("peak", 8), ("flat", 8), ("valley", 8))
"""Beijing's time-of-use hours (京发改规〔2023〕11号, in force 2023-09-01): peak 10-13 h and 17-22 h, flat 7-10 h,
13-17 h and 22-23 h, valley 23-7 h, 8 hours each. The sharp peak (July-August 11-13 h and 16-17 h,
January and December 18-21 h, +20 % on the peak) does not apply in February, the month of the prices."""
BEIJING_2025_02_TWO_PART = (0.88707675, 0.65294275, 0.41880875)
"""Peak, flat, valley energy price (CNY/kWh) of the 2025-02 table, two-part (两部制) users at 1-10 kV. The
notice floats only the purchase component, 1.6:1:0.4 for two-part users and 1.8:1:0.3 for single-part users
at 1 kV and above; both rows below imply the same floating base (about 0.3902 CNY/kWh), so the transcription
agrees with the notice."""
BEIJING_2025_02_SINGLE_PART = (1.14862175, 0.83644275, 0.56328575)
"""The same table's single-part (单一制) row at 1-10 kV: peak, flat, valley CNY/kWh."""


HUBEI_2026_01_URL = "https://xgszsj.xiaogan.gov.cn/tzxg/tzcb/202601/t20260108_568308.shtml"
HUBEI_2026_01_SOURCE = (
    "State Grid Hubei agency-purchase (代理购电) price table for industrial and commercial users, in force "
    "2026-01-01 to 2026-01-31, as the Xiaogan investment-promotion bureau reprinted it on 2026-01-08 (marked "
    "source State Grid), 1-10(20) kV rows; hours from the table's note 2 (鄂发改价管〔2024〕77号) - sharp peak "
    "18-20 h (July-August 20-22 h), peak 16-18 and 20-24 h (July-August 16-20 and 22-24 h), flat 6-12 and "
    "14-16 h, valley 0-6 and 12-14 h; read through a public transcription that checks each row against the "
    "table's own components")
HUBEI_TOU_HOURS = (("sharp", 2), ("peak", 6), ("flat", 8), ("valley", 8))
"""Hubei's time-of-use hours (the price table's note 2, 鄂发改价管〔2024〕77号): sharp peak 2 h, peak 6 h, flat
8 h, valley 8 h every month (the sharp and peak hours move in July and August, their counts do not)."""
HUBEI_2026_01_TWO_PART = (1.049999, 0.848961, 0.651886, 0.432924)
"""Sharp, peak, flat, valley energy price (CNY/kWh) of the 2026-01 table, two-part (两部制) users at 1-10(20) kV
(42 CNY/kW-month demand or 26.3 CNY/kVA-month capacity charge besides, left out). The table floats the
purchase price plus line loss (0.384470 + 0.013643 = 0.398113 CNY/kWh) by 2.0 : 1.49 : 1 : 0.45 and adds the
fixed rest (transmission 0.1263, system operation 0.082273, government funds 0.0452)."""
HUBEI_2026_01_SINGLE_PART = (1.113999, 0.910961, 0.715686, 0.496924)
"""The same table's single-part (单一制) row at 1-10(20) kV: sharp, peak, flat, valley CNY/kWh."""


def _hubei(prices: tuple[float, float, float, float]) -> str:
    return ",".join(f"{band}:{hours}h@{price}" for (band, hours), price in zip(HUBEI_TOU_HOURS, prices, strict=True))


def _beijing(prices: tuple[float, float, float]) -> str:
    return ",".join(f"{band}:{hours}h@{price}" for (band, hours), price in zip(BEIJING_TOU_HOURS, prices, strict=True))


@dataclass(frozen=True, kw_only=True, slots=True)
class NamedTariff:
    name: str
    description: str
    currency: str
    """'cny' or 'usd': the currency of the band prices."""
    bands: str
    """Band text as --tou reads it: NAME:HOURSh@PRICE,..."""
    as_of: str
    """Date of the price: ISO (year, year-month or day) first, then any words on what it dates."""
    source: str
    url: str
    """Address of the source the price is read from."""


def _agency_table(slug: str, place: str, kind: str, month: str, two_part: str, single_part: str, source: str,
                  url: str) -> tuple[NamedTariff, NamedTariff]:
    """The two-part and single-part 1-10 kV rows of one month of a grid company's agency-purchase table."""
    return (
        NamedTariff(name=f"cn-{slug}-tou", description=f"{place}, two-part energy price at 1-10 kV, {kind}, {month}",
                    currency="cny", bands=two_part, as_of=f"{month} price table",
                    source=f"{source}; two-part row, energy price only - the monthly capacity or demand charge is "
                           "left out",
                    url=url),
        NamedTariff(name=f"cn-{slug}-tou-single",
                    description=f"{place}, single-part energy price at 1-10 kV, {kind}, {month}",
                    currency="cny", bands=single_part, as_of=f"{month} price table",
                    source=f"{source}; single-part row (no capacity charge)", url=url),
    )


def _cn_tou(ratio: float) -> str:
    """8 h peak, 8 h flat, 8 h valley around the national average: peak = (1 + d), valley = (1 - d) times
    the average with (1 + d) / (1 - d) = ratio, so the day's mean price stays the average."""
    d = (ratio - 1.0) / (ratio + 1.0)
    avg = CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH
    return f"peak:8h@{avg * (1 + d):.3f},flat:8h@{avg:.3f},valley:8h@{avg * (1 - d):.3f}"


def _shape(schedule: tuple[tuple[str, int, float], ...], flat_price: float) -> str:
    """A schedule of (band, hours, price relative to flat) as band text at `flat_price` for the flat band."""
    return ",".join(f"{band}:{hours}h@{flat_price * ratio:g}" for band, hours, ratio in schedule)


NAMED_TARIFFS: dict[str, NamedTariff] = {
    t.name: t for t in (
        NamedTariff(name="cn-industrial",
                    description="China, national industrial average (a US$ figure at 7.1 CNY/USD), flat",
                    currency="cny", bands=f"flat:24h@{CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH}", as_of="2024",
                    source="China Briefing, China's Industrial Power Rates - 2024 national average industrial rate "
                           "US$0.088/kWh = 0.625 CNY/kWh at 7.1; not a provincial tariff",
                    url=CN_INDUSTRIAL_AVERAGE_URL),
        NamedTariff(name="cn-tou-3to1", description="China, time-of-use at the NDRC minimum 3:1 peak/valley ratio",
                    currency="cny", bands=_cn_tou(3.0), as_of="2021-07 rule, 2024 average",
                    source=f"{NDRC_2021_SOURCE}; bands set around the 2024 national average (0.625 CNY/kWh); a "
                           "province's own schedule differs (sharp-peak hours, seasons) - give it with --tou BANDS",
                    url=NDRC_2021_URL),
        NamedTariff(name="cn-tou-4to1", description="China, time-of-use at the 4:1 ratio of high-gap provinces",
                    currency="cny", bands=_cn_tou(4.0), as_of="2021-07 rule, 2024 average",
                    source=f"{NDRC_2021_SOURCE}; bands set around the 2024 national average (0.625 CNY/kWh)",
                    url=NDRC_2021_URL),
        NamedTariff(name="cn-guangdong-tou",
                    description="Guangdong time-of-use hours and ratios, around the national average",
                    currency="cny", bands=_shape(GUANGDONG_2021_TOU, CN_INDUSTRIAL_AVERAGE_CNY_PER_KWH),
                    as_of="2021-09-06 notice, 2024 average",
                    source="Guangdong DRC notice on the peak-valley time-of-use price (reprint dated 2021-09-06) - "
                           "peak 10-12 and 14-19 h, valley 0-8 h, peak:flat:valley 1.7:1:0.38; the flat price is "
                           "the 2024 national average (Guangdong's own flat price not found); the July-September "
                           "sharp peak (+25% on the peak, 11-12 and 15-17 h) left out",
                    url="http://06wxu.cn/xw/gnxw/20210906/100493.html"),
        *_agency_table("beijing", "Beijing", "time-of-use", "2025-02", _beijing(BEIJING_2025_02_TWO_PART),
                       _beijing(BEIJING_2025_02_SINGLE_PART), BEIJING_2025_02_SOURCE, BEIJING_2025_02_URL),
        *_agency_table("hubei", "Hubei", "time-of-use with a sharp peak", "2026-01", _hubei(HUBEI_2026_01_TWO_PART),
                       _hubei(HUBEI_2026_01_SINGLE_PART), HUBEI_2026_01_SOURCE, HUBEI_2026_01_URL),
        NamedTariff(name="cn-guizhou-dc", description="Guizhou, Qianxinan local grid, data-centre rate, flat",
                    currency="cny", bands="flat:24h@0.34", as_of="2019-06-12",
                    source="Xinhua via gov.cn, 2019-06-12 - Qianxinan prefecture (黔西南州), which runs its own "
                           "local grid and sets its own price, offers data centres power as low as 0.34 CNY/kWh "
                           "(a floor quoted by the prefecture's industry bureau, not a grid tariff table)",
                    url="https://www.gov.cn/xinwen/2019-06/12/content_5399578.htm"),
        NamedTariff(name="cn-ningxia-dc", description="Ningxia, Zhongwei cloud base, data-centre rate, flat",
                    currency="cny", bands="flat:24h@0.36", as_of="2020-11-16",
                    source="China Daily feature on the Zhongwei cloud base, dated 2020-11-16 in its address - "
                           "\"The electricity price is at 0.36 yuan per kilowatt-hour\"",
                    url="http://en.cccweb.org/2020-11/16/content_1486339_2.htm"),
        NamedTariff(name="cn-innermongolia-dc",
                    description="Inner Mongolia, Hohhot (western grid), standard rate, flat",
                    currency="cny", bands="flat:24h@0.38", as_of="2015-03-28",
                    source="China Daily, Hohhot says it has the right stuff to become a massive data hub, "
                           "2015-03-28 - \"The standard charge of electricity of the region is only 0.38 yuan per "
                           "kilowatt hour\"; an old figure, the only dated CNY one found for the region",
                    url="https://global.chinadaily.com.cn/m/innermongolia/2015-03/28/content_19948300.htm"),
    )
}


def named_tariff(text: str) -> NamedTariff | None:
    """The named tariff `text` names, or None when `text` is a band string."""
    return NAMED_TARIFFS.get(text.strip().lower())
