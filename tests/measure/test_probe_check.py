"""rigplan probe and rigplan check on this machine's CPU: one process, and two under torchrun (gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="probe/check need the torch extra: pip install 'rigplan[torch]'")

from rigplan.calibration.file import device_gpu, load_calibration  # noqa: E402
from rigplan.cli.main import cli  # noqa: E402

TINY = ["--layers", "2", "--hidden", "128", "--heads", "4", "--kv-heads", "2", "--ffn", "352", "--vocab", "1024",
        "--seq", "128", "--micro-batch", "2"]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _torchrun(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "rigplan.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900, check=False)


def _table(title: str, rows: list[dict]) -> str:
    lines = [title, f"  {'quantity':40} {'measured':>14} {'rigplan':>14} {'error':>8}"]
    for r in rows:
        scale, unit = (1e3, "ms") if r["unit"] == "s" else (2.0**-20, "MiB")
        err = "-" if r["error"] is None else f"{100 * r['error']:+.1f}%"
        lines.append(f"  {r['quantity']:40} {r['measured'] * scale:11.3f} {unit:>3}"
                     f"{r['estimated'] * scale:11.3f} {unit:>3} {err:>8}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def cpu_calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe") / "cpu.yaml"
    result = CliRunner().invoke(cli, ["probe", "--quick", "--threads", "1", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_probe_writes_a_calibration(cpu_calibration: Path) -> None:
    cal = load_calibration(cpu_calibration)
    assert cal.device.kind == "cpu" and cal.device.gpu_id is None
    dtypes = {g["dtype"] for g in cal.measured["gemm"]}
    assert {"float32", "bfloat16"} <= dtypes
    assert all(g["flop_per_s"] > 0 for g in cal.measured["gemm"])
    assert cal.measured["attention"] and cal.measured["memory_bandwidth_bytes_per_s"] > 0
    fit = cal.fit["gemm"]
    assert fit["peak_flop_per_s"] >= max(g["flop_per_s"] for g in cal.measured["gemm"] if g["dtype"] == fit["dtype"])
    assert cal.overrides.efficiency["gemm_half_dim"] >= 0 and cal.overrides.efficiency["attention_eager"] > 0
    gpu = device_gpu(cal)
    assert gpu.peak("fp32") == pytest.approx(cal.fit["gemm_by_dtype"]["float32"]["peak_flop_per_s"])


def test_a_cpu_calibration_is_not_applied_to_a_catalog_gpu(cpu_calibration: Path) -> None:
    result = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--gpus", "8", "--json",
                                      "--calibration", str(cpu_calibration)])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.output)["assumptions"]
    assert any("not applied" in n for n in notes)


def test_probe_refuses_to_overwrite(cpu_calibration: Path) -> None:
    result = CliRunner().invoke(cli, ["probe", "--quick", "-o", str(cpu_calibration)])
    assert result.exit_code == 2 and "exists" in result.output


def test_check_one_process_lora(cpu_calibration: Path, report_table) -> None:
    args = ["check", *TINY, "--method", "lora", "--lora-targets", "q,v", "--precision", "bf16-true",
            "--steps", "2", "--warmup", "1", "--threads", "1", "--calibration", str(cpu_calibration), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {r["quantity"]: r for r in data["rows"]}
    for exact in ("weights", "gradients", "optimizer states"):
        assert abs(rows[exact]["error"]) < 0.01, rows[exact]
    report_table(_table(data["title"] + "\n  rigplan " + " ".join(args[:-1]), data["rows"]))


def test_probe_collectives_under_torchrun(tmp_path: Path) -> None:
    result = _torchrun(["probe", "--quick", "-o", "gloo.yaml"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    cal = load_calibration(tmp_path / "gloo.yaml")
    assert cal.device.count == 2
    ops = {c["op"] for c in cal.measured["collectives"]}
    assert ops == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    assert all(c["backend"] == "gloo" and c["bus_bandwidth_bytes_per_s"] > 0 for c in cal.measured["collectives"])
    assert cal.overrides.link_latency_s is not None and cal.overrides.link_latency_s >= 0


def test_check_fsdp_two_processes(tmp_path: Path, report_table) -> None:
    args = ["check", *TINY, "--fsdp", "--precision", "fp32", "--steps", "3", "--warmup", "1", "--json"]
    result = _torchrun(args, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["ranks"] == 2
    rows = {r["quantity"]: r for r in data["rows"]}
    for exact in ("weights", "gradients", "optimizer states"):
        assert abs(rows[exact]["error"]) < 0.01, rows[exact]
    assert abs(rows["saved activations (blocks)"]["error"]) < 0.5, rows["saved activations (blocks)"]
    assert rows["step time"]["measured"] > 0 and rows["step time"]["estimated"] > 0
    report_table(_table(data["title"] + "\n  torchrun --nproc-per-node 2 -m rigplan.cli.main " + " ".join(args[:-1]),
                        data["rows"]))
