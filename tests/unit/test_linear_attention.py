"""Hybrid models with Gated DeltaNet layers (Qwen3-Next): the domain checks, the exact parameter count, the FLOPs of
the chunked rule, the layer-mean the estimators take, the layouts that split the heads, and the estimate itself."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.model import MLA, Architecture, LinearAttention, MoE
from rigplan.errors import InvalidSpec
from rigplan.estimate import elementwise, linear_attention
from rigplan.estimate.activations import attention_token_bytes
from rigplan.estimate.flops import layer_forward_flops, micro_batch_flops, paper_flop_per_token
from rigplan.estimate.params import attention_params, count_params
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest

QWEN3_NEXT_MAIN_MODEL = 79_674_391_296
"""Qwen3-Next-80B-A3B's checkpoint (81,324,862,720 parameters) less its multi-token-prediction layer
(1,650,471,424), counted from transformers' module shapes."""


@pytest.fixture(scope="module")
def next80b() -> Architecture:
    return load_catalog().model("qwen3-next-80b-a3b").to_domain()


def _full_attention(arch: Architecture) -> Architecture:
    return replace(arch, linear_attention=None)


def test_qwen3_next_counts_its_checkpoint_exactly(next80b: Architecture) -> None:
    counts = count_params(next80b)
    assert counts.total == QWEN3_NEXT_MAIN_MODEL
    assert linear_attention.mixer_params(next80b) == 33_718_464  # in_proj_qkvz, in_proj_ba, conv1d, dt, A, norm, out
    assert attention_params(next80b) == 27_263_488  # q_proj twice as wide for the output gate, q/k norms
    assert next80b.num_linear_attention_layers == 36 and next80b.linear_attention_share == 0.75
    assert counts.active == 3_874_929_408


def test_layer_mean_keeps_the_total_exact_when_the_mixers_do_not_divide_evenly(next80b: Architecture) -> None:
    odd = replace(next80b, num_layers=47, moe=replace(next80b.moe, mtp_layers=0))
    counts = count_params(odd)
    mixers = attention_params(odd) * 11 + linear_attention.mixer_params(odd) * 36
    assert 0 < counts.mixer_remainder < odd.num_layers
    assert counts.moe_layer is not None
    assert counts.total - mixers == (counts.total - counts.moe_layer.attention * 47 - counts.mixer_remainder)


def test_chunked_rule_flops_per_token(next80b: Architecture) -> None:
    forward, again = linear_attention.core_flop_per_token(next80b)
    c, d = 64, 128  # CHUNK, head dims: 3·C·d + 2·C·d + 3·d² + C²/3 multiply-adds per value head
    assert forward == pytest.approx(2 * 32 * (3 * c * d + 2 * c * d + 3 * d * d + c * c / 3))
    assert again == pytest.approx(2 * 32 * (2 * c * d + 2 * d * d))
    # above Megatron-LM's nominal 4·H_v·d_v² multiply-adds: the chunked form computes intra-chunk products too
    assert forward > 2 * 4 * 32 * d * d


def test_layer_flops_are_the_mean_of_the_two_mixers(next80b: Architecture) -> None:
    kw = {"seq_len": 4096, "micro_batch": 1, "moe": True}
    hybrid = layer_forward_flops(next80b, **kw)
    full = layer_forward_flops(next80b, full_attention=True, **kw)
    gdn_proj = 4096 * linear_attention.projection_flop_per_token(next80b)
    assert hybrid.attention_proj_flop == pytest.approx(0.25 * full.attention_proj_flop + 0.75 * gdn_proj)
    assert hybrid.attention_core_flop == pytest.approx(0.25 * full.attention_core_flop)
    assert hybrid.linear_core_flop == pytest.approx(0.75 * 4096 * linear_attention.core_flop_per_token(next80b)[0])
    assert full.linear_core_flop == 0.0
    assert hybrid.expert_flop == full.expert_flop  # the MoE half of the layer is the same


def test_output_gate_widens_the_query_projection(next80b: Architecture) -> None:
    gated = layer_forward_flops(next80b, seq_len=1024, micro_batch=1, moe=True, full_attention=True)
    plain = layer_forward_flops(replace(next80b, attention_output_gate=False), seq_len=1024, micro_batch=1, moe=True,
                                full_attention=True)
    assert gated.attention_proj_flop - plain.attention_proj_flop == pytest.approx(2 * 1024 * 2048 * 16 * 256)


