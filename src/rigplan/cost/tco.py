"""Cloud vs own for one GPU type: the request (flags or HTTP JSON), the comparison and its result.

`compare()` is pure (catalog record and offers in, result out); `tco()` is the thin loading
boundary the CLI and the API call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rigplan.bounds import Bounded
from rigplan.catalog.schema import GpuRecord, as_of_text
from rigplan.cost import onprem as op
from rigplan.cost.breakeven import BreakEven, breakeven, cost_per_useful_gpu_hour_usd
from rigplan.cost.cloud import (
    INTERRUPTIBLE_KINDS,
    CloudExtras,
    CloudJobCost,
    CloudOffer,
    cloud_job_cost,
    interruptible_pricing_unsuitable,
    offers_for,
    read_offers,
    user_offer,
)
from rigplan.cost.money import CNY_PER_USD_DEFAULT, CNY_PER_USD_SOURCE, Currency, Money
from rigplan.cost.onprem import (
    BuyUseSell,
    OnPremScenario,
    OnPremTco,
    buy_use_sell,
    onprem_cost_usd,
    onprem_tco,
    scenario_for_gpu,
)
from rigplan.cost.power import HOURS_PER_MONTH, HOURS_PER_YEAR, TimeOfUseTariff, parse_tariff
from rigplan.cost.tariffs import NAMED_TARIFFS, named_tariff
from rigplan.errors import InvalidSpec

Pricing = Literal["on-demand", "reserved", "spot", "community", "serverless"]
NVAIE_BUNDLED = ("h100-pcie", "h100-nvl", "h200-nvl")
"""GPUs sold with a 5-year NVIDIA AI Enterprise subscription (hardware-facts B5)."""
UTILISATION_GRID = (0.25, 0.5, 0.7, 0.9, 1.0)


class TcoRequest(BaseModel):
    """Inputs of `rigplan tco`. Money fields are in `currency` (converted at `fx` CNY per USD)."""

    model_config = ConfigDict(extra="forbid")

    gpu: str = "h100-sxm"
    gpus: Annotated[int, Bounded("gpus")] = 8
    hours: Annotated[float, Bounded("hours")] | None = None
    """Job wall-clock hours on every GPU. Default: the busy hours of the whole period (u × 8760 × years)."""
    months: Annotated[float, Bounded("months")] | None = None
    """Job length in months of continuous running (730 h each)."""
    utilisation: Annotated[float, Bounded("utilisation")] = op.UTILISATION_DEFAULT
    price_per_kwh: Annotated[float, Bounded("price_per_kwh")] | None = None
    pue: Annotated[float, Bounded("pue")] = op.PUE_DEFAULT
    years: Annotated[float, Bounded("years")] = op.DEPRECIATION_YEARS_DEFAULT
    residual: Annotated[float, Bounded("residual")] = op.RESIDUAL_FRACTION_DEFAULT
    licence: str = "none"
    colo_per_kw_month: Annotated[float, Bounded("colo_per_kw_month")] | None = None
    """Colocation per provisioned IT kW-month; default 184.06 USD (onprem.COLO_SOURCE)."""
    gpu_price: Annotated[float, Bounded("gpu_price")] | None = None
    server_share: Annotated[float, Bounded("server_share")] | None = None
    """Non-GPU server cost per GPU; default 50% of the GPU price."""
    fabric_share: Annotated[float, Bounded("fabric_share")] | None = None
    """Network fabric cost per GPU; default 20% of the GPU price."""
    host_w: Annotated[float, Bounded("host_w")] = op.HOST_W_PER_GPU_DEFAULT
    staff_per_year: Annotated[float, Bounded("staff_per_year")] | None = None
    """Operations staff of the whole cluster per year; default 544 USD per GPU-year (onprem.STAFF_SOURCE)."""
    capital_rate: Annotated[float, Bounded("capital_rate")] = op.CAPITAL_RATE_DEFAULT
    """Cost of capital per year, a fraction (0.075 = 7.5%)."""
    delta_t_f: Annotated[float, Bounded("delta_t_f")] = op.DELTA_T_F_DEFAULT
    cloud_price: Annotated[float, Bounded("cloud_price")] | None = None
    offers: str | None = None
    """YAML file of offers (provider, pricing, usd_per_gpu_hour, as_of, source); replaces the catalog's."""
    pricing: list[Pricing] = Field(default_factory=list)
    all_offers: bool = False
    storage_tb: Annotated[float, Bounded("storage_tb")] = 0.0
    storage_per_gb_month: Annotated[float, Bounded("storage_per_gb_month")] = 0.0
    egress_tb: Annotated[float, Bounded("egress_tb")] = 0.0
    egress_per_gb: Annotated[float, Bounded("egress_per_gb")] = 0.0
    currency: Currency = Currency.USD
    fx: Annotated[float, Bounded("fx")] = CNY_PER_USD_DEFAULT
    tou: str | None = None
    shiftable: bool = False
    server: str | None = None
    """A server build id or BUILD.yaml: its GPU, price and power replace the per-GPU defaults."""
    catalog: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> TcoRequest:
        if self.hours is not None and self.months is not None:
            raise InvalidSpec("give --hours or --months, not both")
        if self.tou is not None and self.price_per_kwh is not None:
            raise InvalidSpec("give --price-per-kwh or --tou, not both (the tariff sets the prices)")
        if self.shiftable and self.tou is None:
            raise InvalidSpec("--shiftable needs a time-of-use tariff (--tou)")
        if self.tou and named_tariff(self.tou) is None and "@" not in self.tou:
            raise InvalidSpec(f"--tou: '{self.tou.strip()}' is neither a named tariff ({', '.join(NAMED_TARIFFS)}) "
                              "nor bands NAME:HOURSh@PRICE")
        return self

    @property
    def money(self) -> Money:
        return Money(currency=self.currency, cny_per_usd=self.fx)


