"""Money: USD and CNY formatting (万 / 亿), exchange rate, reading offers and requests in CNY."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.cost.cloud import read_offers
from rigplan.cost.money import CNY_PER_USD_DEFAULT, Currency, Money, format_cny, format_usd
from rigplan.cost.tco import TcoRequest, build_scenario, compare, select_offers
from rigplan.errors import InvalidSpec


@pytest.mark.parametrize(("usd", "text"), [
    (0, "$0"), (2.449, "$2.45"), (1_234, "$1,234"), (12_345, "$12.3k"), (1_230_000, "$1.23M"),
    (1_001_330, "$1.00M"), (999_999, "$1.00M"), (2.5e9, "$2.50B"), (-4_500, "-$4,500"), (999.6e9, "$1.00T"),
    (1.234e12, "$1.23T"), (8e15, "$8,000T"),
])
def test_format_usd(usd: float, text: str) -> None:
    assert format_usd(usd) == text


@pytest.mark.parametrize(("cny", "text"), [
    (17.4, "¥17.40"), (8_500, "¥8,500"), (12_345, "¥1.2万"), (1_234_000, "¥123.4万"), (12_340_000, "¥1,234万"),
    (123_000_000, "¥1.23亿"), (99_999_999, "¥1.00亿"), (9_999_999, "¥1,000万"),
])
def test_format_cny_in_wan_and_yi(cny: float, text: str) -> None:
    assert format_cny(cny) == text


def test_money_converts_at_the_rate() -> None:
    cny = Money(currency=Currency.CNY, cny_per_usd=7.1)
    assert cny.amount(1_000_000) == "¥710.0万"  # $1M = ¥710万
    assert cny.amount(26_000_000) == "¥1.85亿"  # ¥184.6M
    assert cny.rate(2.0) == "¥14.20"
    assert cny.to_usd(71_000) == pytest.approx(10_000)
    assert Money().amount(1_230_000) == "$1.23M"
    assert CNY_PER_USD_DEFAULT == 7.1
    with pytest.raises(InvalidSpec):
        Money(currency=Currency.CNY, cny_per_usd=0)


def test_request_in_cny_is_converted_once() -> None:
    record = load_catalog().gpu("h100-sxm")
    request = TcoRequest(gpu="h100-sxm", currency=Currency.CNY, fx=7.0, gpu_price=210_000, price_per_kwh=0.7,
                         licence="nvaie", cloud_price=14.0)
    s = build_scenario(request, record)
    assert s.gpu_price_usd == pytest.approx(30_000)
    assert s.usd_per_kwh == pytest.approx(0.1)
    assert s.licence_usd_per_gpu_year == 4_500  # the preset is in USD
    offers = select_offers(request, record)
    assert [o.usd_per_gpu_hour for o in offers] == [pytest.approx(2.0)]
    result = compare(request, record, offers)
    assert "¥" in result.verdict


def test_offers_file(tmp_path: Path) -> None:
    path = tmp_path / "offers.yaml"
    path.write_text("- provider: Lambda\n  pricing: on-demand\n  usd_per_gpu_hour: 2.99\n  as_of: 2026-11-01\n"
                    "  source: my quote\n- provider: Nebius\n  pricing: reserved\n  usd_per_gpu_hour: 2.0\n"
                    "  as_of: 2026-11-01\n  source: my quote\n", encoding="utf-8")
    offers = read_offers(path)
    assert [o.provider for o in offers] == ["Nebius", "Lambda"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("- provider: X\n  pricing: cheap\n  usd_per_gpu_hour: 1\n  as_of: 2026-01-01\n  source: s\n",
                   encoding="utf-8")
    with pytest.raises(InvalidSpec, match="entry 1: pricing"):
        read_offers(bad)
