"""Options a user typed that the command would take as not given: an empty value, or a LoRA setting without LoRA.

Both used to be dropped without a word (a script with an unset shell variable passed --stage-layers '' and got the
default split; --lora-rank 64 on a full fine-tune changed nothing). `refuse_inert_options` runs before each command
(cli.common.guarded) and turns them into one line and exit status 2."""

from __future__ import annotations

import click

from rigplan.errors import InvalidSpec

PEFT_ONLY_OPTIONS = {"lora_rank": ("lora", "qlora"), "lora_targets": ("lora", "qlora"), "single_quant": ("qlora",)}
"""Options that mean something only under some --method values, by parameter name."""


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
    (options that take several values included), or a PEFT-only option (PEFT_ONLY_OPTIONS) with a --method it
    does not apply to."""
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
        methods = PEFT_ONLY_OPTIONS.get(param.name or "")
        if methods and method not in methods and _typed(ctx, param.name or ""):
            raise InvalidSpec(f"{_flag(param)} applies only with --method {'/'.join(methods)}, and --method is "
                              f"{method}; add --method {methods[0]} or drop {_flag(param)}")
