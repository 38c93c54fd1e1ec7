"""`rigplan check`: train a small model here with torch and print it next to rigplan's estimate."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rigplan.calibration.file import CalibrationFile, load_calibration
from rigplan.cli.common import build_request, choice, echo_json, guarded, model_argument, model_options
from rigplan.errors import InvalidSpec
from rigplan.flow.request import MemoryRequest
from rigplan.flow.resolve import build_setup
from rigplan.measure.check import (
    calibration_here,
    check_group,
    comparison_rows,
    device_for,
    estimate_for,
    train_and_measure,
)
from rigplan.measure.probe import is_rank_zero, set_threads
from rigplan.report.text import stdout_console

DEFAULT_SHAPE = {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 4, "ffn": 688, "vocab": 2048}
"""The model `rigplan check` trains without MODEL or shape flags: a 4-layer Llama-style decoder (~3.7M
parameters), seconds per step on a CPU."""


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.3f} s"
    return f"{value / 2**20:.3f} MiB"


def render_rows(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("quantity", "measured", "rigplan", "error"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    for r in rows:
        error = "-" if r["error"] is None else f"{100 * r['error']:+.1f}%"
        table.add_row(r["quantity"], _fmt(r["measured"], r["unit"]), _fmt(r["estimated"], r["unit"]), error)
    return table


@click.command("check")
@model_argument
@model_options
@click.option("--method", type=choice(["full", "lora"]), default="full", show_default=True)
@click.option("--lora-rank", type=int, default=16, show_default=True, help="LoRA rank r.")
@click.option("--lora-targets", default="q,v", show_default=True,
              help="Comma list of q,k,v,o,gate,up,down,in_proj,out_proj or 'all'.")
@click.option("--seq", type=int, default=256, show_default=True, help="Sequence length in tokens.")
@click.option("--micro-batch", type=int, default=2, show_default=True, help="Sequences per micro-batch.")
@click.option("--accumulation", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Micro-batches per optimizer step (gradient accumulation).")
@click.option("--precision", type=choice(["fp32", "bf16-mixed", "bf16-true"]),
              help="fp32; bf16-true (bf16 weights and AdamW states); bf16-mixed (bf16 weights, fp32 masters and "
                   "states). Default: bf16-mixed for full, bf16-true for LoRA.")
@click.option("--recompute", type=choice(["none", "full"]), default="none", show_default=True,
              help="Recompute each block in backward (torch.utils.checkpoint).")
@click.option("--fsdp", is_flag=True, help="FSDP2 full sharding over the torchrun processes (default there: DDP).")
@click.option("--steps", type=click.IntRange(1, 10_000), default=5, show_default=True, help="Measured steps.")
@click.option("--warmup", type=click.IntRange(0, 1000), default=2, show_default=True, help="Unmeasured first steps.")
@click.option("--device", help="torch device (default: cuda:LOCAL_RANK when present, else cpu).")
@click.option("--gpu", "gpu_id", help="Catalog id of this GPU: its peaks for the step-time estimate "
                                       "(default: the calibration's device).")
@click.option("--calibration", type=click.Path(dir_okay=False),
              help="Calibration of this device (rigplan probe); default: a quick probe is run first.")
@click.option("--threads", type=click.IntRange(1, 4096),
              help="CPU threads torch may use (torch.set_num_threads; torchrun sets 1 per process).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def check_command(model: str | None, method: str, lora_rank: int, lora_targets: str, seq: int, micro_batch: int,
                  accumulation: int, precision: str | None, recompute: str, fsdp: bool, steps: int, warmup: int,
                  device: str | None, gpu_id: str | None, calibration: str | None, threads: int | None, as_json: bool,
                  **shape: Any) -> None:
    """Train a small model here for a few steps and compare memory and step time with rigplan's estimate.

    The model is built locally with random weights from MODEL or the shape flags (default: a 4-layer,
    256-wide Llama-style decoder). Under torchrun each process is one data-parallel rank (DDP, or FSDP
    with --fsdp; gloo on CPU, NCCL on GPU). On a CPU the exact bytes of weights, gradients, optimizer
    states and saved activations are compared; on a GPU also torch.cuda's peak allocated/reserved.

    \b
    Examples:
      rigplan check --steps 3
      torchrun --nproc-per-node 2 -m rigplan.cli.main check --fsdp --method lora
      rigplan check llama-3.2-1b --device cuda --seq 2048 --recompute full
    """
    set_threads(threads)
    shape_given = {k: v for k, v in shape.items() if v is not None}
    if model is None and not shape_given:
        shape_given = dict(DEFAULT_SHAPE)
    with check_group(device) as dev:
        import torch.distributed as dist

        ranks = dist.get_world_size() if dist.is_initialized() else 1
        request = build_request(MemoryRequest, model=model, **shape_given, method=method, lora_rank=lora_rank,
                                lora_targets=lora_targets, seq=seq, micro_batch=micro_batch, precision=precision,
                                recompute=recompute, zero=3 if fsdp else 0, dp=ranks, kernels="eager",
                                gpu=gpu_id or "h100-sxm",
                                global_batch=micro_batch * ranks * accumulation)
        setup = build_setup(request)
        if fsdp and ranks == 1:
            raise InvalidSpec("--fsdp needs several processes: launch with torchrun --nproc-per-node N")
        cal: CalibrationFile = load_calibration(calibration) if calibration else calibration_here(device)
        gpu = setup.gpu if gpu_id else None
        console = Console(stderr=True)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, disable=not is_rank_zero() or as_json, transient=True) as bars:
            task = bars.add_task("training", total=warmup + steps)
            measured = train_and_measure(setup, steps=steps, warmup=warmup, accumulation=accumulation, fsdp=fsdp,
                                         device=device, tick=lambda: bars.advance(task))
        estimate = estimate_for(setup, device_for(cal, gpu), cal, accumulation=accumulation, ranks=ranks)
    if not is_rank_zero():
        return
    rows = comparison_rows(measured, estimate)
    job = setup.job
    wrap = "FSDP" if fsdp else "DDP" if ranks > 1 else "one process"
    title = (f"check: {setup.arch.name} on {measured.ranks} x {dev.type} ({wrap}), "
             f"{job.method}, {job.precision}, recompute {job.recompute}, micro-batch {job.micro_batch}, "
             f"seq {job.seq_len}, accumulation {accumulation}")
    if as_json:
        echo_json({"title": title, "device": cal.device.name, "ranks": measured.ranks, "rows": rows,
                   "step_times_s": measured.step_times_s, "calibration_source": cal.source})
        return
    stdout_console().print(render_rows(title, rows))
