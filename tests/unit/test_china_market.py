"""China's market: CNY cloud quotes, CNY tariffs, Ascend parts, Gemma 3 configs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.catalog.load import load_catalog
from rigplan.catalog.schema import CloudPriceRecord
from rigplan.cli.main import cli
from rigplan.cost.cloud import offers_for, read_offers
from rigplan.cost.power import parse_tariff
from rigplan.cost.tariffs import (
    BEIJING_2025_02_SINGLE_PART,
    BEIJING_2025_02_TWO_PART,
    GUANGDONG_2021_TOU,
    HUBEI_2026_01_SINGLE_PART,
    HUBEI_2026_01_TWO_PART,
    NAMED_TARIFFS,
    NamedTariff,
    named_tariff,
)
from rigplan.estimate.efficiency import DAVINCI, efficiency_for
from rigplan.estimate.params import count_params


def test_a_cloud_price_is_quoted_in_exactly_one_currency() -> None:
    base = {"provider": "x", "pricing": "on-demand", "source": "s"}
    with pytest.raises(ValidationError, match="once"):
        CloudPriceRecord.model_validate(base)
    with pytest.raises(ValidationError, match="once"):
        CloudPriceRecord.model_validate({**base, "usd_per_gpu_hour": 1.0, "cny_per_gpu_hour": 7.0})
    record = CloudPriceRecord.model_validate({**base, "cny_per_gpu_hour": 7.1})
    assert record.usd_per_hour(7.1) == pytest.approx(1.0)
    assert record.usd_per_hour(6.5) == pytest.approx(7.1 / 6.5)


def test_cny_offers_convert_at_the_requests_rate() -> None:
    h20 = load_catalog().gpus["h20"]
    quoted = [o for o in offers_for(h20) if o.cny_per_gpu_hour is not None]
    assert quoted, "the catalog carries a CNY offer for the H20"
    offer = quoted[0]
    at_7 = offers_for(h20, cny_per_usd=7.0)
    same = next(o for o in at_7 if o.provider == offer.provider)
    assert same.usd_per_gpu_hour == pytest.approx(offer.cny_per_gpu_hour / 7.0)
    dates = {o.provider: o.as_of for o in quoted}
    assert dates["AutoDL (视拓云)"] is not None  # dated by its source
    assert dates["优云智算 (UCloud compshare)"] is None  # no snapshot date in its source: "undated"


@pytest.mark.parametrize("gpu", ["h20", "h800-sxm", "a800-80gb-sxm", "l20"])
def test_the_china_market_parts_have_a_dated_cny_offer(gpu: str) -> None:
    """H800 and L20 had no offer at all; every China-market part now has a CNY quote with its source's date."""
    record = load_catalog().gpus[gpu]
    dated = [p for p in record.cloud_prices if p.cny_per_gpu_hour is not None and p.as_of is not None]
    assert dated, gpu
    assert all(p.as_of.year >= 2026 and "github.com/" in p.source for p in dated)


@pytest.mark.parametrize("gpu", ["rtx-4090d", "rtx-a6000"])
def test_the_workstation_cards_have_a_dated_cny_offer_that_names_its_weakness(gpu: str) -> None:
    """The RTX 4090 D and RTX A6000 had only undated index prices; their dated AutoDL quotes come from users' notes,
    and the source says so."""
    record = load_catalog().gpus[gpu]
    dated = [p for p in record.cloud_prices if p.cny_per_gpu_hour is not None and p.as_of is not None]
    assert dated, gpu
    assert all(p.as_of.year == 2026 and "not AutoDL's own page" in p.source for p in dated)


def test_chinese_clouds_are_capped_at_one_machine() -> None:
    catalog = load_catalog()
    cny = [(g.id, p) for g in catalog.gpus.values() for p in g.cloud_prices if p.cny_per_gpu_hour is not None]
    assert len(cny) >= 8
    assert all(p.capacity_gpus == 8 for _, p in cny)


ADDRESS = re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/\S+")
"""A web address in a source text (host with a top-level domain, then a path)."""


