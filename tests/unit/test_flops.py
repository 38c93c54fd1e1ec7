"""FLOP counts: the Megatron-LM closed forms, 6·N, a hand-computed case, parallel splits."""

from __future__ import annotations

import numpy as np
import pytest

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import MLA, Architecture, MoE, sliding_windows
from rigplan.errors import InvalidSpec
from rigplan.estimate.flops import (
    causal_fraction_for,
    gpu_micro_batch_flops,
    layer_forward_flops,
    micro_batch_flops,
    mtp_forward_flops,
    paper_flop_per_token,
    window_pair_share,
)
from rigplan.estimate.params import count_params

L, H, V, S = 96, 12288, 51200, 2048


def gpt3() -> Architecture:
    return Architecture(
        id="gpt3-175b", num_layers=L, hidden=H, num_heads=96, ffn=4 * H, vocab=V, mlp="plain",
        positions="learned", max_positions=2048, tied_embeddings=True, norm="layernorm",
        norm_bias=True, qkv_bias=True, attn_out_bias=True, mlp_bias=True,
    )


def tiny(**kw: object) -> Architecture:
    base = Architecture(id="tiny", num_layers=2, hidden=8, num_heads=2, num_kv_heads=1, head_dim=4,
                        ffn=16, vocab=32)
    return base.with_overrides(**kw) if kw else base


@pytest.mark.parametrize("batch", [1, 4])
def test_gpt3_full_recompute_matches_narayanan_hardware_flops(batch: int) -> None:
    # Narayanan et al. 2021 (arXiv 2104.04473) Sec. 5.1: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
    job = Job(seq_len=S, micro_batch=batch, recompute="full", attention="eager")
    got = micro_batch_flops(gpt3(), job).hardware_flop
    want = 96 * batch * S * L * H**2 * (1 + S / (6 * H) + V / (16 * L * H))
    assert got == pytest.approx(want, rel=5e-3)
    assert got == pytest.approx(want, rel=1e-12)  # the same terms, so in fact exact


def test_gpt3_model_flops_without_recompute() -> None:
    # Per layer forward 24·B·s·h² + 4·B·s²·h, LM head 2·B·s·h·V; fwd + bwd = 3× forward:
    # 72·B·s·l·h²·(1 + s/(6h)) + 6·B·s·h·V = 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
    # Full recompute makes the layers 4× forward (3/4 of it is model FLOPs), the head stays 3×.
    job = Job(seq_len=S, micro_batch=2, recompute="none", attention="eager")
    r = micro_batch_flops(gpt3(), job)
    want = 72 * 2 * S * L * H**2 * (1 + S / (6 * H) + V / (12 * L * H))
    assert r.model_flop == pytest.approx(want, rel=1e-12)
    assert r.hardware_flop == pytest.approx(r.model_flop)  # eager: no flash backward recompute


def test_selective_recompute_adds_one_attention_core_forward() -> None:
    job = Job(seq_len=S, recompute="selective", attention="eager")
    r = micro_batch_flops(gpt3(), job)
    # + l·4·s²·h: 72·s·l·h²·(1 + s/(6h) + s/(18h) + V/(12·l·h))
    want = 72 * S * L * H**2 * (1 + S / (6 * H) + S / (18 * H) + V / (12 * L * H))
    assert r.hardware_flop == pytest.approx(want, rel=1e-12)
    assert r.recompute.attention_core_flop == pytest.approx(r.forward.attention_core_flop)


def test_six_n_rule_for_large_model_at_short_sequence() -> None:
    n = count_params(gpt3()).total
    for seq, tol in ((2048, 0.03), (512, 0.01)):
        r = micro_batch_flops(gpt3(), Job(seq_len=seq, attention="eager"))
        assert r.model_flop == pytest.approx(6 * n * seq, rel=tol)


