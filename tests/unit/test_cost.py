"""Cost model: hand-computed cases (seed §4, break-even, power, time-of-use, vectorised job cost)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rigplan.catalog.load import load_catalog
from rigplan.cost.breakeven import (
    breakeven,
    breakeven_months,
    breakeven_utilisation,
    cost_per_useful_gpu_hour_usd,
    own_running_usd_per_month,
)
from rigplan.cost.cloud import CloudExtras, cloud_cost_usd, cloud_job_cost, offers_for, user_offer
from rigplan.cost.onprem import (
    OnPremScenario,
    licence_usd_per_gpu_year,
    onprem_cost_usd,
    onprem_tco,
    scenario_for_gpu,
    unit_costs,
    usd_per_useful_gpu_hour,
)
from rigplan.cost.power import TariffBand, TimeOfUseTariff, airflow_cfm, heat_btu_per_h, parse_tariff
from rigplan.cost.scenarios import seed_article, seed_article_scenario, seed_scenario
from rigplan.errors import InvalidSpec


def bare(**overrides: object) -> OnPremScenario:
    """A GPU and nothing else: no server share, no power, no residual, always busy, 1 year."""
    values: dict[str, object] = dict(gpu_price_usd=7300.0, gpu_tdp_w=1000.0, server_share_fraction=0.0,
                                     fabric_fraction=0.0, depreciation_years=1.0, residual_fraction=0.0,
                                     utilisation=1.0, pue=1.0, host_w_per_gpu=0.0, usd_per_kwh=0.0,
                                     colo_usd_per_kw_month=0.0, staff_usd_per_gpu_year=0.0, capital_rate=0.0)
    values.update(overrides)
    return OnPremScenario.model_validate(values)


TOU = "peak:8h@0.12,flat:8h@0.08,valley:8h@0.04"


# --- the seed article, §4 ------------------------------------------------------------------------

def test_seed_own_cost_is_25000_over_3_years_of_2000_hours() -> None:
    assert cost_per_useful_gpu_hour_usd(seed_article_scenario()) == pytest.approx(25_000 / 6_000, rel=1e-12)
    assert cost_per_useful_gpu_hour_usd(seed_article_scenario()) == pytest.approx(4.1667, abs=5e-5)


def test_seed_article_numbers() -> None:
    a = seed_article()
    assert a.cloud_job_usd == pytest.approx(6_500)
    assert a.own_job_usd == pytest.approx(4_166.67, abs=0.01)
    assert a.breakeven_busy_hours == pytest.approx(25_000 / 6.5)  # 3,846 h
    assert a.breakeven_months_at_2000h_per_year == pytest.approx(25_000 / 6.5 / (2_000 / 12))  # 23.1
    assert a.breakeven_months_continuous == pytest.approx(25_000 / 6.5 / 730)  # 5.3: "about 6 months"


def test_seed_corrected_steps() -> None:
    record = load_catalog().gpu("a100-80gb-sxm")
    seed = seed_scenario(record, scenario_for_gpu(record))
    costs = [s.own_usd_per_useful_gpu_hour for s in seed.steps]
    assert costs[0] == pytest.approx(25_000 / 6_000)
    assert costs[1] == pytest.approx(record.price.usd / 6_000)  # type: ignore[union-attr]
    assert costs[2] == pytest.approx(record.price.usd * 0.7 / 6_000)  # type: ignore[union-attr]
    assert costs[3] == pytest.approx(record.price.usd * 1.7 * 0.7 / 6_000)  # type: ignore[union-attr]
    assert costs[4] > costs[3]  # power adds
    assert costs[5] < costs[4]  # 70% utilisation spreads the fixed costs
    assert seed.optional_licence_step is not None
    assert seed.optional_licence_step.own_usd_per_useful_gpu_hour > costs[5]
    assert seed.current_offers[0].usd_per_gpu_hour == 6.5
    assert "2,000 h/yr" in seed.verdict()


# --- break-even ----------------------------------------------------------------------------------

def test_breakeven_where_both_costs_are_equal() -> None:
    # capex 7,300; GPU energy 1 kW x $0.10 = $0.10 per busy hour; cloud $2.10/h.
    # m* = 7300 / ((2.10 - 0.10) x 730) = 5 months; both have then cost 7,665.
    s = bare(usd_per_kwh=0.10)
    months = breakeven_months(s, 2.10)
    assert months == pytest.approx(5.0)
    hours = months * 730
    own_total = 7_300 + 0.10 * hours
    cloud_total = float(cloud_cost_usd(hours, 2.10))
    assert own_total == pytest.approx(cloud_total) == pytest.approx(7_665)


def test_breakeven_at_end_of_period_when_cloud_price_equals_owned_cost() -> None:
    s = bare(gpu_price_usd=10_000.0, depreciation_years=3.0, residual_fraction=0.2, utilisation=0.6,
             usd_per_kwh=0.08, pue=1.3, host_w_per_gpu=200.0, licence_usd_per_gpu_year=500.0)
    price = cost_per_useful_gpu_hour_usd(s)
    assert breakeven_months(s, price) == pytest.approx(36.0)
    assert breakeven_utilisation(s, price) == pytest.approx(0.6, abs=1e-9)


def test_breakeven_never_when_cloud_is_below_running_cost() -> None:
    s = bare(usd_per_kwh=0.10)
    assert breakeven_months(s, 0.10) == math.inf
    b = breakeven(s, user_offer(0.05))
    assert b.cheaper == "cloud" and b.to_dict()["months"] is None and not b.within_period


def test_running_cost_per_month() -> None:
    s = bare(usd_per_kwh=0.10, licence_usd_per_gpu_year=1_200.0, staff_usd_per_year=2_400.0, utilisation=0.5)
    # 1,200/12 + 2,400/12/2 GPUs + 0.10 $/h x 0.5 x 730 h
    assert own_running_usd_per_month(s, 2) == pytest.approx(100 + 100 + 36.5)


# --- power, cooling, time-of-use -----------------------------------------------------------------

def test_energy_per_year_by_hand() -> None:
    s = bare(gpu_tdp_w=700.0, utilisation=0.5, host_w_per_gpu=250.0, pue=1.4, usd_per_kwh=0.10)
    unit = unit_costs(s)
    # (700 x 0.5 + 250) W x 1.4 x 8760 h = 7,358.4 kWh
    assert unit.energy_kwh_per_year == pytest.approx(7_358.4)
    assert unit.power_usd_per_year == pytest.approx(735.84)
    assert unit.energy_usd_per_busy_hour == pytest.approx(0.7 * 1.4 * 0.10)


def test_colocation_is_per_provisioned_kw() -> None:
    s = bare(gpu_tdp_w=700.0, host_w_per_gpu=300.0, colo_usd_per_kw_month=150.0)
    assert unit_costs(s).colo_usd_per_year == pytest.approx(150 * 12 * 1.0)


def test_heat_and_airflow() -> None:
    assert heat_btu_per_h(1_000) == pytest.approx(3_412)
    assert airflow_cfm(1_000, 20) == pytest.approx(158)
    assert airflow_cfm(1_000, 10.5) == pytest.approx(300.95, abs=0.01)  # the seed's 300 CFM/kW
    tco = onprem_tco(bare(gpu_tdp_w=700.0, host_w_per_gpu=250.0), 8)
    assert tco.it_kw_peak == pytest.approx(7.6)
    assert tco.heat_btu_per_h_peak == pytest.approx(7.6 * 3_412)


def test_tariff_prices() -> None:
    flat_mean = parse_tariff(TOU)
    assert flat_mean.mean_usd_per_kwh() == pytest.approx(0.08)
    assert flat_mean.busy_usd_per_kwh(1 / 3) == pytest.approx(0.08)  # not shiftable: the mean
    shift = parse_tariff(TOU, shiftable=True)
    assert shift.busy_usd_per_kwh(1 / 3) == pytest.approx(0.04)  # fits in the valley
    assert shift.busy_usd_per_kwh(0.5) == pytest.approx((8 * 0.04 + 4 * 0.08) / 12)
    assert shift.busy_usd_per_kwh(1.0) == pytest.approx(0.08)


def test_time_of_use_saves_money_only_when_shiftable() -> None:
    base = dict(gpu_price_usd=20_000.0, gpu_tdp_w=700.0, utilisation=0.5)
    flat = OnPremScenario.model_validate({**base, "usd_per_kwh": 0.08})
    fixed = OnPremScenario.model_validate({**base, "tariff": parse_tariff(TOU)})
    shifted = OnPremScenario.model_validate({**base, "tariff": parse_tariff(TOU, shiftable=True)})
    cost = [float(onprem_cost_usd(8, 1_000, s)) for s in (flat, fixed, shifted)]
    assert cost[1] == pytest.approx(cost[0])
    assert cost[2] < cost[0]
    # the saving: the GPU's busy energy at 0.0533 instead of 0.08 $/kWh
    saving_per_hour = 0.7 * 1.4 * (0.08 - (8 * 0.04 + 4 * 0.08) / 12)
    assert cost[0] - cost[2] == pytest.approx(8 * 1_000 * saving_per_hour)


def test_tariff_must_cover_a_day() -> None:
    with pytest.raises(InvalidSpec, match="24 h"):
        parse_tariff("peak:8h@0.12,valley:8h@0.04")
    with pytest.raises(InvalidSpec, match="NAME:HOURSh@PRICE"):
        parse_tariff("peak=8h")
    with pytest.raises(ValueError):
        TimeOfUseTariff(bands=[TariffBand(name="x", hours_per_day=12, usd_per_kwh=0.1)])


def test_tariff_in_cny_is_converted() -> None:
    tariff = parse_tariff("peak:12h@1.0,valley:12h@0.3", usd_per_unit=1 / 7.1)
    assert tariff.mean_usd_per_kwh() == pytest.approx(0.65 / 7.1)


# --- capex, residual, per-hour, vectorised job cost ----------------------------------------------

def test_capex_shares_and_residual() -> None:
    s = OnPremScenario(gpu_price_usd=30_000.0, gpu_tdp_w=700.0)
    unit = unit_costs(s)
    assert unit.server_usd == pytest.approx(15_000) and unit.fabric_usd == pytest.approx(6_000)
    assert unit.capex_usd == pytest.approx(51_000)
    assert unit.residual_credit_usd == pytest.approx(0.3 * 51_000)
    explicit = s.model_copy(update={"server_share_usd_per_gpu": 5_000.0, "fabric_usd_per_gpu": 1_000.0})
    assert unit_costs(explicit).capex_usd == pytest.approx(36_000)


def test_lifetime_total_over_busy_hours_is_the_per_hour_cost() -> None:
    s = OnPremScenario(gpu_price_usd=30_000.0, gpu_tdp_w=700.0, staff_usd_per_year=150_000.0,
                       licence_usd_per_gpu_year=4_500.0, colo_usd_per_kw_month=100.0)
    tco = onprem_tco(s, 64)
    assert tco.lifetime_usd / tco.busy_gpu_hours == pytest.approx(tco.usd_per_useful_gpu_hour)
    assert tco.busy_gpu_hours == pytest.approx(64 * 0.7 * 8760 * 3)


def test_onprem_cost_accepts_arrays() -> None:
    s = OnPremScenario(gpu_price_usd=30_000.0, gpu_tdp_w=700.0, staff_usd_per_year=100_000.0)
    gpus = np.array([8.0, 64.0, 512.0])
    hours = np.array([100.0, 1_000.0, 10_000.0])
    costs = onprem_cost_usd(gpus, hours, s)
    assert isinstance(costs, np.ndarray) and costs.shape == (3,)
    for n, h, c in zip(gpus, hours, costs, strict=True):
        assert c == pytest.approx(float(onprem_cost_usd(float(n), float(h), s)))
        assert c == pytest.approx(n * h * float(usd_per_useful_gpu_hour(s, float(n))))
    assert isinstance(onprem_cost_usd(8, 100, s), float)
    # staff is shared: more GPUs, lower cost per GPU-hour
    per_hour = usd_per_useful_gpu_hour(s, gpus)
    assert isinstance(per_hour, np.ndarray) and per_hour[0] > per_hour[1] > per_hour[2]


def test_cloud_cost_accepts_arrays_and_extras() -> None:
    assert cloud_cost_usd(1_000.0, 6.5) == pytest.approx(6_500)
    out = cloud_cost_usd(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert isinstance(out, np.ndarray) and list(out) == [3.0, 8.0]
    job = cloud_job_cost(user_offer(2.0), 8, 730.0,
                         CloudExtras(storage_gb=1_000, storage_usd_per_gb_month=0.02, egress_gb=500,
                                     egress_usd_per_gb=0.09))
    assert job.compute_usd == pytest.approx(8 * 730 * 2.0)
    assert job.storage_usd == pytest.approx(20.0) and job.egress_usd == pytest.approx(45.0)
    assert job.total_usd == pytest.approx(11_680 + 65)
    with pytest.raises(InvalidSpec):
        cloud_cost_usd(-1.0, 2.0)


def test_licence_presets() -> None:
    assert licence_usd_per_gpu_year("nvaie") == 4_500
    assert licence_usd_per_gpu_year("none") == 0
    assert licence_usd_per_gpu_year("1200") == 1_200
    assert licence_usd_per_gpu_year("7100", usd_per_unit=1 / 7.1) == pytest.approx(1_000)
    with pytest.raises(InvalidSpec):
        licence_usd_per_gpu_year("gold")


def test_catalog_offers_keep_the_latest_snapshot() -> None:
    record = load_catalog().gpu("h100-sxm")
    latest = offers_for(record)
    aws = [o for o in latest if o.provider == "AWS p5.48xlarge"]
    assert [o.usd_per_gpu_hour for o in aws] == [6.88]
    assert [o.usd_per_gpu_hour for o in latest] == sorted(o.usd_per_gpu_hour for o in latest)
    assert len(offers_for(record, latest_only=False)) == len(record.cloud_prices)
    assert all(o.pricing == "reserved" for o in offers_for(record, pricing=("reserved",)))


def test_gpu_without_price_needs_one() -> None:
    record = load_catalog().gpu("h100-pcie")
    if record.price is None:
        with pytest.raises(InvalidSpec, match="--gpu-price"):
            scenario_for_gpu(record)
    assert scenario_for_gpu(record, gpu_price_usd=25_000.0).gpu_price_usd == 25_000


# --- the costs of owning that used to default to zero ----------------------------------------------
def test_owning_defaults_are_not_zero() -> None:
    from rigplan.cost import onprem as op

    s = OnPremScenario(gpu_price_usd=30_000.0, gpu_tdp_w=700.0)
    assert s.colo_usd_per_kw_month == pytest.approx(184.06)  # CBRE North America H2 2024
    assert s.staff_usd_per_gpu_year == pytest.approx(136_000 / 250)
    assert s.capital_rate == pytest.approx(0.075)
    unit = unit_costs(s)
    assert unit.colo_usd_per_year == pytest.approx(184.06 * 12 * (700 + 250) / 1000)
    assert unit.financing_usd > 0
    free = s.model_copy(update={"colo_usd_per_kw_month": 0.0, "staff_usd_per_gpu_year": 0.0, "capital_rate": 0.0})
    assert usd_per_useful_gpu_hour(s) > usd_per_useful_gpu_hour(free)
    assert "cost of capital" not in op.LEFT_OUT


def test_financing_is_an_annuity_on_capex_net_of_discounted_resale() -> None:
    from rigplan.cost.onprem import financing_usd

    assert financing_usd(1_000.0, 300.0, 0.0, 3.0) == 0.0
    # one year at 10%: pay capex now, get resale back a year later -> interest = 10% of capex
    assert financing_usd(1_000.0, 300.0, 0.10, 1.0) == pytest.approx(100.0)
    # no resale, 2 years at 10%: annuity 576.19 x 2 - 1000
    assert financing_usd(1_000.0, 0.0, 0.10, 2.0) == pytest.approx(2 * 1_000 * 0.1 / (1 - 1.1**-2) - 1_000)


def test_buy_use_sell_sells_at_the_straight_line_resale_value() -> None:
    from rigplan.cost.onprem import buy_use_sell, resale_fraction_after

    s = bare(depreciation_years=3.0, residual_fraction=0.3)
    assert resale_fraction_after(s, 0.0) == 1.0
    assert resale_fraction_after(s, 1.0) == pytest.approx(1 - 0.7 / 3)
    assert resale_fraction_after(s, 5.0) == pytest.approx(0.3)
    deal = buy_use_sell(s, 4, 8760.0)
    # bare: GPU only, 1 kW, no energy price, no fixed costs, no interest -> capex x (1 - resale)
    assert deal.total_usd == pytest.approx(4 * 7300.0 * 0.7 / 3)
    with_interest = buy_use_sell(s.model_copy(update={"capital_rate": 0.1}), 4, 8760.0)
    assert with_interest.financing_usd == pytest.approx(4 * 7300.0 * 0.1)


def test_buying_for_the_whole_period_costs_what_the_period_view_costs_at_full_use() -> None:
    from rigplan.cost.onprem import buy_use_sell

    # Every default cost on (server share, power, colo, staff, 7.5% capital), a 3-year period.
    s = OnPremScenario.model_validate({"gpu_price_usd": 30_000.0, "gpu_tdp_w": 700.0, "depreciation_years": 3.0,
                                       "utilisation": 1.0})
    deal = buy_use_sell(s, 64, 3 * 8760.0)
    assert deal.resale_fraction == pytest.approx(s.residual_fraction)
    assert deal.total_usd == pytest.approx(onprem_tco(s, 64).lifetime_usd, rel=1e-9)
    # Past the period the resale stays at the residual and the running costs keep coming.
    longer = buy_use_sell(s, 64, 4 * 8760.0)
    assert longer.resale_fraction == pytest.approx(s.residual_fraction)
    assert longer.total_usd > deal.total_usd


def test_financing_is_continuous_down_to_the_smallest_rate() -> None:
    from rigplan.cost.onprem import financing_usd

    # (1 + 5e-324) ** 3 rounds to 1: the annuity must still be finite and tend to 0 with the rate.
    tiny = financing_usd(52_152.6, 15_645.78, 5e-324, 3.0)
    small = financing_usd(52_152.6, 15_645.78, 1e-6, 3.0)
    usual = financing_usd(52_152.6, 15_645.78, 0.075, 3.0)
    assert 0.0 <= tiny < 1.0
    assert tiny < small < usual


def test_a_job_longer_than_the_busy_hours_bears_the_whole_fixed_cost_not_more() -> None:
    """A job of H hours is charged its share of the u·L busy hours; once H passes u·L the cluster is busier than
    u and the job bears the whole fixed cost (buy and sell), beyond L in proportion (replacement GPUs)."""
    s = OnPremScenario(gpu_price_usd=30_000.0, gpu_tdp_w=700.0)
    per_hour = usd_per_useful_gpu_hour(s, 64.0)
    owned = s.owned_hours
    short = 0.5 * s.utilisation * owned
    assert onprem_cost_usd(64, short, s) == pytest.approx(64 * short * per_hour)
    whole = onprem_cost_usd(64, owned, s)
    at_u = onprem_cost_usd(64, s.utilisation * owned, s)
    assert at_u < whole < 64 * owned * per_hour  # the naive H·c overcharges a job that fills the cluster
    assert onprem_cost_usd(64, 0.85 * owned, s) < whole
    assert onprem_cost_usd(64, 2 * owned, s) == pytest.approx(2 * whole)
