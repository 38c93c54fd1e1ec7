"""Nemotron-H hybrids (model_type nemotron_h, Nemotron 3 Nano): the config.json reader's pairing of blocks into
layers, the exact parameter count, its refusals, Mamba-2's FLOPs and saved bytes, the CUDA graph scopes of a
hybrid, and the estimate and exports of the catalog model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hf_files import config_error, read_config

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES
from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec
from rigplan.estimate import comm, linear_attention, moe
from rigplan.estimate.flops import layer_forward_flops, paper_flop_per_token
from rigplan.estimate.moe_host import CUDA_GRAPH_SCOPE_OPS, graph_captured_ops
from rigplan.estimate.params import count_params, latent_projection_params
from rigplan.export import export
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup

NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
NANO = {  # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (the keys that shape the model)
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": False,
    "chunk_size": 128, "conv_kernel": 4, "expand": 2, "head_dim": 128, "hidden_size": 2688,
    "hybrid_override_pattern": NANO_PATTERN, "intermediate_size": 1856, "mamba_head_dim": 64,
    "mamba_num_heads": 64, "max_position_embeddings": 262144, "mlp_bias": False, "mlp_hidden_act": "relu2",
    "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712, "n_group": 1, "n_groups": 8,
    "n_routed_experts": 128, "n_shared_experts": 1, "num_attention_heads": 32, "num_experts_per_tok": 6,
    "num_hidden_layers": 52, "num_key_value_heads": 2, "routed_scaling_factor": 2.5, "ssm_state_size": 128,
    "tie_word_embeddings": False, "use_bias": False, "use_conv_bias": True, "vocab_size": 131072,
}
NANO_TOTAL = 31_577_937_344
"""transformers 5's NemotronHForCausalLM built on the meta device from NANO: the sum of its parameters' numel."""


@pytest.fixture(scope="module")
def nano() -> Architecture:
    return load_catalog().model("nemotron-3-nano-30b-a3b").to_domain()


def test_nemotron_h_is_a_supported_model_type() -> None:
    assert "nemotron_h" in SUPPORTED_MODEL_TYPES


def test_blocks_pair_into_layers(tmp_path: Path) -> None:
    arch = read_config(tmp_path, NANO)
    assert arch.num_layers == 29  # 23 mixers each with the MoE after it, 6 mixers followed by another mixer
    assert arch.ffn == 0 and arch.positions == "none" and arch.mlp == "plain"
    assert arch.moe is not None and arch.moe.dense_layers == (2, 6, 10, 14, 18, 23)
    assert arch.num_dense_layers == 6 and arch.num_moe_layers == 23
    la = arch.linear_attention
    assert la is not None and la.kind == "mamba2" and la.chunk_size == 128
    assert la.full_attention_layers == (3, 7, 11, 15, 19, 24)
    assert arch.num_linear_attention_layers == 23
    assert (la.num_value_heads, la.value_head_dim, la.num_key_heads, la.key_head_dim) == (64, 64, 8, 128)
    assert arch.moe.router == "sigmoid" and arch.moe.num_shared_experts == 1 and arch.moe.shared_ffn == 3712


def test_layers_block_type_reads_as_the_pattern(tmp_path: Path) -> None:
    names = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}
    spelled = {k: v for k, v in NANO.items() if k != "hybrid_override_pattern"}
    spelled["layers_block_type"] = [names[s] for s in NANO_PATTERN]
    assert read_config(tmp_path, spelled) == read_config(tmp_path, NANO)


def test_catalog_model_is_the_config_json(tmp_path: Path, nano: Architecture) -> None:
    read = read_config(tmp_path, NANO)
    assert count_params(read).total == count_params(nano).total == NANO_TOTAL
    assert count_params(nano).active == 3_580_073_408  # 3,227,751,872 without the input embedding


def test_mamba2_mixer_params_follow_megatron_and_transformers(nano: Architecture) -> None:
    h, v, k, heads = 2688, 64 * 64, 8 * 128, 64
    in_proj = h * (2 * v + 2 * k + heads)
    conv = (v + 2 * k) * (4 + 1)  # 4 taps and a bias over x, B and C
    assert linear_attention.mixer_params(nano) == in_proj + conv + 3 * heads + v + v * h == 38_742_208


@pytest.mark.parametrize("latent", [0, 512], ids=["nano_cut", "latent_moe"])
def test_counts_equal_transformers_modules(tmp_path: Path, latent: int,
                                           nemotron_h_numel: Callable[[dict[str, Any]], int]) -> None:
    """transformers builds NemotronHForCausalLM on the meta device from a cut config (8 blocks, 16 experts, a 1,024
    vocabulary) that keeps a mixer without a feed-forward block, once with a latent MoE (Nemotron 3 Super's
    moe_latent_size: routed experts at that width, two projections around them); rigplan's count must be the same to
    the unit."""
    small = {**NANO, "hybrid_override_pattern": "MEM*EMME", "num_hidden_layers": 8, "n_routed_experts": 16,
             "vocab_size": 1024, **({"moe_latent_size": latent} if latent else {})}
    assert count_params(read_config(tmp_path, small)).total == nemotron_h_numel(small)


def test_mamba2_scan_flops(nano: Architecture) -> None:
    forward, again = linear_attention.core_flop_per_token(nano)
    q, n, p, heads, groups = 128, 128, 64, 64, 8
    assert forward == 2 * (groups * q * n + heads * (q * p + 2 * n * p)) == 3_407_872
    assert again == 2 * (groups * q * n + heads * n * p) == 1_310_720
    assert linear_attention.projection_flop_per_token(nano) == 2 * 2688 * (2 * 4096 + 2 * 1024 + 64) + 2 * 4096 * 2688
    assert linear_attention.core_gemm_dim(nano) == 64  # the head's 64 channels, below the chunk and the state


def test_chunk_size_sets_the_scan_width(nano: Architecture) -> None:
    assert nano.linear_attention is not None
    wide = replace(nano, linear_attention=replace(nano.linear_attention, chunk_size=256))
    assert linear_attention.core_flop_per_token(wide)[0] > linear_attention.core_flop_per_token(nano)[0]
    unset = replace(nano, linear_attention=replace(nano.linear_attention, chunk_size=0))
    assert linear_attention.chunk(unset.linear_attention) == linear_attention.MAMBA2_CHUNK  # type: ignore[arg-type]


def test_papers_flops_take_megatrons_mamba_term(nano: Architecture) -> None:
    assert nano.linear_attention is not None
    no_scan = replace(nano, linear_attention=replace(nano.linear_attention, key_head_dim=1))
    # 3·7·v·N per Mamba-2 layer and token, v = 4,096, N = 128 against N = 1
    difference = paper_flop_per_token(nano, 8192) - paper_flop_per_token(no_scan, 8192)
    params_difference = 6.0 * (count_params(nano).active_matmul - count_params(no_scan).active_matmul)
    assert difference - params_difference == pytest.approx(3 * 7 * 4096 * (128 - 1) * 23)


def test_mamba2_saved_bytes(nano: Architecture) -> None:
    v, k, heads, groups = 4096, 1024, 64, 8
    # in_proj's output, the scan's output, the norm's input, its fp32 rstd per group, out_proj's input
    expected = 2 * (2 * v + 2 * k + heads + v + v) + 4 * groups + 2 * v
    assert linear_attention.saved_split_bytes(nano, 2.0, 2.0) == expected == 45_216


def test_graph_scopes_capture_each_mixer_on_its_layers(nano: Architecture) -> None:
    mamba = graph_captured_ops(nano, Job(cuda_graph_scope=("mamba",)))
    attn = graph_captured_ops(nano, Job(cuda_graph_scope=("attn",)))
    share = nano.linear_attention_share
    assert share == pytest.approx(23 / 29)
    assert mamba == pytest.approx((CUDA_GRAPH_SCOPE_OPS["mamba"] - 1) * share)
    assert attn == pytest.approx((CUDA_GRAPH_SCOPE_OPS["attn"] - 1) * (1 - share))
    both = graph_captured_ops(nano, Job(cuda_graph_scope=("attn", "mamba", "moe_router")))
    assert both == pytest.approx(mamba + attn + CUDA_GRAPH_SCOPE_OPS["moe_router"] - 1)


def test_mamba_scope_on_a_model_without_mamba_is_refused() -> None:
    with pytest.raises(InvalidSpec, match="--cuda-graph-scope mamba captures Mamba-2 mixers; qwen3-30b-a3b has none"):
        estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8, cuda_graph_scope=["mamba"]))


def _nano_request(**changes: Any) -> EstimateRequest:
    base: dict[str, Any] = {"model": "nemotron-3-nano-30b-a3b", "gpu": "b200", "gpus": 8, "ep": 8, "seq": 8192,
                            "global_batch": 512, "micro_batch": 2, "precision": "fp8"}
    return EstimateRequest(**{**base, **changes})


def test_nano_estimate_runs_and_graphs_shorten_it() -> None:
    """At 2,048 tokens a micro-batch the B200 waits on the host; the mamba scope takes 23 layers' mixer launches
    off it, all four scopes more."""
    eager = estimate(_nano_request(seq=2048, micro_batch=1))
    mamba = estimate(_nano_request(seq=2048, micro_batch=1, cuda_graph_scope=["mamba"]))
    graphed = estimate(_nano_request(seq=2048, micro_batch=1,
                                     cuda_graph_scope=["attn", "mamba", "moe_router", "moe_preprocess"]))
    assert 0 < float(graphed.step.step_time_s) < float(mamba.step.step_time_s) < float(eager.step.step_time_s)
    assert any(a.startswith("Mamba-2 layers") for a in eager.to_dict()["assumptions"])


def test_megatron_export_writes_the_config_s_own_block_pattern() -> None:
    """rigplan's 29 layers go back to the config.json's 52 blocks: pretrain_mamba.py gets Nano's pattern as given."""
    out = export(build_setup(_nano_request(), load_catalog()), "megatron")
    assert out.values["hybrid_override_pattern"] == f"'{NANO_PATTERN}'" and out.values["num_layers"] == 52
    assert "pretrain_mamba.py" in out.command