def test_tiny_model_hand_computed() -> None:
    # h=8, a=2 heads, g=1 kv head, d=4, gated f=16, V=32, s=4, b=1 (T=4), flash (causal 0.5).
    r = micro_batch_flops(tiny(), Job(seq_len=4, micro_batch=1, attention="flash"))
    q = o = 2 * 4 * 8 * 8          # 512 each
    k = v = 2 * 4 * 8 * 4          # 256 each
    core = 2 * 1 * 4 * 4 * 2 * (4 + 4) * 0.5   # 256
    mlp = 3 * 2 * 4 * 8 * 16       # 3072
    head = 2 * 4 * 8 * 32          # 2048
    f = r.forward
    assert f.attention_proj_flop == 2 * (q + k + v + o)
    assert f.attention_core_flop == 2 * core
    assert f.mlp_flop == 2 * mlp
    assert f.lm_head_flop == head
    assert f.router_flop == 0 and f.adapter_flop == 0
    assert f.total_flop == 11776
    assert r.backward.total_flop == 2 * 11776
    assert r.model_flop == 3 * 11776
    # flash backward recomputes Q·K^T: half of the core forward of each layer.
    assert r.recompute.total_flop == 2 * core / 2
    assert r.hardware_flop == 3 * 11776 + 256
    assert r.tokens == 4
    no_bwd_recompute = micro_batch_flops(tiny(), Job(seq_len=4), flash_backward_recompute=False)
    assert no_bwd_recompute.hardware_flop == no_bwd_recompute.model_flop


def test_full_recompute_excludes_lm_head() -> None:
    r = micro_batch_flops(tiny(), Job(seq_len=4, recompute="full", attention="eager"))
    assert r.recompute.lm_head_flop == 0
    assert r.recompute.total_flop == r.forward.total_flop - r.forward.lm_head_flop


def test_lora_frozen_base_backward_is_one_forward_plus_adapters() -> None:
    job = Job(method="lora", seq_len=4, lora_rank=2, lora_targets=("q", "v"), attention="eager")
    r = micro_batch_flops(tiny(), job)
    # q: 8→8, v: 8→4; per token 2·r·(k+n): 2·2·16 + 2·2·12 = 112; T=4, 2 layers.
    assert r.forward.adapter_flop == 2 * 4 * 112
    b, f = r.backward, r.forward
    assert b.attention_proj_flop == f.attention_proj_flop
    assert b.mlp_flop == f.mlp_flop and b.lm_head_flop == f.lm_head_flop
    assert b.attention_core_flop == 2 * f.attention_core_flop
    assert b.adapter_flop == 2 * f.adapter_flop
    full = micro_batch_flops(tiny(), Job(seq_len=4, attention="eager"))
    assert r.model_flop < full.model_flop
    qlora = micro_batch_flops(tiny(), Job(method="qlora", seq_len=4, lora_rank=2, attention="eager"))
    assert qlora.model_flop == r.model_flop
    all_targets = Job(method="lora", seq_len=4, lora_rank=2, attention="eager",
                      lora_targets=("q", "k", "v", "o", "gate", "up", "down"))
    # + k 8→4, o 8→8, gate/up 8→16, down 16→8: 48 + 64 + 3·96 per token.
    extra = micro_batch_flops(tiny(), all_targets).forward.adapter_flop - r.forward.adapter_flop
    assert extra == 2 * 4 * (48 + 64 + 3 * 96)


def moe_mla() -> Architecture:
    return Architecture(
        id="dsv3-like", num_layers=6, hidden=64, num_heads=4, ffn=256, vocab=100,
        moe=MoE(num_experts=8, top_k=2, expert_ffn=32, num_shared_experts=1, first_dense_layers=2),
        mla=MLA(q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8),
    )


def test_matmul_flops_equal_two_per_active_weight_per_token() -> None:
    # Without biases, forward matmul FLOPs outside the attention core = 2·T·(active matmul weights).
    for arch in (moe_mla(), tiny(), gpt3().with_overrides(qkv_bias=False, attn_out_bias=False,
                                                           mlp_bias=False, num_layers=2)):
        p = count_params(arch)
        seq, batch = 16, 3
        r = micro_batch_flops(arch, Job(seq_len=seq, micro_batch=batch))
        latent_norms = (arch.mla.q_lora_rank + arch.mla.kv_lora_rank) * arch.num_layers if arch.mla else 0
        norms = p.dense_layer.norms * arch.num_layers + p.final_norm + latent_norms
        head = arch.vocab * arch.hidden  # tied or not, the LM head matmul runs
        weights = p.active - p.embedding - p.lm_head - norms + head
        got = r.forward.total_flop - r.forward.attention_core_flop
        assert got == pytest.approx(2 * batch * seq * weights, rel=1e-12)


def test_moe_layer_router_and_experts() -> None:
    arch = moe_mla()
    t = 5 * 2
    f = layer_forward_flops(arch, seq_len=5, micro_batch=2, moe=True)
    assert f.router_flop == 2 * t * 64 * 8
    assert f.expert_flop == 3 * 2 * t * 64 * 2 * 32  # top-2 routed
    assert f.mlp_flop == 3 * 2 * t * 64 * 1 * 32  # one shared expert
    dense = layer_forward_flops(arch, seq_len=5, micro_batch=2, moe=False)
    assert dense.mlp_flop == 3 * 2 * t * 64 * 256 and dense.router_flop == 0
    # MLA core: scores on qk_head_dim (12), P·V on v_head_dim (8); causal 0.5 by default.
    assert f.attention_core_flop == 2 * 2 * 25 * 4 * (12 + 8) * 0.5


