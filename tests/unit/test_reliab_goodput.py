"""`reliability_for_job`: hand-computed case, planned stops, async checkpoints, JSON shape."""

from __future__ import annotations

import json
import math

import pytest

from rigplan.errors import InvalidSpec
from rigplan.reliab.checkpoint import optimal_interval_s
from rigplan.reliab.failures import DAY_S, HOUR_S, LLAMA3_405B, FailureCause, FailureModel, failure_model_from_mtbf
from rigplan.reliab.goodput import DEFAULT_RESTART_S, reliability_for_job
from rigplan.reliab.storage import DEFAULT_STORAGE, ceph, nvme_gen4, parallel_fs

SHARED_10GBPS = parallel_fs(write_bytes_per_s=1e10, read_bytes_per_s=1e10)
ONE_PER_8E6_GPU_S = failure_model_from_mtbf(gpu_mtbf_s=8e6)


def test_hand_computed_case() -> None:
    """8 GPUs, one failure per 8e6 GPU-s -> M = 1e6 s; 1 TB at 10 GB/s -> δ = 100 s; τ = 1e4 s;
    R = 1000 s; T_s = 1e6 s: W = 1e6·e^0.001·(e^0.0101 − 1)·100 = 1,016,133.34 s."""
    r = reliability_for_job(num_gpus=8, ideal_time_s=1e6, checkpoint_bytes=1e12, storage=SHARED_10GBPS,
                            failure_model=ONE_PER_8E6_GPU_S, restart_s=1000, interval_s=1e4)
    assert r.mtbf_s == pytest.approx(1e6) and r.mtbf_unexpected_s == pytest.approx(1e6)
    assert r.checkpoint_write_s == pytest.approx(100) and r.checkpoint_blocking_s == pytest.approx(100)
    assert r.wall_time_s == pytest.approx(1_016_133.34, abs=0.01)
    assert r.goodput == pytest.approx(1e6 / 1_016_133.34)
    assert r.interruptions_per_day == pytest.approx(0.0864)
    assert r.expected_interruptions == pytest.approx(1.01613334, rel=1e-6)
    assert r.expected_lost_s == pytest.approx(16_133.34, abs=0.01)
    assert r.lost_checkpointing_s == pytest.approx(10_000)  # 100 checkpoints × 100 s
    # restarts cut short by a failure: W·(1 − e^{−R/M}) = 1,016,133.34 × 9.995e-4 = 1015.63 s
    assert r.lost_restarts_s == pytest.approx(1015.6255, abs=1e-3)
    parts = r.lost_checkpointing_s + r.lost_restarts_s + r.lost_rework_s
    assert parts == pytest.approx(r.expected_lost_s)


def test_default_interval_is_daly_for_unexpected_mtbf() -> None:
    r = reliability_for_job(num_gpus=8, ideal_time_s=1e6, checkpoint_bytes=1e12, storage=SHARED_10GBPS,
                            failure_model=ONE_PER_8E6_GPU_S)
    assert r.checkpoint_interval_s == pytest.approx(optimal_interval_s(100, 1e6))
    assert r.restart_s == DEFAULT_RESTART_S == 600
    assert r.storage == SHARED_10GBPS


def test_default_storage_is_node_local_on_one_node_and_shared_beyond() -> None:
    one_node = reliability_for_job(num_gpus=8, ideal_time_s=DAY_S, checkpoint_bytes=7e9)
    assert one_node.storage == DEFAULT_STORAGE == nvme_gen4()
    assert one_node.checkpoint_write_s == pytest.approx(7e9 / 3.5e9)
    # a checkpoint on a failed node's local disk is lost with the node: multi-node jobs write to shared storage
    r = reliability_for_job(num_gpus=16, ideal_time_s=DAY_S, checkpoint_bytes=7e9)
    assert not r.storage.per_node
    assert r.storage == ceph(4)
    assert r.checkpoint_write_s == pytest.approx(7e9 / (4 * 16.6e9 / 3))


def test_planned_stops_cost_a_restart_and_a_checkpoint_each() -> None:
    """Only planned stops, λ_p = 1e-5/s, δ = 100 s, R = 900 s: W = T_s/(1 − 1e-5·1000) = T_s/0.99."""
    planned = FailureModel(name="planned-only", source="t", causes=(
        FailureCause(name="p", label="p", category="planned", rate_per_gpu_s=1e-5, planned=True),))
    r = reliability_for_job(num_gpus=1, ideal_time_s=1e6, checkpoint_bytes=1e12, storage=SHARED_10GBPS,
                            failure_model=planned, restart_s=900)
    assert r.checkpoint_interval_s == math.inf
    assert r.wall_time_s == pytest.approx(1e6 / 0.99)
    assert r.lost_rework_s == pytest.approx(0, abs=1e-6)
    assert r.expected_interruptions == pytest.approx(1e-5 * 1e6 / 0.99)


