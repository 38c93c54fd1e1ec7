"""`rigplan probe`: measure this machine with torch and write a calibration file.

What is measured (each figure is the fastest of several timed repeats after warm-up: on a shared machine the
least-disturbed run is the one that measures the hardware):

    GEMM      C = A·B with A (m x k), B (k x n): 2·m·n·k FLOP per call. The sweep sets n = k = d over
              the dimensions the step model's efficiency curve e(d) = e_max·d/(d + d_half) is written
              in (estimate/efficiency.py), m = the tokens of a micro-batch; bf16 (and fp32 on CPU),
              fp8 through torch._scaled_mm where the device has fp8 tensor cores.
    attention torch SDPA, causal, forward + backward: 4·b·h·s²·d FLOP forward times the causal half,
              backward 2.5x forward (FlashAttention-2 recomputes the scores: Dao 2023, Sec. 3.1).
    bandwidth a large device-to-device copy, read + write bytes counted.
    collectives under torchrun: all-reduce, all-gather, reduce-scatter, all-to-all over message
              sizes; bus bandwidth with nccl-tests' factors (doc/PERFORMANCE.md: all-reduce 2(n-1)/n,
              the others (n-1)/n), latency from a least-squares fit t = a + S/B per operation.

The fits turn these into the overrides of a calibration (calibration/file.py): gemm_max and
gemm_half_dim from the GEMM sweep, attention_eager (SDPA) from the attention runs, hbm from the copy
bandwidth, link_efficiency and link_latency_s from the collectives; on a catalogued GPU as fractions
of the catalog's peaks, on an uncatalogued device (a CPU) of the best rate measured on it.
Left out: power and clock throttling over long runs, multi-node placement (the collectives measure
the group torchrun gave), GEMM shapes outside the sweep.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rigplan.calibration.file import SCHEMA, CalibrationFile, DeviceInfo, Overrides
from rigplan.domain.hardware import Gpu
from rigplan.errors import InvalidSpec

COLLECTIVE_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}
"""Bus bandwidth / algorithm bandwidth (nccl-tests doc/PERFORMANCE.md)."""
RING_STEPS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1), "all_gather": lambda n: n - 1.0,
    "reduce_scatter": lambda n: n - 1.0, "all_to_all": lambda n: n - 1.0,
}
"""Ring steps per call, as estimate/comm.py counts them: the fitted intercept is spread over these."""
FLASH_BACKWARD_FACTOR = 2.5
"""FlashAttention backward / forward matmul FLOP (5 matmuls against 2; Dao 2023, Sec. 3.1)."""


@dataclass(frozen=True)
class ProbeSizes:
    """How large the measurements are: the full sweep for a GPU, a small one for a CPU or a quick run."""

    gemm_tokens: int
    gemm_dims: tuple[int, ...]
    attention: tuple[tuple[int, int, int, int], ...]
    """(batch, heads, seq, head_dim)."""
    copy_bytes: int
    message_bytes: tuple[int, ...]
    repeats: int


GPU_SIZES = ProbeSizes(gemm_tokens=8192, gemm_dims=(256, 512, 1024, 2048, 4096, 8192),
                       attention=((1, 32, 4096, 128), (2, 32, 2048, 128), (1, 16, 8192, 128)),
                       copy_bytes=1 << 30, message_bytes=tuple(1 << p for p in range(12, 31, 3)), repeats=10)
CPU_SIZES = ProbeSizes(gemm_tokens=512, gemm_dims=(32, 64, 128, 256, 512),
                       attention=((1, 4, 256, 64), (1, 8, 512, 64)),
                       copy_bytes=1 << 26, message_bytes=tuple(1 << p for p in range(10, 23, 3)), repeats=5)
QUICK_CPU_SIZES = ProbeSizes(gemm_tokens=256, gemm_dims=(32, 64, 128, 256), attention=((1, 4, 128, 32),),
                             copy_bytes=1 << 24, message_bytes=(1 << 10, 1 << 14, 1 << 18, 1 << 20), repeats=5)


def _torch() -> Any:
    try:
        import torch
    except ImportError as err:
        raise InvalidSpec("rigplan probe/check need torch: pip install 'rigplan[torch]'") from err
    return torch


class Timer:
    """Wall time of a callable, synchronising the device around it."""

    def __init__(self, device: Any) -> None:
        self.torch = _torch()
        self.device = device

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def best_s(self, fn: Callable[[], Any], repeats: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - start)
        return min(times)


def fit_gemm_curve(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """(e_max, d_half, rms relative residual) of e(d) = e_max·d/(d + d_half) through (d, e) points.

    Linear least squares on 1/e = 1/e_max + (d_half/e_max)·(1/d)."""
    if len(points) < 2:
        raise InvalidSpec("a GEMM curve needs at least two dimensions")
    xs = [1.0 / d for d, _ in points]
    ys = [1.0 / e for _, e in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    intercept = my - slope * mx
    if intercept <= 0:
        intercept, slope = min(ys), 0.0
    e_max, d_half = 1.0 / intercept, max(slope / intercept, 0.0)
    rms = statistics.fmean([((e_max * d / (d + d_half)) / e - 1.0) ** 2 for d, e in points]) ** 0.5
    return e_max, d_half, rms


def fit_alpha_beta(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept a in s, bandwidth B in bytes/s) of t = a + S/B through (S, t) points (least squares)."""
    xs = [s for s, _ in points]
    ys = [t for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    a = max(my - slope * mx, 0.0)
    return a, (1.0 / slope if slope > 0 else float("inf"))


def measure_gemm(timer: Timer, sizes: ProbeSizes, dtype: Any, shapes: list[tuple[int, int, int]],
                 tick: Callable[[], None]) -> list[dict[str, Any]]:
    torch = timer.torch
    rows = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device=timer.device, dtype=dtype)
        b = torch.randn(k, n, device=timer.device, dtype=dtype)
        t = timer.best_s(lambda a=a, b=b: torch.matmul(a, b), sizes.repeats)
        rows.append({"m": m, "n": n, "k": k, "dtype": str(dtype).removeprefix("torch."), "time_s": t,
                     "flop_per_s": 2.0 * m * n * k / t})
        tick()
    return rows


