"""Terminal rendering with rich: tables and one-line verdicts. No estimation here."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.table import Table

from rigplan.units import format_bytes, format_count, format_duration, format_tokens

MEMORY_ROWS = (
    ("weights_bytes", "weights"),
    ("gradients_bytes", "gradients"),
    ("optimizer_bytes", "optimizer states"),
    ("activations_bytes", "activations"),
    ("logits_bytes", "logits + loss"),
    ("transient_bytes", "transient working set"),
    ("cuda_context_bytes", "CUDA context + workspaces"),
    ("nccl_bytes", "communication buffers"),
    ("unreleasable_bytes", "allocator cache kept under memory pressure"),
)


PIPED_WIDTH = 240
"""Columns of output that goes to a file or a pipe with COLUMNS unset. rich would wrap it at 80 and cut table cells
short with an ellipsis (a GPU id such as rtx-4090d read as 'rtx-409…'); tables take only the width they need."""


def stdout_console(**kwargs: Any) -> Console:
    """The console a command prints to: the terminal's width on a terminal, COLUMNS where set, else PIPED_WIDTH."""
    console = Console(**kwargs)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=PIPED_WIDTH, **kwargs)
    return console


def first_option_accuracy(data: dict[str, Any]) -> list[tuple[str, bool]]:
    """A plan's sentences on its first option's MoE accuracy, each with whether it is a warning: the regime line, the
    wall time under the quoted runs' spread, and whether that option, within the deadline at its estimate, would miss
    it at the 90th percentile. Empty for a dense model or no option."""
    if not data["ranked"] or not data["ranked"][0]["moe_accuracy"]:
        return []
    accuracy = data["ranked"][0]["moe_accuracy"]
    low, high = accuracy["wall_time_s_spread"]
    lines = [(f"the first, {accuracy['note']}", False),
             (f"the first, with that error (10th-90th percentile): wall time {format_duration(low)} – "
              f"{format_duration(high)}", False)]
    if data["deadline_s"] is not None and high > data["deadline_s"]:
        lines.append((f"the first would miss the {format_duration(data['deadline_s'])} deadline at the 90th "
                      "percentile of that error", True))
    return lines


def layout_text(lay: dict[str, Any]) -> str:
    """A searched layout in one short line: tp2 pp8x2 dp16 cp2 ep32 etp2 z1 mb1 selective (cp, ep and the virtual
    stages only where they are not 1, the expert tp only beside ep > 1)."""
    etp = (lay.get("etp", 1) or 1) if lay.get("ep", 1) > 1 else 1
    return (f"tp{lay['tp']} pp{lay['pp']}" + (f"x{lay['vpp']}" if lay.get("vpp", 1) > 1 else "")
            + f" dp{lay['dp']}" + (f" cp{lay['cp']}" if lay.get("cp", 1) > 1 else "")
            + (f" ep{lay['ep']}" if lay.get("ep", 1) > 1 else "") + (f" etp{etp}" if etp > 1 else "")
            + f" z{lay['zero']} mb{lay['micro_batch']} {lay['recompute']}")


def purchase_text(mode: dict[str, Any], owned: str = "buy") -> str:
    """A plan option's purchase mode in one cell: the cloud offer, 'no price' for a part rigplan cannot price
    (--unpriced, --cluster), else `owned` with the on-premises basis, e.g. buy (purchase)."""
    if mode["kind"] == "cloud":
        return f"{mode['provider']} {mode['pricing']}"
    return "no price" if mode["kind"] == "unpriced" else f"{owned} ({mode['pricing']})"


