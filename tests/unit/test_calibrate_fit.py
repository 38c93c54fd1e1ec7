"""rigplan calibrate recovers parameters from runs generated with known ones, and applies them."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.estimate.calibration import Calibration
from rigplan.estimate.efficiency import attention_ceiling, efficiency_for
from rigplan.estimate.step import step_time
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.measure.calibrate import fit, parse_run

RUNS = [
    dict(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, zero=1, micro_batch=2, seq=4096, global_batch=64),
    dict(model="llama-3.1-70b", gpu="h100-sxm", gpus=64, tp=8, pp=2, zero=1, micro_batch=1, seq=4096,
         global_batch=128, recompute="selective", sequence_parallel=True),
]


def _measured(values: dict, compute_scale: float) -> float:
    """Step time rigplan predicts with every compute efficiency scaled (the 'true' machine here)."""
    result = estimate(EstimateRequest(**values))
    s = result.setup
    base = efficiency_for(s.gpu)
    cal = Calibration(gpu_id=s.gpu.id, efficiency={"gemm_max": base.gemm_max * compute_scale,
                                                   "attention": attention_ceiling(base, "fused") * compute_scale,
                                                   "attention_eager": attention_ceiling(base, "eager") * compute_scale,
                                                   "fp8_gemm_max": base.fp8_gemm_max * compute_scale})
    return float(step_time(s.arch, s.job, s.layout, s.gpu, global_batch=s.job.global_batch,
                           calibration=cal).step_time_s)


def test_one_run_recovers_the_compute_scale():
    run = parse_run({**RUNS[0], "step_time_s": _measured(RUNS[0], 0.7)})
    cal = fit([run])
    assert cal.fit["step_time"]["compute_scale"] == pytest.approx(0.7, rel=0.02)
    assert abs(cal.fit["step_time"]["runs"][0]["error_after"]) < 0.01


def test_two_runs_fit_both_scales_with_small_residual():
    runs = [parse_run({**v, "step_time_s": _measured(v, 0.8)}) for v in RUNS]
    cal = fit(runs)
    step = cal.fit["step_time"]
    assert step["comm_scale"] is not None
    assert step["compute_scale"] == pytest.approx(0.8, rel=0.1)
    assert step["residual_rms_log"] < 0.02


def test_memory_fragmentation_from_allocated_and_reserved():
    run = parse_run({**RUNS[0], "peak_allocated": "50GiB", "peak_reserved": "55GiB"})
    cal = fit([run])
    assert cal.overrides.fragmentation_fraction == pytest.approx(0.1)


def test_cli_writes_a_file_that_estimate_applies(tmp_path):
    runs = tmp_path / "runs.yaml"
    target = _measured(RUNS[0], 0.6)
    runs.write_text(yaml.safe_dump({"runs": [{**RUNS[0], "step_time_s": target}]}))
    out = tmp_path / "cal.yaml"
    runner = CliRunner()
    result = runner.invoke(cli, ["calibrate", "--runs", str(runs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "compute scale" in result.output
    est = runner.invoke(cli, ["estimate", "llama-3.1-8b", "--gpus", "8", "--zero", "1", "--micro-batch", "2",
                              "--seq", "4096", "--global-batch", "64", "--calibration", str(out), "--json"])
    assert json.loads(est.output)["step_time_s"] == pytest.approx(target, rel=0.01)


def test_a_run_without_measurements_is_an_error():
    result = CliRunner().invoke(cli, ["calibrate", "llama-3.1-8b", "--gpus", "8", "-o", "/dev/null"])
    assert result.exit_code == 2 and "needs a measured figure" in result.output
