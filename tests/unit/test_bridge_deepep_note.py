"""The note that Megatron-Bridge runs DeepEP only on some parts: shown for the NeMo preset with DeepEP on GB200 and
GB300, not on B200, not for Megatron-LM's preset, and not without expert parallelism."""

from __future__ import annotations

import pytest

from rigplan.flow import estimate as speed
from rigplan.flow.estimate import BRIDGE_NO_DEEPEP_NOTE
from rigplan.flow.request import EstimateRequest

BASE = {"model": "qwen3-30b-a3b", "gpus": 64, "ep": 8, "global_batch": 512, "precision": "bf16-mixed",
        "moe_dispatcher": "deepep", "framework": "nemo"}


def notes(**changes: object) -> list[str]:
    return speed.estimate(EstimateRequest(**{**BASE, **changes})).setup.assumptions


@pytest.mark.parametrize("gpu", ["gb200", "gb300"])
def test_shown_for_bridge_deepep_on_grace_blackwell(gpu: str) -> None:
    assert BRIDGE_NO_DEEPEP_NOTE in notes(gpu=gpu)


def test_not_shown_where_the_gate_lets_deepep_run_or_nothing_dispatches() -> None:
    assert BRIDGE_NO_DEEPEP_NOTE not in notes(gpu="b200")
    assert BRIDGE_NO_DEEPEP_NOTE not in notes(gpu="gb200", framework="megatron")
    assert BRIDGE_NO_DEEPEP_NOTE not in notes(gpu="gb200", moe_dispatcher="alltoall")
    assert BRIDGE_NO_DEEPEP_NOTE not in notes(gpu="gb200", ep=1)
