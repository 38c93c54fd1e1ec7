"""torchtitan's per-op checkpointing saves matmul and attention outputs only: element-wise ops run again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.step import step_time


def _step(job: Job) -> float:
    catalog = load_catalog()
    arch, gpu = catalog.model("llama-3.1-8b").to_domain(), catalog.gpu("h100-sxm").to_domain()
    return float(step_time(arch, job, Layout(dp=8, zero=3), gpu, global_batch=16).step_time_s)


def test_op_checkpointing_adds_one_forward_pass_of_elementwise_traffic() -> None:
    # eager and compiled runs differ only in element-wise traffic and kernel launches, which both scale with
    # the passes over a layer: 3 (forward, two backward) without recompute, 4 when 'op' recomputes them.
    base = Job(seq_len=8192, micro_batch=2, kernels="eager")
    gap_none = _step(base) - _step(replace(base, compile=True))
    op = replace(base, recompute="op")
    gap_op = _step(op) - _step(replace(op, compile=True))
    assert gap_none > 0
    assert gap_op == pytest.approx(gap_none * 4.0 / 3.0, rel=1e-6)

