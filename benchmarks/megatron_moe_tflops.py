"""Megatron's reported "TFLOP/s/GPU" of a Qwen3 or DeepSeek-V3 MoE run, converted to tokens/s per GPU for the MoE suite.

Megatron-LM prints throughput as num_floating_point_operations(args, batch) / (step time * GPUs)
(megatron/training/training.py, transformer_flops()). For a GQA model whose every layer is MoE, with no
shared expert, no MTP and no MLA, that function counts per token:

    F = 6 * h * (3 * moe_ffn * top_k) * L                      routed experts (SwiGLU: 3 GEMMs)
      + 6 * L * (h * (q + 2 * kv) + q * s + q * h)              qkv proj, causal core (q*s/2 * 2), out proj
      + 6 * h * V_padded                                         logits

q = heads * kv_channels, kv = query_groups * kv_channels, V padded to make_vocab_size_divisible_by (1187
in the Qwen3 recipes: 151,936). The router, norms and softmax are not counted. So a row's tokens/s per
GPU is TFLOP/s * 1e12 / F, independent of batch and layout.

Check: the Megatron-FSDP Qwen3-30B-A3B README (GB200, GBS 128 x 4,096, 8 GPUs) prints 5,011.35 ms
and 300.85 TFLOP/s/GPU; 128 * 4096 * F / 5.01135 / 8 reproduces 300.9.

DeepSeek-V3 (multi-latent attention, 3 dense layers, a shared expert, optional MTP layers) takes the MLA branch of
the same function (DeepSeekMLA below): per token and layer 6 x (q_lora·(h + n(d_qk + d_rope) + 1) + kv_lora·(h +
n(d_qk + d_v) + 1) + h·d_rope + n·d_v·h + s·n(d_qk + d_rope)/2 + s·n·d_v/2), the MLP terms of the dense, routed and
shared FFNs, an MTP layer's norms and projection, and the logits once per MTP layer plus one. Check: with one MTP
layer it gives 259.99 GFLOP per token, and Megatron-Bridge 26.06 prints 1,648 TFLOP/s/GPU at 6,338 tokens/s/GPU for
DeepSeek-V3 on GB300 (260.02).

Run: python benchmarks/megatron_moe_tflops.py
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QwenMoE:
    layers: int
    hidden: int
    heads: int
    query_groups: int
    kv_channels: int
    moe_ffn: int
    top_k: int
    vocab_padded: int

    def megatron_flop_per_token(self, seq_len: int) -> float:
        q = self.heads * self.kv_channels
        kv = self.query_groups * self.kv_channels
        h = self.hidden
        experts = 6 * h * 3 * self.moe_ffn * self.top_k * self.layers
        attention = 6 * self.layers * (h * (q + 2 * kv) + q * seq_len + q * h)
        logits = 6 * h * self.vocab_padded
        return float(experts + attention + logits)


@dataclass(frozen=True)
class DeepSeekMLA:
    layers: int
    dense_layers: int
    hidden: int
    heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_head_dim: int
    qk_rope_dim: int
    v_head_dim: int
    ffn: int
    moe_ffn: int
    top_k: int
    shared_ffn: int
    vocab_padded: int

    def megatron_flop_per_token(self, seq_len: int, mtp_layers: int = 0) -> float:
        n, h = self.heads, self.hidden
        layers = self.layers + mtp_layers
        moe_layers = self.layers - self.dense_layers + mtp_layers  # the last layer is MoE, so MTP layers are too
        q_term = self.q_lora_rank * (h + n * (self.qk_head_dim + self.qk_rope_dim) + 1)
        attention = 6 * layers * (
            q_term + self.kv_lora_rank * (h + n * (self.qk_head_dim + self.v_head_dim) + 1) + h * self.qk_rope_dim
            + n * self.v_head_dim * h + seq_len * n * (self.qk_head_dim + self.qk_rope_dim) * 0.5
            + seq_len * n * self.v_head_dim * 0.5)
        mlp = 12 * h * 1.5 * (self.ffn * self.dense_layers + (self.moe_ffn * self.top_k + self.shared_ffn) * moe_layers)
        mtp = 6 * mtp_layers * (3 * h + 2 * h * h)
        logits = 6 * h * self.vocab_padded * (mtp_layers + 1)
        return float(mlp + attention + mtp + logits)


# DeepSeek-V3 as the Megatron-LM GB200 reproduce guide launches it (vocab 129,280 = 40 x 3,232)
DEEPSEEK_V3 = DeepSeekMLA(layers=61, dense_layers=3, hidden=7168, heads=128, q_lora_rank=1536, kv_lora_rank=512,
                          qk_head_dim=128, qk_rope_dim=64, v_head_dim=128, ffn=18432, moe_ffn=2048, top_k=8,
                          shared_ffn=2048, vocab_padded=129280)

# Shapes as the Megatron-LM recipes give them (examples/moe_recipes/qwen3_*/**/*.yaml, ARGS).
QWEN3_30B = QwenMoE(layers=48, hidden=2048, heads=32, query_groups=4, kv_channels=128, moe_ffn=768, top_k=8,
                    vocab_padded=151936)
QWEN3_235B = QwenMoE(layers=94, hidden=4096, heads=64, query_groups=4, kv_channels=128, moe_ffn=1536, top_k=8,
                     vocab_padded=151936)

ROWS: list[tuple[str, QwenMoE, float]] = [
    ("recipes-h100-qwen3-235b-bf16", QWEN3_235B, 302.0),
    ("recipes-gb200-qwen3-235b-mxfp8-full-cg", QWEN3_235B, 1208.3),
    ("recipes-gb200-qwen3-235b-mxfp8-partial-cg", QWEN3_235B, 876.2),
    ("recipes-gb300-qwen3-235b-mxfp8-full-cg", QWEN3_235B, 1396.1),
    ("recipes-h100-qwen3-30b-fp8", QWEN3_30B, 242.9),
    ("recipes-h100-qwen3-30b-bf16", QWEN3_30B, 240.5),
    ("recipes-gb200-qwen3-30b-bf16", QWEN3_30B, 504.2),
    ("recipes-gb200-qwen3-30b-mxfp8-partial-cg", QWEN3_30B, 480.3),
    ("recipes-gb200-qwen3-30b-mxfp8-paged-stash", QWEN3_30B, 598.1),
    ("bridge4439-b200-qwen3-30b-mxfp8", QWEN3_30B, 562.0),
    ("bridge4439-b200-qwen3-30b-bf16", QWEN3_30B, 552.0),
]


def main() -> None:
    seq = 4096
    check = 128 * seq * QWEN3_30B.megatron_flop_per_token(seq) / 5.01135 / 8 / 1e12
    print(f"check: Megatron-FSDP Qwen3-30B-A3B 5,011.35 ms -> {check:.2f} TFLOP/s/GPU (printed 300.85)")
    for name, model in (("qwen3-30b-a3b", QWEN3_30B), ("qwen3-235b-a22b", QWEN3_235B)):
        print(f"{name}: {model.megatron_flop_per_token(seq) / 1e9:.3f} GFLOP per token (seq {seq})")
    for row, model, tflops in ROWS:
        tokens = tflops * 1e12 / model.megatron_flop_per_token(seq)
        print(f"{row}: {tflops:.1f} TFLOP/s/GPU -> {tokens:,.0f} tokens/s/GPU")
    with_mtp = DEEPSEEK_V3.megatron_flop_per_token(seq, mtp_layers=1)
    print(f"check: deepseek-v3 with one MTP layer {with_mtp / 1e9:.3f} GFLOP per token; Megatron-Bridge 26.06 GB300 "
          f"prints 1,648 TFLOP/s at 6,338 tokens/s ({1648e12 / 6338 / 1e9:.3f})")
    plain = DEEPSEEK_V3.megatron_flop_per_token(seq)
    print(f"deepseek-v3 without MTP: {plain / 1e9:.3f} GFLOP per token (seq {seq})")
    print(f"megatron-gb200-deepseek-v3-mxfp8-guide: 970.01 TFLOP/s/GPU -> {970.01e12 / plain:,.0f} tokens/s/GPU")


if __name__ == "__main__":
    main()
