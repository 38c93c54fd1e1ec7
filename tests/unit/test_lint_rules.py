"""Each lint rule fires on a crafted bad build and stays quiet (or informational) on a good one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.load import ENV_VAR, load_catalog
from rigplan.lint import RULES, Workload
from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding
from rigplan.servers.power import airflow_cfm, heat_btu_per_h, node_load
from rigplan.servers.schema import ServerRecord

BY_CODE = {r.code: r for r in RULES}


@pytest.fixture(autouse=True)
def _no_overlays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def good() -> dict[str, Any]:
    """A small, sound 2-GPU build: every rule is at most informational on it."""
    return {
        "id": "test-good", "name": "test build", "category": "user", "summary": "crafted for tests",
        "chassis": {"vendor": "V", "model": "M2", "form": "rack", "rack_units": 2, "cpu_sockets": 2,
                    "cpu_socket": "SP3", "cpu_vendor": "amd", "max_gpus": 4, "pcie_lanes_available": 160,
                    "max_gpu_power_w": 350},
        "cpu": {"model": "AMD EPYC 7313", "vendor": "amd", "socket": "SP3", "count": 2, "max_sockets": 2, "cores": 16,
                "pcie_lanes": 128, "pcie_gen": 4, "tdp_w": 155},
        "gpus": {"id": "rtx-6000-ada", "count": 2, "link": "pcie"},
        "memory": {"ram_gib": 256, "kind": "DDR4 ECC"},
        "storage": [{"kind": "nvme", "count": 2, "capacity_tb": 3.84, "raid": "raid1"}],
        "nics": [{"model": "10 GbE", "count": 1, "ports": 2, "gbit_per_s": 10, "kind": "ethernet",
                  "role": "frontend", "pcie_lanes": 8}],
        "psu": {"count": 2, "watts_each": 2000, "redundancy": "1+1"},
        "sources": [{"title": "unit test"}],
        "as_of": "2026-12-03",
    }


def hgx(gpu: str = "h100-sxm", gpus: int = 8) -> dict[str, Any]:
    b = good()
    b["chassis"].update(max_gpus=8, pcie_switches=True, max_gpu_power_w=None,
                        baseboard={"name": "HGX 8-GPU", "gpus": 8, "gpu_family": "h100", "form_factor": "sxm",
                                   "link": "nvlink", "topology": "NVSwitch", "switch_chips": True})
    b["gpus"] = {"id": gpu, "count": gpus, "link": "nvlink"}
    b["memory"]["ram_gib"] = 2048
    b["nics"] = [{"model": "CX-7", "count": 8, "gbit_per_s": 400, "kind": "infiniband", "role": "scale-out"}]
    b["psu"] = {"count": 6, "watts_each": 3300, "redundancy": "4+2"}
    b["max_power_w"] = 10200
    return b


def ctx_of(build: dict[str, Any], workload: Workload | None = None, claims: tuple[str, ...] = ()) -> LintContext:
    record = ServerRecord.model_validate(build)
    gpu = load_catalog().gpu(record.gpus.id)
    return LintContext(build=record, gpu=gpu, workloads=(workload,) if workload else (), unchecked_claims=claims)


def run(code: str, build: dict[str, Any], **kw: Any) -> list[Finding]:
    found = BY_CODE[code](ctx_of(build, **kw))
    assert all(f.code == code for f in found)
    return found


def severities(found: list[Finding]) -> set[str]:
    return {f.severity for f in found}


def variant(**changes: Any) -> dict[str, Any]:
    """good() with dotted-path changes: variant(**{"gpus.link": "nvlink-bridge"})."""
    b = copy.deepcopy(good())
    for dotted, value in changes.items():
        node = b
        *path, last = dotted.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    return b


# ---- every rule on the good build ------------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(BY_CODE))
def test_good_build_has_no_errors_or_warnings(code: str) -> None:
    assert severities(run(code, good())) <= {"info"}


def test_rule_codes_are_stable_and_documented() -> None:
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    assert set(codes) == {
        "gpu.link", "chassis.gpu_fit", "cpu.compat", "pcie.lanes", "psu.capacity", "psu.redundancy",
        "cooling.airflow", "power.rack", "memory.host_ram", "network.scale_out", "storage.checkpoint",
        "storage.redundancy", "budget.price", "workload.fit", "workload.time", "claim.unverifiable",
    }
    assert all(r.func.__doc__ for r in RULES)
    doc = (Path(__file__).parents[2] / "docs" / "methodology" / "lint.md").read_text(encoding="utf-8")
    assert all(f"`{code}`" in doc for code in codes)


# ---- gpu.link ----------------------------------------------------------------------------------------------------

def test_gpu_link_bridge_on_card_without_nvlink_is_an_error() -> None:
    found = run("gpu.link", variant(**{"gpus.link": "nvlink-bridge"}))
    assert severities(found) == {"error"}
    assert "no NVLink" in found[0].message and found[0].values["pcie_bytes_per_s_bidirectional"] == 64e9


def test_gpu_link_nvlink_on_pcie_card_and_sxm_without_baseboard_are_errors() -> None:
    assert severities(run("gpu.link", variant(**{"gpus.link": "nvlink"}))) == {"error"}
    sxm = variant(gpus={"id": "a100-80gb-sxm", "count": 2, "link": "nvlink"})
    assert severities(run("gpu.link", sxm)) == {"error"}


def test_gpu_link_bridges_are_fine_on_a100_pcie_pairs_and_flagged_for_odd_counts() -> None:
    assert run("gpu.link", variant(gpus={"id": "a100-80gb-pcie", "count": 2, "link": "nvlink-bridge"})) == []
    four = run("gpu.link", variant(gpus={"id": "a100-80gb-pcie", "count": 4, "link": "nvlink-bridge"}))
    assert severities(four) == {"info"}
    odd = run("gpu.link", variant(gpus={"id": "a100-80gb-pcie", "count": 3, "link": "nvlink-bridge"}))
    assert "warning" in severities(odd)


def test_gpu_link_nvlink_on_hgx_is_fine() -> None:
    assert run("gpu.link", hgx()) == []


# ---- chassis.gpu_fit -------------------------------------------------------------------------------------------

def test_chassis_too_many_cards_is_an_error() -> None:
    assert severities(run("chassis.gpu_fit", variant(**{"gpus.count": 5}))) == {"error"}


def test_chassis_sxm_without_baseboard_is_an_error() -> None:
    found = run("chassis.gpu_fit", variant(gpus={"id": "h100-sxm", "count": 2, "link": "pcie"},
                                           **{"chassis.max_gpu_power_w": None}))
    assert severities(found) == {"error"} and "baseboard" in found[0].message


def test_chassis_half_populated_hgx_board_is_an_error() -> None:
    found = run("chassis.gpu_fit", hgx(gpus=4))
    assert severities(found) == {"error"}
    assert found[0].values["baseboard_gpus"] == 8 and found[0].values["gpus"] == 4


def test_chassis_wrong_gpu_family_on_baseboard_is_an_error() -> None:
    assert "error" in severities(run("chassis.gpu_fit", hgx(gpu="a100-80gb-sxm")))


def test_chassis_gpu_power_over_slot_rating_is_a_warning() -> None:
    found = run("chassis.gpu_fit", variant(gpus={"id": "rtx-pro-6000", "count": 2, "link": "pcie"}))
    assert severities(found) == {"warning"} and found[0].values["gpu_power_w"] == 600


def test_chassis_power_override_clears_the_warning() -> None:
    maxq = variant(gpus={"id": "rtx-pro-6000", "count": 2, "link": "pcie", "power_w": 300})
    assert run("chassis.gpu_fit", maxq) == []


# ---- cpu.compat ------------------------------------------------------------------------------------------------

def test_cpu_intel_in_amd_board_is_an_error() -> None:
    xeon = variant(cpu={"model": "Intel Xeon Gold 6348", "vendor": "intel", "socket": "LGA4189", "count": 2,
                        "max_sockets": 2, "cores": 28, "pcie_lanes": 64, "pcie_gen": 4, "tdp_w": 235})
    found = run("cpu.compat", xeon)
    assert severities(found) == {"error"} and "LGA4189" in found[0].message


def test_cpu_single_socket_sku_in_dual_socket_board_is_an_error() -> None:
    found = run("cpu.compat", variant(**{"cpu.model": "AMD EPYC 7313P", "cpu.count": 1, "cpu.max_sockets": 1}))
    assert severities(found) == {"error"} and "single-socket" in found[0].message


def test_cpu_single_socket_sku_allowed_where_the_platform_takes_it() -> None:
    ok = variant(**{"cpu.model": "AMD EPYC 7313P", "cpu.count": 1, "cpu.max_sockets": 1,
                    "chassis.one_socket_skus": True, "chassis.cpu_sockets": 1})
    assert run("cpu.compat", ok) == []


def test_cpu_too_many_and_half_populated() -> None:
    assert severities(run("cpu.compat", variant(**{"cpu.count": 3}))) == {"error"}
    assert severities(run("cpu.compat", variant(**{"cpu.count": 1}))) == {"warning"}


# ---- pcie.lanes ------------------------------------------------------------------------------------------------

def test_pcie_lanes_over_budget_without_switches_is_an_error() -> None:
    b = variant(**{"gpus.count": 4, "cpu.count": 1, "cpu.pcie_lanes": 64, "cpu.vendor": "amd"})
    b["chassis"].update(cpu_sockets=1, pcie_lanes_available=None)
    b["nics"] = [{"model": "x16 NIC", "count": 2, "gbit_per_s": 100, "kind": "ethernet", "role": "scale-out"}]
    found = run("pcie.lanes", b)
    assert "error" in severities(found)
    err = next(f for f in found if f.severity == "error")
    assert err.values["lanes_wanted"] == 4 * 16 + 2 * 16 + 2 * 4 and err.values["lanes_available"] == 64


def test_pcie_lanes_behind_switches_are_reported_not_failed() -> None:
    b = hgx()
    b["cpu"]["pcie_lanes"] = 64
    b["chassis"]["pcie_lanes_available"] = 128
    assert severities(run("pcie.lanes", b)) == {"info"}


def test_pcie_gen5_gpu_on_gen4_host_is_noted() -> None:
    found = run("pcie.lanes", variant(gpus={"id": "rtx-5090", "count": 2, "link": "pcie", "power_w": 300}))
    assert any("PCIe 5.0" in f.message for f in found)


# ---- psu.capacity / psu.redundancy ------------------------------------------------------------------------------

def test_node_load_estimate_is_hand_computable() -> None:
    record = ServerRecord.model_validate(good())
    load = node_load(record, 300.0)
    parts = 2 * 300 + 2 * 155 + 256 * 0.15 + 2 * 12 + 1 * 20 + 100
    assert load.load_w == pytest.approx(1.15 * parts)
    assert load.source == "estimate"
    assert node_load(ServerRecord.model_validate(hgx()), 700.0).load_w == 10200


def test_psu_working_supplies_under_load_is_an_error() -> None:
    found = run("psu.capacity", variant(psu={"count": 2, "watts_each": 800, "redundancy": "1+1"}))
    assert severities(found) == {"error"} and "redundancy is not real" in found[0].message


def test_psu_load_over_all_supplies_is_an_error() -> None:
    found = run("psu.capacity", variant(psu={"count": 2, "watts_each": 500, "redundancy": "1+1"}))
    assert severities(found) == {"error"} and "cannot run" in found[0].message


def test_psu_scheme_that_does_not_add_up_is_an_error() -> None:
    assert severities(run("psu.capacity", variant(psu={"count": 2, "watts_each": 2000, "redundancy": "2+1"}))) \
        == {"error"}


def test_psu_missing_and_thin_headroom_are_warnings() -> None:
    assert severities(run("psu.capacity", variant(psu=None))) == {"warning"}
    assert severities(run("psu.capacity", variant(psu={"count": 2, "watts_each": 1300, "redundancy": "1+1"}))) \
        == {"warning"}


def test_psu_no_spare_is_a_warning_and_says_what_a_failure_does() -> None:
    found = run("psu.redundancy", variant(psu={"count": 2, "watts_each": 2000, "redundancy": "2+0"}))
    assert severities(found) == {"warning"}
    assert found[0].values["after_one_failure_w"] == 2000 and "goes down" in found[0].message


def test_psu_4_plus_2_survives_two_failures() -> None:
    found = run("psu.redundancy", hgx())
    assert severities(found) == {"info"}
    assert found[0].values["after_one_failure_w"] == 5 * 3300
    assert found[0].values["after_two_failures_w"] == 4 * 3300 and "keeps running" in found[0].message


# ---- cooling.airflow / power.rack -------------------------------------------------------------------------------

def test_airflow_formula() -> None:
    assert airflow_cfm(1000) == pytest.approx(158.0)
    assert heat_btu_per_h(1000) == pytest.approx(3412.0)
    found = run("cooling.airflow", variant(max_power_w=2000))
    assert found[0].values["airflow_cfm_per_node"] == pytest.approx(316.0)


def test_rack_over_air_limit_is_an_error_and_near_it_a_warning() -> None:
    dense = hgx()
    dense.update(nodes=8, nodes_per_rack=3)  # 30.6 kW
    assert severities(run("power.rack", dense)) == {"error"}
    warm = hgx()
    warm.update(nodes=8, nodes_per_rack=2, max_power_w=14300)  # 28.6 kW
    assert severities(run("power.rack", warm)) == {"warning"}
    spread = hgx()
    spread.update(nodes=8)
    found = run("power.rack", spread)
    assert severities(found) == {"info"} and found[0].values["racks"] == 4


def test_single_node_above_air_limit_is_an_error() -> None:
    assert severities(run("power.rack", variant(max_power_w=40000))) == {"error"}


def test_workstation_on_an_office_outlet_is_a_warning() -> None:
    tower = variant(max_power_w=2750, **{"chassis.form": "tower"})
    assert severities(run("power.rack", tower)) == {"warning"}


# ---- memory.host_ram --------------------------------------------------------------------------------------------

def test_host_ram_below_gpu_memory_or_missing_is_a_warning() -> None:
    assert severities(run("memory.host_ram", variant(**{"memory.ram_gib": 64}))) == {"warning"}
    assert severities(run("memory.host_ram", variant(memory=None))) == {"warning"}
    found = run("memory.host_ram", good())
    assert found[0].values["ratio"] == pytest.approx(256 / 96)


# ---- network.scale_out ------------------------------------------------------------------------------------------

def test_multi_node_without_scale_out_nic_is_an_error() -> None:
    assert severities(run("network.scale_out", variant(nodes=2))) == {"error"}


def test_multi_node_with_thin_nics_is_an_error_and_below_reference_a_warning() -> None:
    thin = hgx()
    thin.update(nodes=4, nics=[{"model": "100G", "count": 1, "gbit_per_s": 100, "kind": "ethernet",
                                "role": "scale-out"}])
    found = run("network.scale_out", thin)
    assert severities(found) == {"error"} and found[0].values["bits_per_s_per_gpu"] == pytest.approx(12.5e9)
    half = hgx()
    half.update(nodes=4, nics=[{"model": "CX-7", "count": 4, "gbit_per_s": 400, "kind": "infiniband",
                                "role": "scale-out"}])
    assert severities(run("network.scale_out", half)) == {"warning"}
    full = hgx()
    full["nodes"] = 4
    assert severities(run("network.scale_out", full)) == {"info"}


def test_multi_node_with_unstated_nic_count_is_a_warning() -> None:
    b = hgx()
    b.update(nodes=8, nics=[{"model": "NDR", "gbit_per_s": 400, "kind": "infiniband", "role": "scale-out"}])
    assert severities(run("network.scale_out", b)) == {"warning"}


# ---- storage.checkpoint / storage.redundancy --------------------------------------------------------------------

def test_checkpoint_slow_storage_and_small_drives_are_warnings() -> None:
    slow = variant(storage=[{"kind": "hdd", "count": 1, "capacity_tb": 8, "write_gb_per_s": 0.05}])
    found = run("storage.checkpoint", slow)
    assert severities(found) == {"warning"} and found[0].values["write_s"] > 600
    small = variant(storage=[{"kind": "nvme", "count": 1, "capacity_tb": 0.1}])
    assert severities(run("storage.checkpoint", small)) == {"info", "warning"}


def test_checkpoint_size_is_14_bytes_per_parameter() -> None:
    found = run("storage.checkpoint", good())
    params = 2 * 48 * 2**30 / 16
    assert found[0].values["checkpoint_bytes"] == pytest.approx(params * 14)


def test_checkpoint_without_storage_is_an_error_and_unknown_shared_bandwidth_a_warning() -> None:
    assert severities(run("storage.checkpoint", variant(storage=[]))) == {"error"}
    ceph = hgx()
    ceph.update(nodes=8, storage=[], shared_storage={"kind": "ceph"})
    found = run("storage.checkpoint", ceph)
    assert severities(found) == {"warning"} and found[0].values["needed_bytes_per_s"] > 0


def test_raid0_checkpoint_volume_is_a_warning_but_raid0_scratch_is_not() -> None:
    raid0 = variant(storage=[{"kind": "nvme", "count": 4, "capacity_tb": 3.84, "raid": "raid0"}])
    assert severities(run("storage.redundancy", raid0)) == {"warning"}
    scratch = variant(storage=[{"kind": "nvme", "count": 4, "capacity_tb": 3.84, "raid": "raid0", "role": "scratch"}])
    assert run("storage.redundancy", scratch) == []


# ---- budget.price -----------------------------------------------------------------------------------------------

def test_budget_below_the_gpus_alone_is_an_error() -> None:
    b = variant(budget={"min": 50000, "max": 80000, "currency": "CNY", "source": "test"})
    found = run("budget.price", b)
    assert severities(found) == {"error"}
    assert found[0].values["gpu_price_floor"] == pytest.approx(2 * 6800 * 7.1)


def test_budget_below_the_build_price_is_an_error() -> None:
    b = variant(budget={"max": 150000, "currency": "CNY", "source": "test"},
                price={"amount": 30000, "currency": "USD", "kind": "estimate", "scope": "whole build",
                       "as_of": "2026-12-03", "source": "test"})
    assert severities(run("budget.price", b)) == {"error"}


def test_budget_without_price_is_a_warning_and_a_covered_budget_is_info() -> None:
    assert severities(run("budget.price", variant(budget={"max": 200000, "currency": "CNY", "source": "t"}))) \
        == {"warning"}
    ok = variant(budget={"max": 200000, "currency": "CNY", "source": "t"},
                 price={"amount": 23000, "currency": "USD", "kind": "estimate", "scope": "whole build",
                        "as_of": "2026-12-03", "source": "t"})
    assert severities(run("budget.price", ok)) == {"info"}


# ---- workload.fit / workload.time / claim.unverifiable ----------------------------------------------------------

def test_workload_that_does_not_fit_at_all_is_an_error() -> None:
    found = run("workload.fit", good(), workload=Workload(text="t", model="llama-2-70b"))
    assert severities(found) == {"error"}
    assert found[0].values["per_gpu_bytes"] > found[0].values["usable_bytes"]
    assert found[0].values["host_bytes_needed"] > 256 * 2**30


def test_workload_that_fits_only_with_offload_is_a_warning() -> None:
    found = run("workload.fit", good(), workload=Workload(text="t", model="llama-2-7b"))
    assert severities(found) == {"warning"} and "offload" in found[0].message


def test_workload_that_fits_is_info() -> None:
    assert severities(run("workload.fit", good(), workload=Workload(text="t", model="llama-3.2-1b"))) == {"info"}
    assert severities(run("workload.fit", good(), workload=Workload(text="t", model="llama-2-7b", method="lora"))) \
        == {"info"}


def test_workload_time_needs_tokens_and_flags_long_runs() -> None:
    assert run("workload.time", good(), workload=Workload(text="t", model="llama-3.2-1b")) == []
    short = run("workload.time", good(), workload=Workload(text="t", model="llama-3.2-1b", tokens="25B"))
    assert severities(short) == {"info"} and 86400 < short[0].values["time_to_train_s"] < 30 * 86400
    long = run("workload.time", good(), workload=Workload(text="t", model="llama-2-7b", tokens="2T"))
    assert severities(long) == {"warning"}


def test_claims_without_a_model_are_reported_as_unchecked() -> None:
    found = run("claim.unverifiable", good(), claims=("92% efficiency",))
    assert severities(found) == {"info"} and "92%" in found[0].message
    assert run("claim.unverifiable", good()) == []
