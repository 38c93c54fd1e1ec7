"""The frontier dense suite: 2025 runs on H100, H200, B200, GB200 and GB300 that are not in the shared set.

Each case: |predicted / measured - 1| <= 0.15 (or a known gap naming the unmodelled effect), and each
group's median |error| and median signed error within the throughput group limits. `rigplan validate --suite
frontier` prints them.
"""

from __future__ import annotations

import statistics

import pytest
from published_cases import check_published_case

from rigplan.validation.frontier_suite import evaluate_frontier_case
from rigplan.validation.run import (
    SUITES,
    THROUGHPUT_CASE_TOLERANCE,
    THROUGHPUT_GROUP_MEDIAN_LIMIT,
    THROUGHPUT_GROUP_SIGNED_LIMIT,
    load_case_file,
)

CASE_FILE = load_case_file(SUITES["frontier"].default_file)
CASES = list(CASE_FILE.cases)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_frontier_case(case) -> None:  # type: ignore[no-untyped-def]
    check_published_case(evaluate_frontier_case(case), case, "frontier", THROUGHPUT_CASE_TOLERANCE)


def test_group_medians() -> None:
    errors: dict[str, list[float]] = {}
    for case in CASES:
        result = evaluate_frontier_case(case)
        assert result.error is not None
        errors.setdefault(case.group, []).append(result.error)
    for group, values in errors.items():
        assert statistics.median(map(abs, values)) <= THROUGHPUT_GROUP_MEDIAN_LIMIT, group
        assert abs(statistics.median(values)) <= THROUGHPUT_GROUP_SIGNED_LIMIT, (group, statistics.median(values))


def test_every_case_keeps_its_source_and_printed_row() -> None:
    assert len(CASES) >= 10 and {c.group for c in CASES} == {"megatron_bridge_25_11_dense", "torchtitan_h200_2025_06"}
    for case in CASES:
        assert case.source.url and case.source.url.startswith("https://"), case.id
        assert str(int(case.measured.value)) in case.measured.as_printed.replace(",", ""), case.id
        assert case.request.global_batch and case.request.gpus and case.notes, case.id
    for row in CASE_FILE.skipped:
        assert row.reason.strip()
