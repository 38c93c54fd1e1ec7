"""Invariants of the memory model over random shapes and layouts (hypothesis)."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture, MoE
from rigplan.estimate.memory import peak_memory, stage_activation_bytes


@st.composite
def architectures(draw: st.DrawFn) -> Architecture:
    heads = draw(st.sampled_from([8, 16, 32, 64]))
    kv = draw(st.sampled_from([h for h in (1, 2, 4, 8, heads) if heads % h == 0]))
    head_dim = draw(st.sampled_from([64, 128]))
    layers = draw(st.sampled_from([8, 16, 24, 32]))
    moe = None
    if draw(st.booleans()):
        experts = draw(st.sampled_from([8, 16, 64]))
        top_k = draw(st.sampled_from([1, 2, 4]))
        moe = MoE(num_experts=experts, top_k=top_k, expert_ffn=draw(st.sampled_from([512, 2048])))
    return Architecture(id="p", num_layers=layers, hidden=heads * head_dim, num_heads=heads, num_kv_heads=kv,
                        ffn=draw(st.sampled_from([1024, 4096, 11008])), vocab=draw(st.sampled_from([32000, 128256])),
                        mlp=draw(st.sampled_from(["gated", "plain"])), moe=moe)


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    return Job(
        method=draw(st.sampled_from(["full", "lora", "qlora"])),
        precision=draw(st.sampled_from(["bf16-mixed", "bf16-true", "fp32", "fp8"])),
        optimizer=draw(st.sampled_from(["adamw", "adamw-8bit", "sgd-momentum"])),
        seq_len=draw(st.sampled_from([512, 1024, 4096])),
        micro_batch=draw(st.integers(1, 8)),
        recompute=draw(st.sampled_from(["none", "selective", "op", "full"])),
        attention=draw(st.sampled_from(["flash", "eager"])),
    )


def total(arch: Architecture, job: Job, layout: Layout) -> float:
    return peak_memory(arch, job, layout).total_bytes


@settings(max_examples=60, deadline=None)
@given(arch=architectures(), job=jobs(), dp=st.sampled_from([2, 4, 8]))
def test_memory_never_grows_with_zero_stage(arch: Architecture, job: Job, dp: int) -> None:
    values = [total(arch, job, Layout(dp=dp, zero=z)) for z in (0, 1, 2, 3)]  # type: ignore[arg-type]
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(values))


@settings(max_examples=60, deadline=None)
@given(arch=architectures(), job=jobs())
def test_memory_never_grows_with_tp(arch: Architecture, job: Job) -> None:
    degrees = [t for t in (1, 2, 4, 8) if arch.num_heads % t == 0 and arch.kv_heads % t == 0]
    values = [total(arch, job, Layout(tp=t, sequence_parallel=t > 1)) for t in degrees]
    # A new NCCL communicator appears when tp first exceeds 1 and when it first exceeds 2; compare the
    # job's own bytes (allocated), which is what tensor parallelism divides.
    allocated = [peak_memory(arch, job, Layout(tp=t, sequence_parallel=t > 1)).allocated_bytes for t in degrees]
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(allocated))
    assert values[-1] <= values[0] + 2e9


@settings(max_examples=60, deadline=None)
@given(arch=architectures(), job=jobs())
def test_memory_never_grows_with_pp(arch: Architecture, job: Job) -> None:
    degrees = [p for p in (1, 2, 4, 8) if arch.num_layers % p == 0]
    allocated = [peak_memory(arch, job, Layout(pp=p)).allocated_bytes for p in degrees]
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(allocated))


@settings(max_examples=60, deadline=None)
@given(arch=architectures(), job=jobs())
def test_memory_never_grows_with_cp(arch: Architecture, job: Job) -> None:
    allocated = [peak_memory(arch, job, Layout(cp=c)).allocated_bytes for c in (1, 2, 4, 8)]
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(allocated))


@settings(max_examples=60, deadline=None)
@given(arch=architectures(), job=jobs(), factor=st.sampled_from([2, 4]))
def test_activations_grow_with_sequence_and_micro_batch(arch: Architecture, job: Job, factor: int) -> None:
    base = peak_memory(arch, job, Layout())
    longer_job = replace(job, seq_len=job.seq_len * factor)
    bigger_job = replace(job, micro_batch=job.micro_batch * factor)
    longer = peak_memory(arch, longer_job, Layout())
    bigger = peak_memory(arch, bigger_job, Layout())
    saved = stage_activation_bytes(arch, job, Layout(), 0)[0]
    assert stage_activation_bytes(arch, longer_job, Layout(), 0)[0] > saved
    assert stage_activation_bytes(arch, bigger_job, Layout(), 0)[0] > saved
    assert longer.total_bytes >= base.total_bytes and bigger.total_bytes >= base.total_bytes


@settings(max_examples=60, deadline=None)
@given(arch=architectures(), job=jobs(), tp=st.sampled_from([1, 2]), pp=st.sampled_from([1, 2, 4]))
def test_total_equals_sum_of_parts(arch: Architecture, job: Job, tp: int, pp: int) -> None:
    if arch.num_heads % tp or arch.kv_heads % tp or arch.num_layers % pp:
        return
    m = peak_memory(arch, job, Layout(tp=tp, pp=pp, dp=2, zero=1))
    parts = (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes + m.logits_bytes
             + m.transient_bytes + m.cuda_context_bytes + m.nccl_bytes + m.unreleasable_bytes)
    assert abs(m.total_bytes - parts) <= 1e-6 * parts
    assert min(m.weights_bytes, m.gradients_bytes, m.optimizer_bytes, m.activations_bytes, m.transient_bytes) >= 0
