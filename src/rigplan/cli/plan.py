"""`rigplan plan`: recommend GPUs, cluster size, layout and purchase mode."""

from __future__ import annotations

import re
import sys
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rigplan.cli.common import (
    KERNELS_OPTION,
    OPTIMIZER_OPTION,
    build_request,
    check_option,
    check_output_path,
    choice,
    echo_json,
    exit_for_check,
    explicit_values,
    fail,
    guarded,
    model_argument,
    model_options,
    recipe_options,
)
from rigplan.cli.export import show_export, write_export
from rigplan.cli.language import tr
from rigplan.cost.money import format_cny, format_usd
from rigplan.export import FRAMEWORKS, Exported, Unsupported, export
from rigplan.files import write_text
from rigplan.flow.plan import candidate_request, plan
from rigplan.flow.request import PlanRequest
from rigplan.flow.resolve import build_setup
from rigplan.report.markdown import plan_markdown
from rigplan.report.plots import plan_plot
from rigplan.report.text import first_option_accuracy, layout_text, purchase_text, stdout_console
from rigplan.units import format_bytes, format_duration


def _render(data: dict[str, Any], currency: str) -> None:
    console = stdout_console()
    if data["infeasible"]:
        console.print(f"[red]INFEASIBLE[/red]: {data['infeasible']}")

    def money(usd: float | None) -> str:
        if usd is None:  # a part rigplan has no price for (--unpriced, --cluster)
            return "unpriced"
        return format_cny(usd * data["cny_per_usd"]) if currency == "cny" else format_usd(usd)

    for title, rows in (("Recommended (within the limits, cheapest first)", data["ranked"]),
                        ("Pareto front: time vs cost", data["pareto"])):
        table = Table(title=title, title_justify="left")
        table.add_column("GPUs", overflow="fold")
        for col in ("purchase", "layout", "time", "cost", "MFU", "mem/GPU", "why"):
            table.add_column(col, justify="right" if col in ("time", "cost", "MFU", "mem/GPU") else "left")
        for c in rows:
            layout = layout_text(c["layout"])
            table.add_row(f"{c['gpus']} x {c['gpu']}", purchase_text(c["mode"]), layout,
                          format_duration(c["wall_time_s"]),
                          money(c["cost_usd"]), f"{100 * (c['mfu'] or 0):.0f}%",
                          format_bytes(c["memory"]["total_bytes"])
                          + (" (over, within uncertainty)" if c["over_limit"]
                             else " (borderline)" if c["memory"]["borderline"] else ""),
                          "; ".join(c["reasons"]))
        console.print(table)
    stats = data["stats"]
    reasons = ", ".join(f"{k} {v:,}" for k, v in stats["infeasible_by_reason"].items())
    console.print(f"{stats['evaluated']:,} layouts evaluated, {stats['feasible']:,} fit in memory, "
                  f"{stats['eligible']} priced options within the limits ({reasons}); {stats['elapsed_s']:.2f} s")
    if stats.get("kept_over_limit"):
        console.print(f"{stats['kept_over_limit']} layouts kept that need more memory than the GPU has by less than "
                      "rigplan's memory uncertainty (marked; ranked after the options that fit)")
    if data["ranked"]:
        console.print(f"reproduce the first: [bold]{data['ranked'][0]['estimate_command']}[/bold]")
        for line, warning in first_option_accuracy(data):
            console.print(f"[yellow]{line}[/yellow]" if warning else line)
    for note in data["assumptions"]:
        console.print(f"[dim]assumed: {note}[/dim]")


def parse_cluster(text: str) -> tuple[int, int, str | None]:
    """'6x8' -> (6, 8, None); '6x8:h100-sxm' or '6x8 h100-sxm' -> (6, 8, 'h100-sxm')."""
    shape, colon, gpu = text.strip().replace(" ", ":", 1).partition(":")
    match = re.fullmatch(r"([0-9]+)x([0-9]+)", shape.lower())
    if not match or int(match[1]) < 1 or int(match[2]) < 1 or (colon and not gpu.strip()):
        fail(f"--cluster '{text}' is not NODESxGPUS[:GPU], e.g. 6x8 or 6x8:h100-sxm")
        raise AssertionError("unreachable")
    return int(match[1]), int(match[2]), gpu.strip() or None


