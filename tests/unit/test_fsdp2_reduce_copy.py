"""FSDP2 reducing in fp32 (MixedPrecisionPolicy reduce_dtype float32) copies one unit's bf16 gradient into an fp32
reduce-scatter input before freeing it: 4 more bytes a parameter of the unit at the end of backward."""

from __future__ import annotations

import pytest

from rigplan.flow.memory import memory
from rigplan.flow.request import MemoryRequest

BASE = {"model": "gpt-oss-120b", "gpu": "gb300", "gpus": 64, "seq": 8192, "micro_batch": 1, "zero": 3,
        "framework": "torchtitan", "recompute": "full", "loss": "head-chunked"}


def test_the_fp32_reduce_scatter_input_sits_beside_the_bf16_gradient() -> None:
    fp32 = memory(MemoryRequest(**BASE, grad_reduce_dtype="fp32")).breakdown
    bf16 = memory(MemoryRequest(**BASE, grad_reduce_dtype="bf16")).breakdown
    assert fp32.phase == bf16.phase == "end of backward"
    # one decoder block of gpt-oss-120b (every expert: about 3.2B parameters) in fp32
    extra = fp32.transient_bytes - bf16.transient_bytes
    assert 3.0e9 * 4 < extra < 3.4e9 * 4
    # Lambda's stock baseline on 64 GB300 (gb300/README_120B.md @ 5d5a159a): 68.33 GiB reserved
    assert fp32.reserved_bytes / 2**30 == pytest.approx(68.33, rel=0.15)


def test_fp32_main_gradients_need_no_copy() -> None:
    # gradients already kept in fp32 (Megatron's main_grads) are reduced in place: no copy either way
    request = {**BASE, "main_grads_fp32": True}
    fp32 = memory(MemoryRequest(**request, grad_reduce_dtype="fp32")).breakdown
    bf16 = memory(MemoryRequest(**request, grad_reduce_dtype="bf16")).breakdown
    assert fp32.transient_bytes == pytest.approx(bf16.transient_bytes)