@pytest.mark.parametrize(("changes", "expected"), [
    ({"hybrid_override_pattern": "EM" + NANO_PATTERN[2:]}, "block 0 (E) of 'hybrid_override_pattern'"),
    ({"hybrid_override_pattern": NANO_PATTERN[:-1]}, "must give one of M, *, E and - for each of the 52 blocks"),
    ({"hybrid_override_pattern": NANO_PATTERN.replace("E", "X", 1)}, "must give one of M, *, E and -"),
    ({"hybrid_override_pattern": "M-M*-" + NANO_PATTERN[5:]}, "beside both MoE blocks and dense MLPs"),
    ({"hybrid_override_pattern": "M*" * 26}, "beside no feed-forward block at all"),
    ({"hybrid_override_pattern": None, "layers_block_type": ["mamba"] * 51 + ["conv"]},
     "key 'layers_block_type' must name mamba, attention, moe, mlp, linear_attention, full_attention blocks"),
    ({"mamba_num_heads": None}, "mamba_num_heads"),
], ids=["feed_forward_first", "short", "unknown_symbol", "bare_beside_dense", "bare_without_moe",
        "block_type_name", "no_heads"])
def test_a_bad_nemotron_h_key_is_one_line(tmp_path: Path, changes: dict[str, Any], expected: str) -> None:
    cfg = {k: v for k, v in {**NANO, **changes}.items() if v is not None}
    assert expected in config_error(tmp_path, cfg)