@click.command("plan")
@model_argument
@model_options
@click.option("--tokens", required=True, help="Tokens to train on, e.g. 2T or 300B.")
@click.option("--budget", help="Most you can spend: 500k, 3M in --currency (USD by default); ¥ or 万 / 亿 mean "
                                "yuan (2000万, ¥5M), $ dollars.")
@click.option("--deadline", help="Longest acceptable training time, e.g. 30d, 12w.")
@click.option("--gpus-max", type=int, default=4096, show_default=True, help="Largest cluster to consider.")
@click.option("--gpus-min", type=int, default=1, show_default=True, help="Smallest cluster to consider.")
@click.option("--gpus-exact", "gpu_counts", multiple=True, type=int,
              help="Exact GPU count to plan for (repeatable) instead of every node count up to --gpus-max.")
@click.option("--cluster", help="The cluster you have: NODESxGPUS[:GPU], e.g. 6x8 or 6x8:h100-sxm; plans for "
                                "exactly that many GPUs in nodes of that size, on that cluster (--both or --cloud to "
                                "compare renting the same), and prices owning them as this job's share "
                                "(--onprem-basis amortized) unless you give --onprem-basis; a part rigplan has no "
                                "price for is still planned, unpriced.")
@click.option("--unpriced", is_flag=True,
              help="Also keep GPU types rigplan has no price for (no cloud offer, no purchase price), with their "
                   "layout, time and memory and no cost, ranked after every priced option (--cluster implies it).")
@click.option("--interruptible", is_flag=True,
              help="Also price spot, community and serverless offers for large multi-week jobs.")
@click.option("--server", help="Server build (rigplan servers) to plan on: its GPU, price and power.")
@click.option("--gpu", "gpu_ids", multiple=True, help="GPU id to consider (repeatable); default: whole catalog.")
@click.option("--cloud", "cloud_only", is_flag=True, help="Only rent.")
@click.option("--onprem", "onprem_only", is_flag=True, help="Only buy.")
@click.option("--both", "both_modes", is_flag=True, help="Rent or buy (the default).")
@click.option("--onprem-basis", type=choice(["purchase", "amortized"]), default="purchase", show_default=True,
              help="purchase: buying counts in full; amortized: the job's share of a busy owned cluster.")
@recipe_options
@OPTIMIZER_OPTION
@KERNELS_OPTION
@click.option("--currency", type=choice(["usd", "cny"]), default="usd", show_default=True)
@click.option("--fx", "fx_cny_per_usd", type=float, help="CNY per USD (default 7.1, 2026-12).")
@click.option("--top", type=int, default=10, show_default=True, help="Options in the ranked list.")
@click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(), help="Catalog overlay folder.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Write the time-vs-cost plot (.png/.svg).")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write a Markdown report.")
@click.option("--export", "export_framework", type=choice(FRAMEWORKS),
              help="Also write the best candidate as this framework's configuration (see rigplan export).")
