"""Figures a vendor does not publish are absent, not guessed: Cloud TPU power, NIC rates and host PCIe
generation are null in the catalog, and what needs them says so (energy not estimated, owning not priced,
multi-slice jobs need --nic, builds cannot be linted). A TPU slice is one ICI node."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from rigplan.catalog.load import BUILTIN_DIR, load_catalog
from rigplan.catalog.schema import GpuRecord
from rigplan.cost.tco import TcoRequest, tco
from rigplan.errors import InvalidSpec
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.lint import lint_build
from rigplan.reliab.storage import DEFAULT_SHARED_STORAGE, DEFAULT_STORAGE, default_storage_for
from rigplan.servers.load import resolve_build


def test_a_record_must_say_that_its_power_is_unknown() -> None:
    raw = yaml.safe_load((BUILTIN_DIR / "gpus" / "tpu-v5e.yaml").read_text(encoding="utf-8"))
    assert raw["tdp_w"] is None and "tdp_w" in raw
    del raw["tdp_w"]
    with pytest.raises(ValidationError, match="tdp_w"):
        GpuRecord.model_validate(raw)


def test_tpu_records_carry_only_published_figures() -> None:
    gpus = load_catalog().gpus
    v5e, v5p, v6e = gpus["tpu-v5e"], gpus["tpu-v5p"], gpus["tpu-v6e"]
    assert v5e.tdp_w is None and v5p.tdp_w is None and v6e.tdp_w is None
    assert v5e.node.nic_gbit_per_s_per_gpu == 2 * 100 / 8  # 2 x 100 Gbps NICs per 8-chip host (v5e docs)
    assert v5p.node.nic_gbit_per_s_per_gpu is None and v6e.node.nic_gbit_per_s_per_gpu is None
    assert v5e.pcie_gen is None and v5p.pcie_gen is None and v6e.pcie_gen == 5  # v6e docs: PCIe Gen5
    assert (v5e.node.gpus_per_node, v6e.node.gpus_per_node) == (256, 256)  # one pod = one ICI slice
    assert v5p.node.gpus_per_node == v5p.link.domain_size == 6144  # largest single slice: 96 cubes of 64


def _v5e(**extra: object) -> dict:  # type: ignore[type-arg]
    request = EstimateRequest(model="llama-3.1-8b", gpu="tpu-v5e", gpus=256, zero=3, tokens="100B", **extra)
    return estimate(request).to_dict()


def test_a_256_chip_slice_talks_over_ici_and_has_no_energy_figure() -> None:
    data = _v5e()
    # Data parallelism over the slice's ICI (200 GB/s each way per chip), not over 25 Gb/s host NICs: at
    # 8 chips per node it was 1.37 s of exposed gradient traffic per 7.95 s step.
    assert data["breakdown"]["comm"]["dp_s"] < 0.1
    assert data["power_w"] is None and data["energy_kwh"] is None
    assert any("no published power figure" in a for a in data["assumptions"])


def test_a_job_beyond_one_slice_needs_a_network_rate() -> None:
    base = {"model": "llama-3.1-70b", "gpu": "tpu-v5p", "gpus": 8192, "zero": 3, "tp": 8}
    with pytest.raises(InvalidSpec, match="--nic"):
        estimate(EstimateRequest(**base))
    assert estimate(EstimateRequest(**base, nic_gbit=100)).to_dict()["step_time_s"] > 0


def test_owning_a_part_without_a_power_figure_is_not_priced() -> None:
    with pytest.raises(InvalidSpec, match="no published power figure"):
        tco(TcoRequest(gpu="tpu-v5e", gpus=8, gpu_price=5000))


def test_a_build_of_a_part_without_a_host_link_figure_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    raw = yaml.safe_load((BUILTIN_DIR.parent.parent / "servers" / "data" / "dgx-h100.yaml").read_text("utf-8"))
    raw.update(id="tpu-host", gpus={"id": "tpu-v5e", "count": 8, "link": "pcie", "power_w": 200})
    raw["chassis"]["baseboard"] = None
    path = tmp_path / "tpu-host.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(InvalidSpec, match="PCIe generation"):
        lint_build(resolve_build(str(path), ()))


@pytest.mark.parametrize(("gpus", "per_node", "shared"), [
    (8, 8, False), (16, 8, True),  # an HGX server, two of them
    (4, 72, False), (16, 72, True),  # part of an NVL72 rack: 4 GPUs on one tray; 16 span trays
    (8, 256, False), (256, 256, True),  # a TPU v5e host; the whole 32-host slice
])
def test_checkpoints_stay_local_only_on_one_host(gpus: int, per_node: int, shared: bool) -> None:
    expected = DEFAULT_SHARED_STORAGE if shared else DEFAULT_STORAGE
    assert default_storage_for(gpus, per_node) is expected


@pytest.mark.parametrize(("gpu", "labelled"), [("tpu-v5e", True), ("t4", True), ("a100-80gb-sxm", False),
                                               ("h100-sxm", False), ("rtx-3090", False)])
def test_a_part_without_efficiency_data_of_its_own_says_so(gpu: str, labelled: bool) -> None:
    """efficiency_for falls back to the Ampere fit for an architecture it does not know (TPU, Turing): the
    estimate says the speed is borrowed."""
    request = EstimateRequest(model="llama-3.2-1b", gpu=gpu, precision="fp16-mixed")
    notes = [a for a in estimate(request).to_dict()["assumptions"] if "no efficiency data" in a]
    assert bool(notes) is labelled, notes
