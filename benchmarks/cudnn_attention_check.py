"""rigplan's cuDNN attention curves against NVIDIA's own cuDNN 9.19 training benchmark on H200, GB200 and GB300.

NVIDIA/cudnn-frontend runs its SDPA training benchmark (benchmark/sdpa_benchmark_training) per release and commits
the results; results/{h200,gb200,gb300}_919_only_cudnn/ hold cuDNN 9.19 (backend 91901, 2026-02-26/27) on two model
shapes, batch 1, causal (top_left; FLOPs counted for the causal half, 4·h·s²·d / 2 forward, 2.5x that backward):

- llama3.1: 64 query heads, 8 key-value heads, head dim 128 (llama3.1_20260226_174648.csv on GB200,
  ..._185510.csv on GB300, llama3.1_20260227_034703.csv on H200);
- dsv3: DeepSeek-V3's MLA core, 128 heads, query-key head dim 192, value head dim 128 (dsv3_20260226_174854.csv,
  ..._185831.csv, dsv3_20260227_034744.csv; H200 ran bf16 only up to 8k and no fp8 backward at head dim 192).

MEASURED holds (forward, backward) TFLOP/s per (part, shape, dtype, sequence). rigplan weighs a kernel's forward and
backward by their FLOPs, 1 : 2.5, so a row's rate is 3.5 / (1/forward + 2.5/backward). The script prints, per part
and shape, that rate as a fraction of the part's bf16 peak beside rigplan's cuDNN curve for the part (its
attention_efficiency, softmax adjustment and sustained-clock scale, head dim as rigplan reads the model), the least-
squares fit of e_max · s / (s + s_half) to the GB200 llama3.1 rows (the numbers in efficiency._CUDNN_GB200), and the
fp8 / bf16 gains (efficiency.CUDNN_BLACKWELL_FP8_GAIN).

Run: python benchmarks/cudnn_attention_check.py
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from rigplan.catalog.load import load_catalog
from rigplan.estimate.efficiency import (
    attention_efficiency,
    attention_flop_per_exp,
    clock_fraction,
    efficiency_for,
    softmax_adjusted_efficiency,
)

SEQS = (2048, 4096, 8192, 16384, 32768)
MEASURED: dict[tuple[str, str, str], tuple[tuple[float, float] | None, ...]] = {
    ("gb200", "llama3.1", "bf16"): ((1042, 836), (1335, 1132), (1598, 1311), (1687, 1402), (1720, 1473)),
    ("gb200", "llama3.1", "fp8"): ((1286, 897), (1707, 1229), (1987, 1478), (2135, 1626), (2210, 1705)),
    ("gb200", "dsv3", "bf16"): ((1065, 880), (1350, 1108), (1527, 1248), (1740, 1317), (1815, 1289)),
    ("gb200", "dsv3", "fp8"): ((1455, 1088), (1917, 1365), (2227, 1573), (2457, 1723), (2599, 1780)),
    ("gb300", "llama3.1", "bf16"): ((1266, 906), (1672, 1195), (1887, 1385), (1968, 1490), (2014, 1549)),
    ("gb300", "llama3.1", "fp8"): ((1636, 945), (2324, 1309), (2780, 1590), (3019, 1759), (3129, 1852)),
    ("gb300", "dsv3", "bf16"): ((1165, 912), (1515, 1158), (1776, 1316), (1948, 1393), (2047, 1403)),
    ("gb300", "dsv3", "fp8"): ((1603, 1175), (2410, 1493), (2890, 1740), (3215, 1953), (3389, 2048)),
    ("h200-sxm", "llama3.1", "bf16"): ((484, 370), (591, 474), (644, 541), (673, 579), (688, 581)),
    ("h200-sxm", "llama3.1", "fp8"): ((698, 393), (854, 471), (964, 430), (1010, 374), (1042, 370)),
    ("h200-sxm", "dsv3", "bf16"): ((522, 352), (599, 404), (643, 442), None, None),
}
"""(forward, backward) TFLOP/s at SEQS, causal; None where the benchmark ran out of memory or did not run."""
HEADS = {"llama3.1": (128.0, 128.0), "dsv3": (192.0, 128.0)}
"""(query-key, value) head dims of each shape."""


def combined(forward: float, backward: float) -> float:
    """Forward and backward weighted by their FLOPs, 1 : 2.5."""
    return 3.5 / (1.0 / forward + 2.5 / backward)


def fractions(part: str, shape: str, dtype: str, peak_tflops: float) -> list[float | None]:
    return [combined(*row) / peak_tflops if row else None for row in MEASURED[(part, shape, dtype)]]


def fit_curve(seqs: list[float], values: list[float]) -> tuple[float, float]:
    """Least squares in log space of e_max · s / (s + s_half) over a grid of s_half (e_max closed-form)."""
    best = (math.inf, 0.0, 0.0)
    for half in np.arange(100.0, 5000.0, 1.0):
        shape = [s / (s + half) for s in seqs]
        log_top = statistics.fmean(math.log(v / g) for v, g in zip(values, shape, strict=True))
        err = sum((math.log(v) - log_top - math.log(g)) ** 2 for v, g in zip(values, shape, strict=True))
        if err < best[0]:
            best = (err, math.exp(log_top), float(half))
    return best[1], best[2]


def rigplan_fraction(gpu_id: str, seq: float, shape: str) -> float:
    gpu = load_catalog().gpu_domain(gpu_id)
    eff = efficiency_for(gpu)
    curve = eff.attention["cudnn"]
    e = attention_efficiency(eff, "cudnn", seq, HEADS[shape][1])
    e = softmax_adjusted_efficiency(e, curve, peak_flop_per_s=gpu.peak("bf16"), exp_per_s=gpu.exp_per_s,
                                    flop_per_exp=attention_flop_per_exp(*HEADS[shape]))
    return float(e) * clock_fraction(gpu)


def main() -> None:
    catalog = load_catalog()
    peaks = {part: catalog.gpu_domain(part).peak("bf16") / 1e12 for part in ("gb200", "gb300", "h200-sxm")}
    top, half = fit_curve([float(s) for s in SEQS], fractions("gb200", "llama3.1", "bf16", peaks["gb200"]))  # type: ignore[arg-type]
    print(f"GB200 llama3.1 bf16 fit: e_max {top:.3f}, s_half {half:,.0f}")
    for part, shape in (("h200-sxm", "llama3.1"), ("h200-sxm", "dsv3"), ("gb200", "llama3.1"), ("gb200", "dsv3"),
                        ("gb300", "llama3.1"), ("gb300", "dsv3")):
        print(f"{part} {shape} (fraction of the {peaks[part]:,.1f} TFLOP/s bf16 peak, forward + backward)")
        print("     seq  measured  rigplan   ratio")
        for seq, measured in zip(SEQS, fractions(part, shape, "bf16", peaks[part]), strict=True):
            if measured is None:
                continue
            predicted = rigplan_fraction(part, seq, shape)
            print(f"  {seq:6,d}  {measured:8.3f}  {predicted:7.3f}  {predicted / measured:6.3f}")
    gains = []
    for part in ("gb200", "gb300"):
        for shape in ("llama3.1", "dsv3"):
            for seq, bf16, fp8 in zip(SEQS, MEASURED[(part, shape, "bf16")], MEASURED[(part, shape, "fp8")],
                                      strict=True):
                if bf16 and fp8 and 4096 <= seq <= 16384:
                    gains.append(combined(*fp8) / combined(*bf16))
    print(f"fp8 / bf16, forward + backward, GB200 and GB300, both shapes, sequence 4k-16k: median "
          f"{statistics.median(gains):.3f}, range {min(gains):.3f}-{max(gains):.3f} ({len(gains)} rows)")
    hopper = [combined(*f) / combined(*b) for s, b, f in zip(SEQS, MEASURED[("h200-sxm", "llama3.1", "bf16")],
                                                            MEASURED[("h200-sxm", "llama3.1", "fp8")], strict=True)
              if b and f and 4096 <= s <= 16384]
    print("fp8 / bf16 on the H200, llama3.1, 4k-16k: " + ", ".join(f"{g:.3f}" for g in hopper)
          + f"; median {statistics.median(hopper):.3f}")
    ratio = [combined(*b) / combined(*a) for a, b in zip(MEASURED[("gb200", "llama3.1", "bf16")],
                                                         MEASURED[("gb300", "llama3.1", "bf16")], strict=True)]
    print("GB300 / GB200, llama3.1 bf16, by sequence: " + ", ".join(f"{r:.3f}" for r in ratio)
          + f"; rigplan's sustained-clock ratio {clock_fraction(catalog.gpu_domain('gb300')):.3f}")


if __name__ == "__main__":
    main()
