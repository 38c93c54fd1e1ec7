"""Dense Nemotron-H hybrids (Nemotron-H 8B and 56B, Nemotron Nano 2): layers that are a mixer without a
feed-forward block in a dense model (Architecture.ffn_free_layers), read from config.json, counted exactly, and
averaged over the model by the estimators (MLP FLOPs, saved bytes, element-wise traffic, kernels, TP collectives)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec
from rigplan.estimate.elementwise import FFN_BLOCK_KERNELS, elementwise_bytes_per_token, kernels_per_layer
from rigplan.estimate.flops import layer_forward_flops
from rigplan.estimate.params import count_params
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest

PATTERN_8B = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
H8B = {  # Megatron-Bridge NemotronHModel8BProvider as config.json keys (nvidia/Nemotron-H-8B-Base-8K)
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": False, "mlp_bias": False,
    "use_bias": False, "conv_kernel": 4, "mlp_hidden_act": "relu2", "n_groups": 8, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 131072, "tie_word_embeddings": False, "chunk_size": 128, "mamba_head_dim": 64,
    "hidden_size": 4096, "num_hidden_layers": 52, "hybrid_override_pattern": PATTERN_8B, "intermediate_size": 21504,
    "num_attention_heads": 32, "mamba_num_heads": 128, "ssm_state_size": 128, "max_position_embeddings": 8192,
}
NANO2_9B_PATTERN = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"
"""nvidia/NVIDIA-Nemotron-Nano-9B-v2's hybrid_override_pattern (Mamba-2 blocks before Mamba-2 blocks as well)."""
PATTERN_47B = ("M-M-M-M-M-M-M-M-M*-M-M-M-M-M-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-M---MM---M-M*-M-M-M-M-M-")
"""Megatron-Bridge NemotronHModel47BProvider's hybrid_override_pattern: MLP blocks in a row (M---)."""
H8B_TOTAL = 8_100_852_736
"""transformers 5's NemotronHForCausalLM built on the meta device from H8B."""


def _read(tmp_path: Path, cfg: dict[str, Any]) -> Architecture:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return architecture_from_hf_config(path)


@pytest.fixture(scope="module")
def h56b() -> Architecture:
    return load_catalog().model("nemotron-h-56b").to_domain()


def test_reader_lists_the_mamba_blocks_before_attention_as_mixer_only_layers(tmp_path: Path) -> None:
    arch = _read(tmp_path, H8B)
    assert arch.moe is None and arch.num_layers == 28 and arch.ffn == 21504
    assert arch.ffn_free_layers == (3, 9, 15, 21)
    assert arch.linear_attention is not None and arch.linear_attention.full_layers(28) == (4, 10, 16, 22)
    assert arch.ffn_blocks_per_layer == pytest.approx(24 / 28)
    assert count_params(arch).total == H8B_TOTAL
    catalog = load_catalog().model("nemotron-h-8b").to_domain()
    assert catalog.ffn_free_layers == arch.ffn_free_layers and count_params(catalog).total == H8B_TOTAL


def test_counts_equal_transformers_modules(tmp_path: Path, nemotron_h_numel: Callable[[dict[str, Any]], int]) -> None:
    """A cut dense config with mixer-only layers (Mamba before Mamba, Mamba before attention) and a Nano 2 style
    head width, and the 8B config itself: rigplan's count equals transformers' NemotronHForCausalLM to the unit."""
    small = {**H8B, "hybrid_override_pattern": "M-MM-M*-M-", "num_hidden_layers": 10, "vocab_size": 1024,
             "mamba_head_dim": 80, "hidden_size": 640, "intermediate_size": 1536, "num_attention_heads": 8}
    arch = _read(tmp_path, small)
    assert arch.ffn_free_layers == (1, 3)
    assert count_params(arch).total == nemotron_h_numel(small)
    assert nemotron_h_numel(H8B) == H8B_TOTAL
    nano2 = {**H8B, "hybrid_override_pattern": NANO2_9B_PATTERN, "num_hidden_layers": 56, "hidden_size": 4480,
             "intermediate_size": 15680, "num_attention_heads": 40, "mamba_head_dim": 80}
    catalog = load_catalog().model("nemotron-nano-9b-v2").to_domain()
    assert _read(tmp_path, nano2).ffn_free_layers == catalog.ffn_free_layers == (3, 7, 11, 16, 21, 24)
    assert count_params(catalog).total == nemotron_h_numel(nano2) == 8_888_227_328


