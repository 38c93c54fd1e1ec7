"""Parameter counts of a transformer, by component, from its architecture.

Every weight matrix and vector of the decoder is counted exactly (projections, biases, norms,
embeddings, position tables, routers, attention sinks), so that the totals match the published
counts of the catalog models within 0.5%. A hybrid model's linear- and full-attention mixers are counted
layer by layer (estimate.linear_attention.mixer_params), and so are the indexers of DeepSeek Sparse Attention
(estimate.sparse_attention.indexer_params); each layer's `attention` is their mean over the layers and
ParamCounts.mixer_remainder keeps the total exact. Not counted: buffers that are not trained (rotary
frequency tables, causal masks), multi-token-prediction heads (DeepSeek-V3's MTP module is left
out, as in its published 671B total).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from rigplan.domain.model import Architecture, LayerLinear
from rigplan.estimate import linear_attention, sparse_attention


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerParams:
    """Parameters of one decoder layer, split the way parallelism splits them."""

    attention: int
    """Attention projections, their biases, q/k norms and sinks."""
    mlp_dense: int
    """Dense MLP, or the non-expert part of an MoE layer (router, shared experts, gate)."""
    experts: int
    """All routed experts of the layer (0 for a dense layer)."""
    expert_one: int
    """One routed expert (0 for a dense layer)."""
    norms: int

    @property
    def total(self) -> int:
        return self.attention + self.mlp_dense + self.experts + self.norms


@dataclass(frozen=True, kw_only=True, slots=True)
class ParamCounts:
    """Whole-model parameter counts."""

    embedding: int
    """Token embedding, learned position table and embedding norm."""
    lm_head: int
    """Output projection; 0 when tied to the embedding."""
    final_norm: int
    dense_layer: LayerParams
    moe_layer: LayerParams | None
    num_dense_layers: int
    num_moe_layers: int
    top_k: int
    head_matmul: int = 0
    """Weights of the output projection's matmul (vocab x hidden), tied or not."""
    active_excludes_input_embedding: bool = False
    """The architecture's publisher counts active parameters without the input embedding."""
    mixer_remainder: int = 0
    """Token-mixer weights the per-layer mean (LayerParams.attention, rounded down) leaves out of a hybrid model's
    total: fewer than one per layer."""
    missing_ffn_blocks: int = 0
    """Feed-forward blocks a dense model's layers lack against one each: its layers without one
    (Architecture.ffn_free_layers) less its extra blocks (Architecture.extra_ffn_blocks); each block is ffn_block."""
    ffn_block: int = 0
    """A dense layer's feed-forward block: its MLP and the norm before it."""
    most_extra_ffn_blocks: int = 0
    """The most extra feed-forward blocks one dense layer has (Architecture.extra_ffn_blocks; Nemotron-H 47B: 2)."""

    @property
    def layers_total(self) -> int:
        moe = self.moe_layer.total * self.num_moe_layers if self.moe_layer else 0
        return (self.dense_layer.total * self.num_dense_layers + moe + self.mixer_remainder
                - self.missing_ffn_blocks * self.ffn_block)

    @property
    def largest_dense_layer(self) -> int:
        """The parameters of a dense model's largest layer: one with the most feed-forward blocks (FSDP units and
        buffers are sized to it)."""
        return self.dense_layer.total + self.most_extra_ffn_blocks * self.ffn_block

    @property
    def _missing_per_dense_layer(self) -> float:
        """Feed-forward blocks a dense layer lacks on the model's mean (0 also for an MoE model without dense
        layers)."""
        return self.missing_ffn_blocks / self.num_dense_layers if self.missing_ffn_blocks else 0.0

    @property
    def dense_layer_mean(self) -> float:
        """A dense layer's parameters on the model's mean: LayerParams.total less the feed-forward blocks the
        layers lack (or plus the extra ones), spread over the dense layers (per-stage sums take a stage to hold the
        mean)."""
        return self.dense_layer.total - self._missing_per_dense_layer * self.ffn_block

    @property
    def dense_matmul_mean(self) -> float:
        """A dense layer's matmul weights (mixer and MLP) on the model's mean, as dense_layer_mean."""
        own = self.dense_layer.attention + self.dense_layer.mlp_dense
        return own - self._missing_per_dense_layer * self.dense_layer.mlp_dense

    @property
    def total(self) -> int:
        return self.embedding + self.lm_head + self.final_norm + self.layers_total

    @property
    def routed_experts_total(self) -> int:
        return self.moe_layer.experts * self.num_moe_layers if self.moe_layer else 0

    @property
    def active(self) -> int:
        """Parameters one token passes through: routed experts counted at top-k."""
        if self.moe_layer is None:
            return self.total
        inactive_per_layer = self.moe_layer.experts - self.top_k * self.moe_layer.expert_one
        return self.total - inactive_per_layer * self.num_moe_layers

    @property
    def active_matmul(self) -> int:
        """Active weights that take part in a matmul: the input embedding (a gather) is left out and
        the output head counted once even when tied. 6 x this per token is the FLOP count of the
        weights (Kaplan et al. 2020 count N without embeddings the same way)."""
        return self.active - self.embedding + (self.head_matmul if self.lm_head == 0 else 0)

    @property
    def active_published(self) -> int:
        """Active parameters as the publisher counts them: without the input embedding table for
        DeepSeek and gpt-oss (Architecture.active_excludes_input_embedding), with it otherwise."""
        return self.active - self.embedding if self.active_excludes_input_embedding else self.active

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding - self.lm_head


