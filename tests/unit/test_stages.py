"""Pipeline stage splits against Megatron-Core's and torchtitan's documented rules (hand-checkable)."""

from __future__ import annotations

import numpy as np
import pytest

from rigplan.domain.stages import (
    PipelineSplit,
    busiest_middle_rank,
    chunk_layer_counts,
    describe_split,
    rank_layer_counts,
    virtual_stage_layers,
)
from rigplan.errors import InvalidSpec

DEFAULT = PipelineSplit()


def test_even_split_when_the_stages_divide_the_layers() -> None:
    assert virtual_stage_layers(DEFAULT, 32, 4, 1) == (8, 8, 8, 8)
    assert virtual_stage_layers(DEFAULT, 32, 4, 2) == (4,) * 8


@pytest.mark.parametrize(("layers", "pp", "vpp", "expected"), [
    # Llama 3 405B: 126 layers on PP16, one layer fewer on the first and the last stage (arXiv 2407.21783 3.3.2).
    (126, 16, 1, (7,) + (8,) * 14 + (7,)),
    # BLOOM-176B: 70 layers on PP12, embedding and head counted as layers: 5 | 6 x 10 | 5.
    (70, 12, 1, (5,) + (6,) * 10 + (5,)),
    # Qwen3-235B: 94 layers on PP8 x VPP2 = 16 virtual stages of 6 layer-equivalents (Megatron account-for-*).
    (94, 8, 2, (5,) + (6,) * 14 + (5,)),
    # DeepSeek-V3: 61 layers + 2 = 63 over 16: fifteen stages of 4 equivalents, the last of 3.
    (61, 16, 1, (3,) + (4,) * 14 + (2,)),
])
def test_default_uneven_split_counts_embedding_and_head_as_a_layer(layers: int, pp: int, vpp: int,
                                                                   expected: tuple[int, ...]) -> None:
    counts = virtual_stage_layers(DEFAULT, layers, pp, vpp)
    assert counts == expected and sum(counts) == layers


def test_torchtitan_weights_example() -> None:
    # torchtitan generate_llm_fqn_per_model_part(2, 3, input_weight=2, output_weight=2): 7 equivalents over
    # 2 stages -> 4 and 3; stage 0 gives 2 to the embedding, stage 1 gives 2 to norm + output -> 2 | 1.
    split = PipelineSplit(embedding_weight=2, head_weight=2)
    assert virtual_stage_layers(split, 3, 2, 1) == (2, 1)


def test_megatron_first_and_last_stage_layers() -> None:
    # --decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 6 on 60 layers, PP6: 12 each between.
    split = PipelineSplit(first_stage_layers=6, last_stage_layers=6)
    assert virtual_stage_layers(split, 60, 6, 1) == (6, 12, 12, 12, 12, 6)
    # Only the first given: the other ranks share the rest.
    assert virtual_stage_layers(PipelineSplit(first_stage_layers=2), 32, 4, 1) == (2, 10, 10, 10)
    # A remainder goes to the earliest middle ranks (Megatron would refuse; rigplan says so).
    split = PipelineSplit(first_stage_layers=6, last_stage_layers=6)
    assert virtual_stage_layers(split, 126, 16, 1) == (6, 9, 9) + (8,) * 12 + (6,)
    assert "earlier ranks take one more" in describe_split(split, 126, 16, 1)
    assert "first/last" in describe_split(PipelineSplit(first_stage_layers=7, last_stage_layers=7), 126, 16, 1)


def test_first_last_with_interleaving_spreads_each_rank_over_its_chunks() -> None:
    # pp=2, vpp=2: rank 0 holds 3 layers (chunks 2 + 1), rank 1 holds 5 (3 + 2); stage k = chunk k//pp of rank k%pp.
    split = PipelineSplit(first_stage_layers=3)
    assert virtual_stage_layers(split, 8, 2, 2) == (2, 3, 1, 2)


def test_explicit_split_and_its_errors() -> None:
    split = PipelineSplit(stage_layers=(7, 9, 9, 7))
    assert virtual_stage_layers(split, 32, 4, 1) == (7, 9, 9, 7)
    with pytest.raises(InvalidSpec, match="4 virtual stages need one each"):
        virtual_stage_layers(PipelineSplit(stage_layers=(16, 16)), 32, 4, 1)
    with pytest.raises(InvalidSpec, match="sums to 33"):
        virtual_stage_layers(PipelineSplit(stage_layers=(8, 8, 8, 9)), 32, 4, 1)
    with pytest.raises(InvalidSpec, match="choose one way"):
        PipelineSplit(stage_layers=(1, 1), first_stage_layers=1)
    with pytest.raises(InvalidSpec, match="more than"):
        virtual_stage_layers(DEFAULT, 4, 8, 1)


def test_rank_counts_are_vectorised_per_distinct_pipeline() -> None:
    pp = np.array([16, 16, 4, 1])
    vpp = np.array([1, 1, 2, 1])
    rank = np.array([0, 1, 3, 0])
    layers, dense = rank_layer_counts(DEFAULT, 126, 126, pp, vpp, rank)
    # pp=4 x vpp=2 over 126 layers: 128 / 8 = 16 equivalents per virtual stage; rank 3 holds stages 3 and 7 -> 16 + 15.
    assert list(layers) == [7, 8, 31, 126] and list(dense) == list(layers)
    # MoE model with 3 leading dense layers: on PP16 rank 0 holds layers 0..2 (3 layers, all dense).
    first, first_dense = rank_layer_counts(DEFAULT, 61, 3, 16, 1, 0)
    assert (first, first_dense) == (3.0, 3.0)
    second, second_dense = chunk_layer_counts(DEFAULT, 61, 3, 16, 1, 1, 0)
    assert (second, second_dense) == (4.0, 0.0)
    assert busiest_middle_rank(DEFAULT, 126, 126, 16, 1) == 1


def test_interleaved_moe_layers_spread_over_the_stages() -> None:
    from rigplan.domain.stages import dense_layer_mask

    # Llama 4 Maverick: interleave_moe_layer_step 2, MoE at odd indices (transformers' (i + 1) % 2 == 0).
    assert list(dense_layer_mask(6, (0, 2))) == [True, False, True, False, True, False]
    assert list(dense_layer_mask(6, (2, 2))) == [True, True, True, False, True, False]
    assert list(dense_layer_mask(4, 1)) == [True, False, False, False]
    layers, dense = rank_layer_counts(DEFAULT, 48, (0, 2), 4, 1, np.arange(4))
    assert list(layers) == [12, 12, 12, 12] and list(dense) == [6, 6, 6, 6]
    # Counted as leading dense layers, the first two stages would hold no MoE layer at all.
    _, leading = rank_layer_counts(DEFAULT, 48, 24, 4, 1, np.arange(4))
    assert list(leading) == [12, 12, 0, 0]