def test_dense_nemotron_h_without_bare_mixers_reads_as_a_dense_hybrid(tmp_path: Path) -> None:
    cfg = {k: v for k, v in NANO.items() if not k.startswith(("n_routed", "n_shared", "moe_", "num_experts"))}
    arch = read_config(tmp_path, {**cfg, "hybrid_override_pattern": "M-M-*-M-", "num_hidden_layers": 8})
    assert arch.moe is None and arch.num_layers == 4 and arch.ffn == 1856
    assert arch.num_linear_attention_layers == 3 and arch.linear_attention_share == 0.75


@pytest.fixture(scope="module")
def super_() -> Architecture:
    return load_catalog().model("nemotron-3-super-120b-a12b").to_domain()


def test_super_reads_as_a_latent_moe(super_: Architecture) -> None:
    assert super_.moe is not None and super_.moe.latent_size == 1024 and super_.expert_hidden == 1024
    assert super_.num_layers == 48 and super_.num_moe_layers == 40 and super_.moe.dense_layers == (
        3, 8, 13, 19, 25, 31, 37, 42)
    counts = count_params(super_)
    assert counts.total == 120_668_687_360  # transformers' NemotronHForCausalLM from the config.json, MTP apart
    assert counts.moe_layer is not None and counts.moe_layer.expert_one == 2 * 1024 * 2688
    assert latent_projection_params(super_) == 2 * 4096 * 1024


