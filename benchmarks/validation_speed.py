"""Wall time of each validation suite (`rigplan validate` runs them all): prints seconds per suite.

    python benchmarks/validation_speed.py [--repeat N]

A figure for people, not a test: machines are shared and noisy, so compare runs made in one go.
"""

from __future__ import annotations

import argparse
import statistics
import time

from rigplan.validation.run import SUITES, run_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per suite; the median is printed")
    args = parser.parse_args()
    for suite in SUITES:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            cases = run_suite(suite)
            times.append(time.perf_counter() - start)
        print(f"{suite:12s} {len(cases):4d} cases  median {statistics.median(times):6.2f} s  "
              f"(min {min(times):.2f} s over {args.repeat} runs)")


if __name__ == "__main__":
    main()