def test_backward_recomputes_the_state_pass(next80b: Architecture) -> None:
    job = Job(seq_len=4096, micro_batch=1, attention="flash")
    step = micro_batch_flops(next80b, job)
    forward, again = linear_attention.core_flop_per_token(next80b)
    assert step.backward.linear_core_flop == pytest.approx(2 * step.forward.linear_core_flop)
    assert step.recompute.linear_core_flop == pytest.approx(step.forward.linear_core_flop * again / forward)


def test_papers_flops_count_attention_on_full_layers_only(next80b: Architecture) -> None:
    hybrid = paper_flop_per_token(next80b, 32768)
    full = paper_flop_per_token(_full_attention(next80b), 32768)
    assert hybrid < full  # 36 of 48 layers have no s² term


def test_saved_bytes_blend_the_mixers(next80b: Architecture) -> None:
    job = Job(seq_len=4096, micro_batch=1, attention="flash", kernels="fused")
    hybrid = attention_token_bytes(next80b, job, dropout=False)
    full = attention_token_bytes(_full_attention(next80b), job, dropout=False)
    gdn = linear_attention.saved_split_bytes(next80b, 2, 2)
    assert hybrid.split_by_tp == pytest.approx(0.25 * full.split_by_tp + 0.75 * gdn)
    assert hybrid.attention_core == pytest.approx(0.25 * full.attention_core)
    assert hybrid.replicated_under_tp == full.replicated_under_tp
    # conv input 8192, z 4096, a/b 64, q/k 4096, repeated q/k 8192, v 4096, beta 32, A 32x64, output 4096, norm out
    assert gdn == 2 * (8192 + 4096 + 64 + 4096 + 8192 + 4096 + 32 + 2048 + 4096) + 4 * (32 + 32) + 2 * 4096


def test_kernels_and_traffic_of_the_linear_layers(next80b: Architecture) -> None:
    job = Job(seq_len=4096, micro_batch=1, attention="flash", kernels="fused")
    assert linear_attention.kernels_over_attention(next80b) == 11.0  # 13 + 2 repeats - qkv, rotary, attention, out
    full = elementwise.kernels_per_layer(_full_attention(next80b), job)
    assert elementwise.kernels_per_layer(next80b, job) == pytest.approx(full + 0.75 * 11.0 - 0.75 * 3.0)
    assert elementwise.elementwise_bytes_per_token(next80b, job)[1] > elementwise.elementwise_bytes_per_token(
        _full_attention(next80b), job)[1]


@pytest.mark.parametrize(("changes", "needle"), [
    ({"num_value_heads": 24}, "must be a multiple"),
    ({"full_attention_interval": 1}, "interval"),
    ({"key_head_dim": 0}, ">= 1"),
])
def test_bad_linear_attention_specs_are_refused(changes: dict, needle: str) -> None:
    base = {"num_key_heads": 16, "num_value_heads": 32, "key_head_dim": 128, "value_head_dim": 128}
    with pytest.raises(InvalidSpec, match=needle):
        LinearAttention(**{**base, **changes})


def test_linear_attention_with_sliding_windows_or_layers_beyond_the_model_is_refused() -> None:
    spec = {"num_key_heads": 8, "num_value_heads": 8, "key_head_dim": 64, "value_head_dim": 64}
    shape = {"id": "x", "num_layers": 8, "hidden": 1024, "num_heads": 8, "ffn": 2048, "vocab": 1000}
    with pytest.raises(InvalidSpec, match="no sliding windows"):
        Architecture(**shape, attention_windows=(128,) * 8, linear_attention=LinearAttention(**spec))
    with pytest.raises(InvalidSpec, match="beyond the model's 8 layers"):
        Architecture(**shape, linear_attention=LinearAttention(**spec, full_attention_layers=(3, 8)))
    with pytest.raises(InvalidSpec, match="distinct 0-based"):
        LinearAttention(**spec, full_attention_layers=(5, 3))
    with pytest.raises(InvalidSpec, match="as many key as value heads"):
        LinearAttention(**{**spec, "num_value_heads": 16}, kind="kimi_delta")


