"""The MoE suite's tokens/s error against rigplan's own host load, in finer bins than the accuracy line's three bands.

The host load is the host's time to issue one micro-batch's ops over that micro-batch's GPU time on the pacing rank
(estimate.moe_host.HostTiming.load; breakdown.host_load in --json). Rows under a full-iteration CUDA graph have none
and are left out. Errors are rigplan's tokens/s over the measured, minus one (positive: rigplan too fast). With
--soft-max P the rows are also read as if each step were (G^P + H^P)^(1/P) instead of max(G, H), a whole-step
reckoning (the host load applied to the whole step) of a change rigplan does not make: its exponent would be fitted
to this suite (docs/methodology/moe.md, 'Validation').

Usage: python benchmarks/moe_host_load_bins.py [--soft-max P ...]
"""

from __future__ import annotations

import argparse
import itertools
import statistics

from rigplan.validation.regimes import summarize_errors, tokens_error
from rigplan.validation.run import run_suite

EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0, float("inf"))


def soft_max_error(error: float, load: float, power: float) -> float:
    """The tokens/s error of a step stretched from max(G, H) to (G^p + H^p)^(1/p), H = load · G."""
    if load <= 0.0:
        return error
    ratio = min(load, 1.0 / load)
    return (1.0 + error) / (1.0 + ratio ** power) ** (1.0 / power) - 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soft-max", type=float, nargs="*", default=[], metavar="P")
    args = parser.parse_args()
    rows = [(r.detail.get("host_load", 0.0), e) for r in run_suite("moe")
            if (e := tokens_error(r)) is not None and r.regime.get("CUDA graphs") != "full iteration"]
    print(f"{len(rows)} MoE runs without a full-iteration CUDA graph")
    for low, high in itertools.pairwise(EDGES):
        errors = [e for load, e in rows if low <= load < high and load > 0.0]
        if errors:
            print(f"host load {low:.1f}-{high:.1f}: {len(errors):3d} runs, median error "
                  f"{statistics.median(errors):+6.1%}, beyond 35%: {sum(abs(e) > 0.35 for e in errors)}")
    everything = [(r.detail.get("host_load", 0.0), e) for r in run_suite("moe") if (e := tokens_error(r)) is not None]
    for power in [None, *args.soft_max]:
        errors = [e if power is None else soft_max_error(e, load, power) for load, e in everything]
        s = summarize_errors(errors)
        name = "as estimated" if power is None else f"soft max p={power:g}"
        print(f"whole suite, {name:14s}: {s.rows} runs, median |error| {s.median_abs:.1%}, "
              f"median {s.median_signed:+.1%}, beyond 35%: {s.beyond_35_fast} too fast, {s.beyond_35_slow} too slow")


if __name__ == "__main__":
    main()
