"""The `rigplan` command group."""

from __future__ import annotations

import importlib
import sys

import click

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


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(name for name in super().list_commands(ctx) if name not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="rigplan")
def cli() -> None:
    """rigplan: plan GPUs for LLM training - memory, speed, time, cost - from sourced hardware facts."""


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("rigplan: aborted", err=True)
        sys.exit(1)
    except click.ClickException as err:
        hint = ""
        if isinstance(err, click.UsageError) and err.ctx is not None:
            hint = f" (see '{err.ctx.command_path} --help')"
        click.echo(f"rigplan: error: {err.format_message()}{hint}", err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    main()
