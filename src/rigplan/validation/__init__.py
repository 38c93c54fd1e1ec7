"""Validation of rigplan's estimators against published measurements.

Case files live in `cases/`, one file per suite (`memory.yaml`, `throughput.yaml`, `moe.yaml`,
`frontier.yaml`; a suite is registered in `run.SUITES`). Each case copies its source entry's
provenance, the request that reproduces the run, the measured value, and an a-priori tolerance set
from the source's reliability. `rigplan validate` prints the comparison; tests/validation asserts it.

The suites: memory_suite.py, throughput_suite.py, moe_suite.py, frontier_suite.py (what they share:
common.py); run.py runs and summarizes them, report.py writes docs/validation.md,
build_throughput_cases.py turns the published throughput tables into cases.

May import: api, flow, catalog, domain, files, units, errors.
"""

from rigplan.validation.run import (
    CaseResult,
    GroupSummary,
    load_case_file,
    run_cases,
    run_suite,
    summarize,
)

__all__ = ["CaseResult", "GroupSummary", "load_case_file", "run_cases", "run_suite", "summarize"]
