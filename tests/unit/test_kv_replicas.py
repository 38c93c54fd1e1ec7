"""Tensor parallelism beyond the kv heads (Megatron-Core 0.16 and later): the layout check accepts a tp that is a
multiple of the kv heads, and the step pays each layer's all-gather of a kv group's QKV output (forward) and its
reduce-scatter (backward) over the ranks that share the group."""

from __future__ import annotations

import pytest

from rigplan.domain.layout import Layout, check_layout_for_model
from rigplan.errors import InvalidSpec
from rigplan.estimate import comm
from rigplan.estimate.flops import attention_head_dims
from rigplan.estimate.tensor_parallel import kv_replica_gather_s
from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest


def check(tp: int, heads: int = 32, kv: int = 4) -> None:
    check_layout_for_model(Layout(tp=tp), num_layers=48, num_heads=heads, num_kv_heads=kv, num_experts=0,
                           seq_len=4096)


def test_tp_may_be_a_multiple_of_the_kv_heads_but_must_divide_the_heads() -> None:
    check(4)
    check(8)
    check(16)
    with pytest.raises(InvalidSpec, match="tp=6 must divide heads=48, and divide kv_heads=4 or be a multiple"):
        check(6, heads=48)
    with pytest.raises(InvalidSpec, match="tp=64 must divide heads=32"):
        check(64)


def test_ulysses_cp_sees_one_kv_head_per_rank_beyond_the_kv_heads() -> None:
    from rigplan.domain.layout import heads_per_cp_problem

    assert heads_per_cp_problem(32, 4, 8, 1) is None
    assert "kv-heads (1) must be divisible by cp=2" in str(heads_per_cp_problem(32, 4, 8, 2))


def test_kv_replica_gather_is_zero_until_tp_exceeds_the_kv_heads() -> None:
    setup = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm")).setup
    arch, gpu = setup.arch, setup.gpu  # 32 query heads, 4 kv heads of 128
    intra, inter = comm.link_tier(gpu.link), comm.nic_tier(gpu)
    kw = dict(tokens=4096.0, head_dims=attention_head_dims(arch), dtype_bytes=2.0, per_node=8.0, intra=intra,
              inter=inter)
    assert kv_replica_gather_s(arch, tp=4, **kw) == 0.0
    two = float(kv_replica_gather_s(arch, tp=8, **kw))
    # two ranks share a group: the group's 8 query heads and its key and value head, 4096 tokens, bf16
    group_bytes = 4096 * (8 + 2) * 128 * 2
    assert two == pytest.approx(float(comm.hierarchical_all_gather_s(group_bytes, 2, 2, intra, inter)))
    assert float(kv_replica_gather_s(arch, tp=16, **kw)) > two


def test_the_step_pays_the_gather_and_the_reduce_scatter_in_every_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 16, "tp": 8, "pp": 2, "ep": 8, "etp": 1,
            "micro_batch": 1, "global_batch": 64, "framework": "nemo", "balanced_routing": True}
    result = speed.estimate(EstimateRequest(**base))
    assert any("tp=8 exceeds the model's 4 kv heads" in a for a in result.setup.assumptions)
    with_gather = result.to_dict()["breakdown"]["comm_by_axis"]["tp"]["total_s"]
    per_layer: list[float] = []

    def no_gather(*args: object, **kwargs: object) -> float:
        per_layer.append(float(kv_replica_gather_s(*args, **kwargs)))  # type: ignore[arg-type]
        return 0.0

    monkeypatch.setattr("rigplan.estimate.tensor_parallel.kv_replica_gather_s", no_gather)
    without = speed.estimate(EstimateRequest(**base)).to_dict()["breakdown"]["comm_by_axis"]["tp"]["total_s"]
    micro_batches, layers_per_stage = 64, 24  # dp 1; 48 layers over pp 2
    assert per_layer[0] > 0
    assert with_gather - without == pytest.approx(micro_batches * 2 * layers_per_stage * per_layer[0], rel=1e-6)
    assert not any("exceeds the model's" in a for a in
                   speed.estimate(EstimateRequest(**{**base, "tp": 4})).setup.assumptions)


def test_each_rank_keeps_a_whole_kv_head_beyond_the_kv_heads() -> None:
    """Beyond the kv heads a rank saves one whole k and v head, not 1/tp of them: 2·p·kv_w·(1/kv - 1/tp) per token
    more than the 1/tp share; nothing where tp divides the kv heads or for MLA."""
    import numpy as np

    from rigplan.catalog.load import load_catalog
    from rigplan.domain.job import Job
    from rigplan.estimate.activations import kv_replica_token_bytes, layer_activation_bytes

    catalog = load_catalog()
    qwen = catalog.model_domain("qwen3-30b-a3b")
    job = Job(kernels="fused", micro_batch=1, seq_len=4096)
    kv_w = qwen.kv_heads * qwen.dim_per_head
    assert qwen.kv_heads == 4
    assert kv_replica_token_bytes(qwen, job, 4) == 0.0 and kv_replica_token_bytes(qwen, job, 2) == 0.0
    assert kv_replica_token_bytes(qwen, job, 8) == pytest.approx(2 * 2 * kv_w * (1 / 4 - 1 / 8))
    assert np.allclose(kv_replica_token_bytes(qwen, job, np.array([1, 8, 16])),
                       [0.0, 2 * 2 * kv_w / 8, 2 * 2 * kv_w * (1 / 4 - 1 / 16)])
    assert kv_replica_token_bytes(catalog.model_domain("deepseek-v3"), job, 8) == 0.0
    dense = catalog.model_domain("qwen3-8b")
    at = {tp: layer_activation_bytes(dense, job, Layout(tp=tp, sequence_parallel=True), moe_layer=False).saved_bytes
          for tp in (8, 16)}
    assert dense.kv_heads == 8
    replica = 4096 * kv_replica_token_bytes(dense, job, 16)
    assert replica > 0
    # with sequence parallelism tp 8 -> 16 halves every saved byte except the k and v heads, one per rank at both
    assert at[16] == pytest.approx(at[8] / 2 + replica)
