"""count_params on tiny models whose counts are worked out by hand."""

from __future__ import annotations

import pytest

from rigplan.domain.model import Architecture, MoE
from rigplan.estimate.params import count_params


def test_tiny_two_layer_llama_style_model() -> None:
    """2 layers, hidden 8, 2 query heads and 1 kv head of dim 4, gated MLP 16, vocab 10, untied, RMSNorm.

    embedding      10 * 8                          =   80
    lm_head        10 * 8 (untied)                 =   80
    per layer
      attention    q 8*8 + k 8*4 + v 8*4 + o 8*8   =  192
      MLP          gate, up, down: 3 * 8 * 16      =  384
      norms        2 RMSNorms * 8                  =   16
                                                   =  592  x 2 layers = 1184
    final norm     8                               =    8
    total          80 + 80 + 1184 + 8              = 1352
    """
    arch = Architecture(id="tiny", num_layers=2, hidden=8, num_heads=2, num_kv_heads=1, ffn=16, vocab=10)
    counts = count_params(arch)
    assert counts.embedding == 80
    assert counts.lm_head == 80
    assert counts.dense_layer.attention == 192
    assert counts.dense_layer.mlp_dense == 384
    assert counts.dense_layer.norms == 16
    assert counts.dense_layer.total == 592
    assert counts.final_norm == 8
    assert counts.total == 1352
    assert counts.active == counts.total
    assert counts.non_embedding == 1352 - 160


def test_tiny_two_layer_moe_model() -> None:
    """The model above with layer 2 made MoE: 4 experts of ffn 8, top-2, router without bias.

    dense layer 1                                  =  592
    MoE layer 2
      attention                                    =  192
      router       8 * 4                           =   32
      experts      4 * (3 * 8 * 8 = 192)           =  768
      norms                                        =   16
                                                   = 1008
    total          80 + 80 + 592 + 1008 + 8        = 1768
    active         1768 - (4 - 2) * 192            = 1384
    """
    arch = Architecture(
        id="tiny-moe", num_layers=2, hidden=8, num_heads=2, num_kv_heads=1, ffn=16, vocab=10,
        moe=MoE(num_experts=4, top_k=2, expert_ffn=8, first_dense_layers=1),
    )
    counts = count_params(arch)
    assert counts.moe_layer is not None
    assert counts.moe_layer.total == 1008
    assert counts.total == 1768
    assert counts.active == 1384


def test_tiny_two_layer_gpt2_style_model() -> None:
    """2 layers, hidden 4, 2 heads, plain MLP 16, vocab 10, 6 learned positions, tied, LayerNorm and biases.

    embedding      10 * 4 + 6 * 4 (positions)      =   64
    lm_head        tied                            =    0
    per layer
      attention    4 * 4*4 + q,k,v bias 12 + o bias 4 =  80
      MLP          2 * 4*16 + biases 16 + 4        =  148
      norms        2 LayerNorms * (4 + 4)          =   16
                                                   =  244  x 2 layers = 488
    final norm     4 + 4                           =    8
    total          64 + 488 + 8                    =  560
    """
    arch = Architecture(
        id="tiny-gpt2", num_layers=2, hidden=4, num_heads=2, ffn=16, vocab=10, mlp="plain",
        positions="learned", max_positions=6, tied_embeddings=True, norm="layernorm", norm_bias=True,
        qkv_bias=True, attn_out_bias=True, mlp_bias=True,
    )
    counts = count_params(arch)
    assert counts.embedding == 64
    assert counts.lm_head == 0
    assert counts.dense_layer.total == 244
    assert counts.total == 560


def test_llama4_maverick_interleaves_dense_and_moe_layers() -> None:
    from rigplan.catalog.load import load_catalog

    arch = load_catalog().model("llama-4-maverick").to_domain()
    assert arch.moe is not None and arch.moe.moe_layer_step == 2 and arch.moe.first_dense_layers == 0
    assert (arch.num_moe_layers, arch.num_dense_layers) == (24, 24)
    counts = count_params(arch)
    assert counts.total == pytest.approx(400.71e9, rel=2e-4)  # config.json text decoder, exact to 0.01%


def test_mtp_module_weights_sit_on_the_last_stage() -> None:
    from dataclasses import replace

    from rigplan.catalog.load import load_catalog
    from rigplan.domain.job import Job
    from rigplan.domain.layout import Layout
    from rigplan.estimate.states import model_states

    arch = load_catalog().model("deepseek-v3").to_domain()
    assert arch.moe is not None and arch.moe.mtp_layers == 1
    without = arch.with_overrides(moe=replace(arch.moe, mtp_layers=0))
    layout = Layout(tp=1, pp=16, dp=128, ep=64, zero=1)
    counts = count_params(arch)
    assert counts.moe_layer is not None
    extra = float(model_states(arch, Job(), layout, 15).local_params) - float(
        model_states(without, Job(), layout, 15).local_params)
    module_dense = counts.moe_layer.total - counts.moe_layer.experts + 2 * 7168 * 7168 + 3 * counts.final_norm
    assert extra == pytest.approx(module_dense + counts.embedding + counts.moe_layer.experts / 64)
    # Other stages are unchanged, and the published totals still leave the module out.
    assert float(model_states(arch, Job(), layout, 3).local_params) == float(
        model_states(without, Job(), layout, 3).local_params)
    assert counts.total == count_params(without).total