def test_56b_counts_its_feed_forward_blocks_once_each(h56b: Architecture) -> None:
    counts = count_params(h56b)
    assert counts.total == 56_324_350_464  # transformers' NemotronHForCausalLM from the same keys
    with_all = count_params(replace(h56b, ffn_free_layers=()))
    mlp_and_norm = 2 * 8192 * 32768 + 8192
    assert with_all.total - counts.total == 10 * mlp_and_norm
    assert counts.dense_layer_mean * 64 == pytest.approx(counts.layers_total - counts.mixer_remainder)


@pytest.mark.parametrize(("changes", "expected"), [
    ({"ffn_free_layers": (3, 3)}, "distinct 0-based indices in order"),
    ({"ffn_free_layers": (64,)}, "below layers=64"),
    ({"ffn_free_layers": tuple(range(64))}, "not all of them"),
])
def test_bad_mixer_only_layers_are_refused(h56b: Architecture, changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidSpec, match=expected):
        replace(h56b, **changes)


def test_an_moe_model_lists_them_as_dense_layers_instead() -> None:
    nano = load_catalog().model("nemotron-3-nano-30b-a3b").to_domain()
    with pytest.raises(InvalidSpec, match="an MoE model lists them as dense layers with ffn 0"):
        replace(nano, ffn_free_layers=(2,))


def test_mlp_flops_saved_bytes_and_kernels_follow_the_share(h56b: Architecture) -> None:
    full = replace(h56b, ffn_free_layers=())
    share = h56b.ffn_blocks_per_layer
    assert share == pytest.approx(54 / 64)
    kw: dict[str, Any] = {"seq_len": 8192, "micro_batch": 1, "moe": False, "tp": 8}
    assert layer_forward_flops(h56b, **kw).mlp_flop == pytest.approx(share * layer_forward_flops(full, **kw).mlp_flop)
    assert layer_forward_flops(h56b, **kw).attention_proj_flop == layer_forward_flops(full, **kw).attention_proj_flop
    job = Job(seq_len=8192)
    assert kernels_per_layer(full, job) - kernels_per_layer(h56b, job) == pytest.approx((1 - share) * FFN_BLOCK_KERNELS)
    replicated, split = elementwise_bytes_per_token(h56b, job)
    full_replicated, full_split = elementwise_bytes_per_token(full, job)
    h = 8192
    # a missing block: one norm (read and write h) and one residual add (read 2h, write h), 2 bytes an element
    assert full_replicated - replicated == pytest.approx((1 - share) * (2 * h + 3 * h) * 2)
    assert full_split - split == pytest.approx((1 - share) * 2 * 32768 * 2)  # squared ReLU: read and write f


def _estimate(model: str, **extra: Any) -> dict[str, Any]:
    request = EstimateRequest(model=model, gpu="h100-sxm", gpus=32, tp=8, seq=8192, micro_batch=1, global_batch=96,
                              precision="fp8", fp8_recipe="delayed", zero=1, framework="nemo",
                              sequence_parallel=True, **extra)
    return estimate(request).to_dict()


