"""China's domestic accelerators beyond Ascend: each figure as its dated source states it, dense, and labelled
where a field is not published."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from rigplan.catalog.load import load_catalog
from rigplan.catalog.schema import GpuRecord
from rigplan.cli.main import cli
from rigplan.estimate.comm import PCIE_EFFICIENCY, link_tier
from rigplan.estimate.efficiency import CN_ACCELERATOR, efficiency_for

# id: (vendor, memory GiB, kind, GB/s, dense bf16 TFLOP/s, board W or None, link kind, link GB/s both ways, PCIe gen)
DOMESTIC = {
    "mlu370-x8": ("cambricon", 48, "LPDDR5", 614.4, 96, 250, "mlu-link", 200, 4),
    "mtt-s4000": ("moorethreads", 48, "GDDR6", 768, 100, None, "mtlink", 240, 5),
    "br100": ("biren", 64, "HBM2e", 1640, 1024, 550, "blink", 2300, 5),
    "br104": ("biren", 32, "HBM2e", 819, 512, 300, "pcie", 128, 5),
    "bi-v100": ("iluvatar", 32, "HBM2", 1200, 147, 300, "pcie", 64, 4),
}


@pytest.fixture(scope="module")
def gpus() -> dict[str, GpuRecord]:
    return load_catalog().gpus


@pytest.mark.parametrize("gpu_id", sorted(DOMESTIC))
def test_figures_as_the_sources_state_them(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    vendor, gib, kind, bw, bf16, watts, link, link_bw, gen = DOMESTIC[gpu_id]
    r = gpus[gpu_id]
    assert (r.vendor, r.memory_gib, r.memory_kind, r.memory_bandwidth_gb_per_s) == (vendor, gib, kind, bw)
    assert r.dense_tflops.bf16 == bf16 and r.tdp_w == watts and r.pcie_gen == gen
    assert (r.link.kind, r.link.bandwidth_gb_per_s_bidirectional) == (link, link_bw)
    assert r.price is None and not r.cloud_prices  # no sourced price: plan asks for --gpu-price / --cloud-price


@pytest.mark.parametrize("gpu_id", sorted(DOMESTIC))
def test_every_figure_has_a_dated_addressed_source(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    r = gpus[gpu_id]
    dated = [s for s in r.sources if s.url and re.search(r"(19|20)\d\d", s.title + s.url)]
    assert dated, f"{gpu_id}: no source with an address and a date"
    assert all(s.url and s.url.startswith("http") for s in r.sources if s.accessed), gpu_id
    text = " ".join(s.title for s in r.sources)
    assert f"{r.memory_bandwidth_gb_per_s:g}".rstrip("0").rstrip(".") in text.replace(",", "") or \
        f"{r.memory_bandwidth_gb_per_s / 1000:g} TB/s" in text, gpu_id


@pytest.mark.parametrize("gpu_id", sorted(DOMESTIC))
def test_read_as_dense_and_said_so(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    """No vendor here publishes a sparse column: the record says the rates are read as dense."""
    notes = " ".join(gpus[gpu_id].notes)
    assert "dense" in notes and "sparse" in notes, gpu_id


@pytest.mark.parametrize("gpu_id", sorted(DOMESTIC))
def test_speed_is_borrowed_and_labelled(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    eff = efficiency_for(gpus[gpu_id].to_domain())
    assert eff is CN_ACCELERATOR and not eff.measured
    assert link_tier(gpus[gpu_id].to_domain().link).efficiency == PCIE_EFFICIENCY  # no published fabric figure


def test_unpublished_fields_stay_empty(gpus: dict[str, GpuRecord]) -> None:
    s4000, mlu = gpus["mtt-s4000"], gpus["mlu370-x8"]
    assert s4000.tdp_w is None and any("Board power: not found" in n for n in s4000.notes)
    assert mlu.dense_tflops.fp32 is None and any("24 TFLOPS" in n and "32 TFLOPS" in n for n in mlu.notes)
    assert gpus["br100"].dense_tflops.tf32 is None  # TF32+ is Biren's own format
    assert all(gpus[g].node.nic_gbit_per_s_per_gpu is None for g in DOMESTIC)


def test_an_unknown_vendor_or_memory_kind_is_refused(gpus: dict[str, GpuRecord]) -> None:
    raw = gpus["br104"].model_dump()
    with pytest.raises(ValidationError, match="vendor"):
        GpuRecord.model_validate({**raw, "vendor": "nobody"})
    with pytest.raises(ValidationError, match="memory_kind"):
        GpuRecord.model_validate({**raw, "memory_kind": "DDR3"})


def test_estimate_without_board_power_says_so() -> None:
    result = CliRunner().invoke(cli, ["estimate", "llama-3.2-1b", "--gpu", "mtt-s4000", "--gpus", "8", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert any("no published power figure" in a for a in data["assumptions"])
    assert any("efficiency data inherited" in a for a in data["assumptions"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gpus_lists_the_domestic_parts(lang: str) -> None:
    result = CliRunner().invoke(cli, ["--lang", lang, "gpus"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(cli, ["gpus", "--json"], catch_exceptions=False)
    ids = {g["id"] for g in json.loads(listed.output)["gpus"]}
    assert set(DOMESTIC) <= ids
    show = CliRunner().invoke(cli, ["--lang", lang, "gpus", "show", "mtt-s4000"], catch_exceptions=False)
    assert show.exit_code == 0 and ("未公布" if lang == "zh" else "not published") in show.output


def _tokens_per_s(gpu_id: str, extra: list[str]) -> tuple[float, list[str]]:
    args = ["estimate", "llama-3.1-8b", "--gpu", gpu_id, "--gpus", "16", "--nic", "200", "--zero", "3",
            "--micro-batch", "1", "--recompute", "full", "--global-batch", "256", "--json", *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    return data["tokens_per_s"], data["assumptions"]


def test_nic_access_to_device_memory_is_unknown_and_estimated_staged(
        gpus: dict[str, GpuRecord], tmp_path: Any) -> None:
    """No source says whether these parts' NICs reach device memory directly: the field is null, a multi-node
    estimate takes the staged path (as GeForce's false does) and says so; a record stating true is faster."""
    assert all(gpus[g].gpudirect_rdma is None for g in DOMESTIC)
    assert all(gpus[g].to_domain().gpudirect_rdma is None for g in DOMESTIC)
    unknown, notes = _tokens_per_s("br104", [])
    assert any("GPUDirect-style RDMA" in a and "staged" in a for a in notes)
    for value, name in ((True, "direct"), (False, "staged")):
        raw = gpus["br104"].model_dump(mode="json")
        raw.update(id=f"br104-{name}", gpudirect_rdma=value)
        (tmp_path / "gpus").mkdir(exist_ok=True)
        (tmp_path / "gpus" / f"br104-{name}.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    direct, direct_notes = _tokens_per_s("br104-direct", ["--catalog", str(tmp_path)])
    staged, _ = _tokens_per_s("br104-staged", ["--catalog", str(tmp_path)])
    assert unknown == pytest.approx(staged, rel=1e-12)
    assert direct > unknown
    assert not any("GPUDirect-style RDMA" in a for a in direct_notes)
    _, one_node_notes = _tokens_per_s("br104", ["--gpus", "8"])
    assert not any("GPUDirect-style RDMA" in a for a in one_node_notes)  # one node: no network phase to stage


def test_every_china_part_states_nic_access_with_a_note(gpus: dict[str, GpuRecord]) -> None:
    """The schema's default (true) fits NVIDIA's data-centre parts; each China-market accelerator states its value
    in its own file and says why in a note."""
    data = Path(__file__).parents[2] / "src/rigplan/catalog/data/gpus"
    china = [g for g, r in gpus.items() if r.vendor in {"huawei", "cambricon", "moorethreads", "biren", "iluvatar"}]
    assert set(DOMESTIC) | {"ascend-910b", "ascend-910c"} <= set(china)
    for gpu_id in china:
        assert "gpudirect_rdma" in yaml.safe_load((data / f"{gpu_id}.yaml").read_text()), gpu_id
        assert any("RDMA" in n or "gpudirect_rdma" in n for n in gpus[gpu_id].notes), gpu_id
    assert gpus["ascend-910b"].gpudirect_rdma is True  # the RoCE port is on the chip (Hot Chips 2019)