def measure_fp8_gemm(timer: Timer, sizes: ProbeSizes, tick: Callable[[], None]) -> list[dict[str, Any]]:
    """fp8 e4m3 GEMMs with per-tensor scales (torch._scaled_mm), on devices of compute capability >= 8.9."""
    torch = timer.torch
    if timer.device.type != "cuda" or torch.cuda.get_device_capability(timer.device) < (8, 9):
        return []
    rows = []
    m = sizes.gemm_tokens
    for d in sizes.gemm_dims:
        a = torch.randn(m, d, device=timer.device).to(torch.float8_e4m3fn)
        b = torch.randn(d, d, device=timer.device).to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.tensor(1.0, device=timer.device)
        t = timer.best_s(lambda a=a, b=b, one=one: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                                out_dtype=torch.bfloat16), sizes.repeats)
        rows.append({"m": m, "n": d, "k": d, "dtype": "float8_e4m3fn", "time_s": t, "flop_per_s": 2.0 * m * d * d / t})
        tick()
    return rows


def measure_attention(timer: Timer, sizes: ProbeSizes, dtype: Any, tick: Callable[[], None]) -> list[dict[str, Any]]:
    torch = timer.torch
    sdpa = torch.nn.functional.scaled_dot_product_attention
    rows = []
    for b, h, s, d in sizes.attention:
        q, k, v = (torch.randn(b, h, s, d, device=timer.device, dtype=dtype, requires_grad=True) for _ in range(3))
        grad = torch.randn(b, h, s, d, device=timer.device, dtype=dtype)

        def step(q: Any = q, k: Any = k, v: Any = v, grad: Any = grad) -> None:
            out = sdpa(q, k, v, is_causal=True)
            out.backward(grad)

        t = timer.best_s(step, sizes.repeats)
        forward_flop = 4.0 * b * h * s * s * d * 0.5
        rows.append({"batch": b, "heads": h, "seq": s, "head_dim": d, "dtype": str(dtype).removeprefix("torch."),
                     "causal": True, "time_s": t, "flop_per_s": forward_flop * (1 + FLASH_BACKWARD_FACTOR) / t})
        tick()
    return rows