def test_planned_stops_faster_than_restarts_never_finish() -> None:
    planned = FailureModel(name="p", source="t", causes=(
        FailureCause(name="p", label="p", category="planned", rate_per_gpu_s=1e-2, planned=True),))
    r = reliability_for_job(num_gpus=1, ideal_time_s=10, checkpoint_bytes=1, failure_model=planned, restart_s=100)
    assert r.wall_time_s == math.inf and r.goodput == 0
    d = r.to_dict()
    assert d["wall_time_s"] is None and d["lost_breakdown"]["rework_s"] is None
    json.dumps(d, allow_nan=False)


def test_async_checkpoint_blocks_less_and_loses_the_in_flight_part() -> None:
    sync = reliability_for_job(num_gpus=8, ideal_time_s=1e6, checkpoint_bytes=1e12, storage=SHARED_10GBPS,
                               failure_model=ONE_PER_8E6_GPU_S)
    part = reliability_for_job(num_gpus=8, ideal_time_s=1e6, checkpoint_bytes=1e12, storage=SHARED_10GBPS,
                               failure_model=ONE_PER_8E6_GPU_S, blocking_fraction=0.1)
    assert part.checkpoint_blocking_s == pytest.approx(10)
    assert part.checkpoint_interval_s < sync.checkpoint_interval_s
    assert part.goodput > sync.goodput
    fully = reliability_for_job(num_gpus=8, ideal_time_s=1e6, checkpoint_bytes=1e12, storage=SHARED_10GBPS,
                                failure_model=ONE_PER_8E6_GPU_S, blocking_fraction=0.0)
    assert fully.checkpoint_interval_s == pytest.approx(100)  # the next save waits for the previous one
    assert fully.lost_checkpointing_s == 0


def test_no_failures_gives_ideal_time() -> None:
    r = reliability_for_job(num_gpus=64, ideal_time_s=DAY_S, checkpoint_bytes=1e12, failure_model=LLAMA3_405B.scaled(0))
    assert r.wall_time_s == DAY_S and r.goodput == 1 and r.expected_interruptions == 0
    assert r.to_dict()["checkpoint_interval_s"] is None and r.to_dict()["mtbf_s"] is None


def test_to_dict_has_the_fields_the_cli_reports() -> None:
    d = reliability_for_job(num_gpus=1024, ideal_time_s=30 * DAY_S, checkpoint_bytes=1e12).to_dict()
    for key in ("interruptions_per_day", "mtbf_s", "checkpoint_interval_s", "checkpoint_write_s", "goodput",
                "expected_lost_s", "wall_time_s", "expected_interruptions"):
        assert key in d
    json.dumps(d, allow_nan=False)
    assert d["mtbf_s"] == pytest.approx(HOUR_S * 21_233_664 / 466 / 1024)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"num_gpus": 0}, "num_gpus"),
    ({"ideal_time_s": -1.0}, "ideal time"),
    ({"restart_s": math.inf}, "restart time"),
    ({"blocking_fraction": 1.5}, "blocking_fraction"),
    ({"interval_s": 0.0}, "interval"),
])
def test_invalid_inputs(kwargs: dict[str, float], message: str) -> None:
    args: dict[str, float] = {"num_gpus": 8, "ideal_time_s": 100.0, "checkpoint_bytes": 1e9} | kwargs
    with pytest.raises(InvalidSpec, match=message):
        reliability_for_job(**args)  # type: ignore[arg-type]


def test_step_time_rounds_the_interval_to_whole_steps() -> None:
    """Daly's τ for δ = 100 s, M = 1e6 s is 14,075.5 s; with 3,000 s steps that is 5 steps = 15,000 s."""
    kw = {"num_gpus": 8, "ideal_time_s": 1e6, "checkpoint_bytes": 1e12, "storage": SHARED_10GBPS,
          "failure_model": ONE_PER_8E6_GPU_S}
    free = reliability_for_job(**kw)  # type: ignore[arg-type]
    assert free.checkpoint_interval_s == pytest.approx(14_075.5, abs=0.1)
    stepped = reliability_for_job(**kw, step_time_s=3000)  # type: ignore[arg-type]
    assert stepped.checkpoint_interval_s == 15_000
    assert reliability_for_job(**kw, step_time_s=1e5).checkpoint_interval_s == 1e5  # type: ignore[arg-type]
