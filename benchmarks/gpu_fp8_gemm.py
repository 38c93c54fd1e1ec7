"""fp8 against bf16 GEMMs across shapes on a CUDA device: how large a GEMM fp8 needs to reach its fraction of peak.

    python benchmarks/gpu_fp8_gemm.py --out fp8_gemm.json
    python benchmarks/gpu_fp8_gemm.py --smoke --out /tmp/f.json    # tiny sizes; on a CPU only bf16 runs

Each shape (m x k) @ (k x n) runs as torch.mm in bf16 and as torch._scaled_mm in float8_e4m3fn with per-tensor
scales and a bf16 output (the GEMM Transformer Engine's delayed and current scaling run on Hopper), with fast
accumulation (forward recipes) and without it (split accumulation, backward recipes). Shapes: square ones from 256 to
8192, the expert GEMMs of Qwen3-30B-A3B (h 2048, f 768), Qwen3-235B-A22B (4096, 1536) and DeepSeek-V3 (7168, 2048)
with 256 to 16384 tokens, and dense Llama 3 8B projections. Timing: CUDA events around each call, median of the
repeats after warm-up. rigplan's shape model (estimate/efficiency.py, gemm_efficiency) gives both dtypes the same
half-efficiency dimension; these rates say what fp8's is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

SQUARE = (256, 512, 1024, 2048, 4096, 8192)
EXPERTS = {"qwen3-30b-a3b": (2048, 768), "qwen3-235b-a22b": (4096, 1536), "deepseek-v3": (7168, 2048)}
TOKENS = (256, 512, 1024, 2048, 4096, 8192, 16384)
DENSE = [(8192, 4096, 6144), (8192, 4096, 4096), (8192, 4096, 28672), (8192, 14336, 4096)]


def shapes(smoke: bool) -> list[tuple[str, int, int, int]]:
    if smoke:
        return [("square", 64, 64, 64), ("qwen3-30b-a3b fc1", 32, 64, 96)]
    out = [("square", d, d, d) for d in SQUARE]
    for model, (h, f) in EXPERTS.items():
        for m in TOKENS:
            out += [(f"{model} fc1", m, h, 2 * f), (f"{model} fc2", m, f, h)]
    out += [("llama-3-8b dense", m, k, n) for m, k, n in DENSE]
    return out


def timed(torch: Any, fn: Any, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    if not torch.cuda.is_available():
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        return (time.perf_counter() - start) / repeats
    times = []
    for _ in range(repeats):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    import torch

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    rows = []
    for name, m, k, n in shapes(args.smoke):
        flop = 2.0 * m * k * n
        repeats = max(5, min(200, int(2e12 / flop))) if cuda else 2
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=device, dtype=torch.bfloat16)
        row: dict[str, Any] = {"name": name, "m": m, "k": k, "n": n, "flop": flop}
        row["bf16_s"] = timed(torch, lambda a=a, b=b: torch.mm(a, b.t()), repeats)
        if cuda:
            a8 = a.to(torch.float8_e4m3fn)
            b8 = b.to(torch.float8_e4m3fn)
            one = torch.ones((), device=device, dtype=torch.float32)
            for fast in (True, False):
                try:
                    row[f"fp8_{'fast' if fast else 'split'}_s"] = timed(
                        torch, lambda a8=a8, b8=b8, fast=fast, one=one: torch._scaled_mm(
                            a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast),
                        repeats)
                except Exception as err:  # shapes the fp8 kernel refuses are recorded, not fatal
                    row[f"fp8_{'fast' if fast else 'split'}_error"] = f"{type(err).__name__}: {err}"[:200]
        for key in [k for k in row if k.endswith("_s")]:
            row[key.removesuffix("_s") + "_flop_per_s"] = flop / row[key]
        rows.append(row)
        print(json.dumps({k: (round(v / 1e12, 1) if k.endswith("flop_per_s") else v) for k, v in row.items()
                          if k.endswith("flop_per_s") or not k.endswith("_s")}), flush=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
                   "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
