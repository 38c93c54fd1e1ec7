"""Group-limited routing (DeepSeek's node-limited routing): the destinations a token's experts reach, checked against
a simulation of Megatron-Core's group_limited_topk on random scores; where the group counts come from (config.json,
catalog, shape flags) and where they go (DeepEP traffic, the Megatron export)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.domain.model import MoE
from rigplan.errors import InvalidSpec
from rigplan.estimate.moe import deduplicated_copy_share, expected_destinations

DATA = Path(__file__).resolve().parents[1] / "data"
DEEPSEEK_V3 = MoE(num_experts=256, top_k=8, expert_ffn=2048, routing_groups=8, routing_group_topk=4)
DEEPSEEK_V2 = MoE(num_experts=160, top_k=6, expert_ffn=1536, routing_groups=8, routing_group_topk=3)


def simulated_destinations(moe: MoE, destinations: int, tokens: int = 20_000, seed: int = 0) -> float:
    """Distinct destinations per token under Megatron-Core's group_limited_topk (groups of consecutive experts ranked
    by the sum of their best top_k/group_topk sigmoid scores, the top group_topk kept, the top_k experts among them),
    on random logits (the forced-balance benchmarks' routing), experts laid out on `destinations` in order."""
    rng = np.random.default_rng(seed)
    experts, k = moe.num_experts, moe.top_k
    scores = 1.0 / (1.0 + np.exp(-rng.standard_normal((tokens, experts))))
    groups, kept = moe.routing_groups, moe.routing_group_topk
    if groups > 1:
        ranked = np.sort(scores.reshape(tokens, groups, -1), axis=-1)[:, :, -(k // kept):].sum(axis=-1)
        chosen = np.zeros((tokens, groups), dtype=bool)
        np.put_along_axis(chosen, np.argsort(-ranked, axis=1)[:, :kept], True, axis=1)
        scores = np.where(np.repeat(chosen, experts // groups, axis=1), scores, -np.inf)
    top = np.argsort(-scores, axis=1)[:, :k] // (experts // destinations)
    return float(np.mean([len(set(row)) for row in top]))


SPREADS = [(DEEPSEEK_V3, n) for n in (2, 4, 8, 16, 32, 64)] + [(DEEPSEEK_V2, n) for n in (2, 4, 8, 16, 32)]


@pytest.mark.parametrize(("moe", "destinations"), SPREADS, ids=[f"{m.num_experts}e-{n}" for m, n in SPREADS])
def test_the_formula_follows_the_router(moe: MoE, destinations: int) -> None:
    """Within 6% of the simulated router at every spread (the largest gap: 16 destinations, where a kept group
    sometimes takes 3 of the 8 and another 1, which the even k/M split does not see)."""
    simulated = simulated_destinations(moe, destinations)
    assert float(expected_destinations(moe, destinations)) == pytest.approx(simulated, rel=0.06)


def test_deepseek_v3_reaches_four_of_eight_nodes_not_five() -> None:
    """The paper's design point: EP 64 over 8 nodes, one group a node, a token on at most 4 (arXiv 2412.19437 Sec.
    2.1.2); uniform picks would reach 5.25."""
    assert float(expected_destinations(DEEPSEEK_V3, 8)) == pytest.approx(4.0)
    free = replace(DEEPSEEK_V3, routing_groups=1, routing_group_topk=1)
    assert float(expected_destinations(free, 8)) == pytest.approx(8 * (1 - (7 / 8) ** 8))
    assert simulated_destinations(free, 8) == pytest.approx(float(expected_destinations(free, 8)), rel=0.02)
    assert float(expected_destinations(DEEPSEEK_V3, 1)) == 1.0


def test_arrays_and_the_copy_share_agree_with_scalars() -> None:
    from rigplan.domain.model import Architecture

    arch = Architecture(id="t", num_layers=4, hidden=256, num_heads=4, ffn=512, vocab=1000, moe=DEEPSEEK_V3)
    many = deduplicated_copy_share(arch, np.array([1.0, 4.0, 8.0, 64.0]), True)
    one = [float(deduplicated_copy_share(arch, n, True)) for n in (1.0, 4.0, 8.0, 64.0)]
    assert np.allclose(many, one)
    assert float(deduplicated_copy_share(arch, 8.0, False)) == 1.0  # NCCL's all-to-all sends every copy
    assert one[2] == pytest.approx(0.5)


def test_groups_come_from_config_json_and_the_catalog() -> None:
    arch = architecture_from_hf_config(DATA / "hf" / "deepseek-v3" / "config.json")
    assert arch.moe is not None
    assert (arch.moe.routing_groups, arch.moe.routing_group_topk) == (8, 4)
    from rigplan.catalog.load import load_catalog

    def routing(name: str) -> tuple[int, int]:
        moe = load_catalog().model(name).to_domain().moe
        assert moe is not None
        return moe.routing_groups, moe.routing_group_topk

    assert routing("deepseek-v2") == (8, 3)
    assert routing("kimi-k2") == (1, 1)  # n_group 1 in its config.json
    for name in ("deepseek-v3", "deepseek-r1", "deepseek-v3.1", "deepseek-v3.2"):
        assert routing(name) == (8, 4), name


def test_a_router_whose_groups_do_not_fit_is_refused() -> None:
    with pytest.raises(InvalidSpec, match="groups dividing the 256 experts; got 7 groups"):
        replace(DEEPSEEK_V3, routing_groups=7)
    with pytest.raises(InvalidSpec, match="got 8 groups, top-k 9"):
        replace(DEEPSEEK_V3, routing_group_topk=9)


def test_the_estimate_says_what_the_groups_save_and_where_they_save_nothing() -> None:
    from rigplan.flow.estimate import estimate
    from rigplan.flow.request import EstimateRequest

    base = {"model": "deepseek-v3", "gpu": "h100-sxm", "gpus": 512, "tp": 1, "pp": 8, "ep": 64, "etp": 1, "zero": 1,
            "framework": "megatron", "global_batch": 512}
    deepep = estimate(EstimateRequest(**base, moe_dispatcher="deepep"))
    line = next(a for a in deepep.to_dict()["assumptions"] if "group-limited" in a)
    assert "sends a token to 4.0 of the 8 nodes" in line and "against 5.3 without it" in line
    nccl = estimate(EstimateRequest(**base, moe_dispatcher="alltoall"))
    assert any("saves no network traffic" in a for a in nccl.to_dict()["assumptions"])
    # the shape flags switch it off: the same layout's DeepEP all-to-all then carries more
    free = estimate(EstimateRequest(**base, moe_dispatcher="deepep", expert_groups=1, group_top_k=1))
    assert free.setup.arch.moe is not None and free.setup.arch.moe.routing_groups == 1
    ep_s = [r.to_dict()["breakdown"]["comm_by_axis"]["ep"]["total_s"] for r in (deepep, free)]
    assert ep_s[1] > 1.15 * ep_s[0]


def test_no_line_where_the_groups_reach_every_node_anyway() -> None:
    """Top-8 of 128 experts over 2 nodes reaches both with or without groups: nothing to say."""
    from rigplan.flow.estimate import estimate
    from rigplan.flow.request import EstimateRequest

    result = estimate(EstimateRequest(model="qwen3-30b-a3b", gpus=16, ep=16, moe_dispatcher="deepep", expert_groups=8,
                                      group_top_k=4, global_batch=64))
    assert result.setup.arch.moe is not None and result.setup.arch.moe.routing_groups == 8
    assert not any("group-limited" in a for a in result.to_dict()["assumptions"])