def test_every_cny_price_has_an_address_and_a_date_or_says_why_not() -> None:
    """A CNY cloud price names its source's address; it carries its snapshot date, or (where the source shows
    none) its source says so and when it was read, so an undated price is never silently undated."""
    catalog = load_catalog()
    cny = [(g.id, p) for g in catalog.gpus.values() for p in g.cloud_prices if p.cny_per_gpu_hour is not None]
    assert cny
    for gpu, price in cny:
        assert ADDRESS.search(price.source), (gpu, price.provider, price.source)
        if price.as_of is None:
            assert "no snapshot date" in price.source, (gpu, price.provider)
            assert re.search(r"read \d{4}-\d{2}-\d{2}", price.source), (gpu, price.provider)


CNY_TARIFFS = [t for t in NAMED_TARIFFS.values() if t.currency == "cny"]


@pytest.mark.parametrize("tariff", CNY_TARIFFS, ids=lambda t: t.name)
def test_every_cny_tariff_has_a_date_an_address_and_a_day_of_bands(tariff: NamedTariff) -> None:
    assert re.match(r"(19|20)\d\d(-[01]\d(-[0-3]\d)?)?\b", tariff.as_of), tariff.as_of
    assert re.fullmatch(r"https?://[\w.-]+\.[a-z]{2,}/\S+", tariff.url), tariff.url
    assert ": " not in tariff.source  # the Chinese note reads ': ' as the end of a value
    assert sum(b.hours_per_day for b in parse_tariff(tariff.bands).bands) == pytest.approx(24)


def test_guangdong_tariff_has_the_notice_hours_and_ratios() -> None:
    bands = parse_tariff(NAMED_TARIFFS["cn-guangdong-tou"].bands).bands
    prices = {b.name: (b.hours_per_day, b.usd_per_kwh) for b in bands}
    assert {name: hours for name, (hours, _) in prices.items()} == {"peak": 7, "flat": 9, "valley": 8}
    flat = prices["flat"][1]
    assert flat == pytest.approx(0.625)
    assert prices["peak"][1] / flat == pytest.approx(1.7) and prices["valley"][1] / flat == pytest.approx(0.38)
    assert [(band, hours) for band, hours, _ in GUANGDONG_2021_TOU] == [("peak", 7), ("flat", 9), ("valley", 8)]


@pytest.mark.parametrize(("name", "prices", "peak_up", "valley_down"),
                         [("cn-beijing-tou", BEIJING_2025_02_TWO_PART, 0.6, 0.6),
                          ("cn-beijing-tou-single", BEIJING_2025_02_SINGLE_PART, 0.8, 0.7)])
def test_beijing_tariffs_are_the_2025_02_table_at_the_notice_hours(
        name: str, prices: tuple[float, float, float], peak_up: float, valley_down: float) -> None:
    """8 h of each band (京发改规〔2023〕11号); the notice floats one purchase component by 1.6:1:0.4 (two-part)
    or 1.8:1:0.3 (single-part from 1 kV), so both rows of the table imply the same component."""
    tariff = NAMED_TARIFFS[name]
    bands = {b.name: (b.hours_per_day, b.usd_per_kwh) for b in parse_tariff(tariff.bands).bands}
    assert bands == {"peak": (8, prices[0]), "flat": (8, prices[1]), "valley": (8, prices[2])}
    peak, flat, valley = prices
    assert (peak - flat) / peak_up == pytest.approx(0.390223, abs=2e-6)
    assert (flat - valley) / valley_down == pytest.approx(0.390223, abs=2e-6)
    assert tariff.currency == "cny" and tariff.as_of.startswith("2025-02")


@pytest.mark.parametrize(("name", "prices", "transmission"),
                         [("cn-hubei-tou", HUBEI_2026_01_TWO_PART, 0.1263),
                          ("cn-hubei-tou-single", HUBEI_2026_01_SINGLE_PART, 0.1903)])
