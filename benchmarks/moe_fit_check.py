"""Which published runs of the out-of-sample suites rigplan says do not fit in memory (every one of them ran).

Each case of the MoE suite and of the out-of-sample dense suite (dense_oos) is estimated as the suite runs it; a
run whose predicted peak is over the GPU's usable memory is listed, marked 'borderline' when it is within
rigplan's memory uncertainty.

Run: python benchmarks/moe_fit_check.py
"""

from __future__ import annotations

from rigplan.flow.estimate import estimate
from rigplan.validation.run import SUITES, load_case_file


def check(suite: str) -> None:
    cases = load_case_file(SUITES[suite].default_file).cases
    over = beyond = 0
    for case in cases:
        memory = estimate(case.request).to_dict(with_advice=False)["memory"]
        if memory["fits"]:
            continue
        over += 1
        borderline = bool(memory["fit"]["borderline"])
        beyond += not borderline
        print(f"{case.id:50s} needs {memory['per_gpu']['total_bytes'] / 2**30:7.1f} of "
              f"{memory['gpu']['usable_bytes'] / 2**30:6.1f} GiB{' (borderline)' if borderline else ''}")
    print(f"{suite}: {over} of {len(cases)} published runs predicted not to fit; "
          f"{beyond} beyond the memory uncertainty")


def main() -> None:
    for suite in ("moe", "dense_oos"):
        check(suite)


if __name__ == "__main__":
    main()
