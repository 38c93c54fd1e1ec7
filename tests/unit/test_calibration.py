"""Calibration overrides: applied to the GPU they were measured on, and only there."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from rigplan.calibration.file import CalibrationFile, device_gpu, load_calibration, write_calibration
from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.errors import InvalidSpec
from rigplan.estimate.calibration import Calibration, calibrated_efficiency, calibrated_tiers
from rigplan.estimate.efficiency import efficiency_for
from rigplan.estimate.step import step_time
from rigplan.flow.model_source import resolve_model


def _file(tmp_path, **overrides):
    data = {"schema": "rigplan-calibration/1", "source": "test",
            "device": {"name": "NVIDIA H100 80GB HBM3", "kind": "cuda", "gpu_id": "h100-sxm"},
            "overrides": {"efficiency": {"gemm_max": 0.3}, **overrides}}
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_efficiency_override_only_for_its_gpu():
    catalog = load_catalog()
    h100 = catalog.gpu("h100-sxm").to_domain()
    a100 = catalog.gpu("a100-80gb-sxm").to_domain()
    cal = Calibration(gpu_id="h100-sxm", efficiency={"gemm_max": 0.3, "hbm": 0.5}, link_efficiency=0.5)
    assert calibrated_efficiency(h100, cal).gemm_max == 0.3
    assert calibrated_efficiency(h100, cal).hbm == 0.5
    assert calibrated_efficiency(h100, cal).attention == efficiency_for(h100).attention
    assert calibrated_efficiency(a100, cal) == efficiency_for(a100)
    intra, _ = calibrated_tiers(h100, cal)
    assert intra.efficiency == 0.5


def test_lower_gemm_efficiency_slows_the_step():
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm").to_domain()
    arch = resolve_model("llama-3.1-8b", catalog, {}).arch
    job = Job(seq_len=4096)
    layout = Layout(dp=8)
    base = float(step_time(arch, job, layout, gpu, global_batch=64).step_time_s)
    slow = float(step_time(arch, job, layout, gpu, global_batch=64,
                           calibration=Calibration(gpu_id="h100-sxm", efficiency={"gemm_max": 0.3})).step_time_s)
    assert slow > 1.5 * base


def test_unknown_parameter_is_rejected():
    with pytest.raises(InvalidSpec, match="gemm_maxx"):
        Calibration(gpu_id="x", efficiency={"gemm_maxx": 0.5})


def test_a_flat_gemm_curve_is_a_valid_calibration():
    """A probe on a device whose GEMMs do not fall off with size fits d_half 0; only a negative one is wrong."""
    assert Calibration(gpu_id="x", efficiency={"gemm_half_dim": 0.0}).efficiency["gemm_half_dim"] == 0.0
    with pytest.raises(InvalidSpec, match="gemm_half_dim"):
        Calibration(gpu_id="x", efficiency={"gemm_half_dim": -1.0})
    with pytest.raises(InvalidSpec, match="gemm_max"):
        Calibration(gpu_id="x", efficiency={"gemm_max": 0.0})


def test_cli_estimate_uses_the_file(tmp_path):
    path = _file(tmp_path, fragmentation_fraction=0.0)
    runner = CliRunner()
    plain = runner.invoke(cli, ["estimate", "llama-3.1-8b", "--gpus", "8", "--json"])
    calibrated = runner.invoke(cli, ["estimate", "llama-3.1-8b", "--gpus", "8", "--json", "--calibration", str(path)])
    assert plain.exit_code == 0 and calibrated.exit_code == 0, calibrated.output
    import json
    a, b = json.loads(plain.output), json.loads(calibrated.output)
    assert b["step_time_s"] > a["step_time_s"]
    assert b["memory"]["per_gpu"]["fragmentation_bytes"] == 0
    assert any("calibrated on NVIDIA H100" in x for x in b["assumptions"])


def test_bad_files_are_one_line_errors(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(cli, ["memory", "llama-3.1-8b", "--calibration", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2 and "no such file" in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: rigplan-calibration/1\ndevice: {name: x, kind: cuda}\noverrides: {efficiency: {gemm: 1}}\n")
    result = runner.invoke(cli, ["memory", "llama-3.1-8b", "--calibration", str(bad)])
    assert result.exit_code == 2 and "unknown efficiency parameter" in result.output


def test_round_trip_and_no_overwrite(tmp_path):
    cal = load_calibration(_file(tmp_path))
    out = write_calibration(cal, tmp_path / "copy.json")
    assert load_calibration(out).overrides.efficiency == {"gemm_max": 0.3}
    with pytest.raises(InvalidSpec, match="exists"):
        write_calibration(cal, out)


def test_device_gpu_from_measurements():
    cal = CalibrationFile.model_validate({
        "device": {"name": "cpu", "kind": "cpu", "count": 2},
        "measured": {"gemm": [{"m": 8, "n": 8, "k": 8, "dtype": "float32", "flop_per_s": 5e10},
                              {"m": 8, "n": 8, "k": 8, "dtype": "float32", "flop_per_s": 7e10}],
                     "memory_bandwidth_bytes_per_s": 1e10,
                     "collectives": [{"op": "all_reduce", "bus_bandwidth_bytes_per_s": 2e9}]}})
    gpu = device_gpu(cal)
    assert gpu.peak("fp32") == 7e10 and gpu.peak("tf32") == 7e10
    assert gpu.link.bandwidth_bytes_per_s == 2e9 and gpu.gpus_per_node == 2


def test_http_api_takes_a_calibration_inline():
    pytest.importorskip("fastapi", reason="the web extra is not installed")
    from fastapi.testclient import TestClient

    from rigplan.web.app import create_app

    client = TestClient(create_app(), raise_server_exceptions=False)
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 8}
    calibration = {"schema": "rigplan-calibration/1", "device": {"name": "H100", "kind": "cuda", "gpu_id": "h100-sxm"},
                   "overrides": {"efficiency": {"gemm_max": 0.3}}}
    plain = client.post("/api/estimate", json=body)
    calibrated = client.post("/api/estimate", json={**body, "calibration": calibration})
    assert plain.status_code == 200 and calibrated.status_code == 200, calibrated.text
    assert calibrated.json()["step_time_s"] > plain.json()["step_time_s"]
    unknown = {**calibration, "overrides": {"efficiency": {"x": 1}}}
    bad = client.post("/api/estimate", json={**body, "calibration": unknown})
    assert bad.status_code == 400 and "unknown efficiency parameter" in bad.text
