"""Megatron-Core's allgather token dispatcher (Megatron-LM's default --moe-token-dispatcher-type): every token of the
etp·ep ranks gathered, the experts' output reduce-scattered back (estimate.moe_allgather)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.errors import InvalidSpec
from rigplan.estimate import comm
from rigplan.estimate.memory import peak_memory
from rigplan.estimate.moe import expert_all_to_all_s, permute_bytes_per_token
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup

QWEN = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 16, "ep": 16, "etp": 1, "zero": 1,
        "framework": "megatron", "global_batch": 256}


def comm_s(request: dict, dispatcher: str, **changes: object) -> float:
    setup = build_setup(EstimateRequest(**{**request, "moe_dispatcher": dispatcher}))
    job = replace(setup.job, **changes)
    gpu, lay = setup.gpu, setup.layout
    intra, inter = comm.link_tier(gpu.link), comm.nic_tier(gpu)
    group, stride = (lay.ep * lay.expert_tp, 1) if dispatcher == "allgather" else (lay.ep, lay.expert_tp)
    placed = comm.place_group(gpu, group, stride=stride, domain_size=gpu.link.domain_size, intra=intra, inter=inter)
    return float(expert_all_to_all_s(setup.arch, job, tokens=job.seq_len * job.micro_batch, tp=lay.tp, ep=lay.ep,
                                     etp=lay.expert_tp, domain=gpu.link.domain_size, intra=placed.intra, inter=inter,
                                     recomputed_share=0.0))


def test_the_collectives_by_hand() -> None:
    """Qwen3-30B-A3B at EP 16 over two 8-GPU H100 nodes, one 4,096-token sequence a rank: the gathered hidden states
    are 16·4096·2048·2 bytes; each of the four hidden-state collectives (gather and reduce-scatter, forward and
    backward) is a hierarchical all-gather of them, plus the routing map and probabilities (3 bytes an expert)
    forward and the probabilities' gradient (2 bytes) backward."""
    setup = build_setup(EstimateRequest(**QWEN, moe_dispatcher="allgather"))
    gpu = setup.gpu
    intra, inter = comm.link_tier(gpu.link), comm.nic_tier(gpu)

    def gather(size: float) -> float:
        return float(comm.hierarchical_all_gather_s(size, 16, 8, intra, inter))

    n_tokens = 16 * 4096
    expected = 4 * gather(n_tokens * 2048 * 2) + gather(n_tokens * 128 * 3) + gather(n_tokens * 128 * 2)
    assert comm_s(QWEN, "allgather") == pytest.approx(expected, rel=1e-12)


def test_against_the_all_to_all_where_each_wins() -> None:
    """Over two nodes a token crosses to the other node once in the gather, where NCCL's all-to-all sends its 8
    routed copies: the allgather dispatcher moves less. At EP 64 over eight 8-GPU nodes each rank's NIC carries
    7·T·h either way (the gather's inter-node share (N-1)/N of S/8, the all-to-all's 56/64 of 8 copies), so at balanced
    routing the two take about as long, the gather's 64·T·h over NVLink running beside its NIC share; its
    permutation then reads and writes more (3k + 64 rows of h a token against the all-to-all's 7k + 1)."""
    assert comm_s(QWEN, "allgather") < 0.5 * comm_s(QWEN, "alltoall")
    dsv3 = {"model": "deepseek-v3", "gpu": "h100-sxm", "gpus": 512, "pp": 8, "ep": 64, "etp": 1, "zero": 1,
            "framework": "megatron", "global_batch": 512, "balanced_routing": True}
    assert comm_s(dsv3, "allgather") == pytest.approx(comm_s(dsv3, "alltoall"), rel=0.1)
    setup = build_setup(EstimateRequest(**dsv3, moe_dispatcher="allgather"))
    gathered = permute_bytes_per_token(setup.arch, setup.job, 64, 1)
    routed = permute_bytes_per_token(setup.arch, replace(setup.job, moe_dispatcher="alltoall"), 64, 1)
    assert gathered / routed == pytest.approx((3 * 8 + 64) / (7 * 8 + 1))


def test_every_rank_gathers_every_token_so_imbalance_does_not_stretch_it() -> None:
    balanced, skewed = (comm_s(QWEN, "allgather", moe_imbalance=m) for m in (1.0, 2.0))
    assert balanced == skewed
    assert comm_s(QWEN, "alltoall", moe_imbalance=2.0) > comm_s(QWEN, "alltoall", moe_imbalance=1.0)


def test_the_permutation_reads_the_gathered_tokens() -> None:
    setup = build_setup(EstimateRequest(**QWEN, moe_dispatcher="allgather", balanced_routing=True))
    arch, job = setup.arch, setup.job
    alltoall = replace(job, moe_dispatcher="alltoall")
    # one rank: the global permute of either dispatcher, 3k + 1 rows of h a token
    assert permute_bytes_per_token(arch, job, 1, 1) == permute_bytes_per_token(arch, alltoall, 1)
    assert permute_bytes_per_token(arch, job, 16, 1) == (3 * 8 + 16) * 2048 * 2


def test_the_gathered_tokens_are_held_while_a_layer_runs() -> None:
    base = {**QWEN, "micro_batch": 2}
    gathered = peak_memory(*_arch_job_layout(base, "allgather")).transient_bytes
    plain = peak_memory(*_arch_job_layout(base, "alltoall")).transient_bytes
    assert gathered - plain == pytest.approx(2 * 16 * 2 * 4096 * 2048 * 2)


def _arch_job_layout(request: dict, dispatcher: str) -> tuple:
    setup = build_setup(EstimateRequest(**{**request, "moe_dispatcher": dispatcher}))
    return setup.arch, setup.job, setup.layout


def test_the_estimate_says_what_it_gathers_and_refuses_the_all_to_all_overlap() -> None:
    result = estimate(EstimateRequest(**QWEN, moe_dispatcher="allgather"))
    assert any("the allgather dispatcher gathers every token of the 16 expert tensor x expert parallel ranks" in a
               for a in result.to_dict()["assumptions"])
    with pytest.raises(InvalidSpec, match="allgather dispatcher does not run"):
        build_setup(EstimateRequest(**QWEN, moe_dispatcher="allgather", a2a_overlap=True))


def test_its_regime_is_its_own_and_the_accuracy_line_keeps_the_broader_cell() -> None:
    """The suite has no allgather run: the estimate quotes its host, graphs and tokens cell, not the padded or
    single-rank runs of the 'no dropless all-to-all' dispatcher label."""
    from rigplan.flow.regime import ALLGATHER, setup_regime

    request = EstimateRequest(**QWEN, moe_dispatcher="allgather")
    assert setup_regime(build_setup(request))["dispatcher"] == ALLGATHER
    line = next(a for a in estimate(request).to_dict()["assumptions"] if a.startswith("validation:"))
    assert "dispatcher:" not in line
