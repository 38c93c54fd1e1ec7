"""The memory validation suite: each published measurement against rigplan's prediction.

One test per case (the case id is the test id). A value case passes when |predicted / measured - 1|
is within the tolerance that its source's reliability fixes; an OOM case passes when rigplan's
predicted total does not fit in the GPU. Failures are findings about the estimator (or about a
case's mapping, documented in its notes): do not loosen tolerances to hide them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rigplan.catalog.load import load_catalog
from rigplan.errors import InvalidSpec
from rigplan.estimate.params import count_params
from rigplan.validation.run import (
    PACKAGE_DIR,
    SUITES,
    TOLERANCE_BY_RELIABILITY,
    CaseResult,
    MemoryCase,
    evaluate_memory_case,
    load_case_file,
    run_suite,
    summarize,
)

GiB = 2**30
CASE_PATH = SUITES["memory"].default_file
CASE_FILE = load_case_file(CASE_PATH)
CASES: list[MemoryCase] = list(CASE_FILE.cases)
SHARED = Path(__file__).resolve().parents[1] / "data" / "published"
"""The published rows, carried in the repository (tests/data/published/SOURCE.md)."""
VALIDATION_MODELS = PACKAGE_DIR / "models"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_memory_case(case: MemoryCase) -> None:
    result = evaluate_memory_case(case)
    assert result.status != "error", f"{case.id}: rigplan could not estimate it: {result.message}"
    predicted, error, limit = result.predicted, result.error, result.limit
    assert predicted is not None and error is not None
    if result.status == "gap":
        pytest.xfail(f"known gap ({error:+.1%}): {case.known_gap}")
    if case.expect == "oom":
        assert limit is not None
        assert predicted > limit, (
            f"published run went out of memory, but rigplan predicts {predicted / GiB:.2f} GiB total, "
            f"which fits in {limit / GiB:.2f} GiB usable ({error:+.1%})"
        )
        return
    measured, tolerance = case.measured.bytes, case.tolerance
    assert measured is not None and tolerance is not None
    assert abs(error) <= tolerance, (
        f"predicted {predicted / GiB:.2f} GiB ({case.compare}) vs measured {measured / GiB:.2f} GiB "
        f"({case.measured.kind}, printed {case.measured.as_printed}): error {error:+.1%}, tolerance {tolerance:.0%}"
    )


# --- the case file itself ---------------------------------------------------------------------------------------


def test_case_file_is_well_formed() -> None:
    assert CASE_FILE.suite == "memory"
    assert len(CASES) >= 60
    ids = [c.id for c in CASES] + [s.id for s in CASE_FILE.skipped]
    assert len(ids) == len(set(ids))
    for case in CASES:
        assert case.notes, f"{case.id}: every case documents its mapping"
        if case.expect == "value":
            assert case.tolerance == TOLERANCE_BY_RELIABILITY[case.reliability]
            assert case.compare in ("allocated_bytes", "reserved_bytes")
    for row in CASE_FILE.skipped:
        assert row.reason.strip()


def test_catalog_overlay_paths_resolve_inside_the_package() -> None:
    overlaid = [c for c in CASES if c.request.catalog]
    assert overlaid, "the litgpt cases use the validation model overlay"
    for case in overlaid:
        for folder in case.request.catalog:
            assert Path(folder).is_absolute()
            assert Path(folder) == VALIDATION_MODELS


def test_every_published_memory_row_is_a_case_or_skipped() -> None:
    rows = []
    runs = yaml.safe_load((SHARED / "published_runs.yaml").read_text())["entries"]
    rows += [e["id"] for e in runs if e["measured"].get("peak_memory_gib") is not None]
    finetune = yaml.safe_load((SHARED / "published_finetune_memory.yaml").read_text())["entries"]
    rows += [e["id"] for e in finetune]
    covered = {c.id for c in CASES} | {s.id for s in CASE_FILE.skipped}
    missing = [r for r in rows if r not in covered]
    assert not missing, f"published rows neither a case nor skipped: {missing}"


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _one_case(**changes: object) -> dict:
    case = {
        "id": "tiny", "group": "g", "source": {"title": "t"}, "reliability": "high",
        "request": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "seq": 1024},
        "measured": {"bytes": 40 * GiB, "kind": "reserved", "as_printed": "40 GiB"},
        "compare": "reserved_bytes", "tolerance": 0.15, "notes": ["n"],
    }
    case.update(changes)
    return {"schema_version": 1, "suite": "memory", "description": "d", "cases": [case]}


@pytest.mark.parametrize("changes, fragment", [
    ({"unexpected": 1}, "unexpected"),
    ({"request": {"model": "llama-3.1-8b", "sequence": 1024}}, "sequence"),
    ({"tolerance": 0.5}, "tolerance must be 0.15"),
    ({"compare": "total_bytes"}, "compare"),
    ({"compare": "allocated_bytes"}, "compare must be reserved_bytes"),
    ({"expect": "oom"}, "expect: oom"),
])
def test_bad_case_files_are_rejected(tmp_path: Path, changes: dict, fragment: str) -> None:
    with pytest.raises(InvalidSpec, match=fragment):
        load_case_file(_write(tmp_path, _one_case(**changes)))


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    data = _one_case()
    data["skipped"] = [{"id": "tiny", "group": "g", "reason": "r"}]
    with pytest.raises(InvalidSpec, match="duplicate id"):
        load_case_file(_write(tmp_path, data))


# --- validation-only catalog models ---------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", sorted(p.stem for p in (VALIDATION_MODELS / "models").glob("*.yaml")))
def test_validation_models_match_their_official_parameter_count(model_id: str) -> None:
    record = load_catalog([VALIDATION_MODELS]).model(model_id)
    total = count_params(record.to_domain()).total
    assert total == pytest.approx(record.official_params, rel=0.01), (
        f"{model_id}: {total:,} parameters from the config vs {record.official_params:,.0f} published"
    )


# --- harness behaviour ------------------------------------------------------------------------------------------


def test_summarize_groups_and_errors() -> None:
    def result(case_id: str, group: str, error: float | None, status: str, expect: str = "value") -> CaseResult:
        return CaseResult(suite="memory", id=case_id, group=group, kind="reserved", expect=expect, unit="bytes",
                          measured=1.0, predicted=1.0, error=error, tolerance=0.15, status=status,  # type: ignore[arg-type]
                          compare="reserved_bytes", reliability="high")

    summaries = summarize([
        result("a", "g1", 0.10, "pass"), result("b", "g1", -0.30, "fail"), result("c", "g1", 0.05, "pass"),
        result("d", "g1", 0.9, "pass", expect="oom"), result("e", "g2", None, "error"),
    ])
    g1, g2 = summaries
    assert (g1.group, g1.n, g1.passed, g1.failed, g1.compared) == ("g1", 4, 3, 1, 3)
    assert g1.median_abs_error == pytest.approx(0.10)
    assert g1.worst_abs_error == pytest.approx(0.30) and g1.worst_id == "b"
    assert g1.median_error == pytest.approx(0.05)
    assert (g2.n, g2.passed, g2.compared, g2.median_abs_error) == (1, 0, 0, None)


def test_filters_select_by_group_and_id() -> None:
    titan = run_suite("memory", group="torchtitan")
    assert titan and all("torchtitan" in r.group for r in titan)
    one = run_suite("memory", case="torchtitan-h100-202412-t1-fsdp")
    assert [r.id for r in one] == ["torchtitan-h100-202412-t1-fsdp"]


def test_the_whole_memory_suite_gives_one_result_per_case() -> None:
    results = run_suite("memory")
    assert len(results) == len(CASES)
    assert len({r.id for r in results}) == len(CASES)
