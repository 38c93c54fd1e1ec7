"""Options a user typed that the command would take as not given: an empty value, or a LoRA setting without LoRA.

Both used to be dropped without a word (a script with an unset shell variable passed --stage-layers '' and got the
default split; --lora-rank 64 on a full fine-tune changed nothing). `refuse_inert_options` runs before each command
(cli.common.guarded) and turns them into one line and exit status 2."""

from __future__ import annotations

import click

from rigplan.errors import InvalidSpec
from rigplan.flow.fields import peft_only_problem

OPTION_FIELDS = {"single_quant": "qlora_double_quant"}
"""Options whose parameter name is not the request field they set (--no-double-quant)."""


def _typed(ctx: click.Context, name: str) -> bool:
    """Whether the user gave the parameter `name` (on the command line or through its environment variable)."""
    source = ctx.get_parameter_source(name)
    return source in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)


def _flag(param: click.Parameter) -> str:
    """The option's longest spelling, as the help shows it (--lora-rank)."""
    names = [*param.opts, *param.secondary_opts]
    return max(names, key=len) if names else str(param.name)


def refuse_inert_options(ctx: click.Context) -> None:
    """InvalidSpec for the first typed option whose value the command would ignore: an empty or blank text value
    (options that take several values included), or a PEFT-only option (flow.fields.PEFT_ONLY_FIELDS) with a
    --method it does not apply to."""
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name is None or not _typed(ctx, param.name):
            continue
        value = ctx.params.get(param.name)
        values = value if isinstance(value, tuple | list) else (value,)
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise InvalidSpec(f"{_flag(param)} is empty; give it a value or leave the option out")
    method = ctx.params.get("method")
    if not isinstance(method, str):
        return
    for param in ctx.command.params:
        name = param.name or ""
        problem = peft_only_problem(method, OPTION_FIELDS.get(name, name), _flag(param))
        if problem and _typed(ctx, name):
            raise InvalidSpec(problem)
