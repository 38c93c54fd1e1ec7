"""Blackwell's fp8 GEMM ceiling raised to bf16's, over every throughput suite (docs/methodology/moe.md, the
thirteenth try: not applied).

rigplan's Blackwell fp8 ceiling (estimate.efficiency.BLACKWELL.fp8_gemm_max, 0.70 of the fp8 peak) is Hopper's; its
bf16 one is 0.78. OpenXLA's sm_100 matmul table puts fp8 at the same fraction of its (twice as high) peak as bf16 on
its largest GEMM (0.729), which would argue for 0.78 on both. The variant sets the fp8 ceiling and the grouped
experts' fp8 half dimension (refitted to the two MXFP8 / BF16 pairs at that ceiling: python
benchmarks/fp8_grouped_half_dim.py gives 2,970 at 0.70 and 3,465 at 0.78, the ceiling patched in) and prints each
suite's rows, median |error|, median error and failures in validate's convention, and the MoE suite's out-of-sample
figures in tokens/s.

Run: python benchmarks/blackwell_fp8_ceiling_variant.py [CEILING HALF_DIM]   (default 0.78 3465; 0.70 3000 is the
model as it is)
"""

from __future__ import annotations

import statistics
import sys

from rigplan.estimate import efficiency
from rigplan.validation.regimes import out_of_sample, summarize_errors, tokens_error
from rigplan.validation.run import run_suite

SUITES = ("throughput", "frontier", "dense_oos", "moe")


def main() -> None:
    ceiling, half_dim = (float(sys.argv[1]), float(sys.argv[2])) if len(sys.argv) == 3 else (0.78, 3465.0)
    blackwell = efficiency.BLACKWELL
    as_is = (blackwell.fp8_gemm_max, blackwell.fp8_grouped_half_dim)
    object.__setattr__(blackwell, "fp8_gemm_max", ceiling)  # the family record is shared by every Blackwell part
    object.__setattr__(blackwell, "fp8_grouped_half_dim", half_dim)
    try:
        print(f"Blackwell fp8 ceiling {ceiling:.2f}, grouped fp8 half dimension {half_dim:,.0f} "
              f"(as it is: {as_is[0]:.2f}, {as_is[1]:,.0f})")
        for suite in SUITES:
            results = [r for r in run_suite(suite) if r.error is not None]
            errors = [r.error for r in results]
            failed = sum(1 for r in results if r.status == "fail")
            print(f"{suite:10s} rows {len(errors):3d}  median |error| {statistics.median(map(abs, errors)):6.1%}  "
                  f"median {statistics.median(errors):+6.1%}  fail {failed}")
            if suite == "moe":
                oos = summarize_errors([e for r in results if out_of_sample(r) if (e := tokens_error(r)) is not None])
                print(f"{'':10s} out of sample, tokens/s: median |error| {oos.median_abs:.1%}, signed "
                      f"{oos.median_signed:+.1%}, beyond 35% {oos.beyond_35_fast} too fast, {oos.beyond_35_slow} slow")
    finally:
        object.__setattr__(blackwell, "fp8_gemm_max", as_is[0])
        object.__setattr__(blackwell, "fp8_grouped_half_dim", as_is[1])


if __name__ == "__main__":
    main()
