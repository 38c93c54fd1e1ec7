"""Blackwell's NVFP4 GEMM rate from torchao's B200 matmul benchmark (bf16 and NVFP4 timed in one harness).

pytorch/ao PR #2427 (2025-06-23) prints `python benchmarks/float8/bench_matmul.py --recipe nvfp4` on one
B200 (peaks taken as bf16 2.25e15, fp4 9.00e15): square GEMMs M = K = N from 1,024 to 8,192, each timed in
bf16 (torch.mm) and in NVFP4 (torch._scaled_mm on pre-quantized E2M1 data with E4M3 block scales), with its
fraction of the part's peak. The rows are transcribed below.

A straight line t = flops / R + t0 fits each format over the rows with d >= 2,048: NVFP4 runs at R = 0.61
of its 9 PFLOP/s with a fixed ~5 us per call, bf16 at 0.63 of its 2.25 PFLOP/s with ~1-2 us. So:

- rigplan's NVFP4 ceiling (estimate.efficiency.BLACKWELL.fp4_gemm_max) is the bf16 ceiling times the ratio of
  the two sustained fractions, 0.97 (0.946 at the two largest sizes, where the fixed cost is 2-3% of the time);
- its NVFP4 curve keeps Blackwell's half-efficiency dimension: the extra ~4 us a call is what makes the small
  rows fall off, and at a training step's GEMMs (8,192 tokens by a hidden size of 5,120-16,384: 0.4-3 ms each)
  it is under 1% of their time; it is left out.

Run: python benchmarks/nvfp4_gemm_fit.py
"""

from __future__ import annotations

ROWS = (  # M = K = N, bf16 fraction of 2.25e15, nvfp4 fraction of 9.00e15 (pytorch/ao #2427)
    (1024, 0.188, 0.041),
    (1536, 0.410, 0.120),
    (2048, 0.503, 0.187),
    (3072, 0.672, 0.390),
    (4096, 0.627, 0.495),
    (6144, 0.646, 0.611),
    (8192, 0.631, 0.597),
)
BF16_PEAK = 2.25e15
FP4_PEAK = 9.00e15
FIT_FROM = 2048


def seconds(d: int, fraction: float, peak: float) -> float:
    return 2.0 * d**3 / (fraction * peak)


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares t = flops / rate + t0: (rate, t0)."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return 1.0 / slope, mean_y - slope * mean_x


def fits() -> dict[str, tuple[float, float]]:
    rows = [r for r in ROWS if r[0] >= FIT_FROM]
    bf16 = line_fit([(2.0 * d**3, seconds(d, b, BF16_PEAK)) for d, b, _ in rows])
    fp4 = line_fit([(2.0 * d**3, seconds(d, f, FP4_PEAK)) for d, _, f in rows])
    return {"bf16": bf16, "nvfp4": fp4}


def sustained_ratio() -> float:
    """NVFP4's sustained fraction of its peak over bf16's, from the line fits."""
    f = fits()
    return (f["nvfp4"][0] / FP4_PEAK) / (f["bf16"][0] / BF16_PEAK)


def main() -> None:
    for name, (rate, t0) in fits().items():
        peak = FP4_PEAK if name == "nvfp4" else BF16_PEAK
        print(f"{name:6s} sustained {rate / 1e15:5.2f} PFLOP/s = {rate / peak:.3f} of peak, "
              f"fixed {t0 * 1e6:4.1f} us a call")
    print(f"NVFP4 / bf16 sustained fraction: {sustained_ratio():.3f}; at the two largest sizes: "
          f"{sum(f / b for _, b, f in ROWS[-2:]) / 2:.3f}")
    (rate, t0) = fits()["nvfp4"]
    print(f"{'d':>6} {'nvfp4 us':>9} {'line us':>8}")
    for d, _, fp4 in ROWS:
        print(f"{d:6d} {seconds(d, fp4, FP4_PEAK) * 1e6:9.1f} {(2.0 * d**3 / rate + t0) * 1e6:8.1f}")


if __name__ == "__main__":
    main()
