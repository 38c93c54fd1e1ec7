"""Budget vs the build's price."""

from __future__ import annotations

from rigplan.catalog.schema import as_of_text
from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding, finding
from rigplan.lint.money import CNY_PER_USD, CNY_PER_USD_SOURCE, fmt_money, to_currency
from rigplan.lint.registry import rule
from rigplan.units import format_number


@rule("budget.price", "Budget vs the build's price")
def budget_price(ctx: LintContext) -> list[Finding]:
    """The build's price snapshot (whole build) if recorded, and in any case the GPUs alone at their catalog
    price (a floor), against the stated budget. Error when either exceeds the budget's top. USD/CNY at
    7.1 (CFETS central parity, Aug 2025)."""
    b, g = ctx.build, ctx.gpu
    code = "budget.price"
    currency = b.budget.currency if b.budget else "USD"
    gpu_floor = to_currency(g.price.usd * b.total_gpus, "USD", currency) if g.price else None
    price = to_currency(b.price.amount, b.price.currency, currency) if b.price else None
    values = {"currency": currency, "cny_per_usd": CNY_PER_USD, "rate_source": CNY_PER_USD_SOURCE,
              "gpu_price_floor": gpu_floor, "build_price": price,
              "budget_min": b.budget.min if b.budget else None, "budget_max": b.budget.max if b.budget else None}
    gpu_dated = as_of_text(g.price.as_of) if g.price else ""
    gpu_text = (f"the GPUs alone are {b.total_gpus} x ${g.price.usd:,.0f} ({g.price.kind}, {gpu_dated}) = "
                f"{fmt_money(gpu_floor, currency)}" if g.price and gpu_floor is not None
                else f"no catalog price for {g.name}")
    price_text = (f"the build is priced {fmt_money(price, currency)} ({b.price.kind}, {b.price.scope}, "
                  f"{as_of_text(b.price.as_of)})" if b.price and price is not None else "")
    rate = f" (at {format_number(CNY_PER_USD)} CNY/USD)" if currency == "CNY" else ""
    if b.budget is None:
        known = "; ".join(t for t in (price_text, gpu_text) if t)
        return [finding(code, "info", f"No budget stated; {known}{rate}.", **values)]
    top = b.budget.max
    span = (f"{fmt_money(b.budget.min, currency)}-{fmt_money(top, currency)}" if b.budget.min
            else fmt_money(top, currency))
    if gpu_floor is not None and gpu_floor > top:
        extra = f"; {price_text}" if price_text else ""
        return [finding(code, "error", f"Budget {span} but {gpu_text}{rate}, {gpu_floor / top:.1f}x the budget's top, "
                        f"before chassis, CPUs, RAM, storage and network{extra}.", **values)]
    if price is not None and price > top:
        return [finding(code, "error", f"Budget {span} but {price_text}{rate}, {price / top:.1f}x the budget's top.",
                        **values)]
    if price is None:
        return [finding(code, "warning", f"Budget {span}; no whole-build price recorded, and {gpu_text}{rate}.",
                        **values)]
    return [finding(code, "info", f"Budget {span}: {price_text}{rate}; {gpu_text}.", **values)]
