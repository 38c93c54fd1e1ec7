"""Megatron-Core's static-shape MoE (Job.moe_rank_capacity_factor): fixed HybridEP receive buffers, one grouped GEMM a
linear, no host sync a layer; what it changes in the host model, the checks on the switch, and where it is written."""

from __future__ import annotations

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.errors import InvalidSpec
from rigplan.estimate import moe, moe_host
from rigplan.export.megatron import megatron_args
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup

QWEN35 = dict(model="qwen3.5-35b-a3b", gpu="h100-sxm", gpus=16, seq=4096, micro_batch=1, global_batch=1024,
              balanced_routing=True, moe_dispatcher="hybridep", framework="megatron")


def test_static_shapes_drop_the_host_sync_and_issue_one_grouped_gemm_a_linear() -> None:
    arch = load_catalog().model("qwen3.5-35b-a3b").to_domain()
    dynamic = Job(moe_dispatcher="hybridep")
    static = Job(moe_dispatcher="hybridep", moe_rank_capacity_factor=1.05)
    assert moe.host_syncs(dynamic) and not moe.host_syncs(static)
    # 256 experts: 32 local at ep 8, 16 at ep 16; the static path's ops do not follow them.
    for phase in ("forward", "backward"):
        per_linear = 2.0 * moe_host.EXPERT_HOST_OPS[phase]
        assert float(moe_host.expert_host_ops(arch, static, 8.0, phase)) == per_linear
        assert float(moe_host.expert_host_ops(arch, static, 16.0, phase)) == per_linear
        assert float(moe_host.expert_host_ops(arch, dynamic, 8.0, phase)) == per_linear * 32


def test_a_host_paced_layout_is_paced_by_the_gpu_once_its_shapes_are_static() -> None:
    dynamic = speed.estimate(EstimateRequest(**QWEN35, ep=8)).to_dict()
    static = speed.estimate(EstimateRequest(**QWEN35, ep=8, moe_rank_capacity_factor=1.05)).to_dict()
    # 32 local experts a rank issue their GEMMs one by one on the dynamic path: the host paces the step.
    assert dynamic["breakdown"]["host_s"] > 0.3 * dynamic["step_time_s"]
    assert static["breakdown"]["host_s"] < 0.01 * static["step_time_s"]
    assert static["breakdown"]["compute_s"] == pytest.approx(dynamic["breakdown"]["compute_s"], rel=1e-6)
    assert static["memory"]["job"]["moe_rank_capacity_factor"] == 1.05
    notes = [a for a in static["assumptions"] if a.startswith("static-shape MoE")]
    assert len(notes) == 1 and "torch.grouped_mm" in notes[0]  # an H100: Hopper's note
    on_gb200 = speed.estimate(EstimateRequest(**{**QWEN35, "gpu": "gb200"}, ep=8, moe_rank_capacity_factor=1.05))
    assert not [a for a in on_gb200.setup.assumptions if "torch.grouped_mm" in a]


@pytest.mark.parametrize("changes", [dict(moe_dispatcher="deepep"), dict(moe_dispatcher=None)])
def test_the_switch_needs_hybridep(changes: dict[str, object]) -> None:
    with pytest.raises(InvalidSpec, match="add --moe-dispatcher hybridep"):
        speed.estimate(EstimateRequest(**{**QWEN35, "ep": 8, "moe_rank_capacity_factor": 1.5, **changes}))


@pytest.mark.parametrize("factor", [0.9, float("nan"), float("inf")])
def test_the_factor_is_a_finite_number_of_at_least_one(factor: float) -> None:
    from click.testing import CliRunner

    from rigplan.cli.main import cli

    result = CliRunner().invoke(cli, ["estimate", "qwen3-30b-a3b", "--gpus", "8", "--moe-dispatcher", "hybridep",
                                      "--moe-rank-capacity-factor", str(factor)])
    assert result.exit_code == 2 and "--moe-rank-capacity-factor must be" in result.output
    with pytest.raises(InvalidSpec, match="must be >= 1"):
        Job(moe_dispatcher="hybridep", moe_rank_capacity_factor=0.9)


def test_megatron_export_writes_the_sync_free_flags() -> None:
    setup = build_setup(EstimateRequest(**QWEN35, ep=8, moe_rank_capacity_factor=1.5))
    args = megatron_args(setup)
    assert args["moe_expert_rank_capacity_factor"] == 1.5 and args["use_transformer_engine_op_fuser"] is True
    assert args["moe_flex_dispatcher_backend"] == "hybridep"
    assert "moe_expert_rank_capacity_factor" not in megatron_args(build_setup(EstimateRequest(**QWEN35, ep=8)))


def test_plan_keeps_the_switch_and_its_reproduce_line_carries_it() -> None:
    import json

    from click.testing import CliRunner

    from rigplan.cli.main import cli

    args = ["plan", "qwen3.5-35b-a3b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "16",
            "--moe-dispatcher", "hybridep", "--moe-rank-capacity-factor", "1.05", "--json"]
    first = json.loads(CliRunner().invoke(cli, args).output)["ranked"][0]
    assert "--moe-dispatcher hybridep --moe-rank-capacity-factor 1.05" in first["estimate_command"]
