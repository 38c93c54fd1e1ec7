"""Wall time of one `rigplan memory` answer from a fresh process (what a user waits for), and where it goes.

    python benchmarks/cli_startup.py [--runs 7]

Prints the median wall time (and CPU time) of `rigplan memory llama-3.1-8b --gpu h100-sxm` with a warm
cache (catalog/cache.py: the catalog's domain values and the request field table of flow/fields.py;
every run after the first) and with a cold one (a fresh cache folder each run: YAML, pydantic), of
`rigplan --help`, of a bare Python start, of importing click + rich alone (the floor the memory path
cannot go under while it uses them) and of click + rich + numpy (what the path cost while one layout's
estimate used numpy; numpy's OpenBLAS with one thread, as the CLI starts it), whether the command
imported pydantic, YAML or numpy, and the slowest imports of the command (python -X importtime:
cumulative top-level, and the largest own times). The target for `rigplan memory` is under 0.15 s on
an idle machine.

Bytecode: as an installed package has it. When PYTHONDONTWRITEBYTECODE is set, the runs use a
temporary PYTHONPYCACHEPREFIX instead (compiled once, before timing), so that source compilation is
not counted. Machines shared with other work are noisy: compare the figures of one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

COMMAND = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm"]
ENTRY = "from rigplan.cli.main import main; main()"


FLOOR = "import click, rich.console, rich.table"
WITH_NUMPY = FLOOR + ", numpy"


def wall_s(args: list[str], runs: int, env: dict[str, str], fresh_cache: bool = False) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of `args` run `runs` times."""
    walls, cpus = [], []
    for _ in range(runs):
        run_env = dict(env)
        with tempfile.TemporaryDirectory() as folder:
            if fresh_cache:
                run_env["RIGPLAN_CACHE_DIR"] = folder
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=run_env)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def import_times(env: dict[str, str]) -> list[tuple[int, int, str]]:
    """(own us, cumulative us, indented name) of every import of the memory command (python -X importtime)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY, *COMMAND], check=True, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    rows = []
    for line in out.splitlines():
        if line.startswith("import time:") and "|" in line:
            own, cumulative, name = line.removeprefix("import time:").split("|")
            if cumulative.strip().isdigit():
                rows.append((int(own), int(cumulative), name.rstrip()))
    return rows


def with_bytecode(env: dict[str, str], pycache: str) -> dict[str, str]:
    """`env` with Python's bytecode kept as an installed package keeps it: where PYTHONDONTWRITEBYTECODE is set, the
    compiled modules go to `pycache` (PYTHONPYCACHEPREFIX) instead, so that a run after the first one does not
    compile the sources again."""
    env = dict(env)
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as pycache, tempfile.TemporaryDirectory() as catalog_cache:
        env["RIGPLAN_CACHE_DIR"] = catalog_cache  # this run's own: other processes cannot evict it
        env = with_bytecode(env, pycache)
        memory = [sys.executable, "-c", ENTRY, *COMMAND]
        subprocess.run(memory, check=True, stdout=subprocess.DEVNULL, env=env)  # bytecode and catalog cache
        python_s, _ = wall_s([sys.executable, "-c", "pass"], runs, env)
        floor_s, floor_cpu_s = wall_s([sys.executable, "-c", FLOOR], runs, env)
        # numpy as the CLI imports it: OpenBLAS with one thread (rigplan.cli.main.one_blas_thread).
        numpy_s, numpy_cpu_s = wall_s([sys.executable, "-c", WITH_NUMPY], runs, {"OPENBLAS_NUM_THREADS": "1", **env})
        help_s, _ = wall_s([sys.executable, "-c", ENTRY, "--help"], runs, env)
        warm_s, warm_cpu_s = wall_s(memory, runs, env)
        cold_s, _ = wall_s(memory, runs, env, fresh_cache=True)
        print(f"python start (no imports): {python_s * 1000:.0f} ms")
        print(f"python -c '{FLOOR}': {floor_s * 1000:.0f} ms (CPU {floor_cpu_s * 1000:.0f} ms)")
        print(f"python -c '{WITH_NUMPY}': {numpy_s * 1000:.0f} ms (CPU {numpy_cpu_s * 1000:.0f} ms)")
        print(f"rigplan --help: {help_s * 1000:.0f} ms")
        print(f"rigplan {' '.join(COMMAND)}: {warm_s * 1000:.0f} ms median of {runs} (CPU {warm_cpu_s * 1000:.0f} ms; "
              f"target < 150 ms); cold cache: {cold_s * 1000:.0f} ms")
        rows = import_times(env)
        names = {name.strip().split(".")[0] for _, _, name in rows}
        print(f"imports pydantic: {'pydantic' in names}; imports yaml: {'yaml' in names}; "
              f"imports numpy: {'numpy' in names}")
        print("slowest top-level imports (cumulative, warm cache):")
        for _, cumulative, name in sorted((r for r in rows if not r[2].startswith("  ")), key=lambda r: -r[1])[:8]:
            print(f"  {cumulative / 1000:7.1f} ms  {name.strip()}")
        print("largest own import times (warm cache):")
        for own, _, name in sorted(rows, key=lambda r: -r[0])[:10]:
            print(f"  {own / 1000:7.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
