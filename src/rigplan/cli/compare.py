"""`rigplan compare`: concrete options side by side, with the winner per row."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from rigplan.cli.common import (
    KERNELS_OPTION,
    OPTIMIZER_OPTION,
    build_request,
    check_option,
    echo_json,
    exit_for_check,
    explicit_values,
    guarded,
    model_options,
    recipe_options,
)
from rigplan.cost.money import format_usd
from rigplan.flow.compare import compare
from rigplan.flow.plan import OVER_LIMIT_REASON, UNPRICED_OFFER
from rigplan.flow.request import PlanRequest
from rigplan.report.text import layout_text, stdout_console
from rigplan.units import format_bytes, format_count, format_duration

FORMATS = {
    "time_to_train_s": format_duration, "wall_time_s": format_duration, "tokens_per_s": format_count,
    "mfu": lambda v: f"{100 * v:.0f}%",
    "memory_per_gpu_bytes": format_bytes, "headroom_bytes": format_bytes, "cloud_cost_usd": format_usd,
    "onprem_cost_usd": format_usd, "power_w": lambda v: f"{v / 1000:.1f} kW", "energy_kwh": lambda v: f"{v:,.0f} kWh",
}


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "layout":
        return layout_text(value)
    formatter = FORMATS.get(key)
    return str(formatter(value)) if formatter else str(value)


@click.command("compare")
@click.argument("model")
@click.argument("options", nargs=-1, required=True)
@model_options
@click.option("--tokens", required=True, help="Tokens to train on, e.g. 50B.")
@recipe_options
@OPTIMIZER_OPTION
@KERNELS_OPTION
@click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(), help="Catalog overlay folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@check_option("no option can run the job (each is INFEASIBLE)")
@guarded
def compare_command(model: str, options: tuple[str, ...], catalog_dirs: tuple[str, ...], as_json: bool,
                    check: bool, **kwargs: Any) -> None:
    """Compare concrete options (COUNTxGPU) for MODEL: speed, memory, cost, power; winner per row.

    An option that cannot run the job (no layout fits in memory, no price ...) is marked INFEASIBLE with
    the reason (JSON: `infeasible`, one entry per option, null when it can run).

    Exit status: 0 with the report, 1 with --check when no option can run the job, 2 for bad input.

    \b
    Examples:
      rigplan compare llama-2-7b 8xa100-80gb-sxm 4xh100-sxm --tokens 2B --method lora
      rigplan compare llama-3.1-8b 8xh100-sxm 8xh200-sxm 8xmi300x --tokens 100B
    """
    request = build_request(PlanRequest, model=model, catalog=list(catalog_dirs), **explicit_values(kwargs))
    result = compare(request, list(options))
    data = result.to_dict()
    if as_json:
        echo_json(data)
        exit_for_check(check, all(data["infeasible"]))
        return
    table = Table(title=f"{model}: {kwargs['tokens']} tokens", title_justify="left")
    table.add_column("")
    for option in result.options:
        table.add_column(option, justify="right")
    table.add_column("winner")
    for row in result.rows:
        table.add_row(row["label"], *[_cell(row["key"], v) for v in row["values"]], row["winner"] or "")
    console = stdout_console()
    console.print(table)
    for option, reason, unpriced, over in zip(data["options"], data["infeasible"], data["unpriced"],
                                              data["over_limit"], strict=True):
        if reason:
            console.print(f"[red]INFEASIBLE[/red] {option}: {reason}")
            continue
        if over:
            console.print(f"[yellow]MAY NOT FIT[/yellow] {option}: {OVER_LIMIT_REASON.removesuffix(': may not fit')}")
        if unpriced:
            console.print(f"[yellow]NO PRICE[/yellow] {option}: {UNPRICED_OFFER.source}: speed, memory and power "
                          "only (a catalog overlay can add one, --catalog)")
    exit_for_check(check, all(data["infeasible"]))