@click.option("--export-dir", type=click.Path(file_okay=False), help="Folder for --export files (default: print).")
@click.option("--force", is_flag=True, help="Overwrite existing --plot/--markdown/--export files.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@check_option("no option meets the budget and the deadline (infeasible)")
@guarded
def plan_command(model: str | None, gpu_ids: tuple[str, ...], catalog_dirs: tuple[str, ...], plot_path: str | None,
                 markdown_path: str | None, export_framework: str | None, export_dir: str | None, force: bool,
                 as_json: bool, check: bool, cloud_only: bool, onprem_only: bool, both_modes: bool,
                 **kwargs: Any) -> None:
    """Which GPU, how many, which layout, rent or buy: ranked, and the time-vs-cost Pareto front.

    Searches GPU type x GPU count x layout x purchase mode, drops what does not fit (counting why),
    prices the rest and keeps what meets --budget and --deadline.

    Exit status: 0 with the report, 1 with --check when no option meets the budget and the deadline,
    2 for bad input.

    \b
    Examples:
      rigplan plan llama-3.1-70b --tokens 1T --deadline 60d --budget 3M
      rigplan plan gpt-3-175b --tokens 300B --gpu a100-80gb-sxm --gpu h100-sxm --cloud --plot plan.png
      rigplan plan qwen2.5-7b --tokens 50B --method lora --budget 20万 --currency cny --markdown plan.md
    """
    modes = [flag for flag, given in (("--cloud", cloud_only), ("--onprem", onprem_only), ("--both", both_modes))
             if given]
    if len(modes) > 1:
        fail(f"give one of --cloud, --onprem or --both, not {' and '.join(modes)}")
    mode = "cloud" if cloud_only else "onprem" if onprem_only else "both"
    for path in (plot_path, markdown_path):
        if path:
            check_output_path(path, "--plot" if path == plot_path else "--markdown", force)
    cluster = kwargs.pop("cluster", None)
    counts = list(kwargs.pop("gpu_counts", ()) or ())
    gpus = list(gpu_ids)
    if cluster:
        nodes, per_node, cluster_gpu = parse_cluster(cluster)
        counts, kwargs["gpus_per_node"] = [nodes * per_node], per_node
        if cluster_gpu:
            if gpus and gpus != [cluster_gpu]:
                fail(f"--cluster {cluster} names its GPU and --gpu {' '.join(gpus)} another; give one (--cluster "
                     f"{nodes}x{per_node} --gpu ID plans that GPU in the cluster's shape)")
            gpus = [cluster_gpu]
        if not (cloud_only or both_modes):
            mode = "onprem"  # the cluster is had: plan on it (--both or --cloud to compare renting)
        ctx = click.get_current_context()
        if ctx.get_parameter_source("onprem_basis") is click.core.ParameterSource.DEFAULT:
            kwargs["onprem_basis"] = "amortized"  # the cluster is had, not bought for this job
        kwargs["unpriced"] = True  # the cluster is had: its layout and time matter whether or not rigplan can price it
    request = build_request(PlanRequest, model=model, gpu=gpus, catalog=list(catalog_dirs), mode=mode,
                            gpu_counts=counts,
                            **explicit_values(kwargs))
    show_progress = not as_json and sys.stderr.isatty()
    if show_progress:
        with Progress(TextColumn("searching GPU types"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), transient=True, console=Console(stderr=True)) as bar:
            task = bar.add_task("plan", total=None)
            result = plan(request, progress=lambda done, total: bar.update(task, completed=done, total=total))
    else:
        result = plan(request)
    data = result.to_dict()
    exported, export_note = None, None
    if export_framework:
        if not result.ranked:
            fail("--export: no candidate meets the limits, so there is nothing to export")
        exported, export_note = _export_best(request, result.ranked, export_framework)
        data["export"] = {**exported.to_dict(), "written": write_export(exported, export_dir, force),
                          "note": export_note}
    if plot_path:
        plan_plot(data, data["candidates"], plot_path)
    if markdown_path:
        write_text(markdown_path, plan_markdown(data), "--markdown")
    if as_json:
        echo_json(data)
    else:
        _render(data, request.currency)
        for path in (plot_path, markdown_path):
            if path:
                click.echo(f"wrote {path}")
        if exported is not None:
            click.echo("\n" + tr(export_note or f"best candidate as {export_framework}:"))
            show_export(exported, data["export"]["written"], as_json=False)
    exit_for_check(check, not data["stats"].get("eligible"))


def _export_best(request: PlanRequest, ranked: list[Any], framework: str) -> tuple[Exported, str | None]:
    """The best ranked candidate that `framework` can express, and a note when that is not the first (a ZeRO-2
    layout ranked first has no Megatron-LM form); one clear line when none can be written."""
    first_reason = ""
    for rank, candidate in enumerate(ranked, start=1):
        try:
            exported = export(build_setup(candidate_request(request, candidate)), framework)
        except Unsupported as err:
            first_reason = first_reason or str(err)
            continue
        if rank == 1:
            return exported, None
        return exported, (f"the best candidate cannot be written ({first_reason}); candidate {rank} as "
                          f"{framework}:")
    fail(f"--export: no ranked candidate can be written as {framework}; the best: {first_reason}")
