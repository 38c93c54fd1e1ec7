"""How many step-time estimates per second rigplan computes: one scalar call, and a numpy batch.

Run: python benchmarks/estimator_speed.py [--layouts 100000]
Prints estimates per second for each mode and the ratio; machines are noisy, so compare the
figures of one run, not across runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.step import step_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=200, help="scalar calls to time")
    args = parser.parse_args()
    catalog = load_catalog()
    arch = catalog.model("llama-3.1-70b").to_domain()
    gpu = catalog.gpu("h100-sxm").to_domain()
    job = Job(seq_len=8192, micro_batch=1, recompute="selective")
    layout = Layout(tp=8, pp=4, dp=32, sequence_parallel=True)

    start = time.perf_counter()
    for _ in range(args.repeats):
        step_time(arch, job, layout, gpu, global_batch=512)
    scalar_rate = args.repeats / (time.perf_counter() - start)

    rng = np.random.default_rng(0)
    n = args.layouts
    tp = rng.choice([1, 2, 4, 8], n)
    pp = rng.choice([1, 2, 4, 8, 16], n)
    dp = rng.choice([1, 2, 4, 8, 16, 32, 64], n)
    cp = rng.choice([1, 2], n)
    mb = rng.choice([1, 2, 4], n)
    vpp = rng.choice([1, 2], n)
    zero = rng.choice([0, 1, 3], n)
    start, start_cpu = time.perf_counter(), time.process_time()
    result = step_time(arch, job, layout, gpu, global_batch=mb * dp * 16, tp=tp, pp=pp, dp=dp, cp=cp, vpp=vpp,
                       micro_batch=mb, zero=zero)
    batch_s, batch_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
    assert np.all(np.isfinite(result.step_time_s)) and result.step_time_s.shape == (n,)
    batch_rate = n / batch_s
    print(f"scalar: {scalar_rate:,.0f} estimates/s ({1e3 / scalar_rate:.2f} ms each)")
    print(f"batch of {n:,} layouts: {batch_rate:,.0f} estimates/s ({batch_s:.3f} s); by CPU time "
          f"{n / batch_cpu_s:,.0f} estimates/s ({batch_cpu_s:.3f} s; wall time includes other processes)")
    print(f"batch / scalar: {batch_rate / scalar_rate:,.0f}x")


if __name__ == "__main__":
    main()
