"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the indexers counted to the parameter, the sparse core and the
indexer's FLOPs, its saved bytes, the reader's index sharing, and what the step costs at long context."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rigplan.catalog.hf_config import architecture_from_hf_config
from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture, SparseAttention
from rigplan.errors import InvalidSpec
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.flops import micro_batch_flops, window_pair_share
from rigplan.estimate.params import count_params
from rigplan.estimate.sparse_attention import INDEX_BYTES, cp_gathered_width, indexer_params
from rigplan.estimate.step import step_time

DSV32_TOTAL = 671_877_929_216
"""transformers' DeepseekV32ForCausalLM from DeepseekV32Config() (DeepSeek-V3.2's shape), counted on the meta device."""
GLM5_TOTAL = 743_911_199_232
"""transformers' GlmMoeDsaForCausalLM from GlmMoeDsaConfig() (zai-org/GLM-5's shape), counted on the meta device."""

SMALL_GLM = {  # a cut glm_moe_dsa config: GLM-5's kinds of layer at small widths, with index sharing
    "model_type": "glm_moe_dsa", "vocab_size": 512, "hidden_size": 256, "intermediate_size": 512,
    "moe_intermediate_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4,
    "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
    "q_lora_rank": 96, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
    "index_topk": 64, "index_n_heads": 4, "index_head_dim": 32, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
    "tie_word_embeddings": False, "indexer_types": ["full", "shared", "shared", "full", "shared", "full"],
}


def _write(tmp_path: Path, cfg: dict[str, Any]) -> Path:
    path = tmp_path / f"{cfg['model_type']}-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def _model(model_id: str) -> Architecture:
    return load_catalog().model(model_id).to_domain()


