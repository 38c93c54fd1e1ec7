"""DeepEP's NVLink and RDMA buffers (estimate/ep_buffers.py): DeepEP's own size hints, counted once per GPU with the
NCCL buffers, only where DeepEP dispatches."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.estimate.ep_buffers import deepep_buffer_bytes
from rigplan.flow.memory import memory
from rigplan.flow.request import MemoryRequest

SLOT_EXTRA = 8 + 128 * 8 + 128 * 4 + 128 * 4  # source meta, top-k indices, weights, scales


def arch(model: str):  # type: ignore[no-untyped-def]
    return load_catalog().model(model).to_domain()


def test_deepseek_v3_at_ep64_crosses_nodes_so_it_also_holds_rdma_buffers() -> None:
    h2 = 2 * 7168
    nvl = 10 * 8 * ((2 * 8 + 3) * 4 + 288 * (h2 + SLOT_EXTRA))
    rdma = 10 * 8 * (18 * 2 * 4 + 2 * 128 * (h2 + SLOT_EXTRA + 16)) + 2**20
    got = deepep_buffer_bytes(arch("deepseek-v3"), Job(moe_dispatcher="deepep"), SimpleNamespace(ep=64, etp=1, tp=1))
    assert got == pytest.approx(nvl + rdma)
    assert 0.7e9 < got < 0.72e9


def test_qwen3_30b_at_ep8_stays_on_nvlink() -> None:
    h2 = 2 * 2048
    got = deepep_buffer_bytes(arch("qwen3-30b-a3b"), Job(moe_dispatcher="deepep"), SimpleNamespace(ep=8, etp=1, tp=1))
    assert got == pytest.approx(10 * 8 * ((2 + 3) * 4 + 256 * (h2 + SLOT_EXTRA)))


def test_nothing_without_deepep_or_expert_parallelism_and_arrays_follow_the_layouts() -> None:
    moe, layout = arch("qwen3-30b-a3b"), SimpleNamespace(ep=8, etp=1, tp=1)
    assert deepep_buffer_bytes(moe, Job(moe_dispatcher="alltoall"), layout) == 0.0
    assert deepep_buffer_bytes(arch("llama-3.1-8b"), Job(moe_dispatcher="deepep"), layout) == 0.0
    many = deepep_buffer_bytes(moe, Job(moe_dispatcher="deepep"), SimpleNamespace(ep=np.array([1, 8, 16]),
                                                                                  etp=np.array([1, 1, 1]), tp=1))
    assert many[0] == 0.0 and many[1] == pytest.approx(
        deepep_buffer_bytes(moe, Job(moe_dispatcher="deepep"), layout)) and many[2] > many[1]


def test_the_memory_breakdown_counts_them_with_the_nccl_buffers() -> None:
    base = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 16, "ep": 8, "zero": 1, "framework": "megatron"}
    deepep = memory(MemoryRequest(**base, moe_dispatcher="deepep")).breakdown
    alltoall = memory(MemoryRequest(**base, moe_dispatcher="alltoall")).breakdown
    expected = deepep_buffer_bytes(arch("qwen3-30b-a3b"), Job(moe_dispatcher="deepep"),
                                   SimpleNamespace(ep=8, etp=1, tp=1))
    assert float(deepep.nccl_bytes - alltoall.nccl_bytes) == pytest.approx(expected)
