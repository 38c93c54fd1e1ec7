"""The Muon optimizer: momentum orthogonalised by Newton-Schulz iterations, on every hidden-layer matrix.

Muon (Jordan et al. 2024; at scale, Liu et al., 'Muon is Scalable for LLM Training', arXiv 2502.16982, 2025,
the optimizer of Moonlight and of Kimi K2) keeps one momentum buffer per parameter and, each step, replaces the
momentum M of an m x n matrix (m <= n) by an approximation of its orthogonal factor: five Newton-Schulz
iterations X <- aX + (bA + cA^2)X with A = X X^T. One iteration multiplies an m x n matrix by its transpose
(2m^2 n FLOPs), squares the m x m product (2m^3) and multiplies it back into X (2m^2 n): 4m^2 n + 2m^3, so

    Newton-Schulz FLOPs of one matrix = steps * (4 m^2 n + 2 m^3),   steps = 5

run in bf16 as GEMMs whose smaller dimension is m. The embedding, the output head, the norms and the biases stay
on AdamW (the Moonlight and Kimi K2 recipes; Megatron-Core's Muon the same). Memory: one fp32 momentum per matrix
parameter (4 B, against AdamW's 8) and AdamW's two moments for the rest. Megatron's dist_muon shards the
matrices over the data-parallel group by layer, so each rank orthogonalises its share: the ZeRO-1 share of
`estimate.step` ('updated'). Left out: the matrix shapes of a framework's fused parameters (Megatron's fused
QKV and gate/up are one matrix each; rigplan takes q, k, v, gate and up apart) and Kimi K2's QK-clip. Liu et
al. measure distributed Muon's end-to-end overhead at 1-3% of the forward and backward passes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from rigplan.domain.model import Architecture
from rigplan.estimate.params import attention_linears, count_params, dense_mlp_linears

NEWTON_SCHULZ_STEPS = 5
"""Newton-Schulz iterations per step (Muon's default; Megatron-Bridge's Kimi K2 recipe muon_num_ns_steps 5)."""


def matrix_shapes(arch: Architecture) -> list[tuple[int, int, float]]:
    """(d_in, d_out, count) of every hidden-layer matrix Muon orthogonalises, over the whole model."""
    attention = [(lin.d_in, lin.d_out) for lin in attention_linears(arch)]
    dense_mlp = [(lin.d_in, lin.d_out) for lin in dense_mlp_linears(arch)]
    shapes: list[tuple[int, int, float]] = [(i, o, float(arch.num_layers)) for i, o in attention]
    dense_layers = arch.num_dense_layers if arch.moe is not None else arch.num_layers * arch.ffn_blocks_per_layer
    shapes += [(i, o, float(dense_layers)) for i, o in dense_mlp]
    if arch.moe is not None:
        moe = arch.moe
        per_expert = 3 if arch.mlp == "gated" else 2
        shapes.append((arch.expert_hidden, moe.expert_ffn,
                       float(arch.num_moe_layers * moe.num_experts * per_expert)))
        if moe.latent_size:  # a latent MoE's projections h -> l and l -> h
            shapes.append((arch.hidden, moe.latent_size, float(arch.num_moe_layers * 2)))
        if moe.num_shared_experts:
            shapes.append((arch.hidden, moe.shared_ffn,
                           float(arch.num_moe_layers * moe.num_shared_experts * per_expert)))
        shapes.append((arch.hidden, moe.num_experts, float(arch.num_moe_layers)))  # the router's gate
    return shapes


def newton_schulz_flop(d_in: int, d_out: int) -> float:
    """FLOPs of one step's Newton-Schulz iterations on a d_in x d_out matrix (module docstring)."""
    m, n = float(min(d_in, d_out)), float(max(d_in, d_out))
    return NEWTON_SCHULZ_STEPS * (4.0 * m * m * n + 2.0 * m**3)


@lru_cache(maxsize=256)
def matrix_share(arch: Architecture) -> float:
    """Share of the model's parameters Muon updates (the rest, embeddings, head, norms and biases, stay on AdamW)."""
    matrices = sum(i * o * c for i, o, c in matrix_shapes(arch))
    return min(matrices / max(count_params(arch).total, 1), 1.0)


@lru_cache(maxsize=256)
def flop_and_dims_per_param(arch: Architecture) -> tuple[tuple[float, float], ...]:
    """(Newton-Schulz FLOPs per model parameter, the smaller dimension of those GEMMs) for each matrix shape, so a
    rank that updates N parameters spends N x FLOPs on GEMMs of that dimension."""
    total = max(count_params(arch).total, 1)
    return tuple((newton_schulz_flop(i, o) * c / total, float(min(i, o))) for i, o, c in matrix_shapes(arch))


def newton_schulz_s_per_param(arch: Architecture, peak_flop_per_s: float,
                              efficiency_at: Callable[[float], float]) -> float:
    """Seconds of Newton-Schulz GEMMs per parameter a rank updates: each matrix shape's FLOPs per parameter at
    `peak_flop_per_s` (bf16, the part's sustained clock) times the GEMM efficiency of its smaller dimension."""
    return sum(flop / (peak_flop_per_s * efficiency_at(dim)) for flop, dim in flop_and_dims_per_param(arch))