def _transformers_numel(cfg: dict[str, Any]) -> int:
    """Parameters of transformers' model for this config, built on the meta device (skips without them)."""
    pytest.importorskip("torch", reason="torch is not installed: pip install 'rigplan[frameworks]'")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: pip install "
                                                              "'rigplan[frameworks]'")
    if not hasattr(transformers, "GlmMoeDsaConfig"):
        pytest.skip("this transformers has no GlmMoeDsaConfig")
    import torch

    keys = {k: v for k, v in cfg.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(cfg["model_type"], **keys)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def test_catalog_counts_equal_transformers_to_the_parameter() -> None:
    assert count_params(_model("deepseek-v3.2")).total == DSV32_TOTAL
    assert count_params(_model("glm-5")).total == GLM5_TOTAL
    # DeepSeek-V3.2 is V3's shape and 61 indexers: wq_b 1536 x 64·128, wk 7168 x 128, k_norm 2·128, weights 7168 x 64
    v3 = count_params(_model("deepseek-v3.1")).total
    assert DSV32_TOTAL - v3 == 61 * indexer_params(_model("deepseek-v3.2")) == 61 * 13_959_424


def test_a_cut_config_with_index_sharing_counts_as_transformers(tmp_path: Path) -> None:
    """Layers 'shared' in indexer_types have no indexer of their own, in rigplan's count as in transformers'."""
    arch = architecture_from_hf_config(_write(tmp_path, SMALL_GLM))
    assert arch.sparse_attention == SparseAttention(topk=64, indexer_heads=4, indexer_head_dim=32,
                                                    indexer_layers=(0, 3, 5))
    assert "3 of 6 layers run their own indexer" in " ".join(arch.notes)
    assert count_params(arch).total == _transformers_numel(SMALL_GLM)
    every = {k: v for k, v in SMALL_GLM.items() if k != "indexer_types"}
    assert count_params(architecture_from_hf_config(_write(tmp_path, every))).total == _transformers_numel(every)


def test_glm_5_2_shares_its_indexers_as_its_config_says(tmp_path: Path) -> None:
    """GLM-5.2's index_topk_freq 4 from offset 3 reads as the catalog's 21 indexer layers, and the count is the one
    Megatron-Bridge's GLM-5.2 card prints for transformers' GlmMoeDsaForCausalLM."""
    catalog = _model("glm-5.2")
    assert count_params(catalog).total == 743_377_000_704
    cfg = {k: v for k, v in SMALL_GLM.items() if k != "indexer_types"}
    read = architecture_from_hf_config(_write(tmp_path, {**cfg, "num_hidden_layers": 78, "index_topk_freq": 4,
                                                         "index_skip_topk_offset": 3}))
    assert catalog.sparse_attention is not None and read.sparse_attention is not None
    assert read.sparse_attention.indexer_layers == catalog.sparse_attention.indexer_layers
    assert GLM5_TOTAL - count_params(catalog).total == 57 * indexer_params(catalog)


def test_the_index_sharing_schedule_reads_as_megatron_and_transformers(tmp_path: Path) -> None:
    """index_topk_freq 4 from offset 3: layers 0, 1, 2 run their own indexer, then every fourth from layer 6."""
    cfg = {k: v for k, v in SMALL_GLM.items() if k != "indexer_types"}
    arch = architecture_from_hf_config(_write(tmp_path, {**cfg, "num_hidden_layers": 12, "index_topk_freq": 4,
                                                         "index_skip_topk_offset": 3}))
    assert arch.sparse_attention is not None and arch.sparse_attention.indexer_layers == (0, 1, 2, 6, 10)
    pattern = architecture_from_hf_config(_write(tmp_path, {**cfg, "index_topk_pattern": "FSFSSS"}))
    assert pattern.sparse_attention is not None and pattern.sparse_attention.indexer_layers == (0, 2)


@pytest.mark.parametrize(("changes", "expected"), [
    ({"indexer_types": ["shared", "full", "full", "full", "full", "full"]}, "the first 'full'"),
    ({"indexer_types": ["full"] * 5}, "for each of the 6 layers"),
    ({"index_topk_freq": 0, "indexer_types": None}, "index_topk_freq' must be >= 1"),
    ({"mlp_layer_types": ["dense", "moe"]}, "mlp_layer_types' must give 'dense' or 'sparse'"),
    ({"q_lora_rank": None}, "q_lora_rank > 0"),
])
def test_bad_keys_are_one_clear_line(tmp_path: Path, changes: dict[str, Any], expected: str) -> None:
    cfg = {k: v for k, v in {**SMALL_GLM, **changes}.items() if v is not None}
    with pytest.raises(InvalidSpec) as info:
        architecture_from_hf_config(_write(tmp_path, cfg))
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_sparse_attention_needs_mla_with_a_query_latent() -> None:
    dense = _model("deepseek-v3.1")
    sparse = SparseAttention(topk=2048, indexer_heads=64, indexer_head_dim=128)
    with pytest.raises(InvalidSpec, match="q_lora_rank > 0"):
        _model("qwen3-8b").with_overrides(sparse_attention=sparse)
    with pytest.raises(InvalidSpec, match="beyond the model's 61 layers"):
        dense.with_overrides(sparse_attention=replace(sparse, indexer_layers=(0, 61)))
    with pytest.raises(InvalidSpec, match="starting at layer 0"):
        SparseAttention(topk=2048, indexer_heads=64, indexer_head_dim=128, indexer_layers=(1, 2))


def _no_mtp(model_id: str) -> Architecture:
    arch = _model(model_id)
    assert arch.moe is not None
    return arch.with_overrides(moe=replace(arch.moe, mtp_layers=0))


def test_fused_stack_forward_and_backward_flops_follow_the_formula() -> None:
    """One 131,072-token sequence: each query attends to min(i + 1, 2048) keys at MQA widths (576 and 512 per
    head), the indexer scores every causal pair with 64 heads of 128 and its backward runs over the selected ones."""
    arch = _no_mtp("deepseek-v3.2")
    s, k, layers, heads = 131072, 2048, 61, 128
    flops = micro_batch_flops(arch, Job(seq_len=s, micro_batch=1, kernels="fused"))
    selected = s * s / 2 * window_pair_share(s, k)
    assert selected == pytest.approx(s * k - k * k / 2)
    core = 2.0 * heads * (576 + 512) * selected
    score_per_pair = 2.0 * 64 * (128 + 1)
    indexer = s * s / 2 * score_per_pair
    assert flops.forward.attention_core_flop == pytest.approx(layers * (core + indexer))
    assert flops.backward.attention_core_flop == pytest.approx(layers * (2 * core + 2 * selected * score_per_pair))
    # the flash backward's score recompute and the KL target's scores, both over the selected pairs at MQA width
    assert flops.recompute.attention_core_flop == pytest.approx(layers * 2 * 2.0 * heads * 576 * selected)


def test_a_masked_stack_attends_densely_and_does_not_train_the_indexer() -> None:
    """transformers (--kernels hf): MHA-mode widths over every causal pair, the indexer's forward and no backward."""
    sparse, dense = _no_mtp("deepseek-v3.2"), _no_mtp("deepseek-v3.1")
    job = Job(seq_len=8192, micro_batch=1, kernels="hf")
    with_dsa, without = micro_batch_flops(sparse, job), micro_batch_flops(dense, job)
    indexer_scores = 61 * 8192 * 8192 / 2 * 2.0 * 64 * 129
    assert with_dsa.forward.attention_core_flop == pytest.approx(without.forward.attention_core_flop + indexer_scores)
    assert with_dsa.backward.attention_core_flop == pytest.approx(without.backward.attention_core_flop)


def test_the_sparse_core_grows_linearly_past_top_k_and_the_indexer_quadratically() -> None:
    arch = _no_mtp("deepseek-v3.2")
    core = {}
    for s in (65536, 131072):
        f = micro_batch_flops(arch, Job(seq_len=s, micro_batch=1, kernels="fused"))
        core[s] = float(f.forward.attention_core_flop) - 61 * s * s / 2 * 2.0 * 64 * 129
    assert core[131072] / core[65536] == pytest.approx((131072 * 2048 - 2048**2 / 2) / (65536 * 2048 - 2048**2 / 2))


def test_lora_leaves_the_indexer_frozen() -> None:
    arch = _no_mtp("deepseek-v3.2")
    full = micro_batch_flops(arch, Job(seq_len=32768, micro_batch=1, kernels="fused"))
    lora = micro_batch_flops(arch, Job(seq_len=32768, micro_batch=1, kernels="fused", method="lora"))
    assert lora.forward.attention_core_flop == pytest.approx(full.forward.attention_core_flop)
    indexer_scores = 61 * 32768 * 32768 / 2 * 2.0 * 64 * 129
    assert lora.backward.attention_core_flop == pytest.approx(
        2 * (full.forward.attention_core_flop - indexer_scores))


def test_each_indexer_layer_saves_its_selected_keys_and_its_inputs_on_every_tp_rank() -> None:
    arch, dense = _model("deepseek-v3.2"), _model("deepseek-v3.1")
    job = Job(seq_len=16384, micro_batch=1, kernels="fused")
    for tp in (1, 4):
        layout = Layout(tp=tp, sequence_parallel=tp > 1)
        extra = (layer_activation_bytes(arch, job, layout, moe_layer=True).saved_bytes
                 - layer_activation_bytes(dense, job, layout, moe_layer=True).saved_bytes)
        assert extra == pytest.approx(16384 * (2048 * INDEX_BYTES + 2 * (64 * 128 + 128 + 64)))


def test_long_context_steps_cost_less_with_sparse_attention() -> None:
    """The same 64-GPU layout at 128K tokens: DeepSeek-V3.2 attends to 2,048 keys a query where V3.1 attends to all."""
    gpu = load_catalog().gpu("h800-sxm").to_domain()
    layout = Layout(pp=8, cp=8, ep=8)
    job = Job(seq_len=131072, micro_batch=1, kernels="fused", recompute="full", global_batch=8)
    sparse = float(step_time(_model("deepseek-v3.2"), job, layout, gpu, global_batch=8).step_time_s)
    dense = float(step_time(_model("deepseek-v3.1"), job, layout, gpu, global_batch=8).step_time_s)
    assert sparse < 0.8 * dense


def test_context_parallel_gathers_the_latent_keys_instead_of_a_ring_of_heads() -> None:
    """DSA's CP exchange is an all-gather of r_kv + d_rope (+ d_I on indexer layers) per token and its reduce-scatter,
    exposed; the same layout with dense MLA passes every head's keys and values round the ring."""
    gpu = load_catalog().gpu("gb200").to_domain()
    arch = _model("glm-5.2")
    layout = Layout(pp=6, cp=32, ep=32)
    job = Job(seq_len=131072, micro_batch=1, kernels="fused", recompute="full", global_batch=56)
    sparse = step_time(arch, job, layout, gpu, global_batch=56)
    dense = step_time(arch.with_overrides(sparse_attention=None), job, layout, gpu, global_batch=56)
    assert sparse.comm_total_s is not None and dense.comm_total_s is not None
    assert float(sparse.comm_total_s["cp"]) < 0.1 * float(dense.comm_total_s["cp"])
    assert cp_gathered_width(arch) == pytest.approx(512 + 64 + 21 / 78 * 128)
