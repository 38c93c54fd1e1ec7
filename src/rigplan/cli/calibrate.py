"""`rigplan calibrate`: fit efficiency and overhead parameters to measured runs; write a calibration file."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from rigplan.calibration.file import write_calibration
from rigplan.cli.common import echo_json, guarded, job_options, job_values, model_argument, model_options
from rigplan.errors import InvalidSpec
from rigplan.files import load_yaml, read_text
from rigplan.measure.calibrate import fit, parse_run
from rigplan.report.text import stdout_console


def _runs_file(path: str) -> list[dict[str, Any]]:
    data = load_yaml(read_text(path, "--runs"), f"--runs {path}")
    runs = data.get("runs") if isinstance(data, dict) else data
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise InvalidSpec(f"--runs {path}: expected a list of runs (or runs: [...]), each a mapping of estimate "
                          "options and measured figures")
    defaults = {k: v for k, v in data.items() if k != "runs"} if isinstance(data, dict) else {}
    return [{**defaults, **r} for r in runs]


@click.command("calibrate")
@model_argument
@model_options
@job_options
@click.option("--gpus-per-node", type=int, help="GPUs per node of the measured cluster.")
@click.option("--nic", "nic_gbit", type=float, help="Scale-out NIC speed of the measured cluster, Gb/s.")
@click.option("--step-time-s", type=float, help="Measured seconds per optimizer step.")
@click.option("--tokens-per-s", type=float, help="Measured tokens/s of the whole job.")
@click.option("--tokens-per-s-per-gpu", type=float, help="Measured tokens/s per GPU.")
@click.option("--peak-allocated", help="Measured torch.cuda.max_memory_allocated, e.g. 61.3GiB.")
@click.option("--peak-reserved", help="Measured torch.cuda.max_memory_reserved, e.g. 66GiB.")
@click.option("--runs", "runs_path", type=click.Path(dir_okay=False, exists=True),
              help="YAML list of runs (estimate options + measured figures) instead of the flags.")
@click.option("--output", "-o", default="rigplan-calibration.yaml", show_default=True,
              type=click.Path(dir_okay=False), help="Calibration file to write.")
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as one JSON object.")
@guarded
def calibrate_command(model: str | None, runs_path: str | None, output: str, force: bool, as_json: bool,
                      **kwargs: Any) -> None:
    """Fit rigplan's efficiency and overhead parameters to your measured run(s) on one GPU type.

    Give one run with MODEL, the layout options of `rigplan estimate` and what you measured, or
    several in --runs FILE. One step time fits the compute efficiency scale; two or more runs also fit
    the link efficiency; peak allocated + reserved memory give the allocator's fragmentation. Prints
    the fit and each run's error before and after, and writes the calibration file.

    \b
    Examples:
      rigplan calibrate llama-3.1-8b --gpus 8 --zero 1 --micro-batch 2 --seq 8192 --global-batch 64 \\
          --gpu h100-sxm --tokens-per-s-per-gpu 7800 --peak-reserved 66GiB -o h100.yaml
      rigplan calibrate --runs my-runs.yaml -o h100.yaml
    """
    measured = {k: kwargs.pop(k) for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "peak_allocated",
                                             "peak_reserved")}
    if runs_path:
        runs = [parse_run(r) for r in _runs_file(runs_path)]
    else:
        values = job_values(kwargs)
        runs = [parse_run({"model": model, **values, **measured})]
    cal = fit(runs)
    write_calibration(cal, output, overwrite=force)
    if as_json:
        echo_json(cal.to_dict())
        return
    console = stdout_console()
    step = cal.fit.get("step_time")
    if step:
        table = Table(title=f"calibrate: {cal.device.name} - compute scale {step['compute_scale']:.3f}"
                            + (f", comm scale {step['comm_scale']:.3f}" if step["comm_scale"] else ""),
                      title_justify="left")
        for col in ("run", "measured", "rigplan before", "error", "after fit", "error"):
            table.add_column(col, justify="left" if col == "run" else "right")
        for row in step["runs"]:
            table.add_row(str(row["run"]), f"{row['measured_step_time_s']:.3f} s", f"{row['estimated_before_s']:.3f} s",
                          f"{100 * row['error_before']:+.1f}%", f"{row['estimated_after_s']:.3f} s",
                          f"{100 * row['error_after']:+.1f}%")
        console.print(table)
        console.print(f"residual (rms of log step-time error): {step['residual_rms_log']:.3f}"
                      + (f"; {step['note']}" if step["note"] else ""))
    memory = cal.fit.get("memory")
    if memory:
        frag = memory["fragmentation_fraction"]
        console.print(f"fragmentation (reserved/allocated - 1): {frag:.3f}" if frag is not None else memory["note"])
    console.print(f"wrote {output}; use it with --calibration {output}")
