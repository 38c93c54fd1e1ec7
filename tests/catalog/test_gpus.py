"""Integrity tests for the built-in GPU catalog records (src/rigplan/catalog/data/gpus)."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from rigplan.catalog.load import BUILTIN_DIR, ENV_VAR, load_catalog
from rigplan.catalog.schema import GpuRecord
from rigplan.domain.hardware import Gpu

GPU_DIR = BUILTIN_DIR / "gpus"

REQUIRED_IDS = {
    "a100-40gb-sxm", "a100-40gb-pcie", "a100-80gb-sxm", "a100-80gb-pcie",
    "h100-sxm", "h100-pcie", "h100-nvl", "h800-sxm", "h20", "h200-sxm",
    "b200", "b300", "gb200", "gb300",
    "rtx-3090", "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000",
    "l40s", "l4", "a10", "a10g", "v100-32gb",
    "mi250x", "mi300x", "mi325x", "mi355x", "gaudi3",
    "t4", "rtx-a6000", "a40", "a800-80gb-sxm", "h200-nvl", "l20", "gaudi2", "mi300a", "rtx-4090d",
    "tpu-v5e", "tpu-v5p", "tpu-v6e",
    "mlu370-x8", "mtt-s4000", "br100", "br104", "bi-v100",
}  # fmt: skip

GEFORCE_IDS = {"rtx-3090", "rtx-4090", "rtx-5090"}
# Ada and client Blackwell parts have no NVLink of any kind (bridge included).
NO_NVLINK_IDS = {"rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000", "l40s", "l4"}
DATACENTER_GDDR_IDS = {"l4", "l40s", "a10", "a10g", "t4", "a40", "l20"}
WORKSTATION_GDDR_IDS = GEFORCE_IDS | {"rtx-6000-ada", "rtx-pro-6000", "rtx-a6000", "rtx-4090d"}
NVLINK_KINDS = {"nvlink", "nvlink-bridge", "nvlink-c2c"}


@pytest.fixture(scope="module")
def gpus() -> dict[str, GpuRecord]:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV_VAR, raising=False)  # built-in records only, no user overlays
        return load_catalog().gpus


def _files():
    return sorted(GPU_DIR.glob("*.y*ml"))


def test_every_file_is_a_catalog_record(gpus: dict[str, GpuRecord]) -> None:
    stems = {p.stem for p in _files()}
    assert stems, f"no GPU records found in {GPU_DIR}"
    assert stems == set(gpus), "every YAML file must load into the catalog under its own id"
    for path in _files():
        GpuRecord.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_ids_unique_and_equal_to_file_names() -> None:
    ids = []
    for path in _files():
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert raw["id"] == path.stem, f"{path.name}: id {raw['id']!r} != file name"
        ids.append(raw["id"])
    assert len(ids) == len(set(ids)), f"duplicate ids: {sorted(i for i in ids if ids.count(i) > 1)}"


def test_required_ids_present(gpus: dict[str, GpuRecord]) -> None:
    missing = REQUIRED_IDS - set(gpus)
    assert not missing, f"missing GPU records: {sorted(missing)}"


@pytest.mark.parametrize("gpu_id", sorted(REQUIRED_IDS))
def test_sources_non_empty(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    record = gpus[gpu_id]
    assert record.sources, gpu_id
    assert all(s.title.strip() for s in record.sources), gpu_id


@pytest.mark.parametrize("gpu_id", sorted(REQUIRED_IDS))
def test_precision_ordering(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    t = gpus[gpu_id].dense_tflops
    half = t.half  # bf16, or fp16 on parts without bf16 (V100)
    if t.fp4 is not None:
        assert t.fp8 is not None and t.fp4 >= t.fp8, f"{gpu_id}: fp4 {t.fp4} < fp8 {t.fp8}"
    if t.fp8 is not None:
        assert t.fp8 >= half, f"{gpu_id}: fp8 {t.fp8} < bf16 {half}"
    if t.tf32 is not None:
        assert half >= t.tf32, f"{gpu_id}: bf16 {half} < tf32 {t.tf32}"
        if t.fp32 is not None:
            assert t.tf32 >= t.fp32, f"{gpu_id}: tf32 {t.tf32} < fp32 {t.fp32}"
    if t.fp32 is not None:
        assert half >= t.fp32, f"{gpu_id}: bf16 {half} < fp32 {t.fp32}"


@pytest.mark.parametrize("gpu_id", sorted(REQUIRED_IDS))
def test_ecc_capacity_loss_by_memory_kind(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    record = gpus[gpu_id]
    if record.memory_kind.startswith("GDDR"):
        assert record.ecc.capacity_loss_fraction == 0.0625, gpu_id
    elif record.memory_kind.startswith("LPDDR"):
        # no published ECC mode (MLU370-X8): none assumed on, so no carve-out is taken silently
        assert not record.ecc.default_on and record.ecc.note, gpu_id
    else:
        assert record.memory_kind.startswith("HBM"), gpu_id
        assert record.ecc.capacity_loss_fraction == 0.0, gpu_id


def test_ecc_default_state(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in DATACENTER_GDDR_IDS:
        assert gpus[gpu_id].ecc.default_on, f"{gpu_id}: datacenter GDDR cards ship with ECC on"
        # with ECC on by default the driver-reported capacity must be recorded, or 1/16 is lost silently
        assert gpus[gpu_id].usable_memory_mib, f"{gpu_id}: needs usable_memory_mib"
    for gpu_id in WORKSTATION_GDDR_IDS:
        assert not gpus[gpu_id].ecc.default_on, f"{gpu_id}: GeForce/workstation cards ship with ECC off"


@pytest.mark.parametrize("gpu_id", sorted(REQUIRED_IDS))
def test_memory_figures_plausible(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    record = gpus[gpu_id]
    assert record.memory_bandwidth_gb_per_s > 0
    assert record.memory_gib > 0
    if record.usable_memory_mib is not None:
        ratio = record.usable_memory_mib / (record.memory_gib * 1024)
        assert 0.9 <= ratio <= 1.0, f"{gpu_id}: usable/nominal = {ratio:.3f}"


@pytest.mark.parametrize("gpu_id", sorted(REQUIRED_IDS))
def test_to_domain(gpus: dict[str, GpuRecord], gpu_id: str) -> None:
    record = gpus[gpu_id]
    gpu = record.to_domain()
    assert isinstance(gpu, Gpu)
    assert gpu.id == gpu_id
    assert gpu.memory_bytes > 0
    if record.dense_tflops.bf16 is not None:
        assert gpu.peak("bf16") == pytest.approx(record.dense_tflops.bf16 * 1e12)
    else:
        assert not gpu.has_precision("bf16")
    assert gpu.peak("fp16") > 0
    assert gpu.link.bandwidth_bytes_per_s == pytest.approx(
        record.link.bandwidth_gb_per_s_bidirectional / 2 * 1e9
    )
    assert gpu.gpus_per_node >= 1


def test_dates_not_after_record(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id, record in gpus.items():
        if record.price is not None and record.price.as_of is not None:
            assert record.price.as_of <= record.as_of, gpu_id
        for cp in record.cloud_prices:
            assert cp.as_of is None or cp.as_of <= record.as_of, f"{gpu_id}: {cp.provider}"


def test_no_price_carries_the_compile_date(gpus: dict[str, GpuRecord]) -> None:
    # an undated snapshot must say so, not borrow the reference's compile date (it would win as "newest")
    compiled = {dt.date(2026, 12, 2), dt.date(2026, 12, 3), dt.date(2026, 12, 4)}
    for gpu_id, record in gpus.items():
        if record.price is not None:
            assert record.price.as_of not in compiled, gpu_id
        for cp in record.cloud_prices:
            assert cp.as_of not in compiled, f"{gpu_id}: {cp.provider} {cp.pricing}"


@pytest.mark.parametrize(
    ("gpu_id", "bf16"),
    [
        ("h100-sxm", 989.5),  # not the 1,979 sparse headline
        ("h200-sxm", 989.5),
        ("rtx-4090", 165.2),  # FP32 accumulate, half the FP16-accumulate rate
        ("rtx-5090", 209.5),
        ("rtx-3090", 71.0),
        ("a100-40gb-sxm", 312.0),
        ("a100-40gb-pcie", 312.0),
        ("a100-80gb-sxm", 312.0),
        ("a100-80gb-pcie", 312.0),
        ("mi300x", 1307.4),
        ("b200", 2250.0),
        ("mi250x", 191.5),  # one GCD
        ("h200-nvl", 835.5),
        ("l20", 119.5),
        ("a800-80gb-sxm", 312.0),
        ("gaudi2", 432.0),
        ("mi300a", 980.6),
        ("tpu-v5e", 197.0),
        ("tpu-v5p", 459.0),
        ("tpu-v6e", 918.0),
    ],
)
def test_known_dense_bf16(gpus: dict[str, GpuRecord], gpu_id: str, bf16: float) -> None:
    assert gpus[gpu_id].dense_tflops.bf16 == pytest.approx(bf16)


def test_known_links(gpus: dict[str, GpuRecord]) -> None:
    assert gpus["h100-sxm"].link.bandwidth_gb_per_s_bidirectional == 900
    assert gpus["a100-80gb-sxm"].link.bandwidth_gb_per_s_bidirectional == 600
    assert gpus["b200"].link.bandwidth_gb_per_s_bidirectional == 1800
    assert gpus["gb200"].link.domain_size == 72
    assert gpus["gb300"].link.domain_size == 72
    assert gpus["mi300x"].link.kind == "infinity-fabric"
    assert gpus["gaudi3"].link.kind == "roce"
    assert gpus["a100-80gb-pcie"].link.domain_size == 2


def test_no_fp8_before_hopper(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in (
        "a100-40gb-sxm",
        "a100-40gb-pcie",
        "a100-80gb-sxm",
        "a100-80gb-pcie",
        "a10",
        "a10g",
        "rtx-3090",
        "v100-32gb",
        "t4",
        "a40",
        "rtx-a6000",
        "a800-80gb-sxm",
    ):
        assert gpus[gpu_id].dense_tflops.fp8 is None, gpu_id


def test_no_nvlink_on_geforce_ada_or_client_blackwell(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in NO_NVLINK_IDS:
        assert gpus[gpu_id].link.kind not in NVLINK_KINDS, f"{gpu_id} has no NVLink"
        assert gpus[gpu_id].link.kind == "pcie", gpu_id
    for gpu_id in GEFORCE_IDS:
        # RTX 3090 keeps a 2-way bridge; no GeForce card is on an NVLink switch fabric
        assert gpus[gpu_id].link.kind != "nvlink", gpu_id
        assert gpus[gpu_id].link.domain_size <= 2 or gpus[gpu_id].link.kind == "pcie", gpu_id


def test_mi250x_is_the_device_pytorch_sees(gpus: dict[str, GpuRecord]) -> None:
    record = gpus["mi250x"]
    assert record.devices_per_package == 2
    assert record.memory_gib == 64  # one GCD, not the 128 GB package
    assert record.dense_tflops.bf16 == pytest.approx(191.5)
    assert record.node.gpus_per_node == 8  # 4 packages x 2 GCDs


def test_blackwell_usable_memory_is_what_nvidia_smi_reports(gpus: dict[str, GpuRecord]) -> None:
    """memory.total in MiB from nvidia-smi captures (catalog notes): B300 SXM6 AC, GB300 and GB200 NVL72 trays."""
    for gpu_id, total_mib in (("b300", 275040), ("gb300", 284208), ("gb200", 189471), ("b200", 183359)):
        gpu = gpus[gpu_id].to_domain()
        assert gpu.usable_bytes() == total_mib * 1024**2, gpu_id
        assert gpu.usable_bytes() < gpus[gpu_id].memory_gib * 1024**3, f"{gpu_id}: below the nominal capacity"


def test_blackwell_hbm_bandwidth_per_hgx_pages(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in ("b200", "b300", "gb200", "gb300"):
        assert gpus[gpu_id].memory_bandwidth_gb_per_s == 8000, gpu_id


def test_v100_has_no_bf16(gpus: dict[str, GpuRecord]) -> None:
    t = gpus["v100-32gb"].dense_tflops
    assert t.bf16 is None and t.fp16 == 125


def test_full_mesh_links_flagged(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in ("mi300x", "mi325x", "mi355x", "gaudi3"):
        assert gpus[gpu_id].link.topology == "full-mesh", gpu_id
        assert gpus[gpu_id].to_domain().link.topology == "full-mesh", gpu_id
    assert gpus["h100-sxm"].link.topology == "switched"
    assert gpus["a100-80gb-pcie"].link.topology == "pair"


def test_host_copies_at_achievable_pcie_rates(gpus: dict[str, GpuRecord]) -> None:
    assert gpus["a100-80gb-sxm"].to_domain().host_bus_bytes_per_s == pytest.approx(25e9)  # Gen4, not 32
    assert gpus["h100-sxm"].to_domain().host_bus_bytes_per_s == pytest.approx(50e9)  # Gen5, not 64


def test_half_precision_rate_required() -> None:
    with pytest.raises(ValueError, match="bf16 or fp16"):
        GpuRecord.model_validate({**yaml.safe_load((GPU_DIR / "v100-32gb.yaml").read_text()),
                                  "dense_tflops": {"fp32": 15.7}})


def test_no_bf16_before_ampere(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in ("v100-32gb", "t4"):
        assert gpus[gpu_id].dense_tflops.bf16 is None, gpu_id


def test_china_market_cuts(gpus: dict[str, GpuRecord]) -> None:
    assert gpus["a800-80gb-sxm"].link.bandwidth_gb_per_s_bidirectional == 400  # A100's 600 cut
    assert gpus["a800-80gb-sxm"].dense_tflops.bf16 == gpus["a100-80gb-sxm"].dense_tflops.bf16
    assert gpus["l20"].dense_tflops.bf16 < gpus["l40s"].dense_tflops.bf16 / 2
    assert gpus["rtx-4090d"].dense_tflops.bf16 < gpus["rtx-4090"].dense_tflops.bf16


def test_tpus_use_a_torus(gpus: dict[str, GpuRecord]) -> None:
    for gpu_id in ("tpu-v5e", "tpu-v5p", "tpu-v6e"):
        assert gpus[gpu_id].vendor == "google"
        assert gpus[gpu_id].link.kind == "ici" and gpus[gpu_id].link.topology == "torus", gpu_id


def test_fp8_gemm_any_layout_on_datacenter_blackwell_only(gpus: dict[str, GpuRecord]) -> None:
    """Transformer Engine's is_non_tn_fp8_gemm_supported: compute capability 10.x (B200, B300, GB200, GB300);
    not Hopper (9.0), Ada (8.9) or the GB202 cards (12.0)."""
    expected = {"b200": True, "b300": True, "gb200": True, "gb300": True, "h100-sxm": False, "h200-sxm": False,
                "l40s": False, "rtx-4090": False, "rtx-5090": False, "rtx-pro-6000": False, "mi300x": False}
    assert {gpu_id: gpus[gpu_id].to_domain().fp8_gemm_any_layout for gpu_id in expected} == expected


def test_a_name_one_part_extends_means_that_part_and_an_ambiguous_one_is_refused() -> None:
    from rigplan.errors import UnknownEntry

    catalog = load_catalog()
    assert catalog.gpu_id("h800") == "h800-sxm" and catalog.gpu("H800").id == "h800-sxm"
    assert catalog.gpu_domain("v100").name == catalog.gpu("v100-32gb").name
    assert catalog.gpu_id("b200") == "b200"  # an exact id is never read as another part's prefix
    with pytest.raises(UnknownEntry, match="unknown gpu 'h100'; did you mean h100-sxm"):
        catalog.gpu("h100")  # sxm, pcie, nvl and the 500 W part all extend it
