"""Load and setup peaks next to the training step: full-checkpoint loads, quantize-at-load, QLoRA defaults."""

from __future__ import annotations

import pytest

from rigplan.api import memory
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.allocator import reserved_overhead_bytes
from rigplan.estimate.memory import peak_memory
from rigplan.estimate.setup_peaks import (
    NF4_WORKSPACE_BYTES_PER_ELEMENT,
    dequantized_copy_bytes,
    quantized_linear_sizes,
)
from rigplan.estimate.states import model_states
from rigplan.flow.request import MemoryRequest

TINY = Architecture(id="tiny", num_layers=4, hidden=256, num_heads=4, ffn=1024, vocab=1000)


def test_sharded_load_never_exceeds_the_step() -> None:
    for zero in (0, 1, 2, 3):
        b = peak_memory(TINY, Job(seq_len=128), Layout(dp=4, zero=zero))  # type: ignore[arg-type]
        assert b.load_bytes <= b.step_allocated_bytes
        assert b.peak_phase != "load"


def test_full_load_materialises_the_checkpoint_next_to_the_shard() -> None:
    """FSDP full-state-dict load: sharded weights + every local parameter in the compute dtype."""
    job = Job(seq_len=128, checkpoint_load="full")
    layout = Layout(dp=4, zero=3)
    states = model_states(TINY, job, layout, 0)
    b = peak_memory(TINY, job, layout)
    assert b.load_bytes == pytest.approx(states.weights_bytes + states.local_params * 2)
    churn = b.load_bytes - states.weights_bytes
    assert b.load_reserved_bytes == pytest.approx(b.load_bytes + reserved_overhead_bytes(job, churn, load=True))
    assert b.reserved_bytes == pytest.approx(max(b.load_reserved_bytes, b.step_reserved_bytes))


def test_full_load_does_not_matter_without_sharding() -> None:
    sharded = peak_memory(TINY, Job(seq_len=128), Layout(dp=2))
    full = peak_memory(TINY, Job(seq_len=128, checkpoint_load="full"), Layout(dp=2))
    assert full.total_bytes == pytest.approx(sharded.total_bytes)


def test_full_load_is_the_peak_of_a_sharded_lora_run() -> None:
    """lit-gpt 2023 FSDP LoRA: the bf16 checkpoint on each rank is larger than the sharded step."""
    result = memory(MemoryRequest(model="llama-2-7b", method="lora", gpus=2, zero=3, seq=512,
                                  gpu="a100-40gb-sxm", checkpoint_load="full"))
    data = result.to_dict()["per_gpu"]
    assert data["peak_phase"] == "load"
    assert data["load_peak_bytes"] > data["step_allocated_bytes"]
    assert data["allocated_bytes"] == data["load_peak_bytes"]


def test_torchao_unchunked_quantizer_workspace_is_68_bytes_per_element() -> None:
    job = Job(method="qlora", precision="bf16-true", seq_len=128, recompute="full", nf4_quantizer="torchao-unchunked")
    b = peak_memory(TINY, job, Layout())
    largest, attention = quantized_linear_sizes(TINY, 1)
    assert largest == 256 * 1024 and attention == 256 * 256
    weights = model_states(TINY, job, Layout(), 0).weights_bytes
    assert b.load_bytes == pytest.approx(weights + 68 * largest)
    overhead = reserved_overhead_bytes(job, 68 * largest, load=True)
    assert b.load_reserved_bytes == pytest.approx(b.load_bytes + overhead + 68 * attention)
    assert NF4_WORKSPACE_BYTES_PER_ELEMENT["bitsandbytes"] < NF4_WORKSPACE_BYTES_PER_ELEMENT["torchao-unchunked"]


def test_qlora_working_set_holds_the_dequantized_linear() -> None:
    qlora = Job(method="qlora", precision="bf16-true", seq_len=128, recompute="full")
    assert dequantized_copy_bytes(TINY, qlora, Layout()) == 2 * 256 * 1024
    assert dequantized_copy_bytes(TINY, qlora, Layout(tp=2)) == 256 * 1024
    assert dequantized_copy_bytes(TINY, Job(method="lora", precision="bf16-true"), Layout()) == 0.0


def test_qlora_defaults_to_full_recompute_and_says_so() -> None:
    result = memory(MemoryRequest(model="llama-3.1-8b", method="qlora", gpu="rtx-4090", seq=2048))
    assert result.setup.job.recompute == "full"
    assert any("QLoRA recipes turn gradient checkpointing on" in a for a in result.setup.assumptions)
    explicit = memory(MemoryRequest(model="llama-3.1-8b", method="qlora", gpu="rtx-4090", seq=2048, recompute="none"))
    assert explicit.setup.job.recompute == "none"
    assert memory(MemoryRequest(model="llama-3.1-8b", method="lora", seq=2048)).setup.job.recompute == "none"
