"""The caching allocator's overheads: reserved and what an out-of-memory retry cannot release, by regime."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from rigplan.api import memory
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.allocator import NEEDED_OVER_CHURN, RESERVED_OVER_CHURN, regime
from rigplan.estimate.memory import peak_memory
from rigplan.flow.request import MemoryRequest

TINY = Architecture(id="tiny", num_layers=4, hidden=256, num_heads=4, ffn=1024, vocab=1000)


def test_every_regime_has_both_fractions_and_they_order_as_the_allocator_does() -> None:
    assert set(RESERVED_OVER_CHURN) == set(NEEDED_OVER_CHURN)
    for key, phi in RESERVED_OVER_CHURN.items():
        assert 0 <= NEEDED_OVER_CHURN[key] <= phi, key  # what cannot be released is part of the cache
    for kind in ("full", "peft"):
        for recompute in ("plain", "recompute"):
            # expandable segments keep less reserved than fixed segments, changing shapes more than fixed ones,
            # and recomputation more than a backward that only frees
            caching, expandable = (RESERVED_OVER_CHURN[(mode, kind, "fixed", recompute)]
                                   for mode in ("caching", "expandable"))
            assert expandable < caching
            assert RESERVED_OVER_CHURN[("caching", kind, "varying", recompute)] > caching
        assert (RESERVED_OVER_CHURN[("caching", kind, "fixed", "recompute")]
                > RESERVED_OVER_CHURN[("caching", kind, "fixed", "plain")])


def test_the_fractions_are_the_medians_of_the_device_measurements() -> None:
    """Each phi is the median of its group of runs in docs/measurements/h200-2026-12 (grid*.json)."""
    folder = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "h200-2026-12"
    groups: dict[tuple[str, str, str, str], list[float]] = {}
    for name in ("grid.json", "grid_expandable.json"):
        data = json.loads((folder / name).read_text())
        mode = "expandable" if "expandable_segments:True" in data["alloc_conf"] else "caching"
        for row in data["rows"]:
            key = (mode, "peft" if row["lora"] else "full", row["shapes"], "recompute" if row["ckpt"] else "plain")
            groups.setdefault(key, []).append(row["reserved_over_churn"])
    for name in ("qlora.json", "qlora_second.json"):
        for row in json.loads((folder / name).read_text())["rows"]:
            if "targets" in row:
                churn = row["peak_allocated_bytes"] - row["held_after_steps_bytes"]
                key = ("caching", "qlora", "fixed", "recompute" if row["ckpt"] else "plain")
                groups.setdefault(key, []).append((row["peak_reserved_bytes"] - row["peak_allocated_bytes"]) / churn)
    assert set(groups) == set(RESERVED_OVER_CHURN)
    for key, values in groups.items():
        assert RESERVED_OVER_CHURN[key] == pytest.approx(statistics.median(values), abs=5e-4), key


def test_regime_follows_the_job() -> None:
    assert regime(Job()) == ("caching", "full", "fixed", "plain")
    assert regime(Job(recompute="full")) == ("caching", "full", "fixed", "recompute")
    assert regime(Job(recompute="full"), load=True) == ("caching", "full", "fixed", "plain")
    assert regime(Job(method="lora", precision="bf16-true", expandable_segments=True, varying_lengths=True)) == (
        "expandable", "peft", "varying", "plain")
    # QLoRA has its own measured regime under the default allocator with fixed shapes, LoRA's elsewhere
    assert regime(Job(method="qlora", precision="bf16-true", recompute="full", kernels="hf")) == (
        "caching", "qlora", "fixed", "recompute")
    assert regime(Job(method="qlora", precision="bf16-true", recompute="full", kernels="torchtune")) == (
        "caching", "peft", "fixed", "recompute")
    assert regime(Job(method="qlora", precision="bf16-true", varying_lengths=True)) == (
        "caching", "peft", "varying", "plain")


def test_reserved_and_needed_are_fractions_of_the_churn_not_of_the_weights() -> None:
    """Doubling the weights-only part (a larger vocabulary held between steps) leaves the overheads alone when
    the churn is unchanged; the overheads scale with the micro-batch."""
    job = Job(seq_len=256, kernels="eager")
    b1 = peak_memory(TINY, job, Layout())
    churn = b1.step_allocated_bytes - b1.weights_bytes - b1.optimizer_bytes
    assert b1.fragmentation_bytes == pytest.approx(RESERVED_OVER_CHURN[regime(job)] * churn)
    assert b1.unreleasable_bytes == pytest.approx(NEEDED_OVER_CHURN[regime(job)] * churn)
    b4 = peak_memory(TINY, Job(seq_len=256, kernels="eager", micro_batch=4), Layout())
    assert b4.fragmentation_bytes > 3 * b1.fragmentation_bytes


def test_the_fit_uses_what_cannot_be_released_and_reserved_is_reported_apart() -> None:
    b = peak_memory(TINY, Job(seq_len=256, varying_lengths=True), Layout())
    assert b.reserved_bytes == pytest.approx(b.step_allocated_bytes + b.fragmentation_bytes)
    assert b.needed_bytes == pytest.approx(b.step_allocated_bytes + b.unreleasable_bytes)
    assert b.total_bytes == pytest.approx(b.needed_bytes + b.cuda_context_bytes + b.nccl_bytes)
    assert b.needed_bytes < b.reserved_bytes


def test_expandable_segments_lower_reserved_memory() -> None:
    base = dict(model="llama-3.1-8b", gpu="a100-80gb-sxm", method="qlora", seq=2048, micro_batch=2,
                varying_lengths=True)
    caching = memory(MemoryRequest(**base)).breakdown
    expandable = memory(MemoryRequest(**base, expandable_segments=True)).breakdown
    assert expandable.allocated_bytes == caching.allocated_bytes
    assert expandable.reserved_bytes < caching.reserved_bytes
    assert expandable.total_bytes <= caching.total_bytes


@pytest.mark.parametrize("framework,expected", [("torchtitan", True), ("unsloth", True), ("torchtune", True),
                                                ("megatron", False), ("nemo", False), ("hf", False),
                                                ("fsdp", False), ("deepspeed", False)])
def test_presets_set_expandable_segments_where_the_framework_does(framework: str, expected: bool) -> None:
    request = MemoryRequest(model="llama-3.1-8b", gpus=8, framework=framework)
    assert request.expandable_segments is expected


def test_the_device_bounds_the_cache_but_never_below_what_cannot_be_released() -> None:
    from rigplan.estimate.allocator import cache_within_device

    gib = 2.0**30
    # room to spare: the cache is phi · churn
    assert cache_within_device(6 * gib, allocated_bytes=50 * gib, unreleasable_bytes=2 * gib,
                               device_bytes=79 * gib) == pytest.approx(6 * gib)
    # under pressure: what is left beside the allocated bytes
    assert cache_within_device(6 * gib, allocated_bytes=75 * gib, unreleasable_bytes=2 * gib,
                               device_bytes=79 * gib) == pytest.approx(4 * gib)
    # over the device: what cannot be released stays
    assert cache_within_device(6 * gib, allocated_bytes=78.5 * gib, unreleasable_bytes=2 * gib,
                               device_bytes=79 * gib) == pytest.approx(2 * gib)


def test_a_long_context_run_near_the_capacity_reports_a_reserved_peak_the_device_can_hold() -> None:
    request = MemoryRequest(model="llama-3.1-8b", gpu="h100-sxm-96gb-500w", gpus=8, zero=3, seq=32768,
                            precision="fp8", recompute="full", framework="torchtitan")
    result = memory(request)
    b = result.breakdown
    unbounded = peak_memory(result.setup.arch, result.setup.job, result.setup.layout)
    # phi · churn alone would not fit on the device
    assert unbounded.step_allocated_bytes + unbounded.fragmentation_bytes > result.usable_bytes
    assert b.fragmentation_bytes > 0
    assert b.reserved_bytes <= result.usable_bytes - b.cuda_context_bytes - b.nccl_bytes + 1