def norm_params(arch: Architecture, width: int) -> int:
    """One norm over `width` features: a scale, plus a bias for LayerNorm with bias."""
    return width * (2 if arch.norm == "layernorm" and arch.norm_bias else 1)


def mixer_params_total(arch: Architecture) -> int:
    """Token-mixer weights of all layers: attention_params on the full-attention layers and
    linear_attention.mixer_params on the linear-attention ones, plus a DeepSeek Sparse Attention indexer on each layer
    that runs one (estimate.sparse_attention.indexer_params)."""
    linear = arch.num_linear_attention_layers
    total = attention_params(arch) * (arch.num_layers - linear)
    if arch.sparse_attention is not None:
        total += sparse_attention.indexer_params(arch) * arch.sparse_attention.indexer_count(arch.num_layers)
    return total + (linear_attention.mixer_params(arch) * linear if linear else 0)


def attention_params(arch: Architecture) -> int:
    """Q, K, V and output projections (with GQA/MQA sharing, or MLA low-rank factors).

    Standard: h·(a·d) + 2·h·(g·d) + (a·d)·h, plus biases; g = kv heads, d = head dim; an output gate
    (Qwen3-Next) widens the query projection to 2·a·d.
    MLA (DeepSeek-V2 paper, Sec. 2.1): W_DQ h×r_q, W_UQ r_q×a·(d_nope+d_rope), W_DKV h×(r_kv+d_rope),
    W_UKV r_kv×a·(d_nope+d_v), W_O a·d_v×h, plus the two latent RMSNorms.
    """
    h = arch.hidden
    a = arch.num_heads
    if arch.mla is not None:
        mla = arch.mla
        if mla.q_lora_rank:
            q = h * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * a * mla.qk_head_dim
        else:
            q = h * a * mla.qk_head_dim
        kv = h * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank
        kv += mla.kv_lora_rank * a * (mla.qk_nope_head_dim + mla.v_head_dim)
        out = a * mla.v_head_dim * h
        return q + kv + out + (h if arch.attn_out_bias else 0)
    d = arch.dim_per_head
    g = arch.kv_heads
    q_width = a * d
    kv_width = g * d
    gate = q_width if arch.attention_output_gate else 0
    params = h * (q_width + gate + 2 * kv_width) + q_width * h
    if arch.qkv_bias:
        params += q_width + gate + 2 * kv_width
    if arch.attn_out_bias:
        params += h
    if arch.qk_norm:
        params += 2 * d
    if arch.attention_sinks:
        params += a
    return params