def test_listed_full_attention_layers_set_the_share() -> None:
    spec = LinearAttention(num_key_heads=8, num_value_heads=8, key_head_dim=64, value_head_dim=64,
                           full_attention_layers=(3, 7, 8))
    arch = Architecture(id="x", num_layers=9, hidden=1024, num_heads=8, ffn=2048, vocab=1000,
                        mla=MLA(q_lora_rank=0, kv_lora_rank=256, qk_nope_head_dim=64, qk_rope_head_dim=32,
                                v_head_dim=64), linear_attention=spec)
    assert arch.num_linear_attention_layers == 6 and arch.attention_kind == "MLA + GDN"
    assert LinearAttention(num_key_heads=8, num_value_heads=8, key_head_dim=64,
                           value_head_dim=64).full_layers(9) == (3, 7)


def _request(**kw: object) -> EstimateRequest:
    base: dict[str, object] = {"model": "qwen3-next-80b-a3b", "gpu": "h100-sxm", "gpus": 64, "pp": 2, "ep": 32,
                               "micro_batch": 1, "global_batch": 256, "seq": 4096, "tokens": "1B"}
    return EstimateRequest(**{**base, **kw})


def test_layouts_must_split_the_linear_heads_whole() -> None:
    with pytest.raises(InvalidSpec, match="linear-attention key heads"):
        estimate(_request(tp=8, cp=4, pp=1, ep=8))


def test_adapters_on_hybrid_models_follow_their_targets() -> None:
    """LoRA on Qwen3-Next: the attention targets adapt the full-attention quarter of the layers; adding in_proj and
    out_proj adapts the Gated DeltaNet layers too, more trainable parameters and more adapter FLOPs."""
    attention = estimate(_request(method="lora", gpus=8, pp=1, ep=8, lora_targets="q,k,v,o")).to_dict()
    both = estimate(_request(method="lora", gpus=8, pp=1, ep=8, lora_targets="q,k,v,o,in_proj,out_proj")).to_dict()
    gradients = [r["memory"]["per_gpu"]["gradients_bytes"] for r in (attention, both)]
    assert gradients[1] > gradients[0] > 0
    assert both["step_time_s"] > attention["step_time_s"]


def test_linear_layers_make_long_sequences_cheaper(next80b: Architecture) -> None:
    """At 32k tokens the quadratic attention of 36 full layers outweighs their Gated DeltaNet replacement."""
    catalog = load_catalog()
    from rigplan.flow.model_source import ResolvedModel

    request = _request(seq=32768, global_batch=64, pp=1, ep=64)
    hybrid = estimate(request).to_dict()["step_time_s"]
    full_model = ResolvedModel(arch=_full_attention(next80b), source="catalog")
    full = estimate(request, catalog=catalog, model=full_model).to_dict()["step_time_s"]
    assert hybrid < full


def test_hybrid_moe_estimate_runs_with_mtp(next80b: Architecture) -> None:
    result = estimate(_request()).to_dict()
    assert result["step_time_s"] > 0
    assert result["memory"]["model"]["attention"] == "GQA + GDN"
    assert next80b.moe is not None and next80b.moe.mtp_layers == 1


def test_memory_advice_does_not_offer_adapters_to_a_hybrid_model() -> None:
    from rigplan.flow.memory import memory
    from rigplan.flow.request import MemoryRequest

    hybrid = memory(MemoryRequest(model="qwen3-next-80b-a3b", gpu="h100-sxm", gpus=16, ep=16)).to_dict()
    flags = [row["flag"] for row in hybrid["advice"]]
    assert flags and not any("qlora" in flag for flag in flags)
    dense = memory(MemoryRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=16, ep=16, seq=32768)).to_dict()
    assert any("qlora" in row["flag"] for row in dense["advice"])  # the same advice offers it to a plain MoE


