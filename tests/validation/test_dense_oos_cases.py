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


def test_gb200_dense_note_states_the_suites_as_they_are() -> None:
    """The figures GB200_DENSE_EVIDENCE quotes are those of the frontier and dense_oos cases whose estimate shows it,
    and the GB300 figure is the median of the same tables' GB300 cases (NVFP4 rows aside)."""
    import statistics

    from rigplan.flow import estimate as speed
    from rigplan.validation.frontier_suite import evaluate_frontier_case

    def tokens_error(case, evaluate) -> float:  # type: ignore[no-untyped-def]
        result = evaluate(case)
        assert result.error is not None
        return 1.0 / (1.0 + result.error) - 1.0 if case.compare == "step_time_s" else result.error

    shown, gb300 = [], []
    for suite, evaluate in (("frontier", evaluate_frontier_case), ("dense_oos", evaluate_dense_oos_case)):
        for case in load_case_file(SUITES[suite].default_file).cases:
            if speed.GB200_DENSE_EVIDENCE in speed.estimate(case.request).setup.assumptions:
                shown.append(tokens_error(case, evaluate))
            elif case.request.gpu == "gb300" and case.request.fp8_recipe != "nvfp4":
                gb300.append(tokens_error(case, evaluate))
    assert len(shown) == 36
    assert round(-min(shown) * 100) == 3 and round(max(shown) * 100) == 22
    assert round(statistics.median(shown) * 100) == 11
    assert round(-statistics.median(gb300) * 100) == 6


def test_gb200_dense_note_is_not_shown_for_moe_nvfp4_or_other_parts() -> None:
    from rigplan.flow import estimate as speed
    from rigplan.flow.request import EstimateRequest

    base = {"gpu": "gb200", "gpus": 8, "precision": "fp8", "seq": 4096, "micro_batch": 1, "global_batch": 64,
            "framework": "megatron"}
    shown = speed.estimate(EstimateRequest(model="llama-3.1-8b", **base)).setup.assumptions
    assert speed.GB200_DENSE_EVIDENCE in shown
    for changed in ({"model": "qwen3-30b-a3b"}, {"model": "llama-3.1-8b", "fp8_recipe": "nvfp4"},
                    {"model": "llama-3.1-8b", "gpu": "b200"}, {"model": "llama-3.1-8b", "kernels": "eager"}):
        request = EstimateRequest(**{**base, **changed})
        assert speed.GB200_DENSE_EVIDENCE not in speed.estimate(request).setup.assumptions, changed
