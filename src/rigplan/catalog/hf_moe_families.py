"""config.json readers for the MoE families that reuse another family's layout with their own keys: MiniMax-M2,
ERNIE 4.5 MoE, Hunyuan-A13B and DeepSeek-V3.2. Each returns the fields and notes on what it assumed, as the
readers of hf_families.py do; hf_config.py joins the two tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rigplan.catalog.hf_families import deepseek_fields, routed_every_layer
from rigplan.catalog.hf_reader import ConfigReader, moe_layer_split, standard
from rigplan.domain.model import MoE


def _minimax_m2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """MiniMax-M2 (transformers MiniMaxM2Config): every layer routed over num_local_experts experts of
    intermediate_size, sigmoid scores with a selection bias (MiniMaxM2TopKRouter), QK norm; active parameters
    counted without the input embedding, as the catalog record of MiniMax-M2 does."""
    fields = routed_every_layer(r, "num_local_experts", qk_norm=True, router="sigmoid")
    fields["active_excludes_input_embedding"] = True
    return fields, ["q and k norms counted per head (MiniMax-M2 normalises the whole projection: a few thousand "
                    "parameters more a layer)", "router e_score_correction_bias not counted"]


def _ernie4_5_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """ERNIE 4.5 MoE (Baidu; transformers Ernie4_5_MoeConfig): layer i is routed when (i + 1) %
    moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last layer), the
    others keep a dense MLP of intermediate_size; moe_num_experts routed experts of moe_intermediate_size, top
    moe_k, and moe_num_shared_experts shared experts of the same width; use_bias puts a bias on every
    projection."""
    fields = standard(r, tie_default=True)
    bias = r.flag("use_bias", False)
    fields.update(qkv_bias=bias, attn_out_bias=bias, mlp_bias=bias)
    layers = fields["num_layers"]
    start = r.opt_int("moe_layer_start_index", default=1)
    end_raw = r.cfg.get("moe_layer_end_index", -1)
    end = layers - 1 if end_raw == -1 else r.opt_int("moe_layer_end_index")
    interval = r.opt_int("moe_layer_interval", default=1)
    if interval < 1:
        raise r.fail(f"key 'moe_layer_interval' must be >= 1, got {interval}")
    routed = [i for i in range(layers) if (i + 1) % interval == 0 and start <= i <= end]
    if not routed:
        raise r.fail(f"keys 'moe_layer_start_index' ({start}), 'moe_layer_end_index' ({end_raw}) and "
                     f"'moe_layer_interval' ({interval}) leave no MoE layer among {layers}")
    dense, notes = moe_layer_split(layers, [i for i in range(layers) if i not in routed])
    expert_ffn = r.req_int("moe_intermediate_size")
    shared = r.opt_int("moe_num_shared_experts")
    fields["moe"] = MoE(num_experts=r.req_int("moe_num_experts"), top_k=r.req_int("moe_k"), expert_ffn=expert_ffn,
                        num_shared_experts=shared, shared_expert_ffn=expert_ffn if shared else 0,
                        first_dense_layers=dense)
    return fields, [*notes, "router e_score_correction_bias (moe_statics) not counted"]


def _hunyuan_v1_moe(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Hunyuan MoE (Tencent Hunyuan-A13B; transformers HunYuanMoEV1Config): every layer routed over num_experts
    experts with one shared MLP beside them, all of intermediate_size (moe_intermediate_size when the config
    gives it), top moe_topk; q and k RMSNorms per head. num_experts, moe_topk, moe_intermediate_size and
    num_shared_expert may be per-layer lists; rigplan takes them when uniform."""
    fields = standard(r, tie_default=False)
    attention_bias = r.flag("attention_bias", False)
    fields.update(qkv_bias=attention_bias, attn_out_bias=attention_bias, qk_norm=True)
    expert_ffn = r.uniform_int("moe_intermediate_size", fields["ffn"])
    shared = r.uniform_int("num_shared_expert", 1)
    fields["moe"] = MoE(num_experts=r.uniform_int("num_experts", 0) or r.req_int("num_experts"),
                        top_k=r.uniform_int("moe_topk", 0) or r.req_int("moe_topk"), expert_ffn=expert_ffn,
                        num_shared_experts=shared, shared_expert_ffn=expert_ffn if shared else 0)
    return fields, []


def _deepseek_v32(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """DeepSeek-V3.2: DeepSeek-V3's layers (MLA, routed and shared experts, MTP) with DeepSeek Sparse Attention,
    a lightning indexer that picks index_topk keys for each query."""
    fields, notes = deepseek_fields(r)
    topk = r.opt_int("index_topk")
    heads, head_dim = r.opt_int("index_n_heads"), r.opt_int("index_head_dim")
    indexer = (f"the lightning indexer ({heads} heads of {head_dim}, about "
               f"{(r.opt_int('q_lora_rank') * heads * head_dim + fields['hidden'] * (head_dim + heads)) / 1e6:.0f}M "
               "parameters a layer) not counted") if heads and head_dim else "the lightning indexer not counted"
    sparse = (f"DeepSeek Sparse Attention timed as dense MLA: beyond {topk:,} tokens each query attends to "
              f"{topk:,} keys, so attention past that length is overestimated") if topk else \
        "DeepSeek Sparse Attention timed as dense MLA"
    return fields, [*notes, indexer, sparse]


MOE_FAMILIES: dict[str, Callable[[ConfigReader], tuple[dict[str, Any], list[str]]]] = {
    "deepseek_v32": _deepseek_v32,
    "ernie4_5_moe": _ernie4_5_moe,
    "hunyuan_v1_moe": _hunyuan_v1_moe,
    "minimax_m2": _minimax_m2,
}
