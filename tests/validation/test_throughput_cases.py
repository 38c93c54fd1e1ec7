"""The throughput validation suite: each published speed measurement against rigplan's estimate.

One test per case (the case id is the test id): |predicted / measured - 1| <= 0.15, where the
prediction is tokens/s per GPU, step time, or (Narayanan et al. 2021) TFLOP/s per GPU under the
paper's own FLOP definition. One more test holds the aggregate rules: median |error| <= 0.08 and
median signed error within +/-0.05 per group, median |error| <= 0.07 over the suite. Failures are
findings about the estimator (or about a case's mapping, documented in its notes): do not loosen the
limits to hide them.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import yaml

from rigplan.errors import InvalidSpec
from rigplan.flow import estimate as speed
from rigplan.validation import build_throughput_cases
from rigplan.validation.run import (
    SUITES,
    THROUGHPUT_CASE_TOLERANCE,
    THROUGHPUT_GROUP_MEDIAN_LIMIT,
    THROUGHPUT_GROUP_SIGNED_LIMIT,
    THROUGHPUT_SUITE_MEDIAN_LIMIT,
    CaseResult,
    ThroughputCase,
    evaluate_throughput_case,
    load_case_file,
    megatron_flop_per_step,
    megatron_tflops_per_gpu,
    run_suite,
    suite_thresholds_breached,
    summarize,
    summarize_suites,
)

CASE_PATH = SUITES["throughput"].default_file
CASE_FILE = load_case_file(CASE_PATH)
CASES: list[ThroughputCase] = list(CASE_FILE.cases)
SHARED = Path(__file__).resolve().parents[1] / "data" / "published"
"""The published rows, carried in the repository (tests/data/published/SOURCE.md)."""
GROUPS = ("megatron_lm_2021_weak_scaling_a100", "korthikanti_2022_recompute", "mosaicml_llm_foundry_mpt",
          "torchtitan_a100_2024_04", "torchtitan_h100_2024_12", "nemo_24_07_h100_fp8")


@pytest.fixture(scope="module")
def results() -> list[CaseResult]:
    return run_suite("throughput")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_throughput_case(case: ThroughputCase) -> None:
    result = evaluate_throughput_case(case)
    assert result.status != "error", f"{case.id}: rigplan could not estimate it: {result.message}"
    predicted, error = result.predicted, result.error
    assert predicted is not None and error is not None
    if result.status == "gap":
        pytest.xfail(f"known gap ({error:+.1%}): {case.known_gap}")
    assert abs(error) <= THROUGHPUT_CASE_TOLERANCE, (
        f"predicted {predicted:,.4g} vs measured {case.measured.value:,.4g} {case.measured.unit} "
        f"({case.compare}, printed {case.measured.as_printed}): error {error:+.1%}, "
        f"tolerance {THROUGHPUT_CASE_TOLERANCE:.0%}"
    )


def test_group_and_suite_medians(results: list[CaseResult]) -> None:
    """Median |error| <= 8% and median signed error within +/-5% in every group, median |error| <= 7% over
    the whole suite (gap cases included)."""
    groups = {s.group: s for s in summarize(results)}
    assert set(groups) == set(GROUPS)
    overall = summarize_suites(results)
    assert [t.suite for t in overall] == ["throughput"]
    table = "; ".join(f"{g}: {s.median_abs_error:.1%}" for g, s in groups.items())
    breaches = suite_thresholds_breached(results)
    assert not breaches, f"{breaches} (group medians: {table}; overall {overall[0].median_abs_error:.1%})"


# --- the case file itself ---------------------------------------------------------------------------------------


def test_case_file_is_well_formed() -> None:
    assert CASE_FILE.suite == "throughput"
    assert len(CASES) >= 170
    assert {c.group for c in CASES} == set(GROUPS)
    for case in CASES:
        assert case.notes, f"{case.id}: every case documents its mapping"
        assert case.request.gpus is not None, f"{case.id}: the GPU count is part of the request"
        assert case.request.global_batch, f"{case.id}: the published global batch is part of the request"
    for row in CASE_FILE.skipped:
        assert row.reason.strip()


def test_known_gaps_are_rare_and_explained() -> None:
    gaps = [c for c in CASES if c.known_gap]
    assert len(gaps) <= len(CASES) // 20
    for case in gaps:
        assert len(case.known_gap or "") > 40, f"{case.id}: a known gap names the effect and its source"


def test_every_published_throughput_row_is_a_case_or_skipped() -> None:
    entries = yaml.safe_load((SHARED / "published_runs.yaml").read_text())["entries"]
    speed_keys = ("tokens_per_sec_per_gpu", "step_time_s", "tflops_per_gpu", "mfu", "hfu", "tokens_per_sec_total")
    rows = [e["id"] for e in entries if any(e["measured"].get(k) for k in speed_keys)]
    covered = {c.id for c in CASES} | {s.id for s in CASE_FILE.skipped}
    missing = [r for r in rows if r not in covered]
    assert not missing, f"published rows neither a case nor skipped: {missing}"


def test_case_file_is_what_the_generator_writes() -> None:
    """cases/throughput.yaml is generated; hand edits belong in build_throughput_cases (notes, known gaps)."""
    entries = yaml.safe_load((SHARED / "published_runs.yaml").read_text())["entries"]
    built = build_throughput_cases.build(entries)
    stored = yaml.safe_load(CASE_PATH.read_text())
    assert built == stored, "regenerate with: python -m rigplan.validation.build_throughput_cases PUBLISHED_RUNS"


# --- the Megatron TFLOP/s comparison -----------------------------------------------------------------------------


def test_megatron_flop_formula() -> None:
    # GPT-3 175B, B=1536, s=2048, l=96, h=12288, V=51200 (Narayanan et al. 2021, eq. 3)
    flop = megatron_flop_per_step(global_batch=1536, seq_len=2048, layers=96, hidden=12288, vocab=51200)
    expected = 96 * 1536 * 2048 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))
    assert flop == pytest.approx(expected)
    # about 4 x 2 x params x tokens (forward, backward, recompute): 8 * 174.6e9 * 1536 * 2048 = 4.4e21
    assert flop == pytest.approx(8 * 174.6e9 * 1536 * 2048, rel=0.05)


def test_megatron_tflops_converts_the_predicted_step_time() -> None:
    case = next(c for c in CASES if c.compare == "megatron_tflops_per_gpu")
    result = speed.estimate(case.request)
    arch, job = result.setup.arch, result.setup.job
    flop = megatron_flop_per_step(global_batch=job.global_batch, seq_len=job.seq_len, layers=arch.num_layers,
                                  hidden=arch.hidden, vocab=arch.vocab)
    tflops = megatron_tflops_per_gpu(result)
    assert tflops * 1e12 * float(result.step.step_time_s) * result.num_gpus == pytest.approx(flop)
    assert job.global_batch == case.request.global_batch


# --- schema --------------------------------------------------------------------------------------------------------


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _one_case(**changes: object) -> dict:
    case = {
        "id": "tiny", "group": "g", "source": {"title": "t"}, "reliability": "high",
        "request": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "seq": 4096, "gpus": 8, "zero": 3,
                    "global_batch": 8},
        "measured": {"value": 5000.0, "unit": "tokens/s/GPU", "metric": "tokens_per_sec_per_gpu",
                     "as_printed": "5000"},
        "compare": "tokens_per_s_per_gpu", "notes": ["n"],
    }
    case.update(changes)
    return {"schema_version": 1, "suite": "throughput", "description": "d", "cases": [case]}


def test_a_minimal_case_file_loads_and_runs(tmp_path: Path) -> None:
    results = run_suite(cases_file=_write(tmp_path, _one_case()))
    assert [r.suite for r in results] == ["throughput"]
    assert results[0].status in ("pass", "fail") and results[0].predicted


@pytest.mark.parametrize("changes, fragment", [
    ({"unexpected": 1}, "unexpected"),
    ({"tolerance": 0.5}, "tolerance"),
    ({"request": {"model": "llama-3.1-8b", "sequence": 1024}}, "sequence"),
    ({"compare": "step_time_s"}, "needs measured metric step_time_s"),
    ({"compare": "megatron_tflops_per_gpu", "request": {"model": "llama-3.1-8b", "gpus": 8},
      "measured": {"value": 150.0, "unit": "TFLOP/s/GPU", "metric": "tflops_per_gpu", "as_printed": "150"}},
     "global_batch"),
    ({"measured": {"value": -1.0, "unit": "s", "metric": "step_time_s", "as_printed": "-1"}}, "greater than 0"),
])
def test_bad_case_files_are_rejected(tmp_path: Path, changes: dict, fragment: str) -> None:
    with pytest.raises(InvalidSpec, match=fragment):
        load_case_file(_write(tmp_path, _one_case(**changes)))


# --- aggregate rules ----------------------------------------------------------------------------------------------


def _result(case_id: str, group: str, error: float, suite: str = "throughput") -> CaseResult:
    status = "pass" if abs(error) <= THROUGHPUT_CASE_TOLERANCE else "fail"
    return CaseResult(suite=suite, id=case_id, group=group, kind="tokens_per_sec_per_gpu", expect="value",
                      unit="tokens/s/GPU", measured=1.0, predicted=1.0 + error, error=error,
                      tolerance=THROUGHPUT_CASE_TOLERANCE, status=status,  # type: ignore[arg-type]
                      compare="tokens_per_s_per_gpu", reliability="high")


def test_thresholds_name_the_group_and_the_suite() -> None:
    ok = [_result(f"a{i}", "good", e) for i, e in enumerate((0.01, -0.02, 0.03))]
    bad = [_result(f"b{i}", "bad", e) for i, e in enumerate((0.2, -0.15, 0.13))]
    assert suite_thresholds_breached(ok) == []
    messages = suite_thresholds_breached(ok + bad)
    assert any("group bad" in m and "15.0%" in m and "|error|" in m for m in messages)
    assert not any("group good" in m for m in messages)
    assert any("throughput suite" in m for m in messages)  # median of all six: 8.0% > 7%
    assert suite_thresholds_breached(ok + bad, groups=False, overall=False) == []
    overall = summarize_suites(ok + bad)[0]
    assert overall.median_abs_error == pytest.approx(statistics.median([0.01, 0.02, 0.03, 0.2, 0.15, 0.13]))
    assert (overall.group_median_limit, overall.suite_median_limit) == (
        THROUGHPUT_GROUP_MEDIAN_LIMIT, THROUGHPUT_SUITE_MEDIAN_LIMIT)


def test_a_group_that_leans_one_way_breaches_the_signed_rule() -> None:
    """Every case and the median |error| within their limits, but all errors +6%..+7%: a missing mechanism."""
    leaning = [_result(f"l{i}", "leaning", e) for i, e in enumerate((0.06, 0.065, 0.07))]
    messages = suite_thresholds_breached(leaning, overall=False)
    assert len(messages) == 1 and "group leaning" in messages[0] and "+6.5%" in messages[0]
    assert "signed" in messages[0]
    balanced = [_result(f"c{i}", "balanced", e) for i, e in enumerate((0.06, -0.065, 0.04))]
    assert suite_thresholds_breached(balanced, overall=False) == []
    assert THROUGHPUT_GROUP_SIGNED_LIMIT == 0.05 and THROUGHPUT_GROUP_MEDIAN_LIMIT == 0.08
    assert THROUGHPUT_CASE_TOLERANCE == 0.15


def test_memory_results_have_no_median_rules() -> None:
    memory = [_result(f"m{i}", "g", 0.2, suite="memory") for i in range(3)]
    assert suite_thresholds_breached(memory) == []


def test_the_whole_throughput_suite_gives_one_result_per_case() -> None:
    results = run_suite("throughput")
    assert len(results) == len(CASES)
    assert len({r.id for r in results}) == len(CASES)