def render_memory(data: dict[str, Any], console: Console | None = None) -> None:
    console = console or stdout_console(emoji=False)  # no :name: codes: names from config files print as written
    model, gpu, job, layout, per_gpu = data["model"], data["gpu"], data["job"], data["layout"], data["per_gpu"]
    active = ""
    if model["params_active"] != model["params_total"]:
        active = f", {format_count(model['params_active'])} active"
    console.print(
        f"[bold]{model['id']}[/bold] ({format_count(model['params_total'])} params{active}, {model['attention']}) "
        f"on [bold]{gpu['name']}[/bold] ({format_bytes(gpu['usable_bytes'])} usable)"
    )
    lora = f" r={job['lora_rank']} on {','.join(job['lora_targets'])}" if job["lora_rank"] else ""
    precision = job["precision"]
    if precision == "fp8" and job.get("fp8_recipe", "delayed") != "delayed":
        precision = f"fp8 {job['fp8_recipe']}"
    console.print(
        f"{job['method']}{lora}, {precision}, {job['optimizer']}, seq {job['seq_len']} x micro-batch "
        f"{job['micro_batch']}, recompute {job['recompute']}, {job['attention']} attention; "
        f"tp={layout['tp']} pp={layout['pp']} dp={layout['dp']} cp={layout['cp']} ep={layout['ep']} "
        f"zero={layout['zero']}" + (" +SP" if layout["sequence_parallel"] else "")
    )
    table = Table(title=f"Peak memory per GPU (pipeline stage {per_gpu['stage']}, peak during {per_gpu['peak_phase']})",
                  title_justify="left")
    table.add_column("part")
    table.add_column("size", justify="right")
    table.add_column("share", justify="right")
    total = per_gpu["total_bytes"] or 1.0
    for key, label in MEMORY_ROWS:
        value = per_gpu[key]
        if value:
            table.add_row(label, format_bytes(value), f"{100 * value / total:.0f}%")
    table.add_section()
    if per_gpu["load_reserved_bytes"] > per_gpu["step_reserved_bytes"]:
        table.add_row("training step (reserved)", format_bytes(per_gpu["step_reserved_bytes"]), "")
        table.add_row("[bold]load peak (reserved, the maximum)[/bold]",
                      format_bytes(per_gpu["load_reserved_bytes"]), "")
    table.add_row("allocated (torch max_memory_allocated)", format_bytes(per_gpu["allocated_bytes"]), "")
    table.add_row("reserved (torch max_memory_reserved)", format_bytes(per_gpu["reserved_bytes"]), "")
    table.add_row("[bold]needed on the device[/bold]", f"[bold]{format_bytes(per_gpu['total_bytes'])}[/bold]", "100%")
    console.print(table)
    room = gpu["usable_bytes"] - per_gpu["cuda_context_bytes"] - per_gpu["nccl_bytes"]
    if per_gpu["reserved_bytes"] > room >= per_gpu["needed_bytes"]:
        console.print(f"the allocator's cache would grow to {format_bytes(per_gpu['reserved_bytes'])}; on this GPU it "
                      f"gives free segments back and retries, so the job needs {format_bytes(per_gpu['total_bytes'])}")
    if data["host_bytes"]:
        console.print(f"host RAM: {format_bytes(data['host_bytes'])} per GPU, "
                      f"{format_bytes(data['host_bytes_per_node'])} per node")
    if data.get("find_max_note"):
        console.print(f"[red]--find-max[/red]: {data['find_max_note']}")
    elif data["max_micro_batch"] is not None:
        console.print(f"largest micro-batch that fits at seq {job['seq_len']}: {data['max_micro_batch']}")
    if data["max_seq_len"] is not None and not data.get("find_max_note"):
        console.print(f"longest sequence that fits at micro-batch {job['micro_batch']}: {data['max_seq_len']}")
    for note in data["assumptions"]:
        console.print(f"[dim]assumed: {note}[/dim]")
    render_fit(data, console)


def render_fit(data: dict[str, Any], console: Console) -> None:
    """The verdict with the model's uncertainty, then the remedies ranked by what each saves."""
    headroom = data["headroom_bytes"]
    fit = data["fit"]
    usable = format_bytes(data["gpu"]["usable_bytes"])
    within = f" (within the model's uncertainty of ±{format_bytes(fit['uncertainty_bytes'])})"
    if fit["verdict"] == "fits":
        console.print(f"[green]FITS[/green]: {format_bytes(headroom)} to spare of {usable}")
    elif fit["verdict"] == "fits-borderline":
        console.print(f"[yellow]FITS, BORDERLINE[/yellow]: fits with {format_bytes(headroom)} to spare of {usable}"
                      + within)
    elif fit["verdict"] == "over-borderline":
        console.print(f"[yellow]OVER, BORDERLINE[/yellow]: over by {format_bytes(-headroom)} of {usable}" + within
                      + "; it may fit")
    else:
        console.print(f"[red]DOES NOT FIT[/red]: over by {format_bytes(-headroom)} of {usable}")
    for row in data["advice"]:
        verdict = "fits" if row["fits"] else "still over"
        cost = (f", at least {format_duration(row['host_s_per_step'])} a step on the host"
                if row.get("host_s_per_step") else "")
        console.print(f"  try {row['flag']}: saves {format_bytes(row['saves_bytes'])} "
                      f"-> {format_bytes(row['total_bytes'])} ({verdict}){cost}")


def _runs(values: list[int]) -> str:
    """7, 8, 8, 8, 7 -> '7 | 8 x3 | 7'."""
    parts: list[str] = []
    for value in values:
        if parts and parts[-1].split(" x")[0] == str(value):
            head, _, count = parts[-1].partition(" x")
            parts[-1] = f"{head} x{int(count or 1) + 1}"
        else:
            parts.append(str(value))
    return " | ".join(parts)