def test_the_56b_estimate_has_less_work_and_fewer_tp_collectives_than_with_every_mlp(
        h56b: Architecture, tmp_path: Path) -> None:
    """The same request on nemotron-h-56b and on a config.json of it that puts an MLP on every layer: the step's
    TP collectives scale by (1 + share) / 2 (a mixer-only layer collects once, not twice) and its memory falls by
    the ten MLPs' states."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**H8B, "hidden_size": 8192, "num_hidden_layers": 128,
                                "hybrid_override_pattern": "M-" * 54 + "*-" * 10, "intermediate_size": 32768,
                                "num_attention_heads": 64, "mamba_num_heads": 256, "ssm_state_size": 256}),
                    encoding="utf-8")
    hybrid, every = _estimate("nemotron-h-56b"), _estimate(str(path))
    share = h56b.ffn_blocks_per_layer
    tp_hybrid = hybrid["breakdown"]["comm_by_axis"]["tp"]["total_s"]
    tp_every = every["breakdown"]["comm_by_axis"]["tp"]["total_s"]
    assert tp_hybrid == pytest.approx(tp_every * (1 + share) / 2, rel=1e-9)
    assert hybrid["step_time_s"] < every["step_time_s"]
    held, held_every = hybrid["memory"]["per_gpu"], every["memory"]["per_gpu"]
    assert held["weights_bytes"] < held_every["weights_bytes"]
    assert held["activations_bytes"] < held_every["activations_bytes"]


def test_muon_orthogonalises_the_mlps_the_model_has(h56b: Architecture) -> None:
    from rigplan.estimate.muon import matrix_shapes

    def mlp_count(arch: Architecture) -> float:
        return sum(count for d_in, d_out, count in matrix_shapes(arch) if (d_in, d_out) == (8192, 32768))

    assert mlp_count(h56b) == 54 and mlp_count(replace(h56b, ffn_free_layers=())) == 64


def test_mlp_blocks_in_a_row_stay_with_their_mixer(tmp_path: Path, nemotron_h_numel: Callable[[dict[str, Any]], int]
                                                  ) -> None:
    """Nemotron-H 47B's M--- reads as one layer with three MLP blocks (the layer listed twice in extra_ffn_blocks):
    its count equals transformers' to the unit (a cut config and the catalog record), the estimators see 48 MLP
    blocks over 50 layers, and the Megatron export writes the config's own pattern back."""
    from rigplan.export import export
    from rigplan.flow.resolve import build_setup

    small = {**H8B, "hybrid_override_pattern": "M---M*-M-", "num_hidden_layers": 9, "vocab_size": 1024,
             "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8, "mamba_num_heads": 16}
    arch = _read(tmp_path, small)
    assert (arch.num_layers, arch.ffn_free_layers, arch.extra_ffn_blocks) == (4, (1,), (0, 0))
    assert count_params(arch).total == nemotron_h_numel(small)
    h47b = load_catalog().model("nemotron-h-47b").to_domain()
    h47 = {**H8B, "hybrid_override_pattern": PATTERN_47B, "num_hidden_layers": 98, "hidden_size": 8192,
           "intermediate_size": 30720, "num_attention_heads": 64, "mamba_num_heads": 256, "ssm_state_size": 256}
    assert count_params(h47b).total == nemotron_h_numel(h47) == 46_791_554_816
    assert h47b.ffn_blocks_per_layer == pytest.approx(48 / 50)
    request = EstimateRequest(model="nemotron-h-47b", gpu="h100-sxm", gpus=8, tp=8, global_batch=8)
    assert export(build_setup(request), "megatron").values["hybrid_override_pattern"] == f"'{PATTERN_47B}'"


@pytest.mark.parametrize(("pattern", "expected"), [
    ("M--ME*E", "dense MLP blocks in a row beside MoE blocks"),
    ("-M-M*-M-", r"block 0 \(-\) of 'hybrid_override_pattern' -M-M\*-M- follows no mixer"),
])
def test_mlp_blocks_in_a_row_beside_moe_or_first_are_refused(tmp_path: Path, pattern: str, expected: str) -> None:
    moe_keys = {"n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 256} if "E" in pattern \
        else {}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**H8B, **moe_keys, "hybrid_override_pattern": pattern,
                                "num_hidden_layers": len(pattern)}), encoding="utf-8")
    with pytest.raises(InvalidSpec, match=expected):
        architecture_from_hf_config(path)


def test_extra_blocks_on_a_mixer_only_layer_are_refused(h56b: Architecture) -> None:
    with pytest.raises(InvalidSpec, match="none of them a layer without a feed-forward block"):
        replace(h56b, extra_ffn_blocks=(3,))


def test_fsdp_units_are_sized_to_the_layer_with_three_mlps() -> None:
    h47b = load_catalog().model("nemotron-h-47b").to_domain()
    counts = count_params(h47b)
    assert counts.most_extra_ffn_blocks == 2
    assert counts.largest_dense_layer == counts.dense_layer.total + 2 * counts.ffn_block
    assert count_params(replace(h47b, extra_ffn_blocks=(39, 41))).most_extra_ffn_blocks == 1
