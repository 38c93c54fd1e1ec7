"""`rigplan tco`: cloud rental vs owning GPUs - totals, break-even, cost per useful GPU-hour."""

from __future__ import annotations

import math
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from rigplan.catalog.load import load_catalog
from rigplan.catalog.schema import as_of_text
from rigplan.cli.common import build_request, choice, echo_json, guarded
from rigplan.cost.money import Money
from rigplan.cost.scenarios import SEED_GPU_ID, SeedScenario, seed_scenario
from rigplan.cost.tariffs import NAMED_TARIFFS
from rigplan.cost.tco import TcoRequest, TcoResult, build_scenario, compare, select_offers, with_build
from rigplan.errors import InvalidSpec
from rigplan.report.text import stdout_console
from rigplan.units import format_number


def _months(value: float) -> str:
    return f"{value:.1f} mo" if math.isfinite(value) else "never"


def _pct(value: float) -> str:
    return f"{value:.0%}" if math.isfinite(value) else "never"


def render_tco(result: TcoResult, console: Console) -> None:
    m, own, s = result.money, result.onprem, result.scenario
    n = result.num_gpus
    console.print(f"[bold]{n} x {result.gpu.name}[/bold]: job of {result.job_hours:,.0f} h per GPU "
                  f"({n * result.job_hours:,.0f} GPU-h; {result.job_basis})")
    if result.cloud:
        table = Table(title="Cloud", title_justify="left", show_edge=False)
        for name, justify in (("provider", "left"), ("pricing", "left"), ("per GPU-h", "right"),
                              ("as of", "left"), ("job total", "right")):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for c in result.cloud:
            table.add_row(c.offer.provider, c.offer.pricing, m.rate(c.offer.usd_per_gpu_hour),
                          "-" if c.offer.pricing == "user" else as_of_text(c.offer.as_of), m.amount(c.total_usd))
        console.print(table)
    elif result.gpu.cloud_prices:
        console.print("Cloud: no catalog offer suits this job (see the assumptions; give --pricing, --cloud-price "
                      "or --offers FILE)")
    else:
        console.print("Cloud: no offers in the catalog for this GPU (give --cloud-price or --offers FILE)")
    if own is None or s is None:
        _render_notes(result, console)
        return
    console.print(f"[bold]Own[/bold] ({format_number(own.years)} y, {own.utilisation:.0%} utilisation)")
    console.print(f"  capex: GPUs {m.amount(own.capex_gpus_usd)} + server share {m.amount(own.capex_server_usd)} "
                  f"+ fabric {m.amount(own.capex_fabric_usd)} = {m.amount(own.capex_usd)}")
    console.print(f"  residual credit after {format_number(own.years)} y ({s.residual_fraction:.0%}): "
                  f"-{m.amount(own.residual_credit_usd)}")
    price = (f"{m.rate(own.busy_usd_per_kwh, 3)}/kWh busy, {m.rate(own.mean_usd_per_kwh, 3)}/kWh mean"
             if s.tariff else f"{m.rate(s.usd_per_kwh, 3)}/kWh")
    console.print(f"  per year: power {m.amount(own.power_usd_per_year)} ({own.energy_kwh_per_year:,.0f} kWh at "
                  f"PUE {format_number(s.pue)}, {price}) + colocation {m.amount(own.colo_usd_per_year)} + licence "
                  f"{m.amount(own.licence_usd_per_year)} + staff {m.amount(own.staff_usd_per_year)} "
                  f"+ capital {m.amount(own.financing_usd_per_year)} ({s.capital_rate:.1%}) "
                  f"= {m.amount(own.opex_usd_per_year)}")
    console.print(f"  total over {format_number(own.years)} y: {m.amount(own.lifetime_usd)} = "
                  f"[bold]{m.rate(own.usd_per_useful_gpu_hour)} per useful GPU-hour[/bold]; "
                  f"this job's share: {m.amount(result.onprem_job_usd)}")
    console.print(f"  facility: {own.it_kw_peak:,.1f} kW peak IT load, {own.heat_btu_per_h_peak:,.0f} BTU/h, "
                  f"{own.airflow_cfm_peak:,.0f} CFM at ΔT {format_number(own.delta_t_f)} °F")
    if result.breakevens:
        table = Table(title=f"Break-even at {s.utilisation:.0%} utilisation", title_justify="left", show_edge=False)
        for name in ("provider", "per GPU-h", "cheaper", "pays back after", "busy h/GPU", "own wins from"):
            table.add_column(name, justify="left" if name in ("provider", "cheaper") else "right")
        for b in result.breakevens:
            hours = f"{b.busy_gpu_hours:,.0f}" if math.isfinite(b.busy_gpu_hours) else "-"
            late = "" if b.within_period or not math.isfinite(b.months) else " (after the period)"
            table.add_row(f"{b.provider} ({b.pricing})", m.rate(b.usd_per_gpu_hour), b.cheaper,
                          _months(b.months) + late, hours, _pct(b.breakeven_utilisation) + " utilisation")
        console.print(table)
    grid = " · ".join(f"{u:.0%} {m.rate(c)}" for u, c in result.by_utilisation)
    console.print(f"Own per useful GPU-hour by utilisation: {grid}")
    bus = result.buy_use_sell
    if bus is not None:
        console.print(f"[bold]Buy for this job and sell[/bold] ({bus.hours / 730:.0f} months, busy throughout): capex "
                      f"{m.amount(bus.capex_usd)} - resale at {bus.resale_fraction:.0%} {m.amount(bus.resale_usd)} + "
                      f"energy {m.amount(bus.energy_usd)} + host power, colocation, licence, staff "
                      f"{m.amount(bus.fixed_usd)} + capital {m.amount(bus.financing_usd)} = {m.amount(bus.total_usd)}")
    _render_notes(result, console)


