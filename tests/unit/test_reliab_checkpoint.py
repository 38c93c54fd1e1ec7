"""Checkpoint interval (Young, Daly) and expected wall time: hand-computed and published cases."""

from __future__ import annotations

import math

import pytest

from rigplan.errors import InvalidSpec
from rigplan.reliab.checkpoint import (
    MIXED_ADAM_CHECKPOINT_BYTES_PER_PARAM,
    daly_wall_time_s,
    first_order_wall_time_s,
    optimal_interval_s,
    training_checkpoint_bytes,
)

MIN = 60.0
HOUR = 3600.0


@pytest.mark.parametrize(("mtbf_s", "expected_min"), [(24 * HOUR, 117), (6 * HOUR, 57), (15 * MIN, 9.1)])
def test_daly_higher_order_reproduces_the_papers_examples(mtbf_s: float, expected_min: float) -> None:
    """Daly 2006, Figs. 3-5: δ = 5 min, R = 10 min; the model predicts 117, 57 and 9.1 min."""
    tau_min = optimal_interval_s(5 * MIN, mtbf_s, "daly") / MIN
    assert tau_min == pytest.approx(expected_min, abs=0.5 if expected_min > 10 else 0.05)


def test_young_and_first_order_daly_by_hand() -> None:
    """δ = 50 s, M = 10,000 s: √(2·50·10⁴) = 1000 s; minus δ = 950 s."""
    assert optimal_interval_s(50, 10_000, "young") == pytest.approx(1000)
    assert optimal_interval_s(50, 10_000, "daly-first-order") == pytest.approx(950)
    # higher order: 1000·(1 + √0.0025/3 + 0.0025/9) − 50 = 1000·1.016944 − 50 = 966.94
    assert optimal_interval_s(50, 10_000, "daly") == pytest.approx(966.944, abs=1e-3)


def test_interval_is_mtbf_when_write_takes_two_mtbfs_or_more() -> None:
    assert optimal_interval_s(200, 100, "daly") == 100
    assert optimal_interval_s(200, 100, "daly-first-order") == 100


def test_no_failures_means_no_periodic_checkpoints() -> None:
    assert optimal_interval_s(10, math.inf) == math.inf
    assert daly_wall_time_s(ideal_s=100, tau_s=math.inf, delta_s=10, restart_s=5, mtbf_s=math.inf) == 100


def test_unknown_rule_is_rejected() -> None:
    with pytest.raises(InvalidSpec, match="unknown interval rule"):
        optimal_interval_s(1, 100, "daily")  # type: ignore[arg-type]


def test_daly_exact_wall_time_by_hand() -> None:
    """M = 10⁶, R = 10³, τ = 10⁴, δ = 100, T_s = 10⁶: 10⁶·e^0.001·(e^0.0101 − 1)·100 = 1,016,133.34 s."""
    w = daly_wall_time_s(ideal_s=1e6, tau_s=1e4, delta_s=100, restart_s=1000, mtbf_s=1e6)
    assert w == pytest.approx(1_016_133.34, abs=0.01)
    # first order: 10⁶·1.01·(1 + 6000/10⁶) = 1,016,060 s
    assert first_order_wall_time_s(ideal_s=1e6, tau_s=1e4, delta_s=100, restart_s=1000, mtbf_s=1e6) == 1_016_060


@pytest.mark.parametrize("scale", [1e-2, 1e-3, 1e-4])
def test_exact_and_first_order_agree_when_delta_and_restart_are_small(scale: float) -> None:
    """The relative gap is second order: O((δ + R + τ)²/M²) with τ ~ √(2δM)."""
    mtbf = 1e6
    delta, restart = scale * mtbf, scale * mtbf
    tau = optimal_interval_s(delta, mtbf)
    kw = {"ideal_s": 1e7, "tau_s": tau, "delta_s": delta, "restart_s": restart, "mtbf_s": mtbf}
    exact, first = daly_wall_time_s(**kw), first_order_wall_time_s(**kw)
    assert exact >= first
    assert exact / first - 1 < 2 * (tau / mtbf) ** 2 + 3 * scale


@pytest.mark.parametrize("ratio", [1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0])
def test_daly_interval_is_near_the_exact_optimum(ratio: float) -> None:
    """Scanning τ on a fine grid, the exact wall time at Daly's τ is within 0.2 % of the best found."""
    mtbf = 1e5
    delta = ratio * mtbf
    at_daly = daly_wall_time_s(ideal_s=1.0, tau_s=optimal_interval_s(delta, mtbf), delta_s=delta, restart_s=0,
                               mtbf_s=mtbf)
    best = min(daly_wall_time_s(ideal_s=1.0, tau_s=mtbf * 10 ** (k / 200), delta_s=delta, restart_s=0, mtbf_s=mtbf)
               for k in range(-1000, 401))
    assert at_daly <= best * 1.002


def test_wall_time_is_never_below_failure_free_checkpointing() -> None:
    w = daly_wall_time_s(ideal_s=1000, tau_s=100, delta_s=10, restart_s=0, mtbf_s=1e12)
    assert w >= 1000 * 1.1
    assert w == pytest.approx(1100)


def test_wall_time_overflows_to_infinity() -> None:
    assert daly_wall_time_s(ideal_s=1, tau_s=1e6, delta_s=1, restart_s=0, mtbf_s=1) == math.inf


def test_checkpoint_bytes_405b() -> None:
    """405e9 params × 14 B (bf16 weights + fp32 master + fp32 Adam m, v) = 5.67 TB."""
    assert MIXED_ADAM_CHECKPOINT_BYTES_PER_PARAM == 14
    assert training_checkpoint_bytes(405e9) == pytest.approx(5.67e12)
    assert training_checkpoint_bytes(7e9, bytes_per_param=2) == 14e9


def test_invalid_times_are_rejected() -> None:
    with pytest.raises(InvalidSpec, match="restart time"):
        daly_wall_time_s(ideal_s=1, tau_s=1, delta_s=1, restart_s=-1, mtbf_s=1)
    with pytest.raises(InvalidSpec, match="MTBF"):
        optimal_interval_s(1, 0)
