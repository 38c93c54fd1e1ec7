"""Per-stage memory and pace on uneven pipelines, and recompute granularity (hand-checkable cases)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.domain.stages import PipelineSplit
from rigplan.errors import InvalidSpec
from rigplan.estimate import recompute
from rigplan.estimate.memory import (
    chunk_micro_batches_in_flight,
    in_flight_layers_fraction,
    peak_memory,
    peak_total_bytes_batch,
    rank_memory,
    stage_activation_bytes,
)
from rigplan.estimate.step import pace_candidates
from rigplan.search.space import LayoutArrays

ARCH = Architecture(id="t", num_layers=30, hidden=4096, num_heads=32, ffn=16384, vocab=32000, num_kv_heads=8)


@pytest.mark.parametrize(("pp", "vpp", "rank"), [(4, 1, 0), (4, 2, 0), (4, 2, 3), (8, 3, 5), (2, 4, 1)])
def test_chunk_in_flight_sums_to_the_megatron_warm_up_count(pp: int, vpp: int, rank: int) -> None:
    layout = Layout(pp=pp, vpp=vpp)
    held = sum(chunk_micro_batches_in_flight(layout, rank, 64, c) for c in range(vpp))
    assert held == pytest.approx(in_flight_layers_fraction(layout, rank, 64) * vpp)


def test_interleaved_chunks_hold_micro_batches_in_groups_of_pp() -> None:
    # pp=4, v=2, rank 0: 2*3 + 1*4 + 1 = 11 passes: chunk 0 holds passes 0-3 and 8-10 (7), chunk 1 holds 4-7 (4).
    layout = Layout(pp=4, vpp=2)
    assert [chunk_micro_batches_in_flight(layout, 0, 64, c) for c in (0, 1)] == [7, 4]


def test_uneven_split_activations_count_each_chunks_own_layers() -> None:
    # 30 layers on pp=4: default split (30+2)/4 = 8 equivalents -> 7 | 8 | 8 | 7.
    job = Job(seq_len=2048, global_batch=64)
    layout = Layout(pp=4, dp=1)
    per_layer = stage_activation_bytes(ARCH, job, Layout(), 0)[0] / 30
    for rank, (layers, held) in enumerate([(7, 4), (8, 3), (8, 2), (7, 1)]):
        assert stage_activation_bytes(ARCH, job, layout, rank)[0] == pytest.approx(per_layer * layers * held)


def test_batch_peak_matches_every_rank_on_uneven_splits() -> None:
    job = Job(seq_len=4096, global_batch=256)
    pps = np.array([3, 4, 6, 7, 12])
    one = np.ones_like(pps)
    arrays = LayoutArrays(tp=one, pp=pps, vpp=one, dp=one, cp=one, ep=one, etp=one, zero=0 * one, micro_batch=one,
                          sequence_parallel=False)
    batch = peak_total_bytes_batch(ARCH, job, arrays)
    for i, pp in enumerate(pps):
        assert batch[i] == pytest.approx(peak_memory(ARCH, job, Layout(pp=int(pp))).total_bytes)


def test_pace_candidates_are_first_busiest_middle_and_last() -> None:
    job = Job()
    layout = Layout(pp=4, split=PipelineSplit(stage_layers=(6, 7, 9, 8)))
    shapes = pace_candidates(ARCH, job, layout, 4, 1)
    assert [int(s.rank) for s in shapes] == [0, 2, 3]
    assert [float(s.layers) for s in shapes] == [6, 9, 8]
    assert [float(s.lm_head) for s in shapes] == [0, 0, 1]


def test_heavier_stage_sets_memory_peak() -> None:
    job = Job(seq_len=4096, global_batch=64)
    layout = Layout(pp=4, split=PipelineSplit(stage_layers=(2, 2, 2, 24)))
    worst = peak_memory(ARCH, job, layout)
    assert worst.stage == 3
    assert worst.total_bytes == pytest.approx(rank_memory(ARCH, job, layout, 3).total_bytes)


def test_recompute_granularity_is_monotonic() -> None:
    layout = Layout()
    base = Job(seq_len=4096, recompute="full")
    none = stage_activation_bytes(ARCH, replace(base, recompute="none"), layout, 0)[0]
    full = stage_activation_bytes(ARCH, base, layout, 0)[0]
    # Block: more recomputed layers -> less memory, down to plain full recompute.
    block = [stage_activation_bytes(ARCH, replace(base, recompute_method="block", recompute_layers=n), layout, 0)[0]
             for n in (1, 5, 15, 30)]
    assert none > block[0] > block[1] > block[2] > block[3] == pytest.approx(full)
    # Every n-th layer: checkpointing fewer layers keeps more.
    every = [stage_activation_bytes(ARCH, replace(base, recompute_method="every", recompute_layers=n), layout, 0)[0]
             for n in (1, 2, 3, 31)]
    assert every[0] == pytest.approx(full) and every[0] < every[1] < every[2] < every[3] == pytest.approx(none)
    # Uniform groups of N: ceil(30/N) inputs saved.
    uniform = stage_activation_bytes(ARCH, replace(base, recompute_layers=3), layout, 0)[0]
    assert uniform == pytest.approx(full * 10 / 30)
    assert float(recompute.recomputed_layers(replace(base, recompute_method="block", recompute_layers=4), 3)) == 3


def test_recompute_granularity_needs_full_recompute() -> None:
    with pytest.raises(InvalidSpec, match="add --recompute full"):
        Job(recompute="selective", recompute_layers=2)


def test_plan_space_tries_pipeline_degrees_that_do_not_divide_the_layers() -> None:
    from rigplan.search.space import fills_stages, pipeline_options

    assert 16 in pipeline_options(126, 2048) and 12 not in pipeline_options(126, 2048)  # 12 does not divide 2048
    assert 12 in pipeline_options(70, 48)
    assert fills_stages(126, 16, 2) and not fills_stages(126, 16, 8)  # v=8: virtual stage 0 holds only the embedding
