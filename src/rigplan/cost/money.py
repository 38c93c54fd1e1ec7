"""Currencies, the USD/CNY exchange rate, and money formatting ("$1.23M", "¥123.4万", "¥1.23亿").

Inside rigplan every amount is in USD (`_usd`). CNY appears only on input (flags read in the
chosen currency are converted once) and on output.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from rigplan.bounds import check
from rigplan.errors import InvalidSpec
from rigplan.units import parse_count


class Currency(StrEnum):
    USD = "usd"
    CNY = "cny"


CNY_PER_USD_DEFAULT = 7.1
CNY_PER_USD_SOURCE = (
    "7.1 CNY per USD: approximate rate as of 2026-12, the rate implied by the conversions in the rigplan "
    "hardware reference (hardware-facts.md Part C rows 3b and 8: $6,800 ~ ¥49k; $2.5-3.5M ~ ¥18-25M); "
    "not a live quote - override with --fx"
)

WAN = 1e4
"""万: ten thousand."""
YI = 1e8
"""亿: one hundred million."""


def _three_digits(value: float) -> str:
    """Three significant digits, trailing zeros kept: 1.00, 12.3, 123."""
    if round(value, 2) < 10:
        return f"{value:.2f}"
    if round(value, 1) < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def format_usd(usd: float) -> str:
    """USD for people: $2.45, $1,234, $12.3k, $1.23M, $1.00M, $1.23B, $1.23T (and $1,234T beyond)."""
    if not math.isfinite(usd):
        return "n/a"
    sign, value = ("-" if usd < 0 else ""), abs(usd)
    if value == 0:
        return "$0"
    if value >= 999.5e12:
        return f"{sign}${value / 1e12:,.0f}T"
    if value >= 999.5e9:
        return f"{sign}${_three_digits(value / 1e12)}T"
    if value >= 999.5e6:
        return f"{sign}${_three_digits(value / 1e9)}B"
    if value >= 999.95e3:
        return f"{sign}${_three_digits(value / 1e6)}M"
    if value >= 9999.5:
        return f"{sign}${value / 1e3:.1f}k"
    if value >= 99.995:
        return f"{sign}${value:,.0f}"
    return f"{sign}${value:.2f}"


def format_cny(cny: float) -> str:
    """CNY for people, in 万 (10⁴) and 亿 (10⁸): ¥17.40, ¥8,500, ¥123.4万, ¥1,234万, ¥1.23亿."""
    if not math.isfinite(cny):
        return "n/a"
    sign, value = ("-" if cny < 0 else ""), abs(cny)
    if value == 0:
        return "¥0"
    if value >= 9999.5 * WAN:
        return f"{sign}¥{_three_digits(value / YI)}亿"
    if value >= 999.95 * WAN:
        return f"{sign}¥{value / WAN:,.0f}万"
    if value >= WAN - 0.5:
        return f"{sign}¥{value / WAN:.1f}万"
    if value >= 99.995:
        return f"{sign}¥{value:,.0f}"
    return f"{sign}¥{value:.2f}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Money:
    """A display currency and the exchange rate used to reach it from USD."""

    currency: Currency = Currency.USD
    cny_per_usd: float = CNY_PER_USD_DEFAULT

    def __post_init__(self) -> None:
        if not (math.isfinite(self.cny_per_usd) and self.cny_per_usd > 0):
            raise InvalidSpec(f"--fx must be a positive number of CNY per USD, got {self.cny_per_usd}")

    @property
    def symbol(self) -> str:
        return "$" if self.currency is Currency.USD else "¥"

    def from_usd(self, usd: float) -> float:
        """An amount in USD expressed in the display currency."""
        return usd if self.currency is Currency.USD else usd * self.cny_per_usd

    def to_usd(self, amount: float) -> float:
        """An amount given in the display currency, in USD."""
        return amount if self.currency is Currency.USD else amount / self.cny_per_usd

    def amount(self, usd: float) -> str:
        """A total: "$1.23M" or "¥873.3万"."""
        if self.currency is Currency.USD:
            return format_usd(usd)
        return format_cny(self.from_usd(usd))

    def rate(self, usd: float, digits: int = 2) -> str:
        """A unit price, never abbreviated: "$2.45", "¥17.40", "$0.080"."""
        if not math.isfinite(usd):
            return "n/a"
        return f"{self.symbol}{self.from_usd(usd):,.{digits}f}"


def parse_money(text: str | float | None, currency: str, cny_per_usd: float) -> float | None:
    """'500k', '3M' in the given currency -> USD; an amount written with ¥ or in 万 / 亿 is in yuan, one written
    with $ in dollars, whatever the currency ('20万' is CNY 200,000, not USD 200,000)."""
    if text is None:
        return None
    if isinstance(text, int | float):
        amount = float(text)
    else:
        raw = text.strip()
        symbol = raw[:1] if raw[:1] in ("$", "¥", "￥") else ""
        raw = raw[len(symbol):]
        yuan = symbol in ("¥", "￥") or raw.endswith(("万", "亿", "元"))
        if any(sign in raw for sign in ("$", "¥", "￥")) or (symbol == "$" and yuan):
            raise InvalidSpec(f"--budget '{text}': one currency, its sign first ($5M, ¥5M) or 万 / 亿 / 元 last "
                              "(2000万)")
        if symbol == "$":
            currency = "usd"
        elif yuan:
            currency = "cny"
        if "," in raw and not re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d*)?\D*", raw):
            raise InvalidSpec(f"--budget '{text}': commas only between groups of three digits (1,500,000)")
        raw = raw.replace(",", "").removesuffix("元")
        scale = 1.0
        if raw.endswith("万"):
            raw, scale = raw[:-1], WAN
        elif raw.endswith("亿"):
            raw, scale = raw[:-1], YI
        try:
            amount = parse_count(raw, "--budget") * scale
        except InvalidSpec:
            raise InvalidSpec(f"--budget '{text}' is not an amount of money; use e.g. 500k, 3M, 2000万 "
                              "or ¥5M") from None
    usd = amount / cny_per_usd if currency == "cny" else amount
    check("budget", usd, label="--budget (in USD)")
    return usd
