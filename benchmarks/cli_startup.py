"""Wall time of one `rigplan memory` answer from a fresh process (what a user waits for), and where it goes.

    python benchmarks/cli_startup.py [--runs 7]

Prints the median wall time of `rigplan memory llama-3.1-8b --gpu h100-sxm` with a warm catalog cache
(catalog/cache.py; every run after the first) and with a cold one (a fresh cache folder each run), of
`rigplan --help`, of a bare Python start and of importing click + rich + numpy + pydantic alone (the
floor the memory path cannot go under while it uses them), and the slowest imports of the command
(python -X importtime). The target for `rigplan memory` is under 0.15 s on an idle machine.

Bytecode: as an installed package has it. When PYTHONDONTWRITEBYTECODE is set, the runs use a
temporary PYTHONPYCACHEPREFIX instead (compiled once, before timing), so that source compilation is
not counted. Machines shared with other work are noisy: compare the figures of one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

COMMAND = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm"]
ENTRY = "from rigplan.cli.main import main; main()"


FLOOR = "import click, rich.console, rich.table, numpy, pydantic"


def wall_s(args: list[str], runs: int, env: dict[str, str], fresh_cache: bool = False) -> float:
    times = []
    for _ in range(runs):
        run_env = dict(env)
        with tempfile.TemporaryDirectory() as folder:
            if fresh_cache:
                run_env["RIGPLAN_CACHE_DIR"] = folder
            started = time.perf_counter()
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=run_env)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def slowest_imports(env: dict[str, str], limit: int = 10) -> list[tuple[float, str]]:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY, *COMMAND], check=True, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    rows = []
    for line in out.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.removeprefix("import time:").split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative) / 1e6, name.rstrip()))
    top_level = [r for r in rows if not r[1].startswith("  ")]
    return sorted(top_level, reverse=True)[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as pycache, tempfile.TemporaryDirectory() as catalog_cache:
        env["RIGPLAN_CACHE_DIR"] = catalog_cache  # this run's own: other processes cannot evict it
        if env.pop("PYTHONDONTWRITEBYTECODE", None):
            env["PYTHONPYCACHEPREFIX"] = pycache
        memory = [sys.executable, "-c", ENTRY, *COMMAND]
        subprocess.run(memory, check=True, stdout=subprocess.DEVNULL, env=env)  # bytecode and catalog cache
        python_s = wall_s([sys.executable, "-c", "pass"], runs, env)
        floor_s = wall_s([sys.executable, "-c", FLOOR], runs, env)
        help_s = wall_s([sys.executable, "-c", ENTRY, "--help"], runs, env)
        warm_s = wall_s(memory, runs, env)
        cold_s = wall_s(memory, runs, env, fresh_cache=True)
        print(f"python start (no imports): {python_s * 1000:.0f} ms")
        print(f"python -c '{FLOOR}': {floor_s * 1000:.0f} ms")
        print(f"rigplan --help: {help_s * 1000:.0f} ms")
        print(f"rigplan {' '.join(COMMAND)}: {warm_s * 1000:.0f} ms median of {runs} (target < 150 ms); "
              f"cold catalog cache: {cold_s * 1000:.0f} ms")
        print("slowest top-level imports (cumulative, warm cache):")
        for seconds, name in slowest_imports(env):
            print(f"  {seconds * 1000:7.0f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