def test_causal_fraction_defaults() -> None:
    assert causal_fraction_for("flash") == 0.5
    assert causal_fraction_for("eager") == 1.0
    with pytest.raises(InvalidSpec):
        causal_fraction_for("sdpa")
    eager = micro_batch_flops(tiny(), Job(seq_len=64, attention="eager"))
    flash = micro_batch_flops(tiny(), Job(seq_len=64, attention="flash"))
    assert flash.forward.attention_core_flop == eager.forward.attention_core_flop / 2


def test_per_gpu_tensor_and_context_parallel_split_the_work() -> None:
    arch, job = gpt3(), Job(seq_len=S, attention="eager")
    whole = micro_batch_flops(arch, job)
    gpu = gpu_micro_batch_flops(arch, job, Layout(tp=8, cp=2, dp=4))
    assert gpu.model_flop == pytest.approx(whole.model_flop / 16, rel=1e-12)
    assert gpu.tokens == S / 2


def test_per_gpu_pipeline_reports_last_stage_with_lm_head() -> None:
    arch, job = gpt3(), Job(seq_len=S, recompute="full", attention="eager")
    whole = micro_batch_flops(arch, job)
    gpu = gpu_micro_batch_flops(arch, job, Layout(pp=8))
    layers = whole.hardware_flop - 3 * whole.forward.lm_head_flop
    assert gpu.hardware_flop == pytest.approx(layers / 8 + 3 * whole.forward.lm_head_flop, rel=1e-12)
    assert gpu.forward.lm_head_flop == whole.forward.lm_head_flop
    # Uneven split: 96 layers over 7 stages -> 14 on the busiest.
    uneven = gpu_micro_batch_flops(arch, job, Layout(pp=7))
    assert uneven.forward.mlp_flop == pytest.approx(whole.forward.mlp_flop * 14 / 96)


def test_gqa_kv_projection_replicated_when_tp_exceeds_kv_heads() -> None:
    arch = tiny()  # one kv head
    one = layer_forward_flops(arch, seq_len=4, micro_batch=1, moe=False)
    two = layer_forward_flops(arch, seq_len=4, micro_batch=1, moe=False, tp=2)
    # Q and O halve (1024 -> 512), K and V stay whole (512).
    assert one.attention_proj_flop == 1536 and two.attention_proj_flop == 1024


def test_vectorized_matches_scalar_calls() -> None:
    arch, job = moe_mla(), Job(seq_len=128, micro_batch=1, recompute="selective")
    layout = Layout(tp=2, pp=2, dp=2, sequence_parallel=True)
    seqs = np.array([128, 1024, 8192])
    batches = np.array([4, 2, 1])
    tps = np.array([1, 2, 4])
    pps = np.array([1, 2, 3])
    vec = gpu_micro_batch_flops(arch, job, layout, seq_len=seqs, micro_batch=batches, tp=tps, pp=pps)
    assert isinstance(vec.hardware_flop, np.ndarray)
    for i in range(3):
        one = gpu_micro_batch_flops(arch, job, layout, seq_len=int(seqs[i]), micro_batch=int(batches[i]),
                                    tp=int(tps[i]), pp=int(pps[i]))
        assert isinstance(one.hardware_flop, float)
        assert vec.hardware_flop[i] == pytest.approx(one.hardware_flop, rel=1e-12)
        assert vec.forward.router_flop[i] == pytest.approx(one.forward.router_flop, rel=1e-12)
    whole = micro_batch_flops(arch, job, seq_len=seqs, micro_batch=batches)
    assert whole.model_flop.shape == (3,)


