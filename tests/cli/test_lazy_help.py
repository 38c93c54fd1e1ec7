"""`rigplan --help` lists every command without importing any of them, with each command's own summary."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys

import click
import pytest

from rigplan.cli.main import COMMANDS, SUMMARIES, LazyGroup, cli


@pytest.mark.parametrize("name", list(COMMANDS))
def test_summary_is_the_first_paragraph_of_the_command_help(name: str) -> None:
    module, attr = COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    first = inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")
    assert SUMMARIES[name] == first
    assert not command.short_help and not command.hidden and not command.deprecated


def test_help_lists_the_same_rows_as_an_eager_group() -> None:
    lazy = cli.get_help(click.Context(cli, info_name="rigplan"))

    class Eager(LazyGroup):
        format_commands = click.Group.format_commands

    eager_group = Eager(name=cli.name, help=cli.help, params=cli.params, context_settings=cli.context_settings)
    eager = eager_group.get_help(click.Context(eager_group, info_name="rigplan"))
    commands = lazy.split("Commands:")[1]
    assert commands == eager.split("Commands:")[1]
    assert all(f"  {name} " in commands for name in COMMANDS)


def test_help_imports_no_command_module() -> None:
    code = ("import sys\nfrom rigplan.cli.main import COMMANDS, main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted({m for m, _ in COMMANDS.values()} & set(sys.modules)), file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, env=dict(os.environ),
                         check=True)
    assert "Commands:" in run.stdout
    assert run.stderr.strip() == "[]"
