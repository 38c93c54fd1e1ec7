"""Sliding-window layers in step time: the band's FLOPs at the kernel's efficiency for the window's span."""

from __future__ import annotations

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.efficiency import HOPPER, attention_efficiency
from rigplan.estimate.step import attention_core_efficiency, step_time


def _setup(model: str):  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    return catalog.model(model).to_domain(), catalog.gpu("h100-sxm").to_domain()


def test_core_efficiency_weights_each_window_by_its_flops() -> None:
    arch, _ = _setup("gpt-oss-20b")  # 12 layers of 128 tokens, 12 full
    job = Job(seq_len=8192, kernels="fused")
    share = 2 * 128 / 8192 - (128 / 8192) ** 2
    e_local = attention_efficiency(HOPPER, "cudnn", 128.0, 64.0)
    e_full = attention_efficiency(HOPPER, "cudnn", 8192.0, 64.0)
    expected = (share + 1.0) / (share / e_local + 1.0 / e_full)
    assert attention_core_efficiency(arch, job, HOPPER, "cudnn", 1.0) == pytest.approx(expected)
    assert e_local < expected < e_full


def test_long_sequences_of_a_windowed_model_cost_less_than_full_attention() -> None:
    arch, gpu = _setup("mistral-7b")
    layout = Layout(dp=8, zero=3)
    full = arch.with_overrides(attention_windows=())
    for seq, faster in ((4096, False), (32768, True)):
        job = Job(seq_len=seq, kernels="fused", global_batch=64)
        windowed = float(step_time(arch, job, layout, gpu, global_batch=64).step_time_s)
        dense = float(step_time(full, job, layout, gpu, global_batch=64).step_time_s)
        assert (windowed < 0.9 * dense) if faster else windowed == pytest.approx(dense)
