"""Transformer architecture description: dense and MoE decoders, MHA/GQA/MQA and MLA attention, and hybrids whose
layers alternate linear attention (Gated DeltaNet, Kimi Delta Attention) with full attention.

One frozen value covers every catalog model and every Hugging Face family rigplan reads. Fields
are counts (no units). Validation messages show every factor involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple

from rigplan.errors import InvalidSpec

MlpKind = Literal["gated", "plain"]
PositionKind = Literal["rope", "learned", "alibi", "none"]
NormKind = Literal["rmsnorm", "layernorm"]


class LayerLinear(NamedTuple):
    """One linear of a layer, as transformers names the module, and the LoRA targets that adapt it."""

    module: str
    d_in: int
    d_out: int
    targets: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class MoE:
    """Mixture-of-experts feed-forward blocks."""

    num_experts: int
    """Routed experts per MoE layer."""
    top_k: int
    """Routed experts each token is sent to."""
    expert_ffn: int
    """Intermediate size of one routed expert."""
    num_shared_experts: int = 0
    """Experts every token passes through (DeepSeek, Qwen2-MoE)."""
    shared_expert_ffn: int = 0
    """Intermediate size of one shared expert; 0 means the same as expert_ffn."""
    first_dense_layers: int = 0
    """Leading layers with a dense MLP of size Architecture.ffn instead of experts (DeepSeek-V3: 3)."""
    moe_layer_step: int = 1
    """After the leading dense layers, every moe_layer_step-th layer is an MoE layer and the others
    are dense (Llama 4 Maverick: 2, transformers' interleave_moe_layer_step, MoE where
    (i + 1) % step == 0); 1 = all of them."""
    expert_bias: bool = False
    """Biases in expert projections (gpt-oss)."""
    router_bias: bool = False
    """Bias in the router projection (gpt-oss)."""
    expert_act_clamp: float = 0.0
    """Clamp on the routed experts' GLU inputs before the activation, 0 = none (gpt-oss: config.json
    swiglu_limit 7.0, the gate half clamped from above and the linear half both ways)."""
    shared_expert_gate: bool = False
    """A scalar sigmoid gate on the shared expert output (Qwen2-MoE): hidden params."""
    router: str = "softmax"
    """Score function of the router: 'softmax' (Mixtral, Qwen) or 'sigmoid' (DeepSeek-V3, Llama 4, GLM-4.5)."""
    mtp_layers: int = 0
    """Multi-token-prediction modules trained with the model (DeepSeek-V3: 1); not in the published totals."""
    dense_layers: tuple[int, ...] = ()
    """The 0-based layers that are not MoE, listed where no leading count and step describe them (a Nemotron-H
    hybrid's mixer-only layers, whose feed-forward block is absent when Architecture.ffn is 0); empty: the leading
    count and step decide."""
    latent_size: int = 0
    """Width of a latent MoE's routed experts (Nemotron 3 Super: 1,024): tokens are projected from the hidden
    size to it before dispatch and back after combine, so the all-to-all and the experts work at this width
    (Megatron-Core moe_latent_size); 0 = the hidden size."""
    routing_groups: int = 1
    """Groups of consecutive experts of a group-limited router (DeepSeek's node-limited routing: config.json n_group,
    Megatron-Core --moe-router-num-groups; DeepSeek-V3: 8 groups of 32); 1 = no grouping."""
    routing_group_topk: int = 1
    """Groups each token may route to (config.json topk_group, --moe-router-group-topk; DeepSeek-V3: 4, so a token
    reaches at most 4 of the 8 nodes its experts are spread over, arXiv 2412.19437 Sec. 2.1.2)."""

    def __post_init__(self) -> None:
        if self.latent_size < 0:
            raise InvalidSpec(f"the MoE latent size must be >= 0 (0 = none), got {self.latent_size}")
        layers = self.dense_layers
        if layers and (list(layers) != sorted(set(layers)) or layers[0] < 0
                       or self.first_dense_layers or self.moe_layer_step != 1):
            raise InvalidSpec(f"listed dense layers must be distinct 0-based indices in order, without a leading "
                              f"count or a step beside them; got {list(layers)}")
        if self.num_experts < 1 or self.top_k < 1 or self.expert_ffn < 1:
            raise InvalidSpec(
                f"MoE needs experts >= 1, top-k >= 1, expert-ffn >= 1; got experts={self.num_experts}, "
                f"top-k={self.top_k}, expert-ffn={self.expert_ffn}"
            )
        if self.top_k > self.num_experts:
            raise InvalidSpec(f"top-k={self.top_k} cannot exceed experts={self.num_experts}")
        if self.moe_layer_step < 1:
            raise InvalidSpec(f"the MoE layer step must be >= 1, got {self.moe_layer_step}")
        if not self.expert_act_clamp >= 0.0:
            raise InvalidSpec(f"the expert activation clamp must be >= 0 (0 = none), got {self.expert_act_clamp}")
        if self.router not in ("softmax", "sigmoid") or self.mtp_layers < 0:
            raise InvalidSpec(f"router must be softmax or sigmoid and mtp-layers >= 0; got {self.router}, "
                              f"{self.mtp_layers}")
        if not 1 <= self.routing_group_topk <= self.routing_groups or self.num_experts % self.routing_groups:
            raise InvalidSpec(f"a group-limited router (--expert-groups, --group-top-k) needs 1 <= group top-k <= "
                              f"groups and groups dividing the {self.num_experts} experts; got {self.routing_groups} "
                              f"groups, top-k {self.routing_group_topk}")

    def dense_pattern(self) -> int | tuple[int, int] | frozenset[int]:
        """Which layers are dense, as domain.stages takes it: the leading count, (leading, step), or the listed
        layers."""
        if self.dense_layers:
            return frozenset(self.dense_layers)
        return self.first_dense_layers if self.moe_layer_step == 1 else (self.first_dense_layers, self.moe_layer_step)

    @property
    def shared_ffn(self) -> int:
        return self.shared_expert_ffn or self.expert_ffn


@dataclass(frozen=True, kw_only=True, slots=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank query and key-value projections."""

    q_lora_rank: int
    """Rank of the query down-projection; 0 means a plain query projection."""
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True, kw_only=True, slots=True)
class SparseAttention:
    """DeepSeek Sparse Attention (DSA; DeepSeek-V3.2, arXiv 2512.02556, Sec. 2.1; GLM-5): a lightning indexer scores
    every earlier token for each query, I(t, s) = Σ_j w(t, j)·ReLU(q_I(t, j)·k_I(s)) over indexer_heads heads of
    indexer_head_dim (its queries from MLA's query latent, one key per token from the hidden state, a weight per
    head), and the query attends to the topk best-scoring keys only. MLA runs in its MQA mode (each latent
    key-value entry shared by every query head). indexer_layers lists the 0-based layers that run their own indexer
    (GLM's index sharing: the others reuse the top-k of the last one before them); empty: every layer."""

    topk: int
    indexer_heads: int
    indexer_head_dim: int
    indexer_layers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if min(self.topk, self.indexer_heads, self.indexer_head_dim) < 1:
            raise InvalidSpec(f"sparse attention needs top-k, indexer heads and indexer head dim >= 1; got top-k "
                              f"{self.topk}, heads {self.indexer_heads}, head dim {self.indexer_head_dim}")
        layers = self.indexer_layers
        if layers and (list(layers) != sorted(set(layers)) or layers[0] != 0):
            raise InvalidSpec(f"indexer layers must be distinct 0-based indices in order starting at layer 0 (the "
                              f"first layer runs its own indexer); got {list(layers)}")

    def indexer_count(self, num_layers: int) -> int:
        """Layers among num_layers that run their own indexer."""
        return len(self.indexer_layers) if self.indexer_layers else num_layers


