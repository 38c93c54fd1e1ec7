"""`rigplan models`, `rigplan gpus`: list and show catalog records."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from rigplan.api import describe_model
from rigplan.catalog.load import load_catalog
from rigplan.catalog.views import gpu_show, models_list
from rigplan.cli.common import echo_json, guarded
from rigplan.report.text import stdout_console
from rigplan.units import format_count, format_number


def _catalog_option(func: Any) -> Any:
    return click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(),
                        help="Folder with gpus/ and models/ overlays (repeatable).")(func)


@click.group("models", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_catalog_option
@click.pass_context
@guarded
def models_group(ctx: click.Context, as_json: bool, catalog_dirs: tuple[str, ...]) -> None:
    """List the model catalog (or `rigplan models show ID`)."""
    if ctx.invoked_subcommand:
        ctx.obj = catalog_dirs
        return
    rows = models_list(catalog_dirs)
    if as_json:
        echo_json({"models": rows})
        return
    table = Table(title="Models")
    table.add_column("id", overflow="fold")
    for col in ("params", "active", "layers", "hidden", "context", "family"):
        table.add_column(col, justify="left" if col == "family" else "right")
    for row in rows:
        table.add_row(row["id"], format_count(row["params_total"]), format_count(row["params_active"]),
                      str(row["layers"]), str(row["hidden"]), str(row["context_length"]), row["family"])
    stdout_console().print(table)


@models_group.command("show")
@click.argument("model_id", metavar="MODEL")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
@guarded
def models_show(catalog_dirs: tuple[str, ...], model_id: str, as_json: bool) -> None:
    """Show MODEL as rigplan reads it: a catalog record with its parameter counts and sources, or the
    architecture and counts a config.json (or a folder holding one), a hub name or a size like 70b resolves to.

    \b
    Examples:
      rigplan models show qwen3-30b-a3b
      rigplan models show ./my-moe/config.json --json
    """
    data = describe_model(model_id, tuple(catalog_dirs or ()))
    if as_json:
        echo_json(data)
        return
    _print_record(data)


@click.group("gpus", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_catalog_option
@click.pass_context
@guarded
def gpus_group(ctx: click.Context, as_json: bool, catalog_dirs: tuple[str, ...]) -> None:
    """List the GPU catalog (dense peak figures) or `rigplan gpus show ID`."""
    if ctx.invoked_subcommand:
        ctx.obj = catalog_dirs
        return
    catalog = load_catalog(catalog_dirs)
    records = list(catalog.gpus.values())
    if as_json:
        echo_json({"gpus": [r.model_dump(mode="json") for r in records]})
        return
    table = Table(title="GPUs (dense peak TFLOP/s; sparsity figures are 2x and not used)")
    table.add_column("id", overflow="fold")
    for col in ("memory", "kind", "HBM/GDDR GB/s", "bf16", "fp8", "TDP W", "link", "GB/s"):
        table.add_column(col, justify="left" if col in ("kind", "link") else "right")
    for r in records:
        fp8, bf16 = r.dense_tflops.fp8, r.dense_tflops.bf16
        half = format_number(bf16) if bf16 else f"- (fp16 {format_number(r.dense_tflops.half)})"
        table.add_row(r.id, f"{format_number(r.memory_gib)} GiB", r.memory_kind,
                      format_number(r.memory_bandwidth_gb_per_s), half, format_number(fp8) if fp8 else "-",
                      format_number(r.tdp_w) if r.tdp_w else "-", r.link.kind,
                      format_number(r.link.bandwidth_gb_per_s_bidirectional))
    stdout_console().print(table)


@gpus_group.command("show")
@click.argument("gpu_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
@guarded
def gpus_show(catalog_dirs: tuple[str, ...], gpu_id: str, as_json: bool) -> None:
    """Show one GPU record with its sources."""
    data = gpu_show(gpu_id, catalog_dirs or ())
    if as_json:
        echo_json(data)
        return
    _print_record(data)


UNPUBLISHED = frozenset({"tdp_w", "pcie_gen", "nic_gbit_per_s_per_gpu", "gpudirect_rdma"})
"""Fields a record must state, null where the vendor publishes no figure: shown as 'not published'."""


def _print_record(data: dict[str, Any]) -> None:
    console = stdout_console()
    for key, value in data.items():
        if value is None and key in UNPUBLISHED:
            console.print(f"{key}: not published")
            continue
        if key == "sources":
            console.print("sources:")
            for src in value:
                console.print(f"  - {src['title']}" + (f" <{src['url']}>" if src.get("url") else ""))
        elif isinstance(value, dict):
            inner = ", ".join(f"{k}={'not published' if v is None else v}" for k, v in value.items()
                              if v is not None or k in UNPUBLISHED)
            console.print(f"{key}: {inner}")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            console.print(f"{key}:")
            for item in value:
                console.print("  - " + ", ".join(f"{k}={v}" for k, v in item.items()))
        elif value not in (None, [], ""):
            console.print(f"{key}: {value}")
