"""What torchtune's own modules save for backward, per decoder layer and token, and per logit at the loss.

torchtune (pytorch/torchtune) writes its Llama models in plain PyTorch; rigplan's `--kernels torchtune` stack
(src/rigplan/estimate/torchtune.py) counts what they save. This script rebuilds those modules as torchtune's
sources write them (not imported: torchtune is not a rigplan dependency) and counts, with
saved_tensors_hooks, the bytes autograd keeps for one TransformerSelfAttentionLayer per token (by storage:
a saved view holds its whole base; parameters and the RoPE cache buffer excluded), and what
CEWithChunkedOutputLoss keeps per logit after its forward.

The modules, with the file and commit each was read from:
- RMSNorm: torchtune/modules/rms_norm.py @ 1b0918f: x.float(), x * rsqrt(mean(x^2) + eps), .type_as(x),
  then * scale.
- RotaryPositionalEmbeddings: torchtune/modules/position_embeddings.py @ 01306df: x.float() reshaped into
  pairs, multiplied with the fp32 cos/sin cache (a buffer), stacked, flattened, .type_as(x).
- MultiHeadAttention: torchtune/modules/attention.py @ 00c242b: q/k/v projections, RoPE on q and k, k and v
  expanded to num_heads and reshaped (copies under GQA), F.scaled_dot_product_attention(is_causal=True)
  (torchtune/modules/attention_utils.py without a packing mask), output.transpose(1, 2).contiguous().view,
  output_proj.
- FeedForward: torchtune/modules/feed_forward.py @ 1e30bc6: w2(silu(w1(x)) * w3(x)).
- LoRALinear: torchtune/modules/peft/lora.py @ 031d89b: F.linear(x, W) + (alpha / rank) *
  lora_b(lora_a(dropout(x))), dropout nn.Identity when lora_dropout is 0 (the builders' default since late 2024).
- TransformerSelfAttentionLayer: torchtune/modules/transformer.py: h = sa_norm(x); h = attn(h, h) + x;
  out = h + mlp(mlp_norm(h)).
- CEWithChunkedOutputLoss: torchtune/modules/loss/ce_chunked_output_loss.py @ 10ff7cd: for each of 8 chunks of
  the bf16 logits, F.cross_entropy(chunk.float(), labels, reduction="sum").

Usage: python benchmarks/torchtune_saved_tensors.py [--device cpu|cuda] [--json]
(tests/validation/test_torchtune_saved_tensors.py runs the same functions small on CPU against rigplan's count.)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

SHAPES: dict[str, dict[str, Any]] = {
    "llama2-mha": dict(hidden=256, heads=8, kv_heads=8, ffn=688, vocab=512),
    "llama3-gqa": dict(hidden=256, heads=8, kv_heads=2, ffn=896, vocab=1024),
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_fp32 = x.float()
        x_normed = (x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return x_normed * self.scale


class RotaryPositionalEmbeddings(nn.Module):
    def __init__(self, dim: int, max_seq_len: int = 4096, base: int = 10_000) -> None:
        super().__init__()
        theta = 1.0 / (base ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        seq_idx = torch.arange(max_seq_len, dtype=theta.dtype)
        idx_theta = torch.einsum("i, j -> ij", seq_idx, theta).float()
        self.register_buffer("cache", torch.stack([torch.cos(idx_theta), torch.sin(idx_theta)], dim=-1),
                             persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.size(1)
        rope_cache = self.cache[:seq_len]
        xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
        rope_cache = rope_cache.view(-1, xshaped.size(1), 1, xshaped.size(3), 2)
        x_out = torch.stack([
            xshaped[..., 0] * rope_cache[..., 0] - xshaped[..., 1] * rope_cache[..., 1],
            xshaped[..., 1] * rope_cache[..., 0] + xshaped[..., 0] * rope_cache[..., 1],
        ], -1)
        return x_out.flatten(3).type_as(x)


class LoRALinear(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, rank: int = 8, alpha: float = 16, dropout: float = 0.0) -> None:
        super().__init__()
        self.rank, self.alpha = rank, alpha
        self.weight = nn.Parameter(torch.empty(out_dim, in_dim).normal_(std=0.02))
        self.dropout: nn.Module = nn.Dropout(p=dropout) if dropout > 0.0 else nn.Identity()
        self.lora_a = nn.Linear(in_dim, rank, bias=False)
        self.lora_b = nn.Linear(rank, out_dim, bias=False)
        nn.init.zeros_(self.lora_b.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.linear(x, self.weight)
        lora_out = self.lora_a(self.dropout(x))
        lora_out = (self.alpha / self.rank) * self.lora_b(lora_out)
        return out + lora_out


def _linear(in_dim: int, out_dim: int, lora: bool) -> nn.Module:
    return LoRALinear(in_dim, out_dim) if lora else nn.Linear(in_dim, out_dim, bias=False)


class MultiHeadAttention(nn.Module):
    def __init__(self, cfg: dict[str, Any], targets: tuple[str, ...]) -> None:
        super().__init__()
        h, a, kv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
        self.num_heads, self.num_kv_heads, self.head_dim = a, kv, h // a
        self.q_proj = _linear(h, a * self.head_dim, "q" in targets)
        self.k_proj = _linear(h, kv * self.head_dim, "k" in targets)
        self.v_proj = _linear(h, kv * self.head_dim, "v" in targets)
        self.output_proj = _linear(a * self.head_dim, h, "o" in targets)
        self.pos_embeddings = RotaryPositionalEmbeddings(self.head_dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        b, s_x, _ = x.shape
        s_y = y.shape[1]
        q = self.q_proj(x)
        q_per_kv = self.num_heads // self.num_kv_heads
        q = q.view(b, s_x, self.num_kv_heads * q_per_kv, self.head_dim)
        q = self.pos_embeddings(q)
        q = q.transpose(1, 2)
        k = self.k_proj(y)
        v = self.v_proj(y)
        k = k.view(b, s_y, -1, self.head_dim)
        k = self.pos_embeddings(k)
        k = k.view(b, s_y, self.num_kv_heads, 1, self.head_dim)
        v = v.view(b, s_y, self.num_kv_heads, 1, self.head_dim)
        if self.num_heads != self.num_kv_heads:
            k = k.expand(b, s_y, self.num_kv_heads, q_per_kv, self.head_dim)
            v = v.expand(b, s_y, self.num_kv_heads, q_per_kv, self.head_dim)
        k = k.reshape(b, s_y, -1, self.head_dim).transpose(1, 2)
        v = v.reshape(b, s_y, -1, self.head_dim).transpose(1, 2)
        output = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
        output = output.transpose(1, 2).contiguous().view(b, s_x, -1)
        return self.output_proj(output)


class FeedForward(nn.Module):
    def __init__(self, cfg: dict[str, Any], targets: tuple[str, ...]) -> None:
        super().__init__()
        h, f = cfg["hidden"], cfg["ffn"]
        self.w1 = _linear(h, f, "gate" in targets)
        self.w2 = _linear(f, h, "down" in targets)
        self.w3 = _linear(h, f, "up" in targets)
        self.activation = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.activation(self.w1(x)) * self.w3(x))


class TransformerSelfAttentionLayer(nn.Module):
    def __init__(self, cfg: dict[str, Any], targets: tuple[str, ...]) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(cfg, targets)
        self.mlp = FeedForward(cfg, targets)
        self.sa_norm = RMSNorm(cfg["hidden"])
        self.mlp_norm = RMSNorm(cfg["hidden"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.sa_norm(x)
        attn_out = self.attn(h, h)
        h = attn_out + x
        mlp_out = self.mlp(self.mlp_norm(h))
        return h + mlp_out


def build_layer(shape: str, method: str, targets: tuple[str, ...] = ("q", "v"),
                device: str = "cpu") -> TransformerSelfAttentionLayer:
    """One decoder layer in bf16; 'full' trains every weight, 'lora' only the adapters (torchtune's
    set_trainable_params)."""
    torch.manual_seed(0)
    layer = TransformerSelfAttentionLayer(SHAPES[shape], targets if method == "lora" else ())
    layer = layer.to(device=device, dtype=torch.bfloat16)
    layer.attn.pos_embeddings.cache = layer.attn.pos_embeddings.cache.float()  # a buffer rope_init builds in fp32
    for name, param in layer.named_parameters():
        param.requires_grad_(method == "full" or "lora_" in name)
    return layer


def _storage_counter(excluded: set[int]) -> tuple[dict[int, int], Any]:
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in excluded:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    return seen, pack


def saved_bytes_per_token(layer: TransformerSelfAttentionLayer, seq: int, batch: int = 1) -> dict[str, float]:
    """Bytes the layer saves per token, counted once per storage. 'attention_output_copy' is the part the
    .contiguous() after SDPA copied (0 where SDPA writes (b, s, heads, d) and transposes, as the CUDA flash and
    memory-efficient kernels do): the same data is saved twice only when it is a copy."""
    device = next(layer.parameters()).device
    excluded = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    excluded.add(layer.attn.pos_embeddings.cache.untyped_storage().data_ptr())
    seen, pack = _storage_counter(excluded)
    x = torch.randn(batch, seq, layer.sa_norm.scale.numel(), device=device, dtype=torch.bfloat16).requires_grad_(True)
    copies: list[int] = []
    sdpa = F.scaled_dot_product_attention

    def watched_sdpa(*args: Any, **kwargs: Any) -> torch.Tensor:
        out = sdpa(*args, **kwargs)
        if not out.transpose(1, 2).is_contiguous():
            copies.append(out.numel() * out.element_size())
        return out

    F.scaled_dot_product_attention = watched_sdpa  # type: ignore[assignment]
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda s: s):
            out = layer(x)
    finally:
        F.scaled_dot_product_attention = sdpa  # type: ignore[assignment]
    del out
    tokens = batch * seq
    trainable_proj = any(p.requires_grad for p in layer.attn.output_proj.parameters())
    copy = sum(copies) / tokens if trainable_proj else 0.0
    return {"saved": sum(seen.values()) / tokens, "attention_output_copy": copy}


def chunked_loss_bytes_per_logit(vocab: int = 4096, tokens: int = 512, chunks: int = 8,
                                 device: str = "cpu") -> float:
    """Bytes CEWithChunkedOutputLoss's forward leaves saved for backward, per logit (the bf16 logits
    themselves excluded: the recipe holds them until `del logits`)."""
    torch.manual_seed(0)
    logits = torch.randn(1, tokens, vocab, device=device, dtype=torch.bfloat16).requires_grad_(True)
    labels = torch.randint(0, vocab, (1, tokens), device=device)
    seen, pack = _storage_counter({logits.untyped_storage().data_ptr()})
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda s: s):
        total = torch.zeros((), device=device)
        pairs = zip(logits.tensor_split(chunks, dim=1), labels.tensor_split(chunks, dim=1), strict=True)
        for logit_chunk, label_chunk in pairs:
            total = total + F.cross_entropy(logit_chunk.reshape(-1, vocab).float(), label_chunk.reshape(-1),
                                            ignore_index=-100, reduction="sum")
    del total
    return sum(seen.values()) / (tokens * vocab)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for shape, cfg in SHAPES.items():
        for method in ("full", "lora"):
            layer = build_layer(shape, method, device=args.device)
            counted = saved_bytes_per_token(layer, args.seq)
            rows.append({"shape": shape, "method": method, "hidden": cfg["hidden"], **counted,
                         "saved_per_hidden": counted["saved"] / cfg["hidden"]})
    loss = chunked_loss_bytes_per_logit(device=args.device)
    if args.json:
        print(json.dumps({"device": args.device, "layers": rows, "chunked_loss_bytes_per_logit": loss}, indent=1))
        return
    for row in rows:
        print(f"{row['shape']:11s} {row['method']:5s} saved {row['saved']:9.1f} B/token "
              f"({row['saved_per_hidden']:.2f}·h; .contiguous() copy {row['attention_output_copy']:.0f} B)")
    print(f"CEWithChunkedOutputLoss: {loss:.2f} B per logit saved for backward")


if __name__ == "__main__":
    main()
