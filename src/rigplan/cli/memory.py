"""`rigplan memory`: per-GPU training memory."""

from __future__ import annotations

from typing import Any

import click

from rigplan import api
from rigplan.cli.common import (
    build_request,
    check_option,
    echo_json,
    exit_for_check,
    guarded,
    job_options,
    job_values,
    model_argument,
    model_options,
)
from rigplan.report.text import render_memory


@click.command("memory")
@model_argument
@model_options
@job_options
@click.option("--find-max", is_flag=True, help="Also search the largest micro-batch and the longest sequence that fit.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@check_option("the job does not fit in GPU memory")
@guarded
def memory_command(model: str | None, as_json: bool, check: bool, **kwargs: Any) -> None:
    """Per-GPU peak memory of training MODEL, by part, and whether it fits.

    MODEL is a catalog id (rigplan models), a Hugging Face config.json or its folder, a size such
    as 7b, or left out when shape flags (--layers --hidden --heads --vocab ...) are given. A catalog
    id wins over a folder of the same name; write ./NAME to read the folder.

    Exit status: 0 with the report (DOES NOT FIT is a result, not an error), 1 with --check when the
    job does not fit, 2 for bad input.

    \b
    Examples:
      rigplan memory llama-3.1-8b --gpu h100-sxm
      rigplan memory llama-3.1-70b --gpus 64 --tp 8 --pp 2 --zero 1 --recompute selective
      rigplan memory llama-3.1-8b --gpu rtx-4090 --method qlora --seq 2048 --find-max
    """
    request = build_request("MemoryRequest", model=model, **job_values(kwargs))
    result = api.memory(request)
    data = result.to_dict()
    if as_json:
        echo_json(data)
    else:
        render_memory(data)
    exit_for_check(check, not data["fits"])
