"""The `rigplan` command group."""

from __future__ import annotations

import importlib
import os
import re
import sys

import click

from rigplan.cli.language import error_line, language_option
from rigplan.i18n import translate

_NOT_UTF8 = re.compile("[\udc80-\udcff]")
"""What os.fsdecode makes of a byte that is not UTF-8 (surrogateescape)."""

COMMANDS: dict[str, tuple[str, str]] = {
    "memory": ("rigplan.cli.memory", "memory_command"),
    "estimate": ("rigplan.cli.estimate", "estimate_command"),
    "plan": ("rigplan.cli.plan", "plan_command"),
    "compare": ("rigplan.cli.compare", "compare_command"),
    "tco": ("rigplan.cli.tco", "tco_command"),
    "servers": ("rigplan.cli.servers", "servers_group"),
    "lint": ("rigplan.cli.lint", "lint_command"),
    "serve": ("rigplan.cli.serve", "serve_command"),
    "validate": ("rigplan.cli.validate", "validate_command"),
    "models": ("rigplan.cli.catalog", "models_group"),
    "gpus": ("rigplan.cli.catalog", "gpus_group"),
    "probe": ("rigplan.cli.probe", "probe_command"),
    "check": ("rigplan.cli.check", "check_command"),
    "calibrate": ("rigplan.cli.calibrate", "calibrate_command"),
    "export": ("rigplan.cli.export", "export_command"),
}
"""Command name -> (module, attribute). A command's module is imported only when that command runs (or
`--help` lists it), so `rigplan memory` does not pay for numpy, the plan search or the web app."""


SUMMARIES: dict[str, str] = {
    "memory": "Per-GPU peak memory of training MODEL, by part, and whether it fits.",
    "estimate": "Step time, tokens/s, MFU and time-to-train of MODEL on a cluster and parallel layout.",
    "plan": "Which GPU, how many, which layout, rent or buy: ranked, and the time-vs-cost Pareto front.",
    "compare": "Compare concrete options (COUNTxGPU) for MODEL: speed, memory, cost, power; winner per row.",
    "tco": "Cloud rental vs owning GPUs: totals for a job, owned cost per useful GPU-hour, break-even.",
    "servers": "List server builds: the article's three as stated, their corrections, current standard builds.",
    "lint": "Check a server build: GPU link, CPU/board, PCIe lanes, PSUs and redundancy, host RAM, network, "
            "storage, cooling, rack power, budget, and whether a workload fits and how long it takes.",
    "serve": "Serve the rigplan page and JSON API (memory, estimate, plan, compare, tco, catalog).",
    "validate": "Compare rigplan's predictions with published measurements.",
    "models": "List the model catalog (or `rigplan models show ID`).",
    "gpus": "List the GPU catalog (dense peak figures) or `rigplan gpus show ID`.",
    "probe": "Measure this machine with torch and write a calibration file for --calibration.",
    "check": "Train a small model here for a few steps and compare memory and step time with rigplan's estimate.",
    "calibrate": "Fit rigplan's efficiency and overhead parameters to your measured run(s) on one GPU type.",
    "export": "Write MODEL's job and layout as a framework's configuration and launch line.",
}
"""The first paragraph of each command's help, so that `rigplan --help` lists the commands without
importing them (tests/cli/test_lazy_help.py holds it equal to each command's own help)."""


MEASURING = frozenset({"probe", "check"})
"""Commands that time this machine's kernels (torch): they keep the BLAS threads the user's environment gives."""


def one_blas_thread(command: str) -> None:
    """Start numpy's OpenBLAS with one thread unless the user chose a count: rigplan's estimators are element-wise
    numpy (no BLAS call), and OpenBLAS starting a thread per core at import is a third of numpy's import time
    (CPU time of `python -c 'import numpy'` on a 2-core machine: 111 ms, 73 ms with OPENBLAS_NUM_THREADS=1;
    benchmarks/cli_startup.py). Set before the command's module imports numpy."""
    if command not in MEASURING and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(name for name in super().list_commands(ctx) if name not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            one_blas_thread(cmd_name)
            module, attr = COMMANDS[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `rigplan --help`, from SUMMARIES (no command module imported)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = click.Command(name, help=SUMMARIES[name]) if name in SUMMARIES else self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="rigplan")
@language_option
def cli() -> None:
    """rigplan: plan GPUs for LLM training - memory, speed, time, cost - from sourced hardware facts."""


def main() -> None:
    undecodable = next((arg for arg in sys.argv[1:] if _NOT_UTF8.search(arg)), None)
    if undecodable is not None:
        # Python keeps a command-line argument's non-UTF-8 bytes as lone surrogates, which no message, report or
        # JSON answer can encode: refused here, before any command reads one.
        click.echo(error_line(f"the argument {undecodable!a} holds bytes that are not UTF-8 text; give "
                              "names and values in UTF-8 (rename a file, or link to it under a UTF-8 name)",
                              _argv_language()), err=True)
        sys.exit(2)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("rigplan: aborted", err=True)
        sys.exit(1)
    except click.ClickException as err:
        lang = _argv_language()
        hint = ""
        if isinstance(err, click.UsageError) and err.ctx is not None:
            see = f"see '{err.ctx.command_path} --help'"
            hint = f" ({see})" if lang == "en" else f"（{translate(see, lang)}）"
        # click lists a missing option's choices one per line ("Choose from:\n\tmegatron,\n\t..."): one line
        message = " ".join(part.strip() for part in err.format_message().splitlines() if part.strip())
        click.echo(error_line(message, lang) + hint, err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)


def _argv_language() -> str:
    """The language asked for on the command line, for errors that click raises before or after a command's
    context (which sets the language while it runs)."""
    from rigplan import i18n

    args = sys.argv[1:]
    flag = next((a.split("=", 1)[1] for a in args if a.startswith("--lang=")), None)
    if flag is None and "--lang" in args and args.index("--lang") + 1 < len(args):
        flag = args[args.index("--lang") + 1]
    return i18n.resolve_language(flag)


if __name__ == "__main__":
    main()
