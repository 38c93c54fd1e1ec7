"""`rigplan export`: a job and layout written as a framework's own launch configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rigplan.cli.common import (
    build_request,
    choice,
    echo_json,
    fail,
    guarded,
    job_options_without_preset,
    job_values,
    model_argument,
    model_options,
)
from rigplan.export import FRAMEWORKS, Exported, export
from rigplan.files import write_text
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup


def write_export(exported: Exported, output_dir: str | None, force: bool) -> list[str]:
    """Write the files into output_dir (refusing to overwrite unless forced); the paths written."""
    if output_dir is None:
        return []
    folder = Path(output_dir)
    targets = [folder / name for name in exported.files]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not force:
        fail(f"{', '.join(existing)} exists; pass --force to overwrite or choose another --output-dir")
    folder.mkdir(parents=True, exist_ok=True)
    for target, text in zip(targets, exported.files.values(), strict=True):
        write_text(target, text, "--output-dir")
    return [str(t) for t in targets]


def show_export(exported: Exported, written: list[str], as_json: bool) -> None:
    if as_json:
        echo_json({**exported.to_dict(), "written": written})
        return
    for name, text in exported.files.items():
        if not written:
            click.echo(f"# {name}\n{text}")
    click.echo(f"# launch\n{exported.command}")
    for note in exported.notes:
        click.echo(f"# note: {note}")
    for path in written:
        click.echo(f"wrote {path}")


framework_option = click.option("--framework", "framework", type=choice(FRAMEWORKS), required=True,
                                help="megatron (Megatron-LM/NeMo args), torchtitan (job TOML), deepspeed (JSON), "
                                     "accelerate (FSDP/DDP YAML), hf-trainer (TrainingArguments JSON).")


@click.command("export")
@model_argument
@model_options
@job_options_without_preset
@framework_option
@click.option("--output-dir", type=click.Path(file_okay=False), help="Write the files here (default: print them).")
@click.option("--force", is_flag=True, help="Overwrite existing files in --output-dir.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (files, command, notes, values).")
@guarded
def export_command(model: str | None, framework: str, output_dir: str | None, force: bool, as_json: bool,
                   **kwargs: Any) -> None:
    """Write MODEL's job and layout as a framework's configuration and launch line.

    Takes the options of `rigplan estimate`. A layout the framework cannot express (LoRA in
    Megatron-LM, ZeRO-1 in FSDP, tensor parallelism in DeepSpeed's JSON, ...) is an error naming the
    missing feature, never a different layout.

    \b
    Examples:
      rigplan export llama-3.1-70b --gpus 64 --tp 8 --pp 2 --zero 1 --recompute selective --framework megatron
      rigplan export llama-3.1-8b --gpus 16 --fsdp --recompute op --framework torchtitan --output-dir job/
      rigplan export llama-3.1-8b --gpus 8 --zero 2 --offload optimizer --framework deepspeed
    """
    request = build_request(EstimateRequest, model=model, **job_values(kwargs))
    exported = export(build_setup(request), framework)
    show_export(exported, write_export(exported, output_dir, force), as_json)