LinearAttentionKind = Literal["gated_deltanet", "kimi_delta", "mamba2"]
LINEAR_ATTENTION_KINDS: tuple[str, ...] = ("gated_deltanet", "kimi_delta", "mamba2")
LINEAR_MIXER_NAMES = {"gated_deltanet": "GDN", "kimi_delta": "KDA", "mamba2": "Mamba-2"}


@dataclass(frozen=True, kw_only=True, slots=True)
class LinearAttention:
    """Linear-attention token mixers on the layers between full-attention ones: the gated delta rule over a
    fixed-size state per head, after a depthwise causal convolution.

    kind 'gated_deltanet' (Qwen3-Next, Qwen3.5; Yang et al. 2024, arXiv 2412.06464): num_value_heads heads, queries
    and keys num_key_heads heads each shared by num_value_heads / num_key_heads value heads, a scalar decay per
    head. kind 'kimi_delta' (Kimi Linear's Kimi Delta Attention, arXiv 2510.26692): as many key as value heads of
    one width, a decay per channel from a low-rank projection, and a low-rank output gate. kind 'mamba2' (Mamba-2's
    state-space duality, Dao & Gu 2024, arXiv 2405.21060; Nemotron-H's mixers): num_value_heads heads of
    value_head_dim channels (x), num_key_heads groups of B and C of key_head_dim (the state size) shared by the
    heads of a group, a scalar decay per head (dt), a gate z as wide as x, chunks of chunk_size tokens.
    Which layers keep full attention: full_attention_layers (0-based) when given, else every
    full_attention_interval-th (the 4th, 8th, ...; transformers' rule for Qwen3-Next, Megatron-Core's
    --linear-attention-freq)."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4
    full_attention_interval: int = 4
    full_attention_layers: tuple[int, ...] = ()
    kind: LinearAttentionKind = "gated_deltanet"
    chunk_size: int = 0
    """Tokens per chunk of the chunked kernel; 0: the kind's own (estimate.linear_attention.chunk)."""
    input_projections: int = 0
    """nn.Linear modules transformers splits a Gated DeltaNet's input projection into (Qwen3-Next in_proj_qkvz and
    in_proj_ba: 2; Qwen3.5 in_proj_qkv, in_proj_z, in_proj_b and in_proj_a: 4), which LoRA adapts one by one; 0: 2.
    Megatron-Core's GatedDeltaNet and Mamba-2 mixers have one in_proj; Kimi Delta Attention has its own q, k and v."""

    def __post_init__(self) -> None:
        dims = (self.num_key_heads, self.num_value_heads, self.key_head_dim, self.value_head_dim, self.conv_kernel)
        if min(dims) < 1 or self.full_attention_interval < 2 or self.chunk_size < 0 or self.input_projections not in (
                0, 2, 4):
            raise InvalidSpec(
                f"linear attention needs key/value heads, head dims and conv kernel >= 1, a full-attention interval "
                f">= 2 and a chunk size >= 0; got heads {self.num_key_heads}/{self.num_value_heads}, dims "
                f"{self.key_head_dim}/{self.value_head_dim}, conv {self.conv_kernel}, interval "
                f"{self.full_attention_interval}, chunk {self.chunk_size}, input projections "
                f"{self.input_projections} (0, 2 or 4)")
        if self.num_value_heads % self.num_key_heads:
            raise InvalidSpec(f"linear-attention value heads ({self.num_value_heads}) must be a multiple of its key "
                              f"heads ({self.num_key_heads})")
        if self.kind not in LINEAR_ATTENTION_KINDS:
            raise InvalidSpec(f"linear attention kind must be one of {', '.join(LINEAR_ATTENTION_KINDS)}, "
                              f"got {self.kind}")
        if self.kind == "kimi_delta" and (self.num_key_heads != self.num_value_heads
                                          or self.key_head_dim != self.value_head_dim):
            raise InvalidSpec("Kimi Delta Attention has as many key as value heads, of one width; got heads "
                              f"{self.num_key_heads}/{self.num_value_heads}, dims {self.key_head_dim}/"
                              f"{self.value_head_dim}")
        layers = self.full_attention_layers
        if layers and (list(layers) != sorted(set(layers)) or layers[0] < 0):
            raise InvalidSpec(f"full-attention layers must be distinct 0-based indices in order, got {list(layers)}")

    @property
    def key_dim(self) -> int:
        return self.num_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.num_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the causal convolution: q, k and v."""
        return 2 * self.key_dim + self.value_dim

    def full_layers(self, num_layers: int) -> tuple[int, ...]:
        """The 0-based indices of the full-attention layers among num_layers."""
        if self.full_attention_layers:
            return self.full_attention_layers
        step = self.full_attention_interval
        return tuple(i for i in range(num_layers) if (i + 1) % step == 0)

    def linear_layers(self, num_layers: int) -> int:
        """Layers with a linear-attention mixer among num_layers."""
        return num_layers - len(self.full_layers(num_layers))


@dataclass(frozen=True, kw_only=True, slots=True)
class Architecture:
    """Shape of a decoder-only transformer. Defaults match a Llama-style model."""

    id: str
    name: str = ""
    family: str = ""
    """Hugging Face model_type of the checkpoint (a text tower's own: qwen3_5_moe_text), or the paper family; '' for
    a shape given by flags. Libraries that key behaviour on it read it (estimate.peft_experts)."""
    num_layers: int
    hidden: int
    num_heads: int
    num_kv_heads: int = 0
    """0 means equal to num_heads (MHA)."""
    head_dim: int = 0
    """0 means hidden // num_heads."""
    ffn: int
    """Intermediate size of the dense MLP."""
    vocab: int
    mlp: MlpKind = "gated"
    positions: PositionKind = "rope"
    max_positions: int = 0
    """Rows of the learned position table (only counted for positions='learned')."""
    tied_embeddings: bool = False
    norm: NormKind = "rmsnorm"
    norm_bias: bool = False
    """LayerNorm with a bias vector (GPT-2, OPT, BLOOM, GPT-NeoX); MPT has none."""
    qkv_bias: bool = False
    attn_out_bias: bool = False
    mlp_bias: bool = False
    norms_per_layer: int = 2
    """Gemma 2 uses 4 (pre and post norm around attention and MLP)."""
    qk_norm: bool = False
    """Per-head RMSNorm on queries and keys (Qwen3): 2 * head_dim params per layer."""
    fused_projections: bool = False
    """q, k, v in one linear and gate, up in another (Phi-3's qkv_proj and gate_up_proj): the same weights,
    but one LoRA adapter where the targets name q, k and v (or gate and up)."""
    embedding_norm: bool = False
    """A norm right after the token embedding (BLOOM)."""
    attention_sinks: bool = False
    """One learned logit per head (gpt-oss)."""
    rope_attention_factor: float = 1.0
    """What YaRN multiplies the rotary cos and sin by (transformers' attention_factor, Megatron-Core's concentration
    factor): 0.1·ln(factor) + 1 for a YaRN factor > 1 unless the config gives attention_factor or mscale and
    mscale_all_dim (their ratio of the same form); 1 without YaRN (gpt-oss: factor 32, 1.3466; DeepSeek-V3 and
    Kimi K2: mscale = mscale_all_dim, 1)."""
    attention_windows: tuple[int, ...] = ()
    """Sliding-window size of each layer's attention in tokens, 0 for full causal attention; empty when
    every layer is full (Mistral 7B v0.1: 4096 on all layers; Gemma 2: 4096 on every other layer; Gemma 3:
    1024 on five layers in six; gpt-oss: 128 on every other layer). See sliding_windows()."""
    attention_output_gate: bool = False
    """Full attention with a sigmoid output gate per head channel (Qwen3-Next, Qwen3.5): the query projection is
    twice as wide, its second half multiplied into the attention output before the output projection."""
    moe: MoE | None = None
    mla: MLA | None = None
    linear_attention: LinearAttention | None = None
    """Linear-attention mixers on the layers that are not full attention (None: every layer attends)."""
    sparse_attention: SparseAttention | None = None
    """DeepSeek Sparse Attention over MLA (DeepSeek-V3.2, GLM-5); None: every query attends to every earlier key."""
    ffn_free_layers: tuple[int, ...] = ()
    """The 0-based layers of a dense model that are a token mixer without the feed-forward block after it (a
    Nemotron-H hybrid's Mamba-2 block right before an attention block); empty: every layer has its MLP. An MoE
    model lists such layers as MoE.dense_layers with ffn 0. Estimators average a layer over the model
    (ffn_blocks_per_layer), as for linear attention; the parameter count is exact."""
    extra_ffn_blocks: tuple[int, ...] = ()
    """The 0-based layers of a dense model whose mixer is followed by more than one feed-forward block, each index
    once per extra block (Nemotron-H 47B's M--- : that layer listed twice); each extra block is an MLP with its own
    norm and residual. Averaged over the model with ffn_free_layers (ffn_blocks_per_layer)."""
    context_length: int = 0
    """Longest trained sequence; 0 if unknown."""
    official_params: float = 0.0
    """Published total parameter count, for checks; 0 if unknown."""
    official_active_params: float = 0.0
    active_excludes_input_embedding: bool = False
    """The published active count leaves out the input embedding table, a lookup rather than a
    matmul (DeepSeek, OpenAI gpt-oss); it still counts the output head."""
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        positive = {
            "layers": self.num_layers, "hidden": self.hidden, "heads": self.num_heads,
            "ffn": self.ffn, "vocab": self.vocab,
        }
        if self.moe is not None:  # an MoE model's ffn sizes its dense layers, which may have no feed-forward block
            del positive["ffn"]
        bad = [f"{k}={v}" for k, v in positive.items() if v < 1] + ([f"ffn={self.ffn}"] if self.ffn < 0 else [])
        if bad:
            raise InvalidSpec(f"model shape must be positive: {', '.join(bad)}")
        if self.num_kv_heads < 0 or self.head_dim < 0:
            raise InvalidSpec("kv-heads and head-dim must be >= 0 (0 means derived)")
        if self.kv_heads > self.num_heads or self.num_heads % self.kv_heads:
            raise InvalidSpec(
                f"kv-heads={self.kv_heads} must divide heads={self.num_heads} (MHA: equal; GQA: a divisor; MQA: 1)"
            )
        if self.mla is None and self.head_dim == 0 and self.hidden % self.num_heads:
            raise InvalidSpec(
                f"hidden={self.hidden} is not divisible by heads={self.num_heads}; give --head-dim explicitly"
            )
        if self.attention_windows and (len(self.attention_windows) != self.num_layers
                                       or min(self.attention_windows) < 0):
            raise InvalidSpec(
                f"attention windows need one size >= 0 per layer (0 = full attention): got "
                f"{len(self.attention_windows)} for layers={self.num_layers}"
            )
        if self.linear_attention is not None and self.attention_windows:
            raise InvalidSpec("linear attention is read with full attention on the other layers (no sliding windows)")
        if self.linear_attention is not None and self.linear_attention.full_attention_layers and (
                self.linear_attention.full_attention_layers[-1] >= self.num_layers):
            raise InvalidSpec(f"full-attention layer {self.linear_attention.full_attention_layers[-1]} is beyond the "
                              f"model's {self.num_layers} layers (indices from 0)")
        sparse = self.sparse_attention
        if sparse is not None and (self.mla is None or not self.mla.q_lora_rank or self.attention_windows
                                   or self.linear_attention is not None):
            raise InvalidSpec("DeepSeek Sparse Attention runs over MLA with a query latent (q_lora_rank > 0; its "
                              "indexer reads it), without sliding windows or linear attention")
        if sparse is not None and sparse.indexer_layers and sparse.indexer_layers[-1] >= self.num_layers:
            raise InvalidSpec(f"indexer layer {sparse.indexer_layers[-1]} is beyond the model's {self.num_layers} "
                              f"layers (indices from 0)")
        if self.moe is not None and self.moe.dense_layers and self.moe.dense_layers[-1] >= self.num_layers:
            raise InvalidSpec(f"dense layer {self.moe.dense_layers[-1]} is beyond the model's {self.num_layers} "
                              f"layers (indices from 0)")
        free = self.ffn_free_layers
        if free and (list(free) != sorted(set(free)) or free[0] < 0 or free[-1] >= self.num_layers
                     or self.moe is not None or len(free) == self.num_layers):
            raise InvalidSpec(f"layers without a feed-forward block must be distinct 0-based indices in order below "
                              f"layers={self.num_layers}, not all of them, in a dense model (an MoE model lists "
                              f"them as dense layers with ffn 0); got {list(free)}")
        extra = self.extra_ffn_blocks
        if extra and (list(extra) != sorted(extra) or extra[0] < 0 or extra[-1] >= self.num_layers
                      or self.moe is not None or set(extra) & set(free)):
            raise InvalidSpec(f"extra feed-forward blocks must name 0-based layers in order below "
                              f"layers={self.num_layers}, in a dense model, none of them a layer without a "
                              f"feed-forward block; got {list(extra)}")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise InvalidSpec(
                f"dense layers before MoE ({self.moe.first_dense_layers}) exceed layers={self.num_layers}"
            )

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def dim_per_head(self) -> int:
        return self.head_dim or self.hidden // self.num_heads

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def expert_hidden(self) -> int:
        """Width the routed experts and the token dispatch work at: a latent MoE's latent size, else hidden."""
        return (self.moe.latent_size if self.moe is not None else 0) or self.hidden

    @property
    def num_moe_layers(self) -> int:
        if self.moe is None:
            return 0
        if self.moe.dense_layers:
            return self.num_layers - len(self.moe.dense_layers)
        after = self.num_layers - self.moe.first_dense_layers
        return after // self.moe.moe_layer_step

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def num_linear_attention_layers(self) -> int:
        """Layers whose token mixer is linear attention (0 without it)."""
        if self.linear_attention is None:
            return 0
        return self.linear_attention.linear_layers(self.num_layers)

    @property
    def linear_attention_share(self) -> float:
        """Share of the layers with linear attention: estimators average a layer over the model, as for sliding
        windows (a pipeline stage is taken to hold the same mix)."""
        return self.num_linear_attention_layers / self.num_layers

    @property
    def has_mamba2(self) -> bool:
        """Whether the model has Mamba-2 mixers (a Nemotron-H hybrid)."""
        return self.linear_attention is not None and self.linear_attention.kind == "mamba2"

    @property
    def ffn_blocks_per_layer(self) -> float:
        """A dense model's feed-forward blocks per layer on its mean: 1.0 unless ffn_free_layers or extra_ffn_blocks
        list some (Nemotron-H 56B: 54 / 64; 47B: 48 / 50)."""
        return 1.0 + (len(self.extra_ffn_blocks) - len(self.ffn_free_layers)) / self.num_layers

    @property
    def window_counts(self) -> dict[int, int]:
        """Layers per attention window size (0 = full causal attention)."""
        if not self.attention_windows:
            return {0: self.num_layers}
        counts: dict[int, int] = {}
        for window in self.attention_windows:
            counts[window] = counts.get(window, 0) + 1
        return counts

    @property
    def attention_kind(self) -> str:
        if self.mla is not None:
            full = "MLA + DSA" if self.sparse_attention is not None else "MLA"
        elif self.kv_heads == self.num_heads:
            full = "MHA"
        else:
            full = "MQA" if self.kv_heads == 1 else "GQA"
        if self.linear_attention is None:
            return full
        return f"{full} + {LINEAR_MIXER_NAMES[self.linear_attention.kind]}"

    def with_overrides(self, **changes: object) -> Architecture:
        """A copy with some fields replaced (validation runs again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def sliding_windows(num_layers: int, window: int, full_every: int = 0) -> tuple[int, ...]:
    """Per-layer windows for a repeating local/global pattern: every `full_every`-th layer (the 2nd, 4th, ...
    for 2) has full attention and the others `window`; full_every 0 makes every layer local. This is
    Hugging Face's layer_types rule for Gemma 2 (2), Gemma 3 (sliding_window_pattern 6) and gpt-oss (2)."""
    if window <= 0:
        return ()
    if full_every < 0:
        raise InvalidSpec(f"the full-attention layer period must be >= 0 (0 = every layer local), got {full_every}")
    return tuple(0 if full_every and (i + 1) % full_every == 0 else window for i in range(num_layers))
