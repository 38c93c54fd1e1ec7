"""`rigplan tco`: JSON contract, text verdict, the seed scenario, and bad input (one line, exit 2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from rigplan.cli.tco import tco_command

REQUIRED_KEYS = (
    "gpu.id", "gpu.price_usd", "num_gpus", "currency", "cny_per_usd", "job.hours", "job.gpu_hours", "job.onprem_usd",
    "cloud", "onprem.capex_usd", "onprem.residual_credit_usd", "onprem.power_usd_per_year",
    "onprem.colo_usd_per_year", "onprem.licence_usd_per_year", "onprem.staff_usd_per_year", "onprem.lifetime_usd",
    "onprem.usd_per_useful_gpu_hour", "onprem.heat_btu_per_h_peak", "onprem.airflow_cfm_peak", "breakeven",
    "by_utilisation", "assumptions", "verdict",
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(tco_command, list(args), terminal_width=200)


def lookup(data: dict, dotted: str) -> object:
    for part in dotted.split("."):
        data = data[part]
    return data


def test_json_has_the_contract_keys() -> None:
    out = invoke("--gpu", "h100-sxm", "--gpus", "64", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    for key in REQUIRED_KEYS:
        lookup(data, key)
    assert data["gpu"]["id"] == "h100-sxm" and data["num_gpus"] == 64
    assert data["cloud"] and {"provider", "pricing", "usd_per_gpu_hour", "as_of", "total_usd"} <= set(data["cloud"][0])
    b = data["breakeven"][0]
    assert {"provider", "usd_per_gpu_hour", "months", "busy_gpu_hours", "breakeven_utilisation", "cheaper"} <= set(b)
    own = data["onprem"]
    assert own["lifetime_usd"] == pytest.approx(own["net_capex_usd"] + own["years"] * own["opex_usd_per_year"])


def test_cloud_price_override_and_hours() -> None:
    data = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "8", "--hours", "1000", "--cloud-price", "2.5",
                             "--json").stdout)
    assert [c["provider"] for c in data["cloud"]] == ["user"]
    assert data["cloud"][0]["total_usd"] == pytest.approx(8 * 1000 * 2.5)
    assert data["job"]["onprem_usd"] == pytest.approx(8 * 1000 * data["onprem"]["usd_per_useful_gpu_hour"])


def test_text_has_breakdown_and_verdict() -> None:
    out = invoke("--gpu", "h100-sxm", "--gpus", "64", "--licence", "nvaie")
    assert out.exit_code == 0, out.output
    for text in ("Cloud", "capex", "residual credit", "per year: power", "Break-even", "per useful GPU-hour", "CFM"):
        assert text in out.stdout
    assert any(word in out.stdout for word in ("OWN:", "RENT:", "MIXED:"))


def test_low_utilisation_rents() -> None:
    out = invoke("--gpu", "h100-sxm", "--utilisation", "0.05", "--cloud-price", "2.0")
    assert out.exit_code == 0, out.output
    assert "RENT:" in out.stdout


def test_cny_output_uses_wan() -> None:
    out = invoke("--gpu", "h100-sxm", "--gpus", "64", "--currency", "cny", "--price-per-kwh", "0.6")
    assert out.exit_code == 0, out.output
    assert "万" in out.stdout and "¥" in out.stdout


def test_shiftable_tariff_lowers_power() -> None:
    tou = "peak:8h@0.12,flat:8h@0.08,valley:8h@0.04"
    flat = json.loads(invoke("--json").stdout)["onprem"]["power_usd_per_year"]
    fixed = json.loads(invoke("--tou", tou, "--json").stdout)["onprem"]["power_usd_per_year"]
    shifted = json.loads(invoke("--tou", tou, "--shiftable", "--json").stdout)["onprem"]["power_usd_per_year"]
    assert fixed == pytest.approx(flat) and shifted < flat


def test_seed_scenario_text_and_json() -> None:
    out = invoke("--scenario", "seed")
    assert out.exit_code == 0, out.output
    assert "$4.1667/h" in out.stdout and "$6,500" in out.stdout and "Corrected" in out.stdout
    data = json.loads(invoke("--scenario", "seed", "--json").stdout)
    assert data["article"]["own_usd_per_gpu_hour"] == pytest.approx(4.1667, abs=5e-5)
    assert data["steps"][0]["own_usd_per_useful_gpu_hour"] == pytest.approx(25_000 / 6_000)
    assert data["gpu_id"] == "a100-80gb-sxm" and data["verdict"]


@pytest.mark.parametrize("args", [
    ("--utilisation", "1.5"),
    ("--gpus", "0"),
    ("--gpu", "no-such-gpu"),
    ("--hours", "10", "--months", "1"),
    ("--tou", "peak:8h@0.12"),
    ("--licence", "gold"),
    ("--shiftable",),
    ("--price-per-kwh", "0.1", "--tou", "a:24h@0.1"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    out = invoke(*args)
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rigplan: error: ")
    assert out.stdout == ""


def test_server_build_supplies_gpu_and_power() -> None:
    """--server takes the GPU and the host power (max system power less GPU TDP) from the build."""
    default = json.loads(CliRunner().invoke(tco_command, ["--gpu", "h100-sxm", "--gpus", "8", "--json"]).output)
    built = json.loads(CliRunner().invoke(tco_command, ["--server", "dgx-h100", "--gpus", "8", "--json"]).output)
    assert built["gpu"]["id"] == "h100-sxm"
    assert built["scenario"]["host_w_per_gpu"] == pytest.approx((10200 - 8 * 700) / 8)
    assert default["scenario"]["host_w_per_gpu"] == pytest.approx(250)


def test_64_h100_for_12_months_shows_buy_use_sell_beside_the_3_year_view() -> None:
    data = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "64", "--months", "12", "--json").stdout)
    deal = data["buy_use_sell"]
    assert deal["hours"] == pytest.approx(12 * 730)
    assert deal["resale_fraction"] == pytest.approx(1 - 0.7 / 3)
    assert deal["total_usd"] < data["onprem"]["lifetime_usd"]
    assert data["job_verdict"] and data["verdict"]
    assert data["onprem"]["colo_usd_per_year"] > 0 and data["onprem"]["staff_usd_per_year"] > 0
    assert data["onprem"]["financing_usd_per_year"] > 0
    assert "Left out:" in data["verdict"]


def test_a_job_as_long_as_the_period_is_priced_bought_and_sold_not_at_the_shared_rate() -> None:
    """36 months of 64 H100 on the 3-year period: the job keeps the GPUs busy throughout, so its cost of owning
    is buying, running and selling at the residual (the period's cost at full use), not its share at 70%."""
    data = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "64", "--months", "36", "--json").stdout)
    deal = data["buy_use_sell"]
    assert deal["resale_fraction"] == pytest.approx(0.3)
    # busy throughout, the job is the cluster's only user: its share is the whole period, as buying and selling
    assert deal["total_usd"] == pytest.approx(data["job"]["onprem_usd"])
    assert data["onprem"]["lifetime_usd"] < deal["total_usd"] < 1.05 * data["onprem"]["lifetime_usd"]
    assert data["job_verdict"].startswith("BUY-AND-SELL")
    assert any("keeps the GPUs busy 100%" in note for note in data["assumptions"])