def test_hubei_tariffs_float_one_base_by_the_table_ratios(name: str, prices: tuple[float, float, float, float],
                                                          transmission: float) -> None:
    """2 h sharp, 6 h peak, 8 h flat, 8 h valley (鄂发改价管〔2024〕77号); the table floats the purchase price plus
    line loss by 2.0 : 1.49 : 1 : 0.45 over the fixed rest (transmission, system operation 0.082273, government
    funds 0.0452): the sharp and valley rows reproduce to the table's six decimals, the peak to 0.003."""
    tariff = NAMED_TARIFFS[name]
    bands = {b.name: (b.hours_per_day, b.usd_per_kwh) for b in parse_tariff(tariff.bands).bands}
    sharp, peak, flat, valley = prices
    assert bands == {"sharp": (2, sharp), "peak": (6, peak), "flat": (8, flat), "valley": (8, valley)}
    fixed = transmission + 0.082273 + 0.0452
    base = 0.384470 + 0.013643  # purchase price + line loss, the floated part
    assert flat - fixed == pytest.approx(base, abs=3e-4)  # the single-part row's flat sits 0.0002 under its parts
    assert sharp - fixed == pytest.approx(2.0 * base, abs=2e-6)
    assert valley - fixed == pytest.approx(0.45 * base, abs=2e-6)
    assert (peak - fixed) / base == pytest.approx(1.49, abs=0.006)
    assert tariff.currency == "cny" and tariff.as_of.startswith("2026-01") and "gov.cn" in tariff.url


def test_a_shiftable_job_on_the_beijing_tariff_runs_in_the_valley() -> None:
    """At 30% utilisation a shiftable job's 7.2 busy hours fit the 8 valley hours (23-7 h)."""
    shifted = _tco_json("--tou", "cn-beijing-tou", "--shiftable", "--utilisation", "0.3")["onprem"]
    assert shifted["busy_usd_per_kwh"] * 7.1 == pytest.approx(BEIJING_2025_02_TWO_PART[2])
    assert shifted["mean_usd_per_kwh"] * 7.1 == pytest.approx(sum(BEIJING_2025_02_TWO_PART) / 3)


