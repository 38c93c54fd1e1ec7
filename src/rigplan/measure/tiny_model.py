"""A small decoder-only transformer in plain torch, built from a rigplan Architecture (random init).

The model is the one rigplan's estimators describe for a dense Llama-style architecture: token
embedding, `layers` blocks of (RMSNorm, grouped-query attention with rotary positions through torch
SDPA, RMSNorm, gated SiLU MLP or plain GELU MLP), a final RMSNorm and an untied (or tied) LM head;
the loss is cross-entropy on the logits upcast to fp32 (the 'unfused' loss of estimate/memory.py).
LoRA wraps the targeted projections with rank-r adapters and freezes the rest (PEFT's layout).
Nothing is downloaded: the weights are random, the shapes are the Architecture's.
Left out: MoE, MLA, learned or ALiBi positions, dropout, biases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec

LORA_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
                "down": "down_proj"}


class LoraLinear(nn.Module):
    """y = W x + (B A x)·(alpha / r), W frozen, A and B trained (Hu et al. 2021); B starts at zero."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float = 16.0) -> None:
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, dtype=base.weight.dtype))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, dtype=base.weight.dtype))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + F.linear(F.linear(x, self.lora_a), self.lora_b) * self.scale


def rotary(x: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding over the last dimension of (batch, heads, seq, head_dim)."""
    seq, dim = x.shape[-2], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim)
    angles = torch.outer(torch.arange(seq, device=x.device, dtype=torch.float32), inv)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        h, d = arch.hidden, arch.dim_per_head
        self.heads, self.kv_heads, self.head_dim = arch.num_heads, arch.kv_heads, d
        self.attn_norm = nn.RMSNorm(h)
        self.q_proj = nn.Linear(h, arch.num_heads * d, bias=False)
        self.k_proj = nn.Linear(h, arch.kv_heads * d, bias=False)
        self.v_proj = nn.Linear(h, arch.kv_heads * d, bias=False)
        self.o_proj = nn.Linear(arch.num_heads * d, h, bias=False)
        self.mlp_norm = nn.RMSNorm(h)
        self.gated = arch.mlp == "gated"
        if self.gated:
            self.gate_proj = nn.Linear(h, arch.ffn, bias=False)
        self.up_proj = nn.Linear(h, arch.ffn, bias=False)
        self.down_proj = nn.Linear(arch.ffn, h, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        y = self.attn_norm(x)
        q = self.q_proj(y).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(y).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(y).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        attn = F.scaled_dot_product_attention(rotary(q), rotary(k), v, is_causal=True,
                                              enable_gqa=self.kv_heads != self.heads)
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, s, -1))
        y = self.mlp_norm(x)
        inner = F.silu(self.gate_proj(y)) * self.up_proj(y) if self.gated else F.gelu(self.up_proj(y))
        return x + self.down_proj(inner)


class TinyDecoder(nn.Module):
    def __init__(self, arch: Architecture) -> None:
        super().__init__()
        if arch.moe is not None or arch.mla is not None:
            raise InvalidSpec("rigplan check builds dense models only (no MoE or MLA); use a dense shape")
        if arch.positions != "rope":
            raise InvalidSpec(f"rigplan check builds rotary-position models; the model has {arch.positions} positions")
        self.embed = nn.Embedding(arch.vocab, arch.hidden)
        self.blocks = nn.ModuleList(Block(arch) for _ in range(arch.num_layers))
        self.norm = nn.RMSNorm(arch.hidden)
        self.lm_head = nn.Linear(arch.hidden, arch.vocab, bias=False)
        if arch.tied_embeddings:
            self.lm_head.weight = self.embed.weight
        self.checkpoint_blocks = False
        self.region: Callable[[str], AbstractContextManager[Any]] = lambda name: nullcontext()
        """Entered around the blocks ('layers') and the head and loss ('head'): how `check` attributes memory."""

    def hidden_states(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) if self.checkpoint_blocks else block(x)
        return self.norm(x)

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        with self.region("layers"):
            hidden = self.hidden_states(tokens)
        with self.region("head"):
            logits = self.lm_head(hidden)
            return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def add_lora(model: TinyDecoder, targets: tuple[str, ...], rank: int) -> None:
    """Freeze every weight, then wrap the targeted projections of every block with adapters."""
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.blocks:
        for target in targets:
            name = LORA_MODULES[target]
            base: Any = getattr(block, name, None)
            if isinstance(base, nn.Linear):
                setattr(block, name, LoraLinear(base, rank))
