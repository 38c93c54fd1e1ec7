"""Per-head q and k norms (Qwen3's qk_norm) are element-wise passes of their own: read and write q and k once each
in a fused stack (a TENorm each in Megatron-Core), eager RMSNorm's traffic in an eager one, and a kernel each."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.estimate import elementwise


def test_qk_norms_move_q_and_k_once_more_and_launch_two_kernels() -> None:
    qwen = load_catalog().model_domain("qwen3-8b")
    assert qwen.qk_norm
    plain = replace(qwen, qk_norm=False)
    qk = qwen.num_heads * qwen.dim_per_head + qwen.kv_heads * qwen.dim_per_head
    for job, traffic in ((Job(kernels="fused"), 1.0), (Job(kernels="hf"), elementwise.EAGER_RMSNORM_TRAFFIC)):
        _, with_norms = elementwise.elementwise_bytes_per_token(qwen, job)
        _, without = elementwise.elementwise_bytes_per_token(plain, job)
        assert with_norms - without == pytest.approx(2 * qk * traffic * job.compute_dtype_bytes)
    assert elementwise.kernels_per_layer(qwen, Job(kernels="fused")) == elementwise.kernels_per_layer(
        plain, Job(kernels="fused")) + 2.0
    assert elementwise.kernels_per_layer(qwen, Job(kernels="hf")) == elementwise.kernels_per_layer(
        plain, Job(kernels="hf")) + 12.0


def test_mla_models_are_left_to_their_own_count() -> None:
    deepseek = load_catalog().model_domain("deepseek-v3")
    assert deepseek.mla is not None
    flagged = replace(deepseek, qk_norm=True)
    assert elementwise.elementwise_bytes_per_token(flagged, Job()) == elementwise.elementwise_bytes_per_token(
        deepseek, Job())