def _tco_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["tco", "--gpu", "h100-sxm", "--gpus", "8", "--months", "12", "--json", *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("name", list(NAMED_TARIFFS))
def test_every_named_tariff_is_selectable_with_tou(name: str) -> None:
    """`rigplan tco --tou NAME` prices power at the tariff's own bands: a job that cannot shift pays the day's
    mean, the same as --price-per-kwh at that mean converted at --fx 7.1; the note cites the tariff's address."""
    tariff = NAMED_TARIFFS[name]
    mean = sum(b.usd_per_kwh * b.hours_per_day for b in parse_tariff(tariff.bands).bands) / 24
    per_usd = 7.1 if tariff.currency == "cny" else 1.0
    named = _tco_json("--tou", name)
    flat = _tco_json("--price-per-kwh", repr(mean / per_usd))
    assert named["onprem"]["power_usd_per_year"] == pytest.approx(flat["onprem"]["power_usd_per_year"], rel=1e-9)
    assert any(a.startswith(f"tariff {name} (") and tariff.url in a for a in named["assumptions"])


def test_an_unknown_tariff_name_lists_the_names() -> None:
    result = CliRunner().invoke(cli, ["tco", "--tou", "cn-beijing"])
    assert result.exit_code == 2
    assert "'cn-beijing' is neither a named tariff" in result.output and "cn-guizhou-dc" in result.output


def test_offers_file_mixes_currencies(tmp_path: Path) -> None:
    path = tmp_path / "offers.yaml"
    path.write_text("- {provider: a, pricing: on-demand, usd_per_gpu_hour: 2.0, source: s}\n"
                    "- {provider: b, pricing: on-demand, cny_per_gpu_hour: 14.2, source: s}\n", encoding="utf-8")
    offers = {o.provider: o for o in read_offers(path, usd_per_unit=1.0, cny_per_usd=7.1)}
    assert offers["a"].usd_per_gpu_hour == pytest.approx(2.0)
    assert offers["b"].usd_per_gpu_hour == pytest.approx(2.0)


@pytest.mark.parametrize(("name", "ratio"), [("cn-tou-3to1", 3.0), ("cn-tou-4to1", 4.0)])
def test_named_tou_tariffs_keep_the_ndrc_ratio_and_the_average(name: str, ratio: float) -> None:
    tariff = parse_tariff(NAMED_TARIFFS[name].bands)
    prices = {b.name: b.usd_per_kwh for b in tariff.bands}
    assert prices["peak"] / prices["valley"] == pytest.approx(ratio, rel=1e-2)
    mean = sum(b.usd_per_kwh * b.hours_per_day for b in tariff.bands) / 24
    assert mean == pytest.approx(0.625, rel=1e-2)
    assert named_tariff(name.upper()) is NAMED_TARIFFS[name]
    assert named_tariff("peak:8h@0.1,flat:16h@0.05") is None


def _tco(*args: str) -> dict:  # type: ignore[type-arg]
    out = subprocess.run([sys.executable, "-m", "rigplan.cli.main", "tco", "--gpu", "h100-sxm", "--gpus", "8",
                          "--months", "12", "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_cny_tariff_is_priced_in_cny_whatever_the_report_currency() -> None:
    usd = _tco("--tou", "cn-industrial")
    cny = _tco("--tou", "cn-industrial", "--currency", "cny")
    assert usd["onprem"] == cny["onprem"]  # internal amounts are USD either way
    flat = _tco("--price-per-kwh", str(0.625 / 7.1))
    assert usd["onprem"]["power_usd_per_year"] == pytest.approx(flat["onprem"]["power_usd_per_year"], rel=1e-3)


def test_tco_names_the_gpus_asked_for_when_nothing_can_be_priced() -> None:
    out = subprocess.run([sys.executable, "-m", "rigplan.cli.main", "tco", "--gpu", "h800-sxm", "--gpus", "64",
                          "--months", "12"], capture_output=True, text=True)
    assert out.stdout.startswith("64 x ")


def test_ascend_910c_is_one_die_of_a_two_die_package() -> None:
    catalog = load_catalog()
    die, b = catalog.gpus["ascend-910c"], catalog.gpus["ascend-910b"]
    assert die.devices_per_package == 2
    assert die.dense_tflops.half == pytest.approx(300_000 / 768, rel=0.01)  # 300 PFLOPS over 384 x 2 dies
    assert b.link.topology == "full-mesh" and b.vendor == "huawei"
    assert efficiency_for(die.to_domain()) is DAVINCI and not DAVINCI.measured


def _gemma3_config(tmp_path: Path) -> Path:
    text = {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
            "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
            "query_pre_attn_scalar": 168, "sliding_window": 1024}
    path = tmp_path / "gemma-3-27b" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": text,
                                "vision_config": {"model_type": "siglip_vision_model"}}), encoding="utf-8")
    return path


def test_gemma3_config_reads_with_transformers_defaults(tmp_path: Path) -> None:
    arch = architecture_from_hf_config(_gemma3_config(tmp_path))
    assert arch.vocab == 262_208 and arch.tied_embeddings and arch.qk_norm and arch.norms_per_layer == 4
    assert any("vocab_size" in n for n in arch.notes)
    counts = count_params(arch)
    total = counts.embedding + counts.final_norm + 62 * (counts.dense_layer.attention + counts.dense_layer.mlp_dense
                                                        + counts.dense_layer.norms)
    assert total == pytest.approx(27.016e9, rel=0.005)  # Gemma 3 report Table 1: 1,416M + 25,600M
    catalog = load_catalog().models["gemma-3-27b"].to_domain()
    assert count_params(catalog) == counts


def test_a_gemma3_text_config_without_its_model_type_reads_as_gemma3_text(tmp_path: Path) -> None:
    path = _gemma3_config(tmp_path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    del raw["text_config"]["model_type"]
    path.write_text(json.dumps(raw), encoding="utf-8")
    arch = architecture_from_hf_config(path)
    assert arch.qk_norm and arch.vocab == 262_208
    assert any("gemma3_text" in n for n in arch.notes)