def mlp_params(arch: Architecture, ffn: int, bias: bool, width: int = 0) -> int:
    """Gated (SwiGLU/GeGLU): 3·h·f; plain: 2·h·f; biases f (+f for the gate) + h. `width`: the MLP's input and
    output width where it is not the hidden size h (a latent MoE's routed experts)."""
    h = width or arch.hidden
    if arch.mlp == "gated":
        return 3 * h * ffn + ((2 * ffn + h) if bias else 0)
    return 2 * h * ffn + ((ffn + h) if bias else 0)


def latent_projection_params(arch: Architecture) -> int:
    """A latent MoE's projections around its routed experts, h -> l before dispatch and l -> h after combine:
    2·h·l, with biases l + h where the model's MLPs have them (Megatron-Core MoELayer fc1_latent_proj and
    fc2_latent_proj; transformers NemotronHMoE); 0 without a latent MoE."""
    if arch.moe is None or not arch.moe.latent_size:
        return 0
    latent = arch.moe.latent_size
    return 2 * arch.hidden * latent + ((latent + arch.hidden) if arch.mlp_bias else 0)


@lru_cache(maxsize=256)
def count_params(arch: Architecture) -> ParamCounts:
    """Parameter counts by component for one architecture (cached: architectures are frozen)."""
    h = arch.hidden
    mixers = mixer_params_total(arch)
    attention = mixers // arch.num_layers
    norms = arch.norms_per_layer * norm_params(arch, h)
    dense_norms = norms if arch.ffn else norms // 2  # a layer without a feed-forward block has no norm before it
    dense = LayerParams(
        attention=attention, mlp_dense=mlp_params(arch, arch.ffn, arch.mlp_bias),
        experts=0, expert_one=0, norms=dense_norms,
    )
    moe_layer = None
    top_k = 0
    if arch.moe is not None:
        moe = arch.moe
        top_k = moe.top_k
        router = h * moe.num_experts + (moe.num_experts if moe.router_bias else 0)
        shared = moe.num_shared_experts * mlp_params(arch, moe.shared_ffn, moe.expert_bias)
        if moe.shared_expert_gate and moe.num_shared_experts:
            shared += h
        if moe.latent_size:  # fc1_latent_proj h -> l and fc2_latent_proj l -> h, dense: every token passes them
            shared += latent_projection_params(arch)
        one = mlp_params(arch, moe.expert_ffn, moe.expert_bias, width=arch.expert_hidden)
        moe_layer = LayerParams(
            attention=attention, mlp_dense=router + shared,
            experts=one * moe.num_experts, expert_one=one, norms=norms,
        )
    embedding = arch.vocab * h
    if arch.positions == "learned":
        embedding += arch.max_positions * h
    if arch.embedding_norm:
        embedding += norm_params(arch, h)
    return ParamCounts(
        embedding=embedding,
        lm_head=0 if arch.tied_embeddings else arch.vocab * h,
        final_norm=norm_params(arch, h),
        dense_layer=dense,
        moe_layer=moe_layer,
        num_dense_layers=arch.num_dense_layers,
        num_moe_layers=arch.num_moe_layers,
        top_k=top_k,
        head_matmul=arch.vocab * h,
        active_excludes_input_embedding=arch.active_excludes_input_embedding,
        mixer_remainder=mixers - attention * arch.num_layers,
        missing_ffn_blocks=len(arch.ffn_free_layers) - len(arch.extra_ffn_blocks),
        most_extra_ffn_blocks=max(Counter(arch.extra_ffn_blocks).values(), default=0),
        ffn_block=mlp_params(arch, arch.ffn, arch.mlp_bias) + norm_params(arch, h),
    )


def mlp_lora_shapes(arch: Architecture, targets: tuple[str, ...], width: int, ffn: int) -> list[tuple[int, int]]:
    """(d_in, d_out) of each linear of one MLP (of `width` in and out, `ffn` inside, as a routed or shared expert
    is) that LoRA targets adapt module by module: gate (gated MLPs only) and up (width, ffn), down (ffn, width)."""
    shapes = {"gate": (width, ffn), "up": (width, ffn), "down": (ffn, width)}
    return [shapes[t] for t in ("gate", "up", "down") if t in targets and (t != "gate" or arch.mlp == "gated")]


