"""The caching-allocator port: its constants are the installed torch's, and hand-checked traces replay as
c10/cuda/CUDACachingAllocator.cpp would run them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigplan.measure.allocator_replay import (
    K_LARGE_BUFFER,
    K_MIN_BLOCK,
    K_MIN_LARGE_ALLOC,
    K_ROUND_LARGE,
    K_SMALL_BUFFER,
    K_SMALL_SIZE,
    replay,
    round_size,
    segment_size,
)

MiB = 1 << 20


def test_constants_match_the_installed_torch_header() -> None:
    torch = pytest.importorskip("torch")
    header = Path(torch.__file__).parent / "include" / "c10" / "core" / "AllocatorConfig.h"
    if not header.exists():
        pytest.skip("this torch install carries no C++ headers")
    text = header.read_text()
    values = {name: int(value) for name, value in re.findall(r"constexpr size_t (k\w+) = (\d+);", text)}
    assert values["kMinBlockSize"] == K_MIN_BLOCK
    assert values["kSmallSize"] == K_SMALL_SIZE
    assert values["kSmallBuffer"] == K_SMALL_BUFFER
    assert values["kMinLargeAlloc"] == K_MIN_LARGE_ALLOC
    assert values["kRoundLarge"] == K_ROUND_LARGE


def test_sizes_and_segments() -> None:
    assert round_size(1) == 512 and round_size(513) == 1024
    assert segment_size(4096) == K_SMALL_BUFFER  # small pool: 2 MiB segments
    assert segment_size(3 * MiB) == K_LARGE_BUFFER  # 1-10 MiB share 20 MiB segments
    assert segment_size(11 * MiB + 1) == 12 * MiB  # large requests rounded up to 2 MiB


def test_a_freed_block_is_split_for_a_smaller_request_and_a_larger_one_takes_a_new_segment() -> None:
    """100 and 50 MiB, free the 100: 60 and 30 MiB are carved from it (remainders over 1 MiB are split off);
    after everything is freed a 150 MiB request fits no cached block, so a new segment is taken: reserved
    300 MiB for 150 live. With expandable segments the freed space merges and serves it: 160 MiB (20 MiB
    pages). An out-of-memory retry could release every free segment: what the job needs is 150 MiB."""
    events = [("a", 0, 100 * MiB), ("a", 1, 50 * MiB), ("f", 0, 0), ("a", 2, 60 * MiB), ("a", 3, 30 * MiB),
              ("f", 1, 0), ("f", 2, 0), ("f", 3, 0), ("a", 4, 150 * MiB)]
    caching = replay(events, expandable=False)
    assert caching.peak_allocated == 150 * MiB
    assert caching.peak_reserved == 300 * MiB
    assert caching.peak_needed == 150 * MiB
    expandable = replay(events, expandable=True)
    assert expandable.peak_reserved == 160 * MiB


def test_a_remainder_of_at_most_1_mib_stays_in_the_block_and_counts_as_allocated() -> None:
    events = [("a", 0, 20 * MiB), ("f", 0, 0), ("a", 1, 19 * MiB + 512)]
    a = replay(events, expandable=False)
    assert a.allocated == 20 * MiB  # not split: the block keeps its 20 MiB
    events = [("a", 0, 20 * MiB), ("f", 0, 0), ("a", 1, 18 * MiB)]
    assert replay(events, expandable=False).allocated == 18 * MiB  # 2 MiB remainder split off


def test_a_live_block_pins_its_segment_under_memory_pressure() -> None:
    """Two 30 MiB blocks carved from one freed 64 MiB segment: while one lives, the segment cannot be released."""
    events = [("a", 0, 64 * MiB), ("f", 0, 0), ("a", 1, 30 * MiB), ("a", 2, 30 * MiB), ("f", 1, 0),
              ("a", 3, 40 * MiB)]
    a = replay(events, expandable=False)
    assert a.peak_needed == 64 * MiB + 40 * MiB
    assert a.peak_allocated == 70 * MiB


def test_a_recorded_training_step_replays() -> None:
    pytest.importorskip("transformers")
    from rigplan.measure.allocator_replay import record, scenario

    row = scenario("tiny", record("lora", 1, (64, 64), 1, False, "1b", False))
    assert row["allocated_gib"] > row["held_between_steps_gib"] > 0
    assert row["caching_reserved_gib"] >= row["allocated_gib"]
    assert row["caching_needed_gib"] <= row["caching_reserved_gib"]
