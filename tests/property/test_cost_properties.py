"""Invariants of the cost model (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rigplan.cost.breakeven import breakeven_months, cost_per_useful_gpu_hour_usd, own_running_usd_per_month
from rigplan.cost.cloud import cloud_cost_usd
from rigplan.cost.onprem import OnPremScenario, onprem_cost_usd, unit_costs
from rigplan.cost.power import HOURS_PER_MONTH, parse_tariff

prices = st.floats(min_value=0.01, max_value=100.0)
hours = st.floats(min_value=0.0, max_value=1e6)
fractions = st.floats(min_value=0.05, max_value=1.0)


@st.composite
def scenarios(draw: st.DrawFn) -> OnPremScenario:
    return OnPremScenario(
        gpu_price_usd=draw(st.floats(min_value=500, max_value=100_000)),
        gpu_tdp_w=draw(st.floats(min_value=50, max_value=1_500)),
        server_share_fraction=draw(st.floats(min_value=0, max_value=2)),
        fabric_fraction=draw(st.floats(min_value=0, max_value=1)),
        depreciation_years=draw(st.floats(min_value=1, max_value=8)),
        residual_fraction=draw(st.floats(min_value=0, max_value=0.8)),
        utilisation=draw(fractions),
        pue=draw(st.floats(min_value=1, max_value=2)),
        host_w_per_gpu=draw(st.floats(min_value=0, max_value=600)),
        usd_per_kwh=draw(st.floats(min_value=0, max_value=0.5)),
        colo_usd_per_kw_month=draw(st.floats(min_value=0, max_value=300)),
        licence_usd_per_gpu_year=draw(st.sampled_from([0.0, 4_500.0])),
        staff_usd_per_year=draw(st.floats(min_value=0, max_value=500_000)),
    )


@given(h=hours, extra=st.floats(min_value=1.0, max_value=1e5), p=prices, more=st.floats(min_value=0.01, max_value=10))
def test_cloud_cost_grows_with_hours_and_price(h: float, extra: float, p: float, more: float) -> None:
    base = float(cloud_cost_usd(h, p))
    assert float(cloud_cost_usd(h + extra, p)) > base
    if h >= 1e-6:  # below that the product underflows to the same subnormal float
        assert float(cloud_cost_usd(h, p + more)) > base


@settings(max_examples=150, deadline=None)
@given(s=scenarios(), n=st.integers(min_value=1, max_value=4096), h=st.floats(min_value=1.0, max_value=1e5),
       extra=st.floats(min_value=1.0, max_value=1e5))
def test_onprem_cost_grows_with_hours(s: OnPremScenario, n: int, h: float, extra: float) -> None:
    longer, shorter = float(onprem_cost_usd(n, h + extra, s)), float(onprem_cost_usd(n, h, s))
    if h >= s.utilisation * s.owned_hours and h + extra <= s.owned_hours:
        # the job already bears the whole fixed cost of the period: only its energy grows (free energy: equal)
        assert longer >= shorter * (1 - 1e-12)
    else:
        assert longer > shorter


@settings(max_examples=150, deadline=None)
@given(s=scenarios(), n=st.integers(min_value=1, max_value=4096), h=st.floats(min_value=1.0, max_value=1e5),
       more=st.floats(min_value=1.0, max_value=50_000), kwh=st.floats(min_value=0.001, max_value=0.3))
def test_onprem_cost_grows_with_gpu_and_electricity_price(s: OnPremScenario, n: int, h: float, more: float,
                                                          kwh: float) -> None:
    base = float(onprem_cost_usd(n, h, s))
    dearer_gpu = s.model_copy(update={"gpu_price_usd": s.gpu_price_usd + more})
    dearer_power = s.model_copy(update={"usd_per_kwh": s.usd_per_kwh + kwh})
    assert float(onprem_cost_usd(n, h, dearer_gpu)) > base
    assert float(onprem_cost_usd(n, h, dearer_power)) > base


@settings(max_examples=150, deadline=None)
@given(s=scenarios(), n=st.integers(min_value=1, max_value=4096), u1=fractions, u2=fractions)
def test_more_utilisation_lowers_cost_per_useful_gpu_hour(s: OnPremScenario, n: int, u1: float, u2: float) -> None:
    low, high = sorted((u1, u2))
    if high - low < 1e-3:
        return
    assert cost_per_useful_gpu_hour_usd(s, high, n) < cost_per_useful_gpu_hour_usd(s, low, n)


@settings(max_examples=100, deadline=None)
@given(s=scenarios(), n=st.integers(min_value=1, max_value=512), p=prices)
def test_at_breakeven_own_and_cloud_have_cost_the_same(s: OnPremScenario, n: int, p: float) -> None:
    months = breakeven_months(s, p, n)
    if not math.isfinite(months):
        assert p * s.utilisation * HOURS_PER_MONTH <= own_running_usd_per_month(s, n) + 1e-9
        return
    own = unit_costs(s).net_capex_usd + own_running_usd_per_month(s, n) * months
    cloud = float(cloud_cost_usd(s.utilisation * HOURS_PER_MONTH * months, p))
    assert math.isclose(own, cloud, rel_tol=1e-9)
    # owning is cheaper per useful hour over the period exactly when break-even comes within it
    within = months <= 12 * s.depreciation_years
    assert within == (cost_per_useful_gpu_hour_usd(s, None, n) <= p * (1 + 1e-9))


@settings(max_examples=100, deadline=None)
@given(s=scenarios(), u=fractions)
def test_shiftable_tariff_never_costs_more(s: OnPremScenario, u: float) -> None:
    tou = "peak:8h@0.12,flat:8h@0.08,valley:8h@0.04"
    fixed = s.model_copy(update={"utilisation": u, "tariff": parse_tariff(tou)})
    shifted = s.model_copy(update={"utilisation": u, "tariff": parse_tariff(tou, shiftable=True)})
    assert cost_per_useful_gpu_hour_usd(shifted) <= cost_per_useful_gpu_hour_usd(fixed) + 1e-12


@settings(max_examples=50, deadline=None)
@given(s=scenarios())
def test_vectorised_matches_scalar(s: OnPremScenario) -> None:
    n = np.array([1.0, 8.0, 64.0, 1024.0])
    h = np.array([10.0, 100.0, 1_000.0, 10_000.0])
    vector = onprem_cost_usd(n, h, s)
    assert isinstance(vector, np.ndarray)
    for i in range(4):
        assert math.isclose(float(vector[i]), float(onprem_cost_usd(float(n[i]), float(h[i]), s)), rel_tol=1e-12)
