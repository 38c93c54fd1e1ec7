"""The `rigplan` command group."""

from __future__ import annotations

import sys

import click

from rigplan.cli.catalog import gpus_group, models_group
from rigplan.cli.compare import compare_command
from rigplan.cli.estimate import estimate_command
from rigplan.cli.lint import lint_command
from rigplan.cli.memory import memory_command
from rigplan.cli.plan import plan_command
from rigplan.cli.serve import serve_command
from rigplan.cli.servers import servers_group
from rigplan.cli.tco import tco_command
from rigplan.cli.validate import validate_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="rigplan")
def cli() -> None:
    """rigplan: plan GPUs for LLM training - memory, speed, time, cost - from sourced hardware facts."""


cli.add_command(memory_command)
cli.add_command(estimate_command)
cli.add_command(plan_command)
cli.add_command(compare_command)
cli.add_command(tco_command)
cli.add_command(servers_group)
cli.add_command(lint_command)
cli.add_command(serve_command)
cli.add_command(validate_command)
cli.add_command(models_group)
cli.add_command(gpus_group)


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
