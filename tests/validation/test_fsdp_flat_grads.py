"""rigplan's --fsdp-flat-params against the gradients FSDP1 really keeps, counted by element on CPU.

benchmarks/fsdp1_flat_grads.py wraps a small Llama-style LoRA model per block with FSDP1 (use_orig_params=True,
as Lightning Fabric sets it for lit-gpt), runs it on 2 gloo processes and reports which flat gradients exist
after a no_sync backward, a synchronised backward, optimizer.step()/zero_grad() and the next forward, and which
units stay gathered after a forward. rigplan's element counts (estimate/framework_buffers.py) must equal them.

Needs torch with torch.distributed; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from scripts import ROOT

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.framework_buffers import (
    fsdp1_block_params,
    fsdp1_gathered_params,
    fsdp_flat_grad_elements,
    fsdp_flat_grad_extra_bytes,
)
from rigplan.estimate.states import model_states

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fsdp1_flat_grads.py"), "--json"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _arch(shape: dict[str, int]) -> Architecture:
    return Architecture(id="fsdp-probe", num_layers=shape["layers"], hidden=shape["hidden"], num_heads=shape["heads"],
                        ffn=shape["ffn"], vocab=shape["vocab"], mlp="gated", norm="rmsnorm")


def _job(shape: dict[str, int], global_batch: int) -> Job:
    return Job(method="lora", precision="bf16-true", lora_rank=shape["rank"], lora_targets=("q", "v"),
               fsdp_flat_params=True, global_batch=global_batch, fsdp_prefetch=0)


def _rows(report: dict[str, Any], phase: str, unit: str) -> list[dict[str, Any]]:
    return [row for row in report[phase] if row["unit"] == unit]


def test_no_sync_keeps_every_block_unsharded_frozen_elements_included(measured: dict[str, Any]) -> None:
    shape, world = measured["shape"], measured["world"]
    arch, layout = _arch(shape), Layout(dp=world, zero=3)
    job = _job(shape, global_batch=4 * world)
    blocks = _rows(measured, "no_sync_backward", "block")
    assert all(row["grad_elements"] == row["unsharded_elements"] for row in blocks)
    assert all(row["frozen_with_grad"] == row["frozen_params"] > 0 for row in blocks)
    assert [row["grad_elements"] for row in _rows(measured, "no_sync_backward", "root")] == [None]
    states = model_states(arch, job, layout, 0)
    assert fsdp_flat_grad_elements(arch, job, layout, 0, states) == sum(row["grad_elements"] for row in blocks)
    assert fsdp1_block_params(arch, job, layout) == blocks[0]["unsharded_elements"]
    held = fsdp_flat_grad_extra_bytes(arch, job, layout, 0, states) + states.gradients_bytes
    assert held == pytest.approx(2 * sum(row["grad_elements"] for row in blocks))


def test_synchronised_backward_keeps_one_shard_until_the_next_forward(measured: dict[str, Any]) -> None:
    shape, world = measured["shape"], measured["world"]
    arch, layout = _arch(shape), Layout(dp=world, zero=3)
    job = _job(shape, global_batch=0)
    for phase in ("sync_backward", "after_step_zero_grad"):
        blocks = _rows(measured, phase, "block")
        assert all(row["grad_elements"] == row["sharded_elements"] == row["unsharded_elements"] // world
                   for row in blocks)
        states = model_states(arch, job, layout, 0)
        held = fsdp_flat_grad_extra_bytes(arch, job, layout, 0, states) + states.gradients_bytes
        assert held == pytest.approx(2 * sum(row["grad_elements"] for row in blocks))
    assert all(row["grad_elements"] is None for row in measured["after_next_forward"])


def test_the_root_unit_stays_gathered_after_forward(measured: dict[str, Any]) -> None:
    shape, world = measured["shape"], measured["world"]
    arch, layout = _arch(shape), Layout(dp=world, zero=3)
    gathered = {row["unit"]: row["unsharded_storage_elements"] for row in measured["after_forward_gathered"]}
    root = next(row["unsharded_elements"] for row in measured["sync_backward"] if row["unit"] == "root")
    assert gathered["root"] == root and gathered["block"] == 0
    # prefetch 0: the root unit plus the one block computing
    job = _job(shape, 0)
    assert fsdp1_gathered_params(arch, job, layout, 0) == root + fsdp1_block_params(arch, job, layout)


def test_the_switch_changes_nothing_without_zero3() -> None:
    arch = _arch({"layers": 2, "hidden": 16, "heads": 2, "ffn": 40, "vocab": 64})
    job = _job({"rank": 2}, global_batch=8)
    layout = Layout(dp=2, zero=2)
    assert fsdp_flat_grad_extra_bytes(arch, job, layout, 0, model_states(arch, job, layout, 0)) == 0.0
