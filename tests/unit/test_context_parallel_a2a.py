"""All-to-all context parallelism (DeepSpeed-Ulysses, Transformer Engine cp_comm_type 'a2a')."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.errors import InvalidSpec
from rigplan.estimate import comm
from rigplan.estimate.comm import Tier
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import SINKS_CP_ALL_TO_ALL
from rigplan.search.space import layout_space

IDEAL = Tier(name="ideal", bandwidth_bytes_per_s=100e9, latency_s=0.0, efficiency=1.0)


def test_ulysses_moves_q_k_v_and_the_output_each_way() -> None:
    tokens, q_w, kv_w, cp = 4096.0, 4096.0, 1024.0, 4.0
    seconds = comm.ulysses_all_to_all_s(tokens=tokens, qkv_width=q_w + 2 * kv_w, out_width=q_w, tp=1.0, cp=cp,
                                        dtype_bytes=2.0, per_node=8.0, intra=IDEAL, inter=IDEAL)
    # forward: (cp-1)/cp of q, k, v and of the output leaves each rank; backward the same for the gradients
    sent = (cp - 1) / cp * tokens * (q_w + 2 * kv_w + q_w) * 2.0
    assert seconds == pytest.approx(2.0 * sent / 100e9)
    assert comm.ulysses_all_to_all_s(tokens=tokens, qkv_width=q_w + 2 * kv_w, out_width=q_w, tp=1.0, cp=1.0,
                                     dtype_bytes=2.0, per_node=8.0, intra=IDEAL, inter=IDEAL) == 0.0


def _llama(**extra: object) -> dict:
    return estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=16, cp=2, seq=8192,
                                    global_batch=64, **extra)).to_dict(False)


def test_all_to_all_is_exposed_and_the_ring_hides_behind_attention() -> None:
    ring = _llama()["breakdown"]["comm_by_axis"]["cp"]
    a2a = _llama(cp_comm_type="a2a")["breakdown"]["comm_by_axis"]["cp"]
    assert ring["hidden_s"] > 0.0
    assert a2a["hidden_s"] == 0.0 and a2a["exposed_s"] == pytest.approx(a2a["total_s"]) and a2a["total_s"] > 0.0
    assert any("cp all-to-all, exposed" in a for a in _llama(cp_comm_type="a2a")["assumptions"])


def test_models_with_attention_sinks_default_to_all_to_all() -> None:
    base = dict(model="gpt-oss-20b", gpu="h100-sxm", gpus=16, seq=8192, global_batch=64)
    with_cp = estimate(EstimateRequest(**base, cp=2))
    assert with_cp.setup.job.cp_comm_type == "a2a" and SINKS_CP_ALL_TO_ALL in with_cp.setup.assumptions
    assert estimate(EstimateRequest(**base, cp=2, cp_comm_type="p2p")).setup.job.cp_comm_type == "p2p"
    assert SINKS_CP_ALL_TO_ALL not in estimate(EstimateRequest(**base)).setup.assumptions
    plain = estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=16, cp=2, seq=8192))
    assert plain.setup.job.cp_comm_type == "p2p"


def test_all_to_all_needs_heads_divisible_by_cp() -> None:
    with pytest.raises(InvalidSpec, match="kv-heads \\(8\\) must be divisible by cp=16"):
        estimate(EstimateRequest(model="gpt-oss-20b", gpu="h100-sxm", gpus=16, cp=16, seq=8192))
    result = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "16", "--cp", "16",
                                      "--seq", "16384", "--cp-comm-type", "a2a"])
    assert result.exit_code == 2 and "use --cp-comm-type p2p" in result.output
    assert "Traceback" not in result.output


def test_plan_space_drops_cp_that_cannot_split_the_heads() -> None:
    arch = load_catalog().model("gpt-oss-20b").to_domain()
    ring = layout_space(arch, 8, 64, 16384, sequence_parallel=True)
    a2a = layout_space(arch, 8, 64, 16384, sequence_parallel=True, heads_split_by_cp=True)
    assert len(a2a) < len(ring)
    for tp, cp in zip(a2a.tp, a2a.cp, strict=True):
        assert (arch.num_heads // tp) % cp == 0 and (arch.kv_heads // tp) % cp == 0
    assert {int(c) for c in a2a.cp} > {1}
