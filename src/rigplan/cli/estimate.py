"""`rigplan estimate`: step time, throughput, MFU and time-to-train."""

from __future__ import annotations

from typing import Any

import click

from rigplan.cli.common import (
    build_request,
    check_option,
    choice,
    echo_json,
    exit_for_check,
    guarded,
    job_options,
    job_values,
    model_argument,
    model_options,
)
from rigplan.flow.estimate import estimate
from rigplan.report.text import render_estimate


@click.command("estimate")
@model_argument
@model_options
@job_options
@click.option("--tokens", help="Tokens to train on (e.g. 2T, 300B) for time-to-train, GPU-hours and energy.")
@click.option("--gpus-per-node", type=int, help="GPUs per node (default: the GPU's standard server).")
@click.option("--nic", "nic_gbit", type=float, help="Scale-out NIC speed, Gb/s (one per GPU unless --nics-per-node).")
@click.option("--nics-per-node", type=int, help="Scale-out NICs per node.")
@click.option("--host-power-w", type=float, default=250.0, show_default=True,
              help="Host power per GPU under load (CPUs, NICs, fans; DGX H100 runs 6.5-8.5 kW with 5.6 kW of GPUs).")
@click.option("--storage", type=choice(["auto", "nvme", "nvme-gen5", "raid0-4", "ceph-4", "tectonic"]),
              default="auto", show_default=True,
              help="Checkpoint storage (sets checkpoint write time); auto: node-local NVMe on one host (up to 8 "
                   "GPUs), shared ceph-4 beyond (a checkpoint on a failed node's disk is lost with it).")
@click.option("--restart-s", type=float, help="Seconds to restart after an interruption (default 600).")
@click.option("--preemptions-per-node-month", type=float, default=0.0, show_default=True,
              help="Reclaims of rented capacity per node and month (spot/community; AWS's top band is >0.2).")
@click.option("--checkpoint-interval-s", type=float, help="Checkpoint every N seconds (default: Daly's optimum).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@check_option("the job does not fit in GPU memory")
@guarded
def estimate_command(model: str | None, as_json: bool, check: bool, **kwargs: Any) -> None:
    """Step time, tokens/s, MFU and time-to-train of MODEL on a cluster and parallel layout.

    Takes the same model, recipe and layout options as `rigplan memory`, plus the training length
    and the network. A job that does not fit is still estimated and reported with its violations.

    Exit status: 0 with the report, 1 with --check when the job does not fit, 2 for bad input.

    \b
    Examples:
      rigplan estimate gpt-3-175b --gpu a100-80gb-sxm --gpus 1024 --tp 8 --pp 8 --global-batch 1536 --recompute full
      rigplan estimate llama-3.1-70b --gpu h100-sxm --gpus 512 --tp 8 --pp 4 --vpp 5 --tokens 1T --precision fp8
    """
    request = build_request("EstimateRequest", model=model, **job_values(kwargs))
    data = estimate(request).to_dict()
    if as_json:
        echo_json(data)
    else:
        render_estimate(data)
    exit_for_check(check, not data["fits"])
