"""Failure rates: the Llama 3 405B table, job scaling, cause factors, k-of-n PSU redundancy."""

from __future__ import annotations

import math

import pytest

from rigplan.errors import InvalidSpec
from rigplan.reliab.failures import (
    DAY_S,
    HOUR_S,
    LLAMA3_405B,
    LLAMA3_405B_COUNTS,
    LLAMA3_405B_EXPOSURE_GPU_S,
    FailureModel,
    failure_model_from_mtbf,
    job_interruption_rate_per_s,
    job_mtbf_s,
    k_of_n_failure_rate_per_s,
    psu_redundancy_factor,
)


def test_llama3_counts_sum_to_the_reported_totals() -> None:
    """419 unexpected + 47 planned = 466 interruptions (Llama 3 paper, Sec. 3.3.4)."""
    unexpected = sum(n for k, (_, _, n) in LLAMA3_405B_COUNTS.items() if k != "planned")
    assert unexpected == 419
    assert LLAMA3_405B_COUNTS["planned"][2] == 47


def test_exposure_is_16384_gpus_for_54_days() -> None:
    assert LLAMA3_405B_EXPOSURE_GPU_S / HOUR_S == 16_384 * 54 * 24 == 21_233_664


def test_unexpected_rate_is_one_per_about_50700_gpu_hours() -> None:
    gpu_hours_per_event = 1 / (LLAMA3_405B.unexpected_rate_per_gpu_s * HOUR_S)
    assert gpu_hours_per_event == pytest.approx(21_233_664 / 419)
    assert gpu_hours_per_event == pytest.approx(50_677, abs=1)


def test_per_cause_rate_is_count_over_exposure() -> None:
    psu = LLAMA3_405B.cause("power_supply")
    assert psu.count == 3
    assert psu.rate_per_gpu_hour == pytest.approx(3 / 21_233_664)
    assert not psu.planned and LLAMA3_405B.cause("planned").planned


def test_full_llama_job_sees_466_interruptions_in_54_days() -> None:
    rate = job_interruption_rate_per_s(16_384, LLAMA3_405B)
    assert rate * 54 * DAY_S == pytest.approx(466)
    assert job_interruption_rate_per_s(16_384, LLAMA3_405B, include_planned=False) * 54 * DAY_S == pytest.approx(419)


def test_job_mtbf_is_inverse_of_gpu_count() -> None:
    """M(2n) = M(n)/2 (linear rate; Kokolis et al. 2024 find MTTF ~ 1/job size)."""
    assert job_mtbf_s(2048) == pytest.approx(job_mtbf_s(1024) / 2)
    assert job_mtbf_s(16_384) / HOUR_S == pytest.approx(54 * 24 / 419)


def test_zero_rates_give_infinite_mtbf() -> None:
    assert job_mtbf_s(8, LLAMA3_405B.scaled(0.0)) == math.inf


def test_scale_and_cause_factor() -> None:
    doubled = LLAMA3_405B.scaled(2.0)
    assert doubled.rate_per_gpu_s == pytest.approx(2 * LLAMA3_405B.rate_per_gpu_s)
    no_psu = LLAMA3_405B.with_cause_factor("power_supply", 0.0)
    assert no_psu.unexpected_rate_per_gpu_s * LLAMA3_405B_EXPOSURE_GPU_S == pytest.approx(416)
    assert no_psu.planned_rate_per_gpu_s == LLAMA3_405B.planned_rate_per_gpu_s


def test_unknown_cause_names_the_known_ones() -> None:
    with pytest.raises(InvalidSpec, match=r"no cause 'psu'.*power_supply"):
        LLAMA3_405B.with_cause_factor("psu", 0.5)


def test_duplicate_causes_and_negative_scale_are_rejected() -> None:
    cause = LLAMA3_405B.cause("cpu")
    with pytest.raises(InvalidSpec, match="duplicate"):
        FailureModel(name="x", causes=(cause, cause), source="t")
    with pytest.raises(InvalidSpec, match="scale"):
        LLAMA3_405B.scaled(-1.0)


def test_model_from_mtbf() -> None:
    model = failure_model_from_mtbf(gpu_mtbf_s=50_000 * HOUR_S)
    assert job_mtbf_s(1000, model) == pytest.approx(50 * HOUR_S)


def test_k_of_n_hand_cases() -> None:
    """No spare: n·λ. N+1: n·(n−1)·λ²·r. 2+1 with λ = 1/100 h, r = 1 h: 3·2/100² = 6e-4 per hour."""
    assert k_of_n_failure_rate_per_s(installed=2, required=2, unit_mtbf_s=100.0, repair_s=1.0) == pytest.approx(0.02)
    assert k_of_n_failure_rate_per_s(installed=3, required=2, unit_mtbf_s=100.0, repair_s=1.0) == pytest.approx(6e-4)
    # 2 spares (2+2): C(4,3)·3·λ³·r² = 12e-6
    assert k_of_n_failure_rate_per_s(installed=4, required=2, unit_mtbf_s=100.0, repair_s=1.0) == pytest.approx(1.2e-5)


def test_psu_redundancy_factor_for_2_plus_1() -> None:
    """(N+1)·λ·repair = 3 × 24 h / 100,000 h = 7.2e-4."""
    factor = psu_redundancy_factor(installed=3, required=2, unit_mtbf_s=100_000 * HOUR_S, repair_s=24 * HOUR_S)
    assert factor == pytest.approx(7.2e-4)
    assert psu_redundancy_factor(installed=2, required=2, unit_mtbf_s=1.0, repair_s=1.0) == 1.0


def test_k_of_n_rejects_too_few_units() -> None:
    with pytest.raises(InvalidSpec, match="installed >= required"):
        k_of_n_failure_rate_per_s(installed=1, required=2, unit_mtbf_s=1.0, repair_s=1.0)
    with pytest.raises(InvalidSpec, match="num_gpus"):
        job_mtbf_s(0)


def test_to_dict_lists_every_cause() -> None:
    d = LLAMA3_405B.to_dict()
    assert len(d["causes"]) == len(LLAMA3_405B_COUNTS)
    assert d["unexpected_per_gpu_hour"] == pytest.approx(419 / 21_233_664)
