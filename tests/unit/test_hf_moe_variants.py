"""config.json readers of GLM-4.7-Flash (glm4_moe_lite), Granite MoE with a shared expert (granitemoeshared), FlexOlmo
(flex_olmo) and Arcee's AFMoE (afmoe, Trinity): the published shapes give the publishers' parameter counts (or, where a
name like 30B-A3B is all they give, the exact count of the weight shapes), transformers' modules built from the same
configs hold the same parameters, and a missing or mistyped key fails as one line naming it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hf_files import config_error, read_config, without
from published_configs import (
    FLEXOLMO,
    GLM47_FLASH,
    GRANITE_SHARED,
    TRINITY_LARGE,
    TRINITY_MINI,
    TRINITY_MINI_LAYERS,
    TRINITY_NANO,
)

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES
from rigplan.domain.model import MLA, Architecture
from rigplan.estimate.params import ParamCounts, count_params


def _read(tmp_path: Path, cfg: dict[str, Any]) -> tuple[Architecture, ParamCounts]:
    arch = read_config(tmp_path, cfg)
    return arch, count_params(arch)


@pytest.mark.parametrize("model_type", ["glm4_moe_lite", "granitemoeshared", "flex_olmo", "afmoe"])
def test_the_variant_model_types_are_supported(model_type: str) -> None:
    assert model_type in SUPPORTED_MODEL_TYPES


def test_glm47_flash_counts_its_weight_shapes(tmp_path: Path) -> None:
    """30B-A3B is a name, so the count is checked against the weight shapes (h 2048, 20 heads, L 47):
    attention a layer: q_a 2048·768 + 768 (norm) + q_b 768·20·256 + kv_a 2048·576 + 512 (norm) + kv_b 512·20·448
    + o 5120·2048 = 21,759,232; norms 2·2048.
    dense layer 0: 21,759,232 + 3·2048·10240 + 4,096 = 84,677,888.
    46 MoE layers: 21,759,232 + 64·(3·2048·1536 = 9,437,184) + 9,437,184 (shared) + 64·2048 (router) + 4,096
    = 635,311,360 each.
    embeddings 2·154880·2048 = 634,388,480, final norm 2,048: total 29,943,390,976 without the MTP layer.
    Active: 60 of 64 experts idle in 46 layers, 29,943,390,976 - 46·60·9,437,184 = 3,896,763,136, and
    3,579,568,896 without the 317,194,240 of the input embedding (Z.ai's way for GLM-4.5)."""
    arch, counts = _read(tmp_path, GLM47_FLASH)
    assert (counts.total, counts.active, counts.active_published) == (29_943_390_976, 3_896_763_136, 3_579_568_896)
    assert round(counts.total / 1e9) == 30 and counts.active_published // 10**9 == 3
    assert arch.mla == MLA(q_lora_rank=768, kv_lora_rank=512, qk_nope_head_dim=192, qk_rope_head_dim=64, v_head_dim=256)
    assert arch.moe is not None and (arch.moe.router, arch.moe.first_dense_layers, arch.moe.mtp_layers) == (
        "sigmoid", 1, 1)
    assert (arch.moe.num_experts, arch.moe.top_k, arch.moe.expert_ffn, arch.moe.num_shared_experts) == (64, 4, 1536, 1)
    assert any("e_score_correction_bias" in note for note in arch.notes)


def test_glm47_flash_routes_by_sigmoid_without_scoring_func(tmp_path: Path) -> None:
    """Glm4MoeLiteConfig has no scoring_func or topk_method, and its router is a sigmoid one whatever they say."""
    bare = {k: v for k, v in GLM47_FLASH.items() if k not in ("topk_method", "first_k_dense_replace")}
    arch, _ = _read(tmp_path, {**bare, "scoring_func": "softmax"})
    assert arch.moe is not None and arch.moe.router == "sigmoid" and arch.moe.first_dense_layers == 1
    arch, _ = _read(tmp_path, {**bare, "n_group": 4, "topk_group": 2})
    assert arch.moe is not None and (arch.moe.routing_groups, arch.moe.routing_group_topk) == (4, 2)


def test_glm47_flash_reads_mlp_layer_types(tmp_path: Path) -> None:
    """mlp_layer_types decides the dense layers; first_k_dense_replace is not read (a note says so)."""
    arch, _ = _read(tmp_path, {**GLM47_FLASH, "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 44})
    assert arch.moe is not None and arch.moe.first_dense_layers == 3
    arch, _ = _read(tmp_path, {**GLM47_FLASH, "mlp_layer_types": ["sparse"] * 46 + ["dense"]})
    assert arch.moe is not None and arch.moe.first_dense_layers == 1
    assert any("counted as leading dense layers" in note for note in arch.notes)
    arch, _ = _read(tmp_path, {**GLM47_FLASH, "first_k_dense_replace": 3})
    assert arch.moe is not None and arch.moe.first_dense_layers == 1
    assert any("first_k_dense_replace 3 not read" in note for note in arch.notes)


def test_granite_shared_counts_its_weight_shapes(tmp_path: Path) -> None:
    """"7b" and "1b active" are names, so the count is checked against the weight shapes (h 1536, L 40, head 128):
    a layer: attention 1536·(1536 + 2·512) + 1536·1536 = 6,291,456; 62 experts of 3·1536·512 = 2,359,296 each
    (146,276,352); the shared expert 3·1536·1024 = 4,718,592; router 62·1536 = 95,232; norms 2·1536.
    total 40·157,384,704 + 50257·1536 (tied) + 1,536 = 6,372,584,448; active, 6 experts a layer:
    40·25,264,128 + 77,194,752 + 1,536 = 1,087,761,408 (a public write-up's 1,087,636,992 without the norms)."""
    arch, counts = _read(tmp_path, GRANITE_SHARED)
    assert (counts.total, counts.active_published) == (6_372_584_448, 1_087_761_408)
    assert counts.active_published - 40 * 2 * 1536 - 1536 == 1_087_636_992
    assert arch.moe is not None and (arch.moe.num_shared_experts, arch.moe.shared_expert_ffn) == (1, 1024)
    assert not arch.moe.shared_expert_gate and arch.tied_embeddings and arch.moe.router == "softmax"


def test_granite_shared_without_its_size_is_granitemoe(tmp_path: Path) -> None:
    """GraniteMoeSharedConfig's default shared_intermediate_size is 0: no shared MLP is built."""
    unshared = without(GRANITE_SHARED, "shared_intermediate_size")
    arch, counts = _read(tmp_path, unshared)
    assert arch.moe is not None and arch.moe.num_shared_experts == 0
    assert counts.total == _read(tmp_path, {**unshared, "model_type": "granitemoe"})[1].total
    assert counts.total + 40 * 4_718_592 == 6_372_584_448
    assert any("no shared expert" in note for note in arch.notes)


def test_flexolmo_gives_the_cards_33b(tmp_path: Path) -> None:
    """FlexOlmo-7x7B-1T's card: 33B total. Every token passes all 7 experts, so active equals total. A layer:
    attention 4·4096² + 2·128 (q/k norms as counted) + 7·3·4096·11008 + 7·4096 (router) + 2·4096 (norms)
    = 1,014,010,112; 32 of them + 2·100352·4096 + 4096 = 33,270,411,264. The checkpoint's q and k norms span the
    whole projections: 32·(4096 + 4096 - 256) = 253,952 more, as a note says."""
    arch, counts = _read(tmp_path, FLEXOLMO)
    assert counts.total == 33_270_411_264 and round(counts.total / 1e9) == 33
    assert counts.active_published == counts.total
    assert arch.qk_norm and arch.norms_per_layer == 2 and arch.moe is not None and arch.moe.num_shared_experts == 0
    assert any("253,952 parameters more" in note for note in arch.notes)


@pytest.mark.parametrize(("cfg", "total_b", "active_b", "local"), [
    (TRINITY_NANO, 6, 1, 42), (TRINITY_MINI, 26, 3, 24), (TRINITY_LARGE, 398, 13, 45),
], ids=["nano", "mini", "large"])
def test_trinity_gives_the_reports_counts_cut_to_whole_billions(tmp_path: Path, cfg: dict[str, Any], total_b: int,
                                                                 active_b: int, local: int) -> None:
    """Nano 6.12B / 1.02B, Mini 26.12B / 3.47B, Large 398.64B / 13.37B (both embeddings counted as active, as Arcee's
    figures do: Nano's 800M non-embedding active parameters leave out the input embedding only); the report's and
    card's figures are these cut to whole billions. Every 4th layer attends fully, the others to the window."""
    arch, counts = _read(tmp_path, cfg)
    assert (counts.total // 10**9, counts.active_published // 10**9) == (total_b, active_b)
    assert arch.window_counts == {cfg["sliding_window"]: local, 0: local // 3}
    assert arch.attention_output_gate and arch.qk_norm and arch.norms_per_layer == 4 and arch.head_dim == 128
    assert arch.moe is not None and arch.moe.router == "sigmoid"
    assert arch.moe.first_dense_layers == cfg["num_dense_layers"] and not arch.active_excludes_input_embedding


def test_trinity_nano_non_embedding_active(tmp_path: Path) -> None:
    """Arcee: Nano has "only 800M non-embedding parameters active per token": 818,920,448 without the input
    embedding."""
    _, counts = _read(tmp_path, TRINITY_NANO)
    assert counts.active_published - counts.embedding == 818_920_448


def test_afmoe_builds_the_attention_layout_of_its_config_class(tmp_path: Path) -> None:
    """Without layer_types or sliding_window, AfmoeConfig puts full attention on every global_attn_every_n_layers-th
    layer and a 1024-token window on the others; a written layer_types wins over the period."""
    bare = without(without(TRINITY_NANO, "sliding_window"), "global_attn_every_n_layers")
    arch, _ = _read(tmp_path, bare)
    assert arch.attention_windows == (1024, 1024, 1024, 0) * 14
    arch, _ = _read(tmp_path, {**TRINITY_NANO, "global_attn_every_n_layers": 2})
    assert arch.window_counts == {2048: 28, 0: 28}
    arch, _ = _read(tmp_path, {**TRINITY_NANO, "layer_types": ["full_attention"] * 56})
    assert arch.attention_windows == ()
    arch, _ = _read(tmp_path, {**TRINITY_NANO, "sliding_window": None})
    assert arch.attention_windows == ()


@pytest.mark.parametrize(("cfg", "expected"), [
    (without(GLM47_FLASH, "n_routed_experts"), "missing key 'n_routed_experts'"),
    ({**GLM47_FLASH, "n_routed_experts": 0}, "key 'n_routed_experts' must be >= 1"),
    ({**GLM47_FLASH, "mlp_layer_types": ["moe"] * 47}, "key 'mlp_layer_types' must name 'dense' or 'sparse'"),
    ({**GLM47_FLASH, "mlp_layer_types": ["dense"] * 47}, "leaves no MoE layer among 47"),
    ({**GLM47_FLASH, "kv_lora_rank": "512"}, "key 'kv_lora_rank' must be a whole number"),
    ({**GRANITE_SHARED, "shared_intermediate_size": "1024"}, "key 'shared_intermediate_size' must be a whole number"),
    (without(GRANITE_SHARED, "num_experts_per_tok"), "missing key 'num_experts_per_tok'"),
    (without(FLEXOLMO, "num_experts"), "missing key 'num_experts'"),
    ({**FLEXOLMO, "num_experts_per_tok": 8}, "top-k=8 cannot exceed experts=7"),
    (without(TRINITY_NANO, "moe_intermediate_size"), "missing key 'moe_intermediate_size'"),
    ({**TRINITY_NANO, "num_dense_layers": 56}, "key 'num_dense_layers' (56) leaves no MoE layer among 56"),
    ({**TRINITY_NANO, "global_attn_every_n_layers": 0}, "key 'global_attn_every_n_layers' must be >= 1"),
    ({**TRINITY_MINI, "layer_types": TRINITY_MINI_LAYERS}, "key 'layer_types' must list one attention kind per layer"),
], ids=["glm_experts", "glm_zero_experts", "glm_kind", "glm_all_dense", "glm_rank", "granite_shared", "granite_top_k",
        "flex_experts", "flex_top_k", "afmoe_expert_ffn", "afmoe_all_dense", "afmoe_period", "afmoe_layer_types"])
def test_a_bad_key_is_one_line(tmp_path: Path, cfg: dict[str, Any], expected: str) -> None:
    assert expected in config_error(tmp_path, cfg)


@pytest.mark.parametrize(("cfg", "uncounted"), [
    (GLM47_FLASH, 0),
    (GRANITE_SHARED, 0),
    (FLEXOLMO, 32 * (4096 + 4096 - 256)),  # q_norm and k_norm over the whole projections, counted per head
    (TRINITY_NANO, 54 * 128),  # expert_bias, a parameter without gradient, on each of the 54 MoE layers
    (TRINITY_MINI, 30 * 128),
], ids=["glm4_moe_lite", "granitemoeshared", "flex_olmo", "afmoe_nano", "afmoe_mini"])
def test_counts_equal_transformers_modules(tmp_path: Path, transformers_numel: Callable[[dict[str, Any]], int],
                                           cfg: dict[str, Any], uncounted: int) -> None:
    """transformers builds each model on the meta device from the same config.json; rigplan counts the same parameters
    to the unit, but for what the readers' notes name (GLM's MTP layer and selection bias are not in its module)."""
    assert count_params(_read(tmp_path, cfg)[0]).total + uncounted == transformers_numel(cfg)
