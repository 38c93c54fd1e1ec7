"""The MoE validation suite and the whole-run check of DeepSeek-V3's report.

Each case: |predicted / measured - 1| <= 0.25, or a known gap that names the unmodelled effect (and is
really outside tolerance, so a gap is dropped once the model covers it). The per-case errors are
printed by `rigplan validate --suite moe`.
"""

from __future__ import annotations

import pytest

from rigplan.validation.moe_suite import MOE_CASE_TOLERANCE, evaluate_moe_case
from rigplan.validation.run import SUITES, load_case_file

CASES = list(load_case_file(SUITES["moe"].default_file).cases)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_moe_case(case) -> None:  # type: ignore[no-untyped-def]
    result = evaluate_moe_case(case)
    assert result.status != "error", f"{case.id}: {result.message}"
    assert result.suite == "moe" and result.error is not None
    if case.known_gap is not None:
        assert abs(result.error) > MOE_CASE_TOLERANCE, f"{case.id}: within tolerance now; drop known_gap"
        pytest.xfail(f"known gap ({result.error:+.1%}): {case.known_gap}")
    assert abs(result.error) <= MOE_CASE_TOLERANCE, (
        f"predicted {result.predicted:,.4g} vs measured {case.measured.value:,.4g} {case.measured.unit}: "
        f"{result.error:+.1%}")


def test_every_case_is_a_moe_model_with_a_source() -> None:
    from rigplan.catalog.load import load_catalog

    catalog = load_catalog()
    for case in CASES:
        assert case.request.model and catalog.model(case.request.model).moe is not None, case.id
        assert case.source.url and case.source.url.startswith("https://"), case.id
