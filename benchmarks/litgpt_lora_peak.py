"""Peak memory of a lit-gpt (2023-10) LoRA fine-tuning step, measured on a CUDA GPU.

lit-gpt's resource tables (tutorials/resource-tables.md, measured at lit-gpt 8641822) print
torch.cuda.max_memory_allocated() of `finetune/lora.py` runs on Alpaca. This script rebuilds the modules
that step runs, written from lit-gpt's lit_gpt/model.py and lit_gpt/lora.py of late 2023 (not imported:
lit-gpt is not a rigplan dependency), with random bf16 weights, and measures

- the bytes autograd saves per layer and token (saved_tensors_hooks, counted by storage: a saved view
  holds its whole base tensor), and
- max_memory_allocated() of one training step at micro-batch 1 and 2, and its slope per sequence,

for each of the switches that decide them: the LoRA dropout (finetune/lora.py's lora_dropout = 0.05) and
whether RMSNorm computes in fp32 (lit_gpt/rmsnorm.py upcasts x.float() in later 2023 revisions).

What the modules do, as lit-gpt writes them:
- CausalSelfAttention: one merged qkv linear; view (B, T, groups, q_per_kv + 2, hs), permute, split; q and k
  roped on their first rope_n_elem channels against an fp32 cos/sin cache and concatenated back; v stays a
  view of the qkv output; SDPA with is_causal; proj.
- LoRAQKVLinear: pretrained(x) + zero_pad(conv1d(linear(dropout(x), A), B)) * scaling, LoRA on q and v (r=8,
  alpha=16).
- LLaMAMLP: proj(silu(fc_1(x)) * fc_2(x)); GptNeoxMLP: proj(gelu(fc(x))).
- GPT: wte, blocks, ln_f, the LM head applied in 128-token chunks (a list of logits), chunked cross-entropy
  in the logits' dtype.

Usage (needs torch with CUDA): python benchmarks/litgpt_lora_peak.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

SHAPES: dict[str, dict[str, Any]] = {
    # lit_gpt/config.py; seq: the longest Alpaca sample for the model's tokenizer (validation cases).
    "llama-2-7b": dict(layers=32, hidden=4096, heads=32, groups=32, ffn=11008, vocab=32000, norm="rms",
                       mlp="llama", parallel=False, shared_norm=False, rope=1.0, bias=False, seq=1304),
    "stablelm-base-alpha-3b": dict(layers=16, hidden=4096, heads=32, groups=32, ffn=16384, vocab=50688,
                                   norm="ln", mlp="neox", parallel=True, shared_norm=False, rope=0.25,
                                   bias=True, seq=1034),
    "phi-1_5": dict(layers=24, hidden=2048, heads=32, groups=32, ffn=8192, vocab=51200, norm="ln", mlp="neox",
                    parallel=True, shared_norm=True, rope=0.5, bias=True, seq=1044),
}


class RMSNorm(nn.Module):
    fp32 = False

    def __init__(self, size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        if self.fp32:
            x = x.float()
        norm_x = torch.mean(x * x, dim=-1, keepdim=True)
        x_normed = x * torch.rsqrt(norm_x + 1e-5)
        return (self.weight * x_normed).to(dtype=dtype)


class LoRAQKV(nn.Module):
    enabled = True
    """False: lit_gpt.model's plain qkv linear (finetune/full.py)."""

    def __init__(self, cfg: dict[str, Any], r: int = 8, alpha: int = 16) -> None:
        super().__init__()
        h, hs = cfg["hidden"], cfg["hidden"] // cfg["heads"]
        kv = cfg["groups"] * hs
        self.linear = nn.Linear(h, h + 2 * kv, bias=cfg["bias"])
        self.lora_A = nn.Parameter(torch.empty(2 * r, h).normal_(std=0.02))
        self.lora_B = nn.Parameter(torch.zeros(h + kv, r))
        self.scaling = alpha / r
        self.dropout = nn.Dropout(0.05)
        self.ind = torch.tensor(list(range(h)) + list(range(h + kv, h + 2 * kv)))
        self.widths = (h, kv)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pretrained = self.linear(x)
        if not self.enabled:
            return pretrained
        after_a = F.linear(self.dropout(x), self.lora_A)
        a_t, b_w = after_a.transpose(-2, -1), self.lora_B.unsqueeze(-1)
        if self.widths[0] == self.widths[1]:
            after_b = F.conv1d(a_t, b_w, groups=2).transpose(-2, -1)
        else:  # grouped queries: lit-gpt splits the input and weight and concatenates
            parts = zip(a_t.chunk(2, dim=1), b_w.split(self.widths), strict=True)
            after_b = torch.cat([F.conv1d(x_i, w_i) for x_i, w_i in parts], dim=1).transpose(-2, -1)
        t = after_b.transpose(0, 1)
        result = t.new_zeros((*t.shape[:-1], self.linear.out_features)).view(-1, self.linear.out_features)
        result = result.index_copy(1, self.ind.to(result.device), t.reshape(-1, after_b.shape[-1]))
        lora = result.view((*t.shape[:-1], self.linear.out_features)).transpose(0, 1) * self.scaling
        return pretrained + lora


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.size(-1) // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return ((x * cos) + (rotated * sin)).to(dtype=x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.cfg = cfg
        self.hs = cfg["hidden"] // cfg["heads"]
        self.rope_n = int(cfg["rope"] * self.hs)
        self.attn = LoRAQKV(cfg)
        self.proj = nn.Linear(cfg["hidden"], cfg["hidden"], bias=cfg["bias"])

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        g, q_per_kv = self.cfg["groups"], self.cfg["heads"] // self.cfg["groups"]
        qkv = self.attn(x).view(b, t, g, q_per_kv + 2, self.hs).permute(0, 2, 3, 1, 4)
        q, k, v = qkv.split((q_per_kv, 1, 1), dim=2)
        if g != self.cfg["heads"]:  # lit-gpt expands k and v to the query heads for SDPA
            k = k.expand(b, g, q_per_kv, t, self.hs)
            v = v.expand(b, g, q_per_kv, t, self.hs)
        q = q.reshape(b, -1, t, self.hs)
        k = k.reshape(b, -1, t, self.hs)
        v = v.reshape(b, -1, t, self.hs)
        q = torch.cat((apply_rope(q[..., :self.rope_n], cos, sin), q[..., self.rope_n:]), dim=-1)
        k = torch.cat((apply_rope(k[..., :self.rope_n], cos, sin), k[..., self.rope_n:]), dim=-1)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=1.0 / math.sqrt(self.hs), is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class MLP(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h, f, bias = cfg["hidden"], cfg["ffn"], cfg["bias"]
        self.kind = cfg["mlp"]
        self.fc_1 = nn.Linear(h, f, bias=bias)
        self.fc_2 = nn.Linear(h, f, bias=bias) if self.kind == "llama" else None
        self.proj = nn.Linear(f, h, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fc_2 is not None:
            return self.proj(F.silu(self.fc_1(x)) * self.fc_2(x))
        return self.proj(F.gelu(self.fc_1(x)))


def norm(cfg: dict[str, Any]) -> nn.Module:
    return RMSNorm(cfg["hidden"]) if cfg["norm"] == "rms" else nn.LayerNorm(cfg["hidden"])


class Block(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.cfg = cfg
        self.norm_1 = norm(cfg)
        self.attn = Attention(cfg)
        self.norm_2 = None if cfg["shared_norm"] else norm(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        n_1 = self.norm_1(x)
        h = self.attn(n_1, cos, sin)
        if self.cfg["parallel"]:
            n_2 = n_1 if self.norm_2 is None else self.norm_2(x)
            return self.mlp(n_2) + h + x
        x = h + x
        assert self.norm_2 is not None
        return self.mlp(self.norm_2(x)) + x


class GPT(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["layers"]))
        self.ln_f = norm(cfg)
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=cfg["bias"])
        hs = cfg["hidden"] // cfg["heads"]
        n = int(cfg["rope"] * hs)
        device = self.lm_head.weight.device
        theta = 1.0 / (10000 ** (torch.arange(0, n, 2, device=device).float() / n))
        idx = torch.outer(torch.arange(cfg["seq"], device=device).float(), theta).repeat(1, 2)
        self.cos, self.sin = torch.cos(idx), torch.sin(idx)  # fp32, as lit-gpt's max_seq_length setter rebuilds them

    def forward(self, idx: torch.Tensor) -> list[torch.Tensor]:
        t = idx.size(1)
        cos, sin = self.cos[:t], self.sin[:t]
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x, cos, sin)
        x = self.ln_f(x)
        return [self.lm_head(chunk) for chunk in x.split(128, dim=1)]


def chunked_cross_entropy(logits: list[torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
    logit_chunks = [chunk.reshape(-1, chunk.size(-1)) for chunk in logits]
    target_chunks = [chunk.reshape(-1) for chunk in targets.split(logits[0].size(1), dim=1)]
    losses = [F.cross_entropy(lc, tc, ignore_index=-1, reduction="none")
              for lc, tc in zip(logit_chunks, target_chunks, strict=True)]
    return torch.cat(losses).sum() / max(1, int((targets != -1).sum()))


def saved_bytes_per_token_layer(model: GPT, tokens: torch.Tensor) -> float:
    """Bytes autograd saves for one block (the second), counted once per storage, parameters excluded
    (tests/validation/test_litgpt_saved_tensors.py runs this on CPU against rigplan's count)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    params |= {model.cos.untyped_storage().data_ptr(), model.sin.untyped_storage().data_ptr()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    t = tokens.size(1)
    x = model.wte(tokens).detach().requires_grad_(True)
    cos, sin = model.cos[:t], model.sin[:t]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda s: s):
        out = model.blocks[1](x, cos, sin)
    del out
    return sum(seen.values()) / tokens.numel()


def step_peak(model: GPT, optimizer: torch.optim.Optimizer, batch: int, seq: int) -> dict[str, float]:
    torch.manual_seed(0)
    idx = torch.randint(0, model.cfg["vocab"], (batch, seq), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    logits = model(idx)
    logits[-1] = logits[-1][..., :-1, :]
    loss = chunked_cross_entropy(logits, idx[..., 1:])
    after_forward = torch.cuda.memory_allocated()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del logits, loss
    return {"base_bytes": base, "after_forward_bytes": after_forward, "peak_bytes": peak}


def measure(name: str) -> list[dict[str, Any]]:
    cfg = SHAPES[name]
    torch.set_default_device("cuda")
    torch.set_default_dtype(torch.bfloat16)
    torch.manual_seed(0)
    with torch.no_grad():
        model = GPT(cfg)
    torch.set_default_dtype(torch.float32)
    torch.set_default_device("cpu")
    for n, p in model.named_parameters():
        p.requires_grad_("lora_" in n)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-4, foreach=True)
    rows = []
    norm_options = [False, True] if cfg["norm"] == "rms" else [False]
    for dropout in (0.05, 0.0):
        for fp32_norm in norm_options:
            RMSNorm.fp32 = fp32_norm
            for module in model.modules():
                if isinstance(module, nn.Dropout):
                    module.p = dropout
            saved = saved_bytes_per_token_layer(model, torch.randint(0, cfg["vocab"], (1, cfg["seq"]), device="cuda"))
            peaks = {mb: step_peak(model, optimizer, mb, cfg["seq"]) for mb in (1, 2)}
            slope = peaks[2]["peak_bytes"] - peaks[1]["peak_bytes"]
            row = {"model": name, "lora_dropout": dropout, "rmsnorm_fp32": fp32_norm, "seq": cfg["seq"],
                   "saved_bytes_per_token_layer": saved, "saved_per_token_layer_over_h": saved / cfg["hidden"],
                   "peak_mb1_bytes": peaks[1]["peak_bytes"], "peak_mb2_bytes": peaks[2]["peak_bytes"],
                   "after_forward_mb1_bytes": peaks[1]["after_forward_bytes"], "base_bytes": peaks[1]["base_bytes"],
                   "slope_per_sequence_bytes": slope,
                   "slope_per_token_layer_over_h": slope / cfg["seq"] / cfg["layers"] / cfg["hidden"]}
            rows.append(row)
            print(f"{name:24s} dropout={dropout:<4} fp32_norm={fp32_norm!s:5} "
                  f"saved/layer/token={saved / cfg['hidden']:5.2f}h "
                  f"peak mb1={peaks[1]['peak_bytes'] / 1e9:6.2f} GB mb2={peaks[2]['peak_bytes'] / 1e9:6.2f} GB "
                  f"slope={slope / 2**30:5.2f} GiB ({row['slope_per_token_layer_over_h']:5.2f}h per token and layer)",
                  flush=True)
    del model, optimizer
    torch.cuda.empty_cache()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--models", nargs="*", default=list(SHAPES))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("litgpt_lora_peak: needs a CUDA GPU", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    rows = [row for name in args.models for row in measure(name)]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
