"""The caching allocator's overheads: reserved and what an out-of-memory retry cannot release, by regime."""

from __future__ import annotations

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
        # expandable segments keep less reserved than fixed segments, and changing shapes more than fixed ones
        assert RESERVED_OVER_CHURN[("expandable", kind, "fixed")] < RESERVED_OVER_CHURN[("caching", kind, "fixed")]
        assert RESERVED_OVER_CHURN[("caching", kind, "varying")] > RESERVED_OVER_CHURN[("caching", kind, "fixed")]


def test_regime_follows_the_job() -> None:
    assert regime(Job()) == ("caching", "full", "fixed")
    assert regime(Job(method="lora", precision="bf16-true", expandable_segments=True, varying_lengths=True)) == (
        "expandable", "peft", "varying")


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
