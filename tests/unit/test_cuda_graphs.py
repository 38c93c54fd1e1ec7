"""--cuda-graphs full: a full-iteration CUDA graph takes the host off the critical path of dropless MoE."""

from __future__ import annotations

import pytest

from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest


def _qwen3_30b_gb200(**extra: object) -> EstimateRequest:
    # At Grace's 37 us an op (estimate.moe_host.HOST_OP_S) one sequence a micro-batch on eight GB200 is
    # host-paced without graphs.
    return EstimateRequest(model="qwen3-30b-a3b", gpu="gb200", gpus=8, ep=8, precision="fp8", fp8_recipe="mxfp8",
                           micro_batch=1, global_batch=512, zero=1, framework="megatron", balanced_routing=True,
                           recompute="none", **extra)


def test_a_full_iteration_graph_removes_the_host_pacing_and_nothing_else() -> None:
    """The graph replaces the micro-batches' host work; the training loop around it (optimizer, logging, host
    synchronisations: Job.step_overhead_s) still runs once a step."""
    eager = speed.estimate(_qwen3_30b_gb200())
    graphed = speed.estimate(_qwen3_30b_gb200(cuda_graphs="full"))
    loop_s = graphed.setup.job.step_overhead_s
    assert eager.setup.job.step_overhead_s == loop_s
    assert eager.step.host_s > 1.0
    assert graphed.step.host_s == pytest.approx(loop_s)
    assert graphed.step.compute_s == pytest.approx(eager.step.compute_s)
    assert graphed.step.step_time_s == pytest.approx(eager.step.step_time_s - eager.step.host_s + loop_s, rel=1e-6)
    assert any("full-iteration CUDA graph" in a for a in graphed.to_dict()["assumptions"])


def test_dense_models_have_no_host_pacing_to_remove() -> None:
    request = EstimateRequest(model="llama-3.1-8b", gpu="gb200", gpus=8, micro_batch=1, global_batch=64)
    eager = speed.estimate(request)
    graphed = speed.estimate(request.model_copy(update={"cuda_graphs": "full"}))
    assert eager.step.step_time_s == pytest.approx(graphed.step.step_time_s)


def test_per_module_graphs_save_the_host_ops_they_capture(qwen3_moe) -> None:  # type: ignore[no-untyped-def]
    from rigplan.domain.job import Job
    from rigplan.estimate import moe_host

    eager_f, eager_b = moe_host.host_ops_per_moe_layer(qwen3_moe, Job(), 8.0, 14.0)
    job = Job(cuda_graph_scope=("attn", "moe_router", "moe_preprocess"))
    graphed_f, graphed_b = moe_host.host_ops_per_moe_layer(qwen3_moe, job, 8.0, 14.0)
    # attention block 6 ops, router 6, preprocess 9: each becomes one launch
    assert float(eager_f - graphed_f) == pytest.approx(5.0 + 5.0 + 8.0)
    assert float(eager_b - graphed_b) == pytest.approx(18.0)
    assert moe_host.graph_captured_ops(qwen3_moe, job, scopes=("attn",)) == 5.0


def test_scoped_graphs_shorten_the_host_paced_step_but_keep_the_sync() -> None:
    eager = speed.estimate(_qwen3_30b_gb200())
    scoped = speed.estimate(_qwen3_30b_gb200(cuda_graph_scope="attn,moe_router,moe_preprocess"))
    assert 0.0 < scoped.step.host_s < eager.step.host_s


def test_an_unknown_scope_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="moe_preprocess"):
        _qwen3_30b_gb200(cuda_graph_scope="attn,mlp")


def test_a_host_paced_estimate_says_so_and_names_the_graph_switches() -> None:
    eager = speed.estimate(_qwen3_30b_gb200()).to_dict()["assumptions"]
    graphed = speed.estimate(_qwen3_30b_gb200(cuda_graphs="full")).to_dict()["assumptions"]
    note = next(a for a in eager if a.startswith("host-paced"))
    assert "--cuda-graphs full" in note and "%" in note
    assert not any(a.startswith("host-paced") for a in graphed)


def test_scopes_under_a_full_graph_are_reported_as_ignored() -> None:
    both = speed.estimate(_qwen3_30b_gb200(cuda_graphs="full", cuda_graph_scope="attn"))
    full = speed.estimate(_qwen3_30b_gb200(cuda_graphs="full"))
    assert both.step.step_time_s == pytest.approx(full.step.step_time_s)
    assert any("--cuda-graph-scope is ignored" in a for a in both.to_dict()["assumptions"])


def test_gpt_oss_host_note_names_the_glu_offset_sync() -> None:
    from rigplan.flow.request import EstimateRequest

    base = {"model": "gpt-oss-20b", "gpu": "h100-sxm", "gpus": 8, "ep": 8, "micro_batch": 1, "seq": 2048,
            "global_batch": 128, "framework": "megatron", "moe_dispatcher": "alltoall"}
    gpt_oss = speed.estimate(EstimateRequest(**base)).to_dict()["assumptions"]
    note = next(a for a in gpt_oss if a.startswith("host-paced"))
    assert "clamped GLU's offset copy once more after fc1" in note
    qwen = speed.estimate(_qwen3_30b_gb200()).to_dict()["assumptions"]
    assert not any("clamped GLU" in a for a in qwen if a.startswith("host-paced"))
