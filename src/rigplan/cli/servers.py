"""`rigplan servers`: list the server builds, or `rigplan servers show ID` for one with its sources."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from rigplan.cli.common import choice, echo_json, guarded
from rigplan.report.text import stdout_console
from rigplan.servers.listing import CATEGORIES, server_records, server_row, server_show
from rigplan.servers.schema import ServerRecord
from rigplan.units import format_number


def _row(record: ServerRecord, summary: dict[str, Any]) -> list[str]:
    psu = record.psu
    nodes = f"{record.nodes} nodes x " if record.nodes > 1 else ""
    cpu = record.cpu.model.removeprefix("AMD ").removeprefix("Intel ").removeprefix("Ryzen ")
    return [
        record.id, record.category, f"{nodes}{record.gpus.count}x {record.gpus.id}", f"{record.cpu.count}x {cpu}",
        f"{format_number(record.memory.ram_gib)}G" if record.memory else "-",
        f"{psu.count}x{format_number(psu.watts_each)}W {psu.redundancy}" if psu else "-",
        f"{summary['load_w_per_node'] / 1000:.1f}" + ("" if summary["load_source"] == "vendor maximum" else "*"),
    ]


@click.group("servers", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--category", type=choice(CATEGORIES), help="Only builds of this category.")
@click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(),
              help="Folder with servers/ (and gpus/) overlays (repeatable; also RIGPLAN_CATALOG).")
@click.pass_context
@guarded
def servers_group(ctx: click.Context, as_json: bool, category: str | None, catalog_dirs: tuple[str, ...]) -> None:
    """List server builds: the article's three as stated, their corrections, current standard builds.

    `rigplan servers show ID` prints one build with its sources; `rigplan lint ID` checks it.
    """
    if ctx.invoked_subcommand:
        ctx.obj = catalog_dirs
        return
    records = server_records(catalog_dirs, category)
    rows = {r.id: server_row(r, catalog_dirs) for r in records}
    if as_json:
        echo_json({"servers": list(rows.values())})
        return
    table = Table(title="Server builds (kW = max per node; * = rigplan estimate)")
    for col in ("id", "category", "GPUs", "CPUs", "RAM", "PSUs", "kW"):
        table.add_column(col, justify="right" if col in ("kW", "RAM") else "left", no_wrap=col in ("id", "kW"))
    for r in records:
        table.add_row(*(escape(c) for c in _row(r, rows[r.id])))
    stdout_console().print(table)


@servers_group.command("show")
@click.argument("server_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
@guarded
def servers_show(catalog_dirs: tuple[str, ...] | None, server_id: str, as_json: bool) -> None:
    """Show one server build: parts, power, price, claims, notes and sources."""
    data = server_show(server_id, catalog_dirs or ())
    if as_json:
        echo_json(data)
        return
    _print(data)


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items() if v not in (None, [], ""))
    if isinstance(value, list):
        return "[" + "; ".join(_flat(v) for v in value) + "]"
    return str(value)


def _print(data: dict[str, Any]) -> None:
    console = stdout_console()
    for key, value in data.items():
        if value in (None, [], ""):
            continue
        if key == "sources":
            console.print("sources:")
            for src in value:
                where = src.get("url") or src.get("locator")
                console.print(escape(f"  - {src['title']}" + (f" <{where}>" if where else "")))
        elif isinstance(value, list):
            console.print(f"{key}:")
            for item in value:
                console.print(escape(f"  - {_flat(item)}"))
        elif isinstance(value, dict):
            console.print(escape(f"{key}: {_flat(value)}"))
        else:
            console.print(escape(f"{key}: {value}"))
