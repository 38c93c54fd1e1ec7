"""Time of a whole-catalog plan for a 235B MoE model: qwen3-235b-a22b on 1T tokens, up to 4,096 GPUs,
searching ep and etp with the rest of the layout (target: under 2 s on 2 cores).

Run: python benchmarks/plan_speed_moe.py [--repeats 3] [--model ID] [--cli 3]
The catalog is loaded once before timing (its YAML parsing is a one-off per process), and the first plan of the
process is timed with the rest, so the median is a warm plan's. With --cli N it also times N runs of the command
itself, `rigplan plan MODEL --tokens 1T --gpus-max 4096 --json`, each in a fresh process: what a user waits for,
interpreter start, imports, the catalog's records and the first plan's one-off work included (with bytecode, as an
installed package has it: cli_startup.with_bytecode).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from cli_startup import ENTRY, wall_s, with_bytecode

from rigplan.catalog.load import load_catalog
from rigplan.flow.plan import plan
from rigplan.flow.request import PlanRequest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="qwen3-235b-a22b")
    parser.add_argument("--cli", type=int, default=0, help="Also time this many fresh-process runs of the command.")
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
    if args.cli:
        command = [sys.executable, "-c", ENTRY, "plan", args.model, "--tokens", "1T", "--gpus-max", "4096", "--json"]
        with tempfile.TemporaryDirectory() as pycache:
            env = with_bytecode(dict(os.environ), pycache)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)  # compiles the bytecode once
            wall, cpu_s = wall_s(command, args.cli, env)
        print(f"`rigplan plan {args.model} --tokens 1T --gpus-max 4096 --json` in a fresh process: median {wall:.2f} s "
              f"over {args.cli} runs (CPU {cpu_s:.2f} s)")


if __name__ == "__main__":
    main()
