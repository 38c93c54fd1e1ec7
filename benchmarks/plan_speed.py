"""Time of a whole-catalog plan: gpt-3-175b on 300B tokens, up to 4,096 GPUs (target: under 2 s on 2 cores).

Run: python benchmarks/plan_speed.py [--repeats 3]
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
    args = parser.parse_args()
    load_catalog()
    request = PlanRequest(model="gpt-3-175b", tokens="300B", gpus_max=4096)
    times = []
    result = None
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = plan(request)
        times.append(time.perf_counter() - start)
    assert result is not None
    stats = result.stats
    print(f"cores: {os.cpu_count()}; GPU types: {stats['gpu_types']}; layouts evaluated: {stats['evaluated']:,}; "
          f"fit in memory: {stats['feasible']:,}")
    print(f"whole-catalog plan: median {statistics.median(times):.2f} s, min {min(times):.2f} s "
          f"over {args.repeats} runs ({stats['evaluated'] / statistics.median(times):,.0f} layouts/s)")


if __name__ == "__main__":
    main()