def test_latent_width_sets_the_experts_and_the_all_to_all(super_: Architecture) -> None:
    assert super_.moe is not None
    full = replace(super_, moe=replace(super_.moe, latent_size=0))
    assert full.expert_hidden == 4096 and latent_projection_params(full) == 0
    kw = {"seq_len": 8192, "micro_batch": 1}
    latent_ops, full_ops = layer_forward_flops(super_, moe=True, **kw), layer_forward_flops(full, moe=True, **kw)
    assert float(latent_ops.expert_flop) == pytest.approx(float(full_ops.expert_flop) / 4)
    assert float(latent_ops.mlp_flop) - float(full_ops.mlp_flop) == pytest.approx(2 * 2 * 8192 * 4096 * 1024)
    job = Job(seq_len=8192, moe_imbalance=1.0)
    tier = comm.Tier(name="nvlink", bandwidth_bytes_per_s=400e9, latency_s=5e-6)
    a2a = {name: float(moe.expert_all_to_all_s(a, job, tokens=8192, tp=1, ep=64, etp=1, domain=72, intra=tier,
                                                inter=tier)) for name, a in (("latent", super_), ("full", full))}
    assert a2a["latent"] < a2a["full"] / 3  # a quarter of the bytes, the same latency per call
    assert float(moe.permute_bytes_per_token(super_, job, 64)) == pytest.approx(
        float(moe.permute_bytes_per_token(full, job, 64)) / 4)
    held = {name: float(moe.local_expert_params(a, 64, 1)) for name, a in (("latent", super_), ("full", full))}
    assert held["latent"] == pytest.approx(held["full"] / 4)


def test_super_estimate_runs_on_the_published_layout() -> None:
    result = estimate(EstimateRequest(model="nemotron-3-super-120b-a12b", gpu="gb300", gpus=64, ep=64, seq=8192,
                                      global_batch=512, precision="fp8", fp8_recipe="mxfp8", mtp_layers=2,
                                      moe_dispatcher="hybridep", balanced_routing=True, zero=1, fp8_param_gather=True))
    assert float(result.step.step_time_s) > 0 and result.memory.fits
    assert result.to_dict(with_advice=False)["memory"]["model"]["params_total"] > 120e9  # the second MTP copy


def test_megatron_export_writes_the_latent_size() -> None:
    from rigplan.flow.model_source import ResolvedModel

    qwen = load_catalog().model("qwen3-30b-a3b").to_domain()
    assert qwen.moe is not None
    latent = replace(qwen, moe=replace(qwen.moe, latent_size=512))
    request = EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8)
    values = export(build_setup(request, load_catalog(), ResolvedModel(arch=latent, source="catalog")),
                    "megatron").values
    assert values["moe_latent_size"] == 512


def test_latent_size_flag_sets_and_clears_the_latent_width() -> None:
    """--moe-latent-size on any MoE model: 512 puts its routed experts and dispatch at 512 wide, 0 takes Super's
    back to its hidden size; on a dense model it is refused like the other MoE shape flags."""
    base = {"gpu": "h100-sxm", "gpus": 8, "ep": 8, "seq": 4096, "global_batch": 64}
    plain = estimate(EstimateRequest(model="qwen3-30b-a3b", **base))
    latent = estimate(EstimateRequest(model="qwen3-30b-a3b", moe_latent_size=512, **base))
    assert latent.setup.arch.expert_hidden == 512 and plain.setup.arch.expert_hidden == 2048
    assert float(latent.step.comm_total_s["ep"]) < float(plain.step.comm_total_s["ep"]) / 3
    cleared = estimate(EstimateRequest(model="nemotron-3-super-120b-a12b", moe_latent_size=0, gpu="gb300", gpus=64,
                                       ep=64, zero=1))
    assert cleared.setup.arch.expert_hidden == 4096
    with pytest.raises(InvalidSpec, match="--moe-latent-size/--expert-groups/--group-top-k need --experts for a "
                                          "dense model"):
        estimate(EstimateRequest(model="llama-3.1-8b", moe_latent_size=512, **base))
