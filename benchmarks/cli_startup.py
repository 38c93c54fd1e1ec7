"""Wall time of one `rigplan memory` answer from a fresh process (what a user waits for), and where it goes.

    python benchmarks/cli_startup.py [--runs 7]

Prints the median wall time of `rigplan memory llama-3.1-8b --gpu h100-sxm`, of a bare Python start
for reference, and the slowest imports of that command (python -X importtime). The target for
`rigplan memory` is under 0.15 s on an idle machine; commands are imported lazily (cli/main.py COMMANDS).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMAND = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm"]
ENTRY = "from rigplan.cli.main import main; main()"


def wall_s(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def slowest_imports(limit: int = 8) -> list[tuple[float, str]]:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY, *COMMAND], check=True,
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
    python_s = wall_s([sys.executable, "-c", "pass"], runs)
    memory_s = wall_s([sys.executable, "-c", ENTRY, *COMMAND], runs)
    print(f"python start (no imports): {python_s * 1000:.0f} ms")
    print(f"rigplan {' '.join(COMMAND)}: {memory_s * 1000:.0f} ms median of {runs} (target < 150 ms)")
    print("slowest top-level imports (cumulative):")
    for seconds, name in slowest_imports():
        print(f"  {seconds * 1000:7.0f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