def measure_bandwidth(timer: Timer, sizes: ProbeSizes) -> float:
    torch = timer.torch
    src = torch.empty(sizes.copy_bytes // 4, dtype=torch.float32, device=timer.device).uniform_()
    dst = torch.empty_like(src)
    t = timer.best_s(lambda: dst.copy_(src), sizes.repeats)
    return 2.0 * sizes.copy_bytes / t


def measure_collectives(timer: Timer, sizes: ProbeSizes, tick: Callable[[], None]) -> list[dict[str, Any]]:
    """Each collective over each message size, on the default process group (all ranks take part)."""
    torch = timer.torch
    dist = torch.distributed
    n = dist.get_world_size()
    rows = []
    for op in COLLECTIVE_FACTORS:
        for size in sizes.message_bytes:
            elements = max(size // 4 // n * n, n)
            buf = torch.ones(elements, dtype=torch.float32, device=timer.device)
            part = torch.empty(elements // n, dtype=torch.float32, device=timer.device)
            out = torch.empty_like(buf)
            calls = {
                "all_reduce": lambda buf=buf: dist.all_reduce(buf),
                "all_gather": lambda part=part, buf=buf: dist.all_gather_into_tensor(buf, part),
                "reduce_scatter": lambda part=part, buf=buf: dist.reduce_scatter_tensor(part, buf),
                "all_to_all": lambda out=out, buf=buf: dist.all_to_all_single(out, buf),
            }
            dist.barrier()
            t = timer.best_s(calls[op], sizes.repeats)
            t_max = torch.tensor([t], dtype=torch.float64)
            if timer.device.type == "cuda":
                t_max = t_max.to(timer.device)
            dist.all_reduce(t_max, op=dist.ReduceOp.MAX)
            t = float(t_max.item())
            nbytes = elements * 4
            rows.append({"op": op, "backend": dist.get_backend(), "ranks": n, "size_bytes": nbytes, "time_s": t,
                         "bus_bandwidth_bytes_per_s": nbytes / t * COLLECTIVE_FACTORS[op](n)})
            tick()
    return rows


@contextmanager
def process_group(torch: Any, device: Any) -> Iterator[bool]:
    """Join torchrun's group when launched under it (WORLD_SIZE > 1); yields whether collectives run."""
    dist = torch.distributed
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 or not dist.is_available():
        yield False
        return
    started = not dist.is_initialized()
    if started:
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, device_id=device if device.type == "cuda" else None)
    try:
        yield True
    finally:
        if started:
            dist.destroy_process_group()


def pick_device(torch: Any, requested: str | None) -> Any:
    if requested:
        device = torch.device(requested)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise InvalidSpec(f"--device {requested}: no CUDA device is visible to torch")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def device_name(torch: Any, device: Any) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    import platform

    return f"cpu ({platform.machine()}, {torch.get_num_threads()} threads)"


def derive_overrides(measured: dict[str, Any], gpu: Gpu | None) -> tuple[Overrides, dict[str, Any]]:
    """The calibration overrides and how each was fitted, from the measured figures."""
    fits: dict[str, Any] = {}
    eff: dict[str, float] = {}
    gemm = measured["gemm"]
    by_dtype: dict[str, Any] = {}
    for dtype in sorted({g["dtype"] for g in gemm if g["dtype"] != "float8_e4m3fn"}):
        sweep = [g for g in gemm if g["dtype"] == dtype and g["n"] == g["k"]]
        if len(sweep) < 2:
            continue
        key = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}.get(dtype, dtype)
        catalog_peak = gpu.peak(key) if gpu is not None else 0.0
        scale = catalog_peak or max(g["flop_per_s"] for g in sweep)
        e_max, d_half, rms = fit_gemm_curve([(float(g["n"]), g["flop_per_s"] / scale) for g in sweep])
        # Uncatalogued device: its peak is the fitted asymptote, so gemm_max is 1 by definition.
        peak = catalog_peak or scale * e_max
        by_dtype[dtype] = {"peak_flop_per_s": peak, "gemm_max": e_max if catalog_peak else 1.0,
                           "gemm_half_dim": d_half, "points": len(sweep), "residual_rms": rms,
                           "peak_from": "catalog" if catalog_peak else "fitted asymptote"}
    if not by_dtype:
        raise InvalidSpec("probe measured no GEMM sweep to fit")
    main_dtype = "bfloat16" if "bfloat16" in by_dtype and gpu is not None else max(
        by_dtype, key=lambda d: by_dtype[d]["peak_flop_per_s"])
    main = by_dtype[main_dtype]
    peak = main["peak_flop_per_s"]
    eff["gemm_max"], eff["gemm_half_dim"] = main["gemm_max"], main["gemm_half_dim"]
    fits["gemm"] = {"dtype": main_dtype, **main}
    fits["gemm_by_dtype"] = by_dtype
    fp8 = [g for g in gemm if g["dtype"] == "float8_e4m3fn"]
    if fp8 and gpu is not None and gpu.peak_flop_per_s.get("fp8"):
        eff["fp8_gemm_max"] = max(g["flop_per_s"] for g in fp8) / gpu.peak("fp8")
        fits["fp8_gemm_max"] = {"value": eff["fp8_gemm_max"], "points": len(fp8)}
    attention = [a for a in measured["attention"] if a["dtype"] == main_dtype]
    if attention:
        rates = [a["flop_per_s"] / peak for a in attention]
        eff["attention_eager"] = max(rates)
        fits["attention_eager"] = {"value": max(rates), "points": len(rates), "spread": max(rates) - min(rates),
                                   "note": "torch SDPA (the eager stack's attention), largest shape"}
    bandwidth = measured["memory_bandwidth_bytes_per_s"]
    eff["hbm"] = bandwidth / gpu.memory_bandwidth_bytes_per_s if gpu is not None else 1.0
    fits["hbm"] = {"value": eff["hbm"], "measured_bytes_per_s": bandwidth}
    overrides = Overrides(efficiency=eff)
    collectives = measured.get("collectives") or []
    if collectives:
        n = collectives[0]["ranks"]
        link_bw = gpu.link.bandwidth_bytes_per_s if gpu is not None else None
        per_op: dict[str, Any] = {}
        for op in COLLECTIVE_FACTORS:
            rows = [c for c in collectives if c["op"] == op]
            if len(rows) < 2:
                continue
            a, algo_bw = fit_alpha_beta([(c["size_bytes"], c["time_s"]) for c in rows])
            per_op[op] = {"intercept_s": a, "step_latency_s": a / RING_STEPS[op](n),
                          "bus_bandwidth_bytes_per_s": algo_bw * COLLECTIVE_FACTORS[op](n)}
        if "all_reduce" in per_op:
            ar = per_op["all_reduce"]
            overrides.link_latency_s = ar["step_latency_s"]
            best_bus = max(c["bus_bandwidth_bytes_per_s"] for c in collectives if c["op"] == "all_reduce")
            if link_bw:
                overrides.link_efficiency = min(best_bus / link_bw, 1.0)
        fits["collectives"] = {"ranks": n, "per_op": per_op}
    return overrides, fits


def run_probe(*, device: str | None = None, gpu: Gpu | None = None, quick: bool = False,
              model_shapes: list[tuple[int, int, int]] | None = None,
              progress: Callable[[str, int], Callable[[], None]] | None = None) -> CalibrationFile:
    """Measure this machine (see module docstring) and return the calibration; collectives under torchrun."""
    torch = _torch()
    dev = pick_device(torch, device)
    sizes = GPU_SIZES if dev.type == "cuda" else (QUICK_CPU_SIZES if quick else CPU_SIZES)
    if quick and dev.type == "cuda":
        sizes = ProbeSizes(gemm_tokens=4096, gemm_dims=(512, 2048, 8192), attention=sizes.attention[:1],
                           copy_bytes=1 << 28, message_bytes=sizes.message_bytes[::2], repeats=5)
    timer = Timer(dev)
    dtypes = [torch.bfloat16] if dev.type == "cuda" else [torch.float32, torch.bfloat16]
    sweep = [(sizes.gemm_tokens, d, d) for d in sizes.gemm_dims] + list(model_shapes or [])

    def bar(label: str, total: int) -> Callable[[], None]:
        return progress(label, total) if progress else (lambda: None)

    with process_group(torch, dev) as distributed:
        measured: dict[str, Any] = {"gemm": []}
        for dtype in dtypes:
            measured["gemm"] += measure_gemm(timer, sizes, dtype, sweep, bar(f"GEMM {dtype}", len(sweep)))
        measured["gemm"] += measure_fp8_gemm(timer, sizes, bar("GEMM fp8", len(sizes.gemm_dims)))
        measured["attention"] = []
        for dtype in dtypes:
            measured["attention"] += measure_attention(timer, sizes, dtype, bar(f"SDPA {dtype}", len(sizes.attention)))
        measured["memory_bandwidth_bytes_per_s"] = measure_bandwidth(timer, sizes)
        count = 1
        if distributed:
            count = torch.distributed.get_world_size()
            measured["collectives"] = measure_collectives(
                timer, sizes, bar("collectives", len(COLLECTIVE_FACTORS) * len(sizes.message_bytes)))
    overrides, fits = derive_overrides(measured, gpu)
    catalog = None
    if gpu is not None:
        catalog = {"gpu_id": gpu.id, "peak_flop_per_s": dict(gpu.peak_flop_per_s),
                   "memory_bandwidth_bytes_per_s": gpu.memory_bandwidth_bytes_per_s,
                   "link_bandwidth_bytes_per_s": gpu.link.bandwidth_bytes_per_s, "link_kind": gpu.link.kind}
    return CalibrationFile.model_validate({
        "schema": SCHEMA,
        "device": DeviceInfo(name=device_name(torch, dev), kind=dev.type, gpu_id=gpu.id if gpu else None,
                             count=count, torch=str(torch.__version__)).model_dump(),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": f"rigplan probe{' --quick' if quick else ''}",
        "measured": measured, "catalog": catalog, "overrides": overrides.model_dump(), "fit": fits,
    })


def is_rank_zero() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def set_threads(threads: int | None) -> None:
    """Limit torch's CPU threads (None: leave torch's default)."""
    if threads:
        _torch().set_num_threads(threads)