def _render_notes(result: TcoResult, console: Console) -> None:
    console.print("Assumptions:")
    for note in result.assumptions:
        console.print(f"  - {note}", highlight=False)
    console.print(f"[bold]{result.verdict}[/bold]")
    if result.job_verdict:
        console.print(f"[bold]{result.job_verdict}[/bold]")


def render_seed(seed: SeedScenario, m: Money, console: Console) -> None:
    a = seed.article
    console.print("[bold]The seed article (§4), as it computed it[/bold]")
    console.print(f"  cloud A100 {m.rate(a.cloud_usd_per_gpu_hour)}/h x {a.job_hours:,.0f} h = "
                  f"{m.amount(a.cloud_job_usd)}; own $25,000 / (3 y x 2,000 h) = "
                  f"{m.rate(a.own_usd_per_gpu_hour, 4)}/h -> {m.amount(a.own_job_usd)}")
    console.print(f"  break-even {a.breakeven_busy_hours:,.0f} h of use: {a.breakeven_months_at_2000h_per_year:.1f} "
                  f"months at 2,000 h/yr, {a.breakeven_months_continuous:.1f} months running continuously "
                  "(the article: 'beyond about 6 months')")
    table = Table(title=f"Corrected step by step ({seed.gpu_id}; cumulative)", title_justify="left",
                  show_edge=False)
    table.add_column("step")
    table.add_column("own per useful GPU-h", justify="right")
    table.add_column(f"pays back vs {m.rate(a.cloud_usd_per_gpu_hour)}/h", justify="right")
    rows = [*seed.steps, *([seed.optional_licence_step] if seed.optional_licence_step else [])]
    for step in rows:
        table.add_row(step.label, m.rate(step.own_usd_per_useful_gpu_hour),
                      _months(step.breakeven_months_vs_article_cloud))
    console.print(table)
    table = Table(title="Corrected scenario against cloud offers", title_justify="left", show_edge=False)
    for name in ("offer", "per GPU-h", "cheaper", "pays back after", "own wins from"):
        table.add_column(name, justify="left" if name in ("offer", "cheaper") else "right")
    for b in seed.current_offers:
        table.add_row(f"{b.provider} ({b.pricing})", m.rate(b.usd_per_gpu_hour), b.cheaper, _months(b.months),
                      _pct(b.breakeven_utilisation) + " utilisation")
    console.print(table)
    console.print("Left out even after correction: " + "; ".join(seed.left_out), highlight=False)
    console.print(f"[bold]{seed.verdict(m)}[/bold]")


@click.command("tco")
@click.option("--server", help="Server build id (rigplan servers) or BUILD.yaml: its GPU, price and power are used.")
@click.option("--gpu", help="GPU id (rigplan gpus). Default: h100-sxm; a100-80gb-sxm with --scenario seed.")
@click.option("--gpus", type=int, default=8, show_default=True, help="GPUs owned / rented.")
@click.option("--hours", type=float, help="Job wall-clock hours per GPU. Default: busy hours of the whole period.")
@click.option("--months", type=float, help="Job length in months of continuous running (730 h each).")
@click.option("--utilisation", type=float, default=0.7, show_default=True,
              help="Fraction of owned hours the GPUs do useful work.")
@click.option("--price-per-kwh", type=float, help="Electricity price per kWh (default 0.08 USD, EIA US industrial).")
@click.option("--pue", type=float, default=1.4, show_default=True, help="Power usage effectiveness of the facility.")
@click.option("--years", type=float, default=3.0, show_default=True, help="Depreciation period in years.")
@click.option("--residual", type=float, default=0.3, show_default=True,
              help="Resale value at the end of the period, fraction of capex.")
@click.option("--licence", default="none", show_default=True,
              help="Software licence per GPU-year: nvaie (4,500 USD), none, or an amount.")
@click.option("--colo-per-kw-month", "--colo-usd-per-kw-month", "colo_per_kw_month", type=float,
              help="Colocation / datacentre charge per provisioned IT kW-month (default 184.06 USD, CBRE North "
                   "America H2 2024; 0 for a building you own outright).")