@pytest.mark.parametrize("model_id", ["gpt-oss-20b", "deepseek-v3", "qwen3-30b-a3b", "llama-3.1-8b"])
def test_weight_flops_are_6_n_without_the_embedding_lookup(model_id: str) -> None:
    """Forward + backward matmuls of the weights = 6·T·N with N = active_matmul (no input embedding:
    a gather), so the MFU numerator never counts the lookup (for gpt-oss-20b it would add 16%);
    DeepSeek-V3's multi-token-prediction module comes on top (not in its published counts)."""
    from rigplan.catalog.load import load_catalog

    arch = load_catalog().model(model_id).to_domain()
    job = Job(seq_len=2048, micro_batch=1)
    flops = micro_batch_flops(arch, job)
    core = flops.forward.attention_core_flop + flops.backward.attention_core_flop
    mtp = mtp_forward_flops(arch, seq_len=2048, micro_batch=1)
    weights_flop = flops.model_flop - core - 3 * (mtp.total_flop - mtp.attention_core_flop)
    n = count_params(arch).active_matmul
    assert weights_flop / (6 * 2048 * n) == pytest.approx(1.0, abs=0.005)


def test_window_pair_share_counts_the_band() -> None:
    # s = 8, w = 2 (discrete count 1 + 2·7 = 15 of 36; the continuous form s·w - w²/2 = 14 of 32)
    assert window_pair_share(8, 2) == pytest.approx((8 * 2 - 2 * 2 / 2) / (8 * 8 / 2))
    assert window_pair_share(4096, 4096) == 1.0 and window_pair_share(2048, 4096) == 1.0
    assert window_pair_share(4096, 0) == 1.0
    assert window_pair_share(32768, 4096) == pytest.approx(2 / 8 - 1 / 64)
    assert np.allclose(window_pair_share(np.array([1024.0, 8192.0]), 4096), [1.0, 0.75])


def test_sliding_window_layers_cost_their_window_in_the_attention_core() -> None:
    full = tiny(num_layers=6)
    local = full.with_overrides(attention_windows=sliding_windows(6, 512, 6))  # five local, one full (Gemma 3)
    job = Job(seq_len=4096)
    core_full = micro_batch_flops(full, job).forward.attention_core_flop
    core_local = micro_batch_flops(local, job).forward.attention_core_flop
    share = 512 / 4096
    assert core_local == pytest.approx(core_full * (5 * (2 * share - share**2) + 1) / 6)
    # projections and MLP do not change, and nothing changes when the window covers the sequence
    assert micro_batch_flops(local, job).forward.mlp_flop == micro_batch_flops(full, job).forward.mlp_flop
    short = Job(seq_len=512)
    assert micro_batch_flops(local, short).model_flop == pytest.approx(micro_batch_flops(full, short).model_flop)


def test_a_kernel_that_gets_the_window_as_a_mask_pays_full_cost() -> None:
    full = tiny(num_layers=2)
    local = full.with_overrides(attention_windows=(256, 256))
    for job in (Job(seq_len=4096, attention="eager"), Job(seq_len=4096, kernels="eager"),
                Job(seq_len=4096, kernels="fused", attention_kernel="triton")):
        assert micro_batch_flops(local, job).model_flop == micro_batch_flops(full, job).model_flop
    skipping = Job(seq_len=4096, kernels="eager", attention_kernel="fa2")
    assert micro_batch_flops(local, skipping).model_flop < micro_batch_flops(full, skipping).model_flop


def test_windows_need_one_size_per_layer() -> None:
    with pytest.raises(InvalidSpec, match="one size >= 0 per layer"):
        tiny(attention_windows=(128,))
    assert sliding_windows(4, 128, 2) == (128, 0, 128, 0) and sliding_windows(3, 64) == (64, 64, 64)
    assert sliding_windows(4, 0, 2) == ()


def test_paper_flops_are_narayanans_closed_form_for_gpt3() -> None:
    # 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) for B·s tokens (Narayanan et al. 2021, Sec. 5.1); rigplan's N also
    # holds biases and norms (0.01%), which the closed form leaves out.
    closed = 72 * L * H**2 * (1 + S / (6 * H) + V / (12 * L * H))
    assert paper_flop_per_token(gpt3(), S) == pytest.approx(closed, rel=2e-4)


def test_paper_flops_are_palms_6n_plus_12lhqt_and_ignore_causality_and_windows() -> None:
    arch = tiny(num_layers=4)
    n = count_params(arch).active_matmul
    assert paper_flop_per_token(arch, 1024) == 6 * n + 12 * 4 * 2 * 4 * 1024  # L·H·Q·T with H=2, Q=4
    windowed = arch.with_overrides(attention_windows=(16, 16, 16, 16))
    assert paper_flop_per_token(windowed, 1024) == paper_flop_per_token(arch, 1024)
    # rigplan's own count halves the causal core (flash) and so is below the paper's
    job = Job(seq_len=1024)
    assert micro_batch_flops(arch, job).model_flop / 1024 < paper_flop_per_token(arch, 1024)
