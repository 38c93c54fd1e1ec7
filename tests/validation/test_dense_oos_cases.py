"""The out-of-sample dense suite: NVIDIA's 2025-2026 tables (Megatron-Bridge 26.x, DGX Cloud Benchmarking, NeMo
25.0x) estimated before each row was added.

Each case: |predicted / measured - 1| <= 0.15, or a known gap naming what is not modelled; no group rule, so
the suite reports a bias instead of being tuned to hide it. `rigplan validate --suite dense_oos` prints them.
"""

from __future__ import annotations

import pytest
from published_cases import check_published_case

from rigplan.validation.frontier_suite import evaluate_dense_oos_case
from rigplan.validation.run import SUITES, THROUGHPUT_CASE_TOLERANCE, load_case_file, summarize_suites

CASE_FILE = load_case_file(SUITES["dense_oos"].default_file)
CASES = list(CASE_FILE.cases)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dense_oos_case(case) -> None:  # type: ignore[no-untyped-def]
    check_published_case(evaluate_dense_oos_case(case), case, "dense_oos", THROUGHPUT_CASE_TOLERANCE)


def test_every_case_keeps_its_source_printed_row_and_first_estimate() -> None:
    assert len(CASES) >= 60
    for case in CASES:
        assert case.source.url and case.source.url.startswith("https://"), case.id
        assert case.measured.as_printed.strip(), case.id
        assert case.request.global_batch and case.request.gpus, case.id
        first = [n for n in case.notes if n.startswith(("out of sample: estimated with rigplan as it stood before",
                                                         "out of sample: first estimated"))]
        assert len(first) == 1, f"{case.id}: every row records its first estimate"
    for row in CASE_FILE.skipped:
        assert row.reason.strip()


def test_the_suite_has_no_group_rule_and_reports_its_median() -> None:
    suite = SUITES["dense_oos"]
    assert suite.group_median_limit is None and suite.group_signed_limit is None and suite.suite_median_limit is None
    (summary,) = summarize_suites([evaluate_dense_oos_case(c) for c in CASES])
    assert summary.suite == "dense_oos" and summary.n == len(CASES) and summary.failed == 0
    assert summary.median_abs_error is not None and summary.median_abs_error < THROUGHPUT_CASE_TOLERANCE
