"""Currency conversion for budget checks. Prices inside rigplan are USD; article budgets are CNY."""

from __future__ import annotations

from rigplan.cost.money import CNY_PER_USD_DEFAULT
from rigplan.units import format_number

CNY_PER_USD = CNY_PER_USD_DEFAULT
"""rigplan's one planning rate (rigplan.cost.money), shared with `rigplan tco`."""
CNY_PER_USD_SOURCE = (
    f"{format_number(CNY_PER_USD)} CNY/USD (rigplan.cost.money default): CFETS central parity was 7.1287 on "
    "2025-08-21 and 7.1161 on 2025-08-25 (Xinhua, en.people.cn/n3/2025/0821/c90000-20355681.html); a planning "
    "rate, not a quote"
)


def to_currency(amount: float, currency: str, target: str) -> float:
    """Convert between USD and CNY at CNY_PER_USD."""
    if currency == target:
        return amount
    if currency == "USD" and target == "CNY":
        return amount * CNY_PER_USD
    if currency == "CNY" and target == "USD":
        return amount / CNY_PER_USD
    raise ValueError(f"no rate from {currency} to {target}")


def fmt_money(amount: float, currency: str) -> str:
    symbol = {"USD": "$", "CNY": "¥"}[currency]
    if amount >= 1e6:
        return f"{symbol}{amount / 1e6:.2f}M"
    if amount >= 1e4:
        return f"{symbol}{amount / 1e3:.1f}k"
    return f"{symbol}{amount:,.0f}"