def render_estimate(data: dict[str, Any], console: Console | None = None) -> None:
    console = console or stdout_console(emoji=False)  # no :name: codes: names from config files print as written
    mem = data["memory"]
    model, gpu, layout = mem["model"], mem["gpu"], mem["layout"]
    console.print(
        f"[bold]{model['id']}[/bold] on {data['gpus']} x [bold]{gpu['name']}[/bold]: tp={layout['tp']} "
        f"pp={layout['pp']} vpp={layout['vpp']} dp={layout['dp']} cp={layout['cp']} ep={layout['ep']} "
        f"zero={layout['zero']}, global batch {data['global_batch']} x {mem['job']['seq_len']} tokens"
    )
    table = Table(title="Step", title_justify="left")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("step time", format_duration(data["step_time_s"]))
    table.add_row("tokens/s (cluster)", format_count(data["tokens_per_s"]))
    table.add_row("tokens/s per GPU", f"{data['tokens_per_s_per_gpu']:,.0f}")
    table.add_row("model TFLOP/s per GPU", f"{data['model_tflops_per_gpu']:.0f} of {data['peak_tflops_per_gpu']:.0f}")
    table.add_row("hardware TFLOP/s per GPU (with recompute)", f"{data['hardware_tflops_per_gpu']:.0f}")
    table.add_row("MFU / HFU", f"{100 * data['mfu']:.1f}% / {100 * data['hfu']:.1f}%")
    if data.get("mfu_paper") is not None:
        table.add_row("MFU as papers count it (6N + full s² attention)", f"{100 * data['mfu_paper']:.1f}%")
    table.add_section()
    b = data["breakdown"]
    for label, key in (("compute", "compute_s"), ("exposed communication", "exposed_comm_s"),
                       ("pipeline bubble", "bubble_s"), ("optimizer step", "optimizer_s")):
        table.add_row(label, f"{format_duration(b[key])} ({100 * b[key] / data['step_time_s']:.0f}%)")
    comm = ", ".join(f"{k[:-2]} {format_duration(v)}" for k, v in b["comm"].items() if v > 0)
    if comm:
        table.add_row("  of which", comm)
    if b.get("offload_s", 0.0) > 0:
        table.add_row("CPU offload (host optimizer, host-link copies)",
                      f"{format_duration(b['offload_s'])} ({100 * b['offload_s'] / data['step_time_s']:.0f}%)")
    if b.get("host_s", 0.0) > 0:
        table.add_row("waiting for the host (MoE sync, training loop)",
                      f"{format_duration(b['host_s'])} ({100 * b['host_s'] / data['step_time_s']:.0f}%)")
    if b.get("host_load", 0.0) > 0:
        table.add_row("  host load (host issue time / GPU time, a micro-batch)", f"{b['host_load']:.2f}")
    for axis, c in (b.get("comm_by_axis") or {}).items():
        if c["total_s"] > 0:
            table.add_row(f"  {axis} communication: hidden / exposed",
                          f"{format_duration(c['total_s'])}: {format_duration(c['hidden_s'])} / "
                          f"{format_duration(c['exposed_s'])}")
    if b.get("overlap_tax_s", 0) > 0:
        table.add_row("  overlap cost (compute slowed by comm kernels)", format_duration(b["overlap_tax_s"]))
    if data["time_to_train_s"]:
        table.add_section()
        table.add_row(f"time to train {format_tokens(data['tokens'])}", format_duration(data["time_to_train_s"]))
        spread = (data.get("moe_accuracy") or {}).get("time_to_train_s_spread")
        if spread:
            table.add_row("  with the error of published MoE runs like it (10th-90th percentile)",
                          f"{format_duration(spread[0])} – {format_duration(spread[1])}")
        table.add_row("GPU-hours", f"{data['gpu_hours']:,.0f}")
        rel = data.get("reliability")
        if rel:
            table.add_row("wall time with failures and checkpoints", format_duration(data["wall_time_s"]))
            table.add_row("  interruptions/day, goodput",
                          f"{rel['interruptions_per_day']:.2f}, {100 * rel['goodput']:.1f}%")
            table.add_row("  checkpoint every / write", f"{format_duration(rel['checkpoint_interval_s'])} / "
                          f"{format_duration(rel['checkpoint_write_s'])}")
        energy = data["energy_kwh"]
        table.add_row("energy (GPUs + hosts)", f"{energy:,.0f} kWh" if energy is not None else "-")
    console.print(table)
    console.print(f"memory: {format_bytes(mem['per_gpu']['total_bytes'])} per GPU of "
                  f"{format_bytes(gpu['usable_bytes'])} (pipeline stage {mem['per_gpu']['stage']})")
    pipe = data.get("pipeline")
    if pipe and layout["pp"] > 1:
        console.print(f"pipeline: pace set by stage {pipe['pace_stage']} ({pipe['pace_stage_layers']} layers"
                      f"{', LM head + loss' if pipe['pace_stage'] == layout['pp'] - 1 else ''}"
                      f"{', embedding' if pipe['pace_stage'] == 0 else ''}); memory peak on stage "
                      f"{pipe['memory_peak_stage']}; layers per stage {_runs(pipe['stage_layers'])}")
    for note in data["assumptions"]:
        console.print(f"[dim]assumed: {note}[/dim]")
    if not data["fits"]:
        for v in data["violations"]:
            console.print(f"[red]INFEASIBLE[/red] ({v['code']}): {v['message']}")
