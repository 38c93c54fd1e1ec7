"""Time of a whole-catalog plan for a 235B MoE model: qwen3-235b-a22b on 1T tokens, up to 4,096 GPUs,
searching ep and etp with the rest of the layout (target: under 2 s on 2 cores).

Run: python benchmarks/plan_speed_moe.py [--repeats 3] [--model ID]
The catalog is loaded once before timing (its YAML parsing is a one-off per process).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from rigplan.catalog.load import load_catalog
from rigplan.flow.plan import plan
from rigplan.flow.request import PlanRequest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="qwen3-235b-a22b")
    args = parser.parse_args()
    load_catalog()
    request = PlanRequest(model=args.model, tokens="1T", gpus_max=4096)
    times, cpu = [], []
    result = None
    for _ in range(args.repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = plan(request)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert result is not None
    stats = result.stats
    best = result.ranked[0] if result.ranked else None
    print(f"cores: {os.cpu_count()}; model {args.model}; GPU types: {stats['gpu_types']}; "
          f"layouts evaluated: {stats['evaluated']:,}; fit in memory: {stats['feasible']:,}")
    if best is not None:
        print(f"best: {best.gpus} x {best.gpu}, layout {best.layout}")
    print(f"whole-catalog plan: median {statistics.median(times):.2f} s, min {min(times):.2f} s "
          f"over {args.repeats} runs ({stats['evaluated'] / statistics.median(times):,.0f} layouts/s); "
          f"CPU time median {statistics.median(cpu):.2f} s (wall time includes other processes on a shared machine)")


if __name__ == "__main__":
    main()
