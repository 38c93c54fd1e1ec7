"""The options that read a job from a framework's own file into the request: --megatron-args (a Megatron-LM launch
command, flow.megatron_args) and --torchtitan-config (a torchtitan job TOML, flow.torchtitan_config). What the file
sets fills only the options the user did not type; what the reading assumed or skipped goes into the request's
source_notes, shown with the assumptions."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from rigplan.errors import InvalidSpec

if TYPE_CHECKING:
    from rigplan.flow.megatron_args import ImportedArgs

MEGATRON_ARGS_OPTION = click.option(
    "--megatron-args", type=click.Path(dir_okay=False, allow_dash=True),
    help="A Megatron-LM launch command or its flags (a file, or - for standard input): its layout, batch, "
         "precision, recompute, MoE and overlap flags fill the options not typed here, with the megatron preset "
         "(docs/methodology/frameworks.md).")

TORCHTITAN_CONFIG_OPTION = click.option(
    "--torchtitan-config", type=click.Path(dir_okay=False, allow_dash=True),
    help="A torchtitan job TOML, the file of --job.config_file (a file, or - for standard input): its parallelism, "
         "batch, precision and float8/MX converters, activation checkpointing, compile and optimizer fill the "
         "options not typed here, with the torchtitan preset (docs/methodology/frameworks.md).")

def _megatron(text: str, source: str, ctx: click.Context) -> ImportedArgs:
    from rigplan.flow.megatron_args import read_megatron_args

    return read_megatron_args(text, source)


def _torchtitan(text: str, source: str, ctx: click.Context) -> ImportedArgs:
    from rigplan.flow.torchtitan_config import read_torchtitan_config

    return read_torchtitan_config(text, source, gpus=ctx.params.get("gpus"), dp=ctx.params.get("dp"),
                                  model=ctx.params.get("model"))


READERS: dict[str, tuple[str, Callable[[str, str, click.Context], ImportedArgs]]] = {
    "megatron_args": ("--megatron-args", _megatron), "torchtitan_config": ("--torchtitan-config", _torchtitan)}
"""Option name -> (its flag, the reader of the file's text)."""


def with_job_file(values: dict[str, Any]) -> dict[str, Any]:
    """values with the fields of --megatron-args or --torchtitan-config where the user typed no option of that name;
    the reading's notes go into the request's source_notes. Both given: InvalidSpec."""
    paths = {name: values.pop(name, None) for name in READERS}
    given = [name for name, path in paths.items() if path]
    if not given:
        return values
    if len(given) > 1:
        raise InvalidSpec("--megatron-args and --torchtitan-config both describe the job; give one of them")
    flag, read = READERS[given[0]]
    path = paths[given[0]]
    from rigplan.files import read_text

    text = sys.stdin.read() if path == "-" else read_text(path, flag)
    ctx = click.get_current_context()
    imported = read(text, flag if path == "-" else f"{flag} {path}", ctx)
    typed = {name for name in ctx.params
             if ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT, None)}
    fields, notes = imported.merged_into(typed, set(ctx.params), flag)
    values.update(fields)
    values["source_notes"] = notes
    return values
