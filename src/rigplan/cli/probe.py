"""`rigplan probe`: measure this machine with torch and write a calibration file."""

from __future__ import annotations

import re
from collections.abc import Callable

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rigplan.calibration.file import CalibrationFile, write_calibration
from rigplan.catalog.load import Catalog, load_catalog
from rigplan.cli.common import echo_json, guarded
from rigplan.domain.hardware import Gpu
from rigplan.measure.probe import is_rank_zero, run_probe, set_threads
from rigplan.report.text import stdout_console


def match_gpu(catalog: Catalog, device_name: str) -> Gpu | None:
    """The catalog GPU whose name shares the device's model token and memory size (e.g. H100 ... 80GB)."""
    tokens = set(re.findall(r"[a-z]*\d+[a-z]*", device_name.lower()))
    best: tuple[int, Gpu] | None = None
    for record in catalog.gpus.values():
        shared = tokens & set(re.findall(r"[a-z]*\d+[a-z]*", record.name.lower()))
        if shared and (best is None or len(shared) > best[0]):
            best = (len(shared), record.to_domain())
    return best[1] if best else None


def _rate(value: float | None, unit: str) -> str:
    return "-" if not value else f"{value / 1e12:.3g} T{unit}" if value >= 1e12 else f"{value / 1e9:.3g} G{unit}"


def side_by_side(cal: CalibrationFile) -> Table:
    """Measured figures next to the catalog's, with the fraction each override carries."""
    table = Table(title=f"probe: {cal.device.name}" + (f" (catalog {cal.device.gpu_id})" if cal.device.gpu_id else
                                                       " (not in the catalog)"), title_justify="left")
    for col in ("figure", "measured", "catalog", "override"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    cat = cal.catalog or {}
    peaks = cat.get("peak_flop_per_s", {})
    eff = cal.overrides.efficiency
    gemm = cal.fit.get("gemm", {})
    best = {}
    for g in cal.measured.get("gemm", []):
        best[g["dtype"]] = max(best.get(g["dtype"], 0.0), g["flop_per_s"])
    for dtype, rate in best.items():
        key = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16", "float8_e4m3fn": "fp8"}.get(dtype, dtype)
        note = ""
        if dtype == gemm.get("dtype"):
            note = f"gemm_max {eff.get('gemm_max', 0):.3f}, d_half {eff.get('gemm_half_dim', 0):.0f}"
        elif key == "fp8" and "fp8_gemm_max" in eff:
            note = f"fp8_gemm_max {eff['fp8_gemm_max']:.3f}"
        table.add_row(f"GEMM {dtype} (best)", _rate(rate, "FLOP/s"), _rate(peaks.get(key), "FLOP/s"), note)
    att = [a["flop_per_s"] for a in cal.measured.get("attention", []) if a["dtype"] == gemm.get("dtype")]
    if att:
        table.add_row("SDPA fwd+bwd (best)", _rate(max(att), "FLOP/s"), "-",
                      f"attention_eager {eff.get('attention_eager', 0):.3f}")
    table.add_row("memory bandwidth", _rate(cal.measured.get("memory_bandwidth_bytes_per_s"), "B/s"),
                  _rate(cat.get("memory_bandwidth_bytes_per_s"), "B/s"), f"hbm {eff.get('hbm', 0):.3f}")
    per_op = cal.fit.get("collectives", {}).get("per_op", {})
    for op, fit in per_op.items():
        bus = max(c["bus_bandwidth_bytes_per_s"] for c in cal.measured["collectives"] if c["op"] == op)
        over = ""
        if op == "all_reduce":
            over = f"latency/step {fit['step_latency_s'] * 1e6:.1f} us"
            if cal.overrides.link_efficiency:
                over += f", link_efficiency {cal.overrides.link_efficiency:.3f}"
        table.add_row(f"{op} bus bw (best, {cal.device.count} ranks)", _rate(bus, "B/s"),
                      _rate(cat.get("link_bandwidth_bytes_per_s"), "B/s"), over)
    return table


@click.command("probe")
@click.option("--output", "-o", default="rigplan-calibration.yaml", show_default=True, type=click.Path(dir_okay=False),
              help="Calibration file to write (.yaml or .json).")
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option("--gpu", "gpu_id", help="Catalog id of this device (default: matched from the device name).")
@click.option("--device", help="torch device to measure (default: cuda:LOCAL_RANK when present, else cpu).")
@click.option("--quick", is_flag=True, help="Fewer, smaller measurements (seconds on a CPU).")
@click.option("--catalog", "catalog_dirs", multiple=True, type=click.Path(), help="Catalog overlay folder.")
@click.option("--threads", type=click.IntRange(1, 4096),
              help="CPU threads torch may use (torch.set_num_threads; torchrun sets 1 per process).")
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as one JSON object.")
@guarded
def probe_command(output: str, force: bool, gpu_id: str | None, device: str | None, quick: bool,
                  catalog_dirs: tuple[str, ...], threads: int | None, as_json: bool) -> None:
    """Measure this machine with torch and write a calibration file for --calibration.

    GEMM throughput over the shapes of rigplan's efficiency curve (bf16; fp32 on CPU; fp8 where the
    GPU has it), SDPA attention forward+backward, memory bandwidth, and - launched under torchrun -
    all-reduce, all-gather, reduce-scatter and all-to-all bus bandwidth and latency (NCCL on GPUs,
    gloo on CPUs). Only rank 0 writes the file.

    \b
    Examples:
      rigplan probe --quick -o cpu.yaml
      torchrun --nproc-per-node 8 -m rigplan.cli.main probe -o h100.yaml
      rigplan estimate llama-3.1-8b --gpus 8 --calibration h100.yaml
    """
    set_threads(threads)
    catalog = load_catalog(list(catalog_dirs))
    gpu = catalog.gpu(gpu_id).to_domain() if gpu_id else None
    rank0 = is_rank_zero()
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not rank0 or as_json, transient=True) as bars:

        def progress(label: str, total: int) -> Callable[[], None]:
            task = bars.add_task(label, total=total)
            return lambda: bars.advance(task)

        if gpu is None:
            from rigplan.measure.probe import _torch, device_name, pick_device

            torch = _torch()
            dev = pick_device(torch, device)
            gpu = match_gpu(catalog, device_name(torch, dev)) if dev.type == "cuda" else None
        cal = run_probe(device=device, gpu=gpu, quick=quick, progress=progress)
    if not rank0:
        return
    write_calibration(cal, output, overwrite=force)
    if as_json:
        echo_json(cal.to_dict())
        return
    out = stdout_console()
    out.print(side_by_side(cal))
    out.print(f"wrote {output}; use it with --calibration {output}")