def _tariff(request: TcoRequest) -> TimeOfUseTariff | None:
    """--tou as bands in the request's currency, or a named tariff in its own (cost.tariffs)."""
    if not request.tou:
        return None
    named = named_tariff(request.tou)
    if named is None:
        return parse_tariff(request.tou, shiftable=request.shiftable, usd_per_unit=request.money.to_usd(1.0))
    usd_per_unit = 1.0 / request.fx if named.currency == "cny" else 1.0
    return parse_tariff(named.bands, shiftable=request.shiftable, usd_per_unit=usd_per_unit)


def build_scenario(request: TcoRequest, record: GpuRecord) -> OnPremScenario:
    """The on-prem scenario of a request, money converted to USD once."""
    usd = request.money.to_usd
    tariff = _tariff(request)
    return scenario_for_gpu(
        record,
        gpu_price_usd=usd(request.gpu_price) if request.gpu_price is not None else None,
        server_share_usd_per_gpu=usd(request.server_share) if request.server_share is not None else None,
        fabric_usd_per_gpu=usd(request.fabric_share) if request.fabric_share is not None else None,
        depreciation_years=request.years, residual_fraction=request.residual, utilisation=request.utilisation,
        pue=request.pue, host_w_per_gpu=request.host_w,
        usd_per_kwh=usd(request.price_per_kwh) if request.price_per_kwh is not None else None,
        tariff=tariff,
        colo_usd_per_kw_month=usd(request.colo_per_kw_month) if request.colo_per_kw_month is not None else None,
        licence_usd_per_gpu_year=op.licence_usd_per_gpu_year(request.licence, usd(1.0)),
        staff_usd_per_year=usd(request.staff_per_year) if request.staff_per_year is not None else None,
        staff_usd_per_gpu_year=0.0 if request.staff_per_year is not None else None,
        capital_rate=request.capital_rate, delta_t_f=request.delta_t_f,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class TcoResult:
    gpu: GpuRecord
    money: Money
    scenario: OnPremScenario | None
    """None when the GPU has no purchase price (and none was given): the rental side only."""
    job_hours: float
    job_basis: str
    cloud: tuple[CloudJobCost, ...]
    onprem: OnPremTco | None
    onprem_job_usd: float | None
    breakevens: tuple[BreakEven, ...]
    by_utilisation: tuple[tuple[float, float], ...]
    assumptions: tuple[str, ...]
    verdict: str
    buy_use_sell: BuyUseSell | None = None
    """Buy, run this job, sell at the resale value then (a job given in --hours or --months)."""
    job_verdict: str = ""
    requested_gpus: int = 0
    """The GPUs asked for (--gpus): shown even when neither side can be priced."""

    @property
    def num_gpus(self) -> int:
        if self.onprem:
            return self.onprem.num_gpus
        return self.cloud[0].num_gpus if self.cloud else self.requested_gpus

    def to_dict(self) -> dict[str, Any]:
        price = self.gpu.price
        return {
            "gpu": {"id": self.gpu.id, "name": self.gpu.name, "tdp_w": self.gpu.tdp_w,
                    "price_usd": price.usd if price else None, "price_kind": price.kind if price else None,
                    "price_as_of": price.as_of.isoformat() if price and price.as_of else None,
                    "price_source": price.source if price else None},
            "num_gpus": self.num_gpus,
            "currency": str(self.money.currency), "cny_per_usd": self.money.cny_per_usd,
            "job": {"hours": self.job_hours, "gpu_hours": self.job_hours * self.num_gpus,
                    "basis": self.job_basis, "onprem_usd": self.onprem_job_usd},
            "scenario": self.scenario.model_dump(mode="json") if self.scenario else None,
            "cloud": [c.to_dict() for c in self.cloud],
            "onprem": self.onprem.to_dict() if self.onprem else None,
            "buy_use_sell": self.buy_use_sell.to_dict() if self.buy_use_sell else None,
            "job_verdict": self.job_verdict,
            "breakeven": [b.to_dict() for b in self.breakevens],
            "by_utilisation": [{"utilisation": u, "usd_per_useful_gpu_hour": c} for u, c in self.by_utilisation],
            "assumptions": list(self.assumptions),
            "verdict": self.verdict,
        }


def _months(value: float) -> str:
    return f"{value:.1f} months" if math.isfinite(value) else "never"


def verdict(own_usd: float, breakevens: tuple[BreakEven, ...], money: Money, utilisation: float, label: str) -> str:
    """One line: is owning cheaper per useful GPU-hour than the cloud options, and when does it pay back."""
    own = f"owning {label} costs {money.rate(own_usd)} per useful GPU-hour at {utilisation:.0%} utilisation"
    if not breakevens:
        return own[0].upper() + own[1:] + "; no cloud offers to compare (give --cloud-price)."
    cheapest = min(breakevens, key=lambda b: b.usd_per_gpu_hour)
    name = f"{cheapest.provider} {cheapest.pricing}"
    beaten = [b for b in breakevens if b.cheaper == "own"]
    if len(beaten) == len(breakevens):
        return (f"OWN: {own}, below every cloud option (cheapest: {name} at {money.rate(cheapest.usd_per_gpu_hour)}); "
                f"it pays back against that one after {_months(cheapest.months)}.")
    need = cheapest.breakeven_utilisation
    need_text = f"utilisation reaches {need:.0%}" if math.isfinite(need) else "prices change (not even 100% use wins)"
    if not beaten:
        return (f"RENT: {name} at {money.rate(cheapest.usd_per_gpu_hour)} per GPU-hour beats {own}; "
                f"owning wins only if {need_text}.")
    return (f"MIXED: {own}, cheaper than {len(beaten)} of {len(breakevens)} cloud options, but {name} at "
            f"{money.rate(cheapest.usd_per_gpu_hour)} is cheaper still unless {need_text}.")


def _job_hours(request: TcoRequest) -> tuple[float, str]:
    if request.hours is not None:
        return request.hours, "--hours"
    if request.months is not None:
        return request.months * HOURS_PER_MONTH, "--months (730 h each, continuous)"
    return (request.utilisation * HOURS_PER_YEAR * request.years,
            "busy hours over the whole period (utilisation x 8760 h x years)")


def job_verdict(result_cloud: tuple[CloudJobCost, ...], bus: BuyUseSell, money: Money, months: float) -> str:
    """Buy for the job and sell after it, against the cheapest cloud total for the same job."""
    own = (f"buying for {months:.0f} months and selling at {bus.resale_fraction:.0%} of capex costs "
           f"{money.amount(bus.total_usd)} for this job")
    if not result_cloud:
        return own[0].upper() + own[1:] + "."
    cheapest = min(result_cloud, key=lambda c: c.total_usd)
    name = f"{cheapest.offer.provider} {cheapest.offer.pricing}"
    word = "BUY-AND-SELL" if bus.total_usd < cheapest.total_usd else "RENT"
    return f"{word} for this job: {own}, against {money.amount(cheapest.total_usd)} renting from {name}."


def compare(request: TcoRequest, record: GpuRecord, offers: list[CloudOffer]) -> TcoResult:
    """Price the job in the cloud (each offer) and on owned hardware, with break-even per offer.

    A GPU without a purchase price (and no --gpu-price) gets the rental side only. A job given in
    hours or months also gets the buy-use-sell view (onprem.buy_use_sell): bought for the job, busy
    throughout, sold at its resale value then (the residual, once the job reaches the period)."""
    money = request.money
    n = request.gpus
    hours, basis = _job_hours(request)
    extras = CloudExtras(storage_gb=request.storage_tb * 1000,
                         storage_usd_per_gb_month=money.to_usd(request.storage_per_gb_month),
                         egress_gb=request.egress_tb * 1000, egress_usd_per_gb=money.to_usd(request.egress_per_gb))
    cloud = tuple(cloud_job_cost(o, n, hours, extras) for o in offers)
    if record.price is None and request.gpu_price is None:
        notes = (f"{record.name} has no purchase price in the catalog: renting only (give --gpu-price to "
                 "price owning)",)
        kinds = sorted({price.pricing for price in record.cloud_prices}, key=lambda kind: (kind != "spot", kind))
        if not cloud and kinds:
            text = (f"{record.name}: no purchase price in the catalog, and its cloud offers ({', '.join(kinds)}) are "
                    f"left out for this job; add --pricing {kinds[0]} to include them, or give --gpu-price or "
                    "--cloud-price.")
        elif not cloud:
            text = (f"{record.name}: no purchase price and no cloud offer in the catalog; give --gpu-price or "
                    "--cloud-price.")
        else:
            cheapest = min(cloud, key=lambda c: c.total_usd)
            text = (f"RENT: {cheapest.offer.provider} {cheapest.offer.pricing} at "
                    f"{money.rate(cheapest.offer.usd_per_gpu_hour)} per GPU-hour, {money.amount(cheapest.total_usd)} "
                    f"for the job; owning is not priced (no purchase price).")
        return TcoResult(gpu=record, money=money, scenario=None, job_hours=hours, job_basis=basis, cloud=cloud,
                         onprem=None, onprem_job_usd=None, breakevens=(), by_utilisation=(),
                         assumptions=notes + _offer_notes(request, record, offers, n, hours), verdict=text,
                         requested_gpus=n)
    scenario = build_scenario(request, record)
    tco_own = onprem_tco(scenario, n)
    breakevens = tuple(breakeven(scenario, o, n) for o in offers)
    grid = sorted({*UTILISATION_GRID, scenario.utilisation})
    by_u = tuple((u, cost_per_useful_gpu_hour_usd(scenario, u, n)) for u in grid)
    assumptions = _assumptions(request, record, scenario, offers) + _offer_notes(request, record, offers, n, hours)
    label = f"{n} x {record.name}"
    bus = None
    jv = ""
    if (request.hours is not None or request.months is not None) and hours > 0:
        bus = buy_use_sell(scenario, n, hours)
        jv = job_verdict(cloud, bus, money, hours / HOURS_PER_MONTH)
        busy_share = hours / scenario.owned_hours
        if busy_share > scenario.utilisation:
            assumptions += (f"this job alone keeps the GPUs busy {min(busy_share, 1.0):.0%} of the "
                            f"{scenario.depreciation_years:g}-year period, more than the {scenario.utilisation:.0%} "
                            "utilisation the per-hour cost assumes: its own cost of owning is the buy-and-sell line",)
    return TcoResult(
        gpu=record, money=money, scenario=scenario, job_hours=hours, job_basis=basis, cloud=cloud, onprem=tco_own,
        onprem_job_usd=float(onprem_cost_usd(n, hours, scenario)), breakevens=breakevens, by_utilisation=by_u,
        assumptions=assumptions,
        verdict=verdict(tco_own.usd_per_useful_gpu_hour, breakevens, money, scenario.utilisation, label)
        + f" Left out: {op.LEFT_OUT}.",
        buy_use_sell=bus, job_verdict=jv,
    )


def _offer_notes(request: TcoRequest, record: GpuRecord, offers: list[CloudOffer], n: int,
                 hours: float) -> tuple[str, ...]:
    if request.pricing or request.cloud_price is not None or request.offers is not None:
        return ()
    if interruptible_pricing_unsuitable(n, hours, record.node.gpus_per_node):
        return (f"spot, community and serverless offers left out: a {n}-GPU job of {hours:,.0f} h cannot hold "
                "its ranks on capacity that is reclaimed or capped per request (add --pricing spot etc. to "
                "include them)",)
    return ()


def _assumptions(
    request: TcoRequest, record: GpuRecord, s: OnPremScenario, offers: list[CloudOffer]
) -> tuple[str, ...]:
    notes = []
    if request.gpu_price is None and record.price is not None:
        notes.append(f"GPU price ${record.price.usd:,.0f} ({record.price.kind}, {as_of_text(record.price.as_of)}): "
                     f"{record.price.source}")
    if request.server_share is None or request.fabric_share is None:
        notes.append(op.SHARE_SOURCE)
    if request.years == op.DEPRECIATION_YEARS_DEFAULT:
        notes.append(op.DEPRECIATION_SOURCE)
    if request.residual == op.RESIDUAL_FRACTION_DEFAULT:
        notes.append(op.RESIDUAL_SOURCE)
    if request.utilisation == op.UTILISATION_DEFAULT:
        notes.append(op.UTILISATION_SOURCE)
    if request.pue == op.PUE_DEFAULT:
        notes.append(op.PUE_SOURCE)
    if request.price_per_kwh is None and request.tou is None:
        notes.append(op.USD_PER_KWH_SOURCE)
    named = named_tariff(request.tou) if request.tou else None
    if named is not None:
        notes.append(f"tariff {named.name} ({named.description}, {named.currency.upper()} {named.bands}; "
                     f"{named.as_of}): {named.source} ({named.url})")
    if s.tariff is not None:
        notes.append("time-of-use: " + ("the job runs in the cheapest hours first" if s.tariff.shiftable else
                                        "not shiftable, so the job pays the day's mean price (add --shiftable)"))
    if request.host_w == op.HOST_W_PER_GPU_DEFAULT:
        notes.append(op.HOST_W_SOURCE)
    notes.append(op.LICENCE_SOURCE)
    if record.id in NVAIE_BUNDLED and s.licence_usd_per_gpu_year > 0:
        notes.append(f"{record.name} ships with a 5-year NVIDIA AI Enterprise subscription: the licence may "
                     "already be paid")
    if request.colo_per_kw_month is None:
        notes.append(op.COLO_SOURCE)
    elif not s.colo_usd_per_kw_month:
        notes.append("colocation 0 (--colo-per-kw-month): the building, its power and cooling plant are assumed "
                     "owned and paid for")
    if request.staff_per_year is None:
        notes.append(op.STAFF_SOURCE)
    if request.capital_rate == op.CAPITAL_RATE_DEFAULT:
        notes.append(op.CAPITAL_SOURCE)
    if request.currency is Currency.CNY:
        rate = CNY_PER_USD_SOURCE if request.fx == CNY_PER_USD_DEFAULT else f"{request.fx:g} CNY per USD (--fx)"
        notes.append(f"money inputs are read in CNY and shown in CNY; {rate}")
    if offers and any(o.pricing != "user" for o in offers):
        notes.append("cloud prices are dated snapshots (see as_of); hyperscaler 8-GPU instances include CPU, RAM, "
                     "local NVMe and networking (hardware-facts A4)")
    notes.append(f"left out: {op.LEFT_OUT}")
    return tuple(notes)


def select_offers(request: TcoRequest, record: GpuRecord) -> list[CloudOffer]:
    """--cloud-price and/or --offers FILE replace the catalog's offers; otherwise the catalog's."""
    usd_per_unit = request.money.to_usd(1.0)
    chosen: list[CloudOffer] = []
    if request.cloud_price is not None:
        chosen.append(user_offer(request.money.to_usd(request.cloud_price)))
    if request.offers is not None:
        chosen.extend(read_offers(request.offers, usd_per_unit, request.fx))
    if chosen:
        return chosen
    kinds = tuple(request.pricing)
    offers = offers_for(record, latest_only=not request.all_offers, pricing=kinds, cny_per_usd=request.fx)
    if not kinds and interruptible_pricing_unsuitable(request.gpus, _job_hours(request)[0], record.node.gpus_per_node):
        offers = [o for o in offers if o.pricing not in INTERRUPTIBLE_KINDS]
    return offers


def tco(request: TcoRequest) -> TcoResult:
    """Load the GPU record (and an offers file) and compare. The I/O boundary of this package."""
    from rigplan.catalog.load import load_catalog

    catalog = load_catalog(request.catalog)
    if request.server is not None:
        request = with_build(request, catalog)
    record = catalog.gpu(request.gpu)
    offers = select_offers(request, record)
    if not offers and request.pricing:
        raise InvalidSpec(f"gpu '{record.id}' has no {'/'.join(request.pricing)} offers in the catalog")
    return compare(request, record, offers)


def with_build(request: TcoRequest, catalog: Any) -> TcoRequest:
    """Take the GPU, server share and host power from a server build where the user did not set them."""
    from rigplan.cost.build import build_costs
    from rigplan.servers.load import resolve_build

    build = resolve_build(request.server or "", request.catalog)
    costs = build_costs(build, catalog, request.fx)
    if "gpu" in request.model_fields_set and request.gpu != costs.gpu_id:
        raise InvalidSpec(f"--server {request.server} holds {costs.gpu_id} GPUs, not --gpu {request.gpu}; drop one of "
                          "them")
    update: dict[str, Any] = {"gpu": costs.gpu_id}
    if costs.server_share_usd_per_gpu is not None and request.server_share is None:
        update["server_share"] = request.money.from_usd(costs.server_share_usd_per_gpu)
    if costs.host_w_per_gpu is not None and request.host_w == op.HOST_W_PER_GPU_DEFAULT:
        update["host_w"] = costs.host_w_per_gpu
    return request.model_copy(update=update)
