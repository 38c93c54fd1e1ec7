"""--moe-dispatcher hybridep: Megatron-Core's flex dispatcher with NVIDIA's HybridEP backend, timed as DeepEP (one copy
per destination rank, one crossing per destination node), without DeepEP's buffers, padding to capacity allowed,
exported as Megatron's backend flag."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.errors import InvalidSpec
from rigplan.export import export
from rigplan.flow import estimate as speed
from rigplan.flow.estimate import BRIDGE_NO_DEEPEP_NOTE
from rigplan.flow.memory import memory
from rigplan.flow.request import EstimateRequest, MemoryRequest
from rigplan.flow.resolve import build_setup

BASE = {"model": "qwen3-235b-a22b", "gpu": "gb200", "gpus": 256, "pp": 8, "ep": 32, "global_batch": 1024,
        "precision": "bf16-mixed", "framework": "nemo", "balanced_routing": True}


def test_timed_as_deepep_and_named_in_the_routing_note() -> None:
    deepep = speed.estimate(EstimateRequest(**BASE, moe_dispatcher="deepep"))
    hybridep = speed.estimate(EstimateRequest(**BASE, moe_dispatcher="hybridep"))
    alltoall = speed.estimate(EstimateRequest(**BASE, moe_dispatcher="alltoall"))
    assert hybridep.step.step_time_s == pytest.approx(deepep.step.step_time_s)
    assert hybridep.step.ep_comm_s < alltoall.step.ep_comm_s
    assert any("HybridEP dispatcher" in a for a in hybridep.setup.assumptions)
    assert BRIDGE_NO_DEEPEP_NOTE in deepep.setup.assumptions
    assert BRIDGE_NO_DEEPEP_NOTE not in hybridep.setup.assumptions


def test_holds_no_deepep_buffers() -> None:
    request = {k: v for k, v in BASE.items() if k != "global_batch"}
    nccl = {d: float(memory(MemoryRequest(**request, moe_dispatcher=d)).breakdown.nccl_bytes)
            for d in ("alltoall", "deepep", "hybridep")}
    assert nccl["hybridep"] == pytest.approx(nccl["alltoall"])
    assert nccl["hybridep"] < nccl["deepep"]


def test_pads_to_capacity_where_deepep_cannot() -> None:
    padded = {"capacity_factor": 1.0, "moe_pad_to_capacity": True}
    build_setup(EstimateRequest(**BASE, moe_dispatcher="hybridep", **padded))
    with pytest.raises(InvalidSpec, match="use --moe-dispatcher alltoall or hybridep"):
        build_setup(EstimateRequest(**BASE, moe_dispatcher="deepep", **padded))


def test_megatron_export_names_the_backend_and_the_cli_takes_it() -> None:
    out = export(build_setup(EstimateRequest(**{**BASE, "framework": "megatron"}, moe_dispatcher="hybridep")),
                 "megatron")
    assert (out.values["moe_token_dispatcher_type"], out.values["moe_flex_dispatcher_backend"]) == ("flex", "hybridep")
    result = CliRunner().invoke(cli, ["estimate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "16", "--ep", "8",
                                      "--moe-dispatcher", "hybridep", "--json"])
    assert result.exit_code == 0, result.output