def test_large_multi_week_job_is_not_priced_at_spot_or_serverless_unless_asked() -> None:
    data = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "64", "--months", "12", "--json").stdout)
    assert {c["pricing"] for c in data["cloud"]}.isdisjoint({"spot", "community", "serverless"})
    assert any("serverless" in note for note in data["assumptions"])
    asked = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "64", "--months", "12", "--pricing", "serverless",
                              "--json").stdout)
    assert [c["pricing"] for c in asked["cloud"]] == ["serverless"]
    small = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "8", "--hours", "24", "--json").stdout)
    assert "serverless" in {c["pricing"] for c in small["cloud"]}


def test_undated_prices_say_so() -> None:
    data = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "8", "--hours", "24", "--json").stdout)
    serverless = [c for c in data["cloud"] if c["pricing"] == "serverless"]
    assert serverless and serverless[0]["as_of"] is None
    assert "undated" in invoke("--gpu", "h100-sxm", "--gpus", "8", "--hours", "24").output


def test_renting_works_for_a_gpu_without_a_purchase_price() -> None:
    out = invoke("--gpu", "t4", "--gpus", "4", "--months", "1", "--cloud-price", "0.35")
    assert out.exit_code == 0, out.output
    assert "RENT" in out.output and "no purchase price" in out.output
    data = json.loads(invoke("--gpu", "t4", "--gpus", "4", "--months", "1", "--cloud-price", "0.35", "--json").stdout)
    assert data["onprem"] is None and data["cloud"][0]["total_usd"] == pytest.approx(4 * 730 * 0.35)


def test_a_part_whose_only_offers_are_left_out_says_how_to_include_them() -> None:
    result = CliRunner().invoke(tco_command, ["--gpu", "b200", "--gpus", "64", "--months", "12"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "no cloud offer in the catalog" not in result.output
    assert "are left out for this job; add --pricing spot to include them" in result.output