@click.option("--gpu-price", type=float, help="Purchase price per GPU (default: the catalog's dated price).")
@click.option("--server-share", type=float, help="Non-GPU server cost per GPU (default: 50% of the GPU price).")
@click.option("--fabric-share", type=float, help="Network fabric cost per GPU (default: 20% of the GPU price).")
@click.option("--host-w", type=float, default=250.0, show_default=True, help="Host power per GPU under load, W.")
@click.option("--staff-per-year", type=float,
              help="Operations staff of the whole cluster per year (default 544 USD per GPU-year: one operator "
                   "per 250 GPUs at 136,000 USD loaded).")
@click.option("--capital-rate", type=float, default=0.075, show_default=True,
              help="Cost of capital per year as a fraction (US prime rate 7.5% after 2024-12-19; 0 for spare cash).")
@click.option("--delta-t-f", type=float, default=20.0, show_default=True,
              help="Air temperature rise through the servers, °F (airflow figure).")
@click.option("--cloud-price", type=float, help="Your cloud price per GPU-hour (replaces the catalog's offers).")
@click.option("--offers", type=click.Path(), help="YAML list of offers (provider, pricing, usd_per_gpu_hour, "
                                                  "as_of, source) replacing the catalog's.")
@click.option("--pricing", multiple=True,
              type=choice(["on-demand", "reserved", "spot", "community", "serverless"]),
              help="Keep only these catalog offer kinds (repeatable).")
@click.option("--all-offers", is_flag=True, help="Also show older snapshots of the same provider and pricing.")
@click.option("--storage-tb", type=float, default=0.0, help="Cloud storage kept during the job, TB.")
@click.option("--storage-per-gb-month", type=float, default=0.0, help="Cloud storage price per GB-month.")
@click.option("--egress-tb", type=float, default=0.0, help="Data moved out of the cloud, TB.")
@click.option("--egress-per-gb", type=float, default=0.0, help="Egress price per GB.")
@click.option("--currency", type=choice(["usd", "cny"]), default="usd", show_default=True,
              help="Currency of every money flag and of the output.")
@click.option("--fx", type=float, default=7.1, show_default=True, help="CNY per USD (approximate, 2026-12).")
@click.option("--tou", help='Time-of-use tariff, e.g. "peak:8h@0.12,flat:8h@0.08,valley:8h@0.04" (prices in '
              '--currency), or a named tariff in its own currency (dated, sourced; docs/methodology/cost.md): '
              + ", ".join(NAMED_TARIFFS) + ".")
@click.option("--shiftable", is_flag=True, help="The job can run in the cheapest tariff hours first.")
@click.option("--scenario", type=choice(["seed"]), help="seed: the seed article's §4 example, then corrected.")
@click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(), help="Catalog overlay folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def tco_command(gpu: str | None, scenario: str | None, as_json: bool, catalog_dirs: tuple[str, ...],
                pricing: tuple[str, ...], **kwargs: Any) -> None:
    """Cloud rental vs owning GPUs: totals for a job, owned cost per useful GPU-hour, break-even.

    Money flags are read in --currency. Owned cost = capex (GPU + server + fabric) - resale value
    + years x (power at PUE + colocation + licence + staff) + cost of capital, spread over the busy hours.

    \b
    Examples:
      rigplan tco --gpu h100-sxm --gpus 64
      rigplan tco --gpu a100-80gb-sxm --gpus 8 --months 6 --utilisation 0.5 --licence nvaie
      rigplan tco --gpu h100-sxm --currency cny --price-per-kwh 0.6 --fx 7.1
      rigplan tco --tou "peak:8h@0.12,flat:8h@0.08,valley:8h@0.04" --shiftable
      rigplan tco --scenario seed
    """
    gpu_id = gpu or (SEED_GPU_ID if scenario == "seed" else "h100-sxm")
    request = build_request(TcoRequest, gpu=gpu_id, catalog=list(catalog_dirs), pricing=list(pricing), **kwargs)
    if request.server is not None:
        request = with_build(request, load_catalog(request.catalog))
    record = load_catalog(request.catalog).gpu(request.gpu)
    console = stdout_console(highlight=False, soft_wrap=False)
    if scenario == "seed":
        seed = seed_scenario(record, build_scenario(request, record), request.gpus)
        if as_json:
            echo_json({"scenario": "seed", "currency": str(request.currency), "cny_per_usd": request.fx,
                       **seed.to_dict(), "verdict": seed.verdict(request.money)})
        else:
            render_seed(seed, request.money, console)
        return
    offers = select_offers(request, record)
    if not offers and request.pricing:
        raise InvalidSpec(f"gpu '{record.id}' has no {'/'.join(request.pricing)} offers in the catalog")
    result = compare(request, record, offers)
    if as_json:
        echo_json(result.to_dict())
    else:
        render_tco(result, console)
