"""`rigplan lint BUILD.yaml | BUILD_ID [--for MODEL ...]`: check a server build; exit 1 when there are errors."""

from __future__ import annotations

import sys

import click
from rich.markup import escape
from rich.table import Table

from rigplan.bounds import check
from rigplan.cli.common import choice, echo_json, fail, guarded
from rigplan.lint import LintResult, Workload, lint_build
from rigplan.report.text import stdout_console
from rigplan.servers.load import resolve_build
from rigplan.units import parse_count

SEVERITY_STYLE = {"error": "[bold red]error[/bold red]", "warning": "[yellow]warning[/yellow]",
                  "info": "[dim]info[/dim]"}


@click.command("lint")
@click.argument("build")
@click.option("--for", "for_model", metavar="MODEL",
              help="Check a workload on this build: catalog model id, config.json, or a size like 70b. "
                   "Without it, the build's own claims are checked.")
@click.option("--method", type=choice(["full", "lora", "qlora"]), help="Training method for --for [full].")
@click.option("--tokens", help="Training tokens for --for, e.g. 2T or 300B: adds the time to train.")
@click.option("--seq", type=int, help="Sequence length for --for (default: min(4096, model context)).")
@click.option("--quiet", "-q", is_flag=True, help="Show errors and warnings only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (findings: code, severity, message, values).")
@click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(),
              help="Folder with servers/, gpus/ and models/ overlays (repeatable; also RIGPLAN_CATALOG).")
@guarded
def lint_command(build: str, for_model: str | None, method: str | None, tokens: str | None, seq: int | None,
                 quiet: bool, as_json: bool, catalog_dirs: tuple[str, ...]) -> None:
    """Check a server build: GPU link, CPU/board, PCIe lanes, PSUs and redundancy, host RAM, network,
    storage, cooling, rack power, budget, and whether a workload fits and how long it takes.

    BUILD is a build id (rigplan servers) or a BUILD.yaml file. Exit status 1 when there are errors.
    """
    if for_model is None and (method or tokens or seq):
        fail("--method, --tokens and --seq describe the --for workload; give --for MODEL")
    if seq is not None:
        check("seq", seq)
    workload = None
    if for_model is not None:
        if tokens is not None:
            parse_count(tokens, "--tokens")
        method = method or "full"
        workload = Workload(text=f"--for {for_model} --method {method}" + (f" --tokens {tokens}" if tokens else ""),
                            model=for_model, method=method, tokens=tokens, seq=seq, origin="--for")
    record = resolve_build(build, catalog_dirs)
    result = lint_build(record, workload=workload, overlays=catalog_dirs)
    if as_json:
        echo_json(result.to_dict())
    else:
        _print(result, quiet)
    if result.has_errors:
        sys.exit(1)


def _print(result: LintResult, quiet: bool) -> None:
    console = stdout_console()
    b = result.build
    table = Table(title=escape(f"rigplan lint {b['id']}: {b['name']}"), show_lines=False, expand=False)
    table.add_column("severity", no_wrap=True)
    table.add_column("code", no_wrap=True)
    table.add_column("finding", overflow="fold")
    for f in result.findings:
        if quiet and f.severity == "info":
            continue
        table.add_row(SEVERITY_STYLE[f.severity], f.code, escape(f.message))
    console.print(table)
    counts = f"{result.count('error')} error(s), {result.count('warning')} warning(s), {result.count('info')} info"
    verdict = "[bold red]FAIL[/bold red]" if result.has_errors else "[green]OK[/green]"
    console.print(f"{verdict}: {counts}")