def test_context_parallelism_exchanges_the_linear_layers_by_all_to_all(next80b: Architecture) -> None:
    """Under cp the Gated DeltaNet layers' all-to-all to head shards is exposed, where the ring exchange of the
    full-attention layers hides behind their attention core."""
    catalog = load_catalog()
    from rigplan.flow.model_source import ResolvedModel

    request = _request(cp=2, pp=1, ep=16, gpus=64, seq=16384, global_batch=64)
    hybrid = estimate(request).to_dict()["breakdown"]["comm_by_axis"]["cp"]
    full_model = ResolvedModel(arch=_full_attention(next80b), source="catalog")
    full = estimate(request, catalog=catalog, model=full_model).to_dict()["breakdown"]["comm_by_axis"]["cp"]
    assert hybrid["exposed_s"] > full["exposed_s"]
    assert hybrid["total_s"] > 0.0


KIMI = LinearAttention(num_key_heads=32, num_value_heads=32, key_head_dim=128, value_head_dim=128, kind="kimi_delta",
                       full_attention_layers=(3, 7, 11, 15, 19, 23, 26))


def _kimi_like() -> Architecture:
    """Kimi Linear 48B-A3B's shape (config.json): MLA on 7 layers, Kimi Delta Attention on the other 20."""
    return Architecture(id="kimi-like", num_layers=27, hidden=2304, num_heads=32, ffn=9216, vocab=163840,
                        mla=MLA(q_lora_rank=0, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
                                v_head_dim=128),
                        moe=MoE(num_experts=256, top_k=8, expert_ffn=1024, num_shared_experts=1,
                                first_dense_layers=1, router="sigmoid"),
                        linear_attention=KIMI)


def test_kimi_delta_attention_params_follow_transformers_module() -> None:
    h, n, d, heads = 2304, 4096, 128, 32
    expected = (3 * h * n + 3 * n * 4 + (h * d + d * n + n + heads) + h * heads + (h * d + d * n) + d + n * h)
    arch = _kimi_like()
    assert linear_attention.mixer_params(arch) == expected
    assert arch.num_linear_attention_layers == 20 and arch.attention_kind == "MLA + KDA"
    counts = count_params(arch)
    from rigplan.estimate.params import mixer_params_total
    assert mixer_params_total(arch) == attention_params(arch) * 7 + expected * 20
    assert counts.moe_layer is not None
    assert counts.moe_layer.attention * 27 + counts.mixer_remainder == mixer_params_total(arch)


def test_kimi_delta_attention_estimates_and_exports() -> None:
    from rigplan.export import Unsupported, export
    from rigplan.flow.model_source import ResolvedModel
    from rigplan.flow.resolve import build_setup

    catalog = load_catalog()
    model = ResolvedModel(arch=_kimi_like(), source="catalog")
    request = EstimateRequest(model="kimi-like", gpu="h100-sxm", gpus=32, ep=32, micro_batch=1, global_batch=256,
                              seq=4096, tokens="1B")
    result = estimate(request, catalog=catalog, model=model).to_dict()
    assert result["step_time_s"] > 0 and result["memory"]["model"]["attention"] == "MLA + KDA"
    with pytest.raises(Unsupported, match="Kimi Delta Attention"):
        export(build_setup(request, catalog, model), "megatron")


def test_megatron_writes_listed_full_attention_layers_as_a_pattern(next80b: Architecture) -> None:
    from rigplan.export import export
    from rigplan.flow.model_source import ResolvedModel
    from rigplan.flow.resolve import build_setup

    listed = replace(next80b, linear_attention=replace(next80b.linear_attention, full_attention_layers=(0, 3, 47)))
    request = _request(pp=1, gpus=32, ep=32)
    values = export(build_setup(request, load_catalog(), ResolvedModel(arch=listed, source="catalog")),
                    "megatron").values
    pattern = values["linear_attention_freq"].strip("'[]").split(",")
    assert len(pattern) == 48 and [i for i, v in enumerate(pattern) if v == "0"] == [0, 3, 47]


def test_hybrid_estimates_say_which_kernels_they_assume() -> None:
    from rigplan.flow.estimate import LINEAR_ATTENTION_NOTE

    assert LINEAR_ATTENTION_NOTE in estimate(_request()).to_dict()["assumptions"]
    plain = estimate(_request(model="qwen3-30b-a3b", ep=16)).to_dict()["assumptions"]
    assert LINEAR_ATTENTION_NOTE not in plain
