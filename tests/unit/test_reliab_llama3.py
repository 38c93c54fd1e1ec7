"""Validation: Llama 3 405B pre-training, 16,384 H100, 54 days, 466 interruptions, >90 % effective time.

Source: Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783), Sec. 3.3.4 (interruptions, ">90 %
effective training time") and Sec. 3.3.1 (Tectonic: 2 TB/s sustained, 7 TB/s peak).
Inputs that are ASSUMPTIONS (the paper does not state them): the checkpoint holds 14 B/param
(bf16 weights + fp32 master + fp32 Adam m, v) for 405e9 parameters = 5.67 TB; it is written at the
sustained 2 TB/s; restarts take 5-20 minutes; checkpoints are taken at Daly's interval or every
30 minutes.
"""

from __future__ import annotations

import pytest

from rigplan.reliab.checkpoint import training_checkpoint_bytes
from rigplan.reliab.failures import DAY_S, LLAMA3_405B
from rigplan.reliab.goodput import reliability_for_job
from rigplan.reliab.storage import tectonic_llama3

GPUS = 16_384
RUN_S = 54 * DAY_S
CHECKPOINT_BYTES = training_checkpoint_bytes(405e9)


@pytest.mark.parametrize("restart_s", [300.0, 600.0, 1200.0])
def test_llama3_405b_goodput_is_about_90_percent(restart_s: float) -> None:
    r = reliability_for_job(num_gpus=GPUS, ideal_time_s=0.9 * RUN_S, checkpoint_bytes=CHECKPOINT_BYTES,
                            storage=tectonic_llama3(), failure_model=LLAMA3_405B, restart_s=restart_s)
    assert 0.85 <= r.goodput <= 0.97
    assert r.interruptions_per_day == pytest.approx(466 / 54)
    assert r.checkpoint_write_s == pytest.approx(2.835)


def test_llama3_405b_default_restart_gives_92_percent() -> None:
    r = reliability_for_job(num_gpus=GPUS, ideal_time_s=0.9 * RUN_S, checkpoint_bytes=CHECKPOINT_BYTES,
                            storage=tectonic_llama3())
    assert r.goodput == pytest.approx(0.921, abs=0.001)
    assert r.mtbf_s / 3600 == pytest.approx(2.78, abs=0.01)  # "about one interruption every 3 hours"


def test_llama3_405b_with_half_hour_checkpoints_still_in_range() -> None:
    r = reliability_for_job(num_gpus=GPUS, ideal_time_s=0.9 * RUN_S, checkpoint_bytes=CHECKPOINT_BYTES,
                            storage=tectonic_llama3(), interval_s=1800)
    assert 0.85 <= r.goodput <= 0.97


def test_llama3_405b_interruptions_over_the_snapshot() -> None:
    """Sized so the expected wall time is the 54-day snapshot, the model expects 466 interruptions."""
    probe = reliability_for_job(num_gpus=GPUS, ideal_time_s=RUN_S, checkpoint_bytes=CHECKPOINT_BYTES,
                                storage=tectonic_llama3())
    r = reliability_for_job(num_gpus=GPUS, ideal_time_s=RUN_S * probe.goodput, checkpoint_bytes=CHECKPOINT_BYTES,
                            storage=tectonic_llama3())
    assert r.wall_time_s == pytest.approx(RUN_S)
    assert r.expected_interruptions == pytest.approx(466)