def attention_linears(arch: Architecture) -> list[LayerLinear]:
    """The linears of a full-attention block (the modules LoRA's q, k, v and o adapt; matrices Muon orthogonalises).
    Standard: q_proj (h -> a·d, 2·a·d where an output gate shares it: Qwen3-Next, Qwen3.5), k_proj and v_proj
    (h -> g·d), o_proj; Phi-3's fused qkv_proj takes all three (fused_projections). MLA (DeepSeek-V2 paper, Sec. 2.1;
    transformers' DeepseekV3Attention): the query path 'q' as q_proj, or q_a_proj (h -> r_q) and q_b_proj
    (r_q -> a·(d_nope + d_rope)) with a query rank; the keys and values share the joint down projection
    kv_a_proj_with_mqa (h -> r_kv + d_rope) and its up projection kv_b_proj (r_kv -> a·(d_nope + d_v)), which 'k' or
    'v' adapt; o_proj (a·d_v -> h)."""
    h, a = arch.hidden, arch.num_heads
    if arch.mla is not None:
        m = arch.mla
        query = ([LayerLinear("q_a_proj", h, m.q_lora_rank, ("q",)),
                  LayerLinear("q_b_proj", m.q_lora_rank, a * m.qk_head_dim, ("q",))] if m.q_lora_rank
                 else [LayerLinear("q_proj", h, a * m.qk_head_dim, ("q",))])
        return [*query, LayerLinear("kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim, ("k", "v")),
                LayerLinear("kv_b_proj", m.kv_lora_rank, a * (m.qk_nope_head_dim + m.v_head_dim), ("k", "v")),
                LayerLinear("o_proj", a * m.v_head_dim, h, ("o",))]
    q_w = arch.num_heads * arch.dim_per_head
    kv_w = arch.kv_heads * arch.dim_per_head
    q_out = 2 * q_w if arch.attention_output_gate else q_w  # q_proj also produces the output gate (Qwen3-Next)
    out = LayerLinear("o_proj", q_w, h, ("o",))
    if arch.fused_projections:
        return [LayerLinear("qkv_proj", h, q_out + 2 * kv_w, ("q", "k", "v")), out]
    return [LayerLinear("q_proj", h, q_out, ("q",)), LayerLinear("k_proj", h, kv_w, ("k",)),
            LayerLinear("v_proj", h, kv_w, ("v",)), out]


def dense_mlp_linears(arch: Architecture) -> list[LayerLinear]:
    """The linears of a dense layer's MLP: gate_proj (gated MLPs only) and up_proj (h -> f), down_proj (f -> h);
    Phi-3's fused gate_up_proj (h -> 2f) takes gate and up (fused_projections)."""
    h, f = arch.hidden, arch.ffn
    down = LayerLinear("down_proj", f, h, ("down",))
    if arch.fused_projections and arch.mlp == "gated":
        return [LayerLinear("gate_up_proj", h, 2 * f, ("gate", "up")), down]
    gate = [LayerLinear("gate_proj", h, f, ("gate",))] if arch.mlp == "gated" else []
    return [*gate, LayerLinear("up_proj", h, f, ("up",)), down]


def adapted_shapes(linears: list[LayerLinear], targets: tuple[str, ...]) -> list[tuple[int, int]]:
    """(d_in, d_out) of the linears the LoRA targets adapt, each once."""
    return [(lin.d_in, lin.d_out) for lin in linears if set(lin.targets) & set(targets)]


def adapted_attention_shapes(arch: Architecture, targets: tuple[str, ...]) -> list[tuple[int, int]]:
    """(d_in, d_out) of the full-attention linears the LoRA targets adapt (attention_linears), each once."""
    return adapted_shapes(attention_linears(arch), targets)
