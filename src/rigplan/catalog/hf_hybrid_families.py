"""config.json readers for the Mamba-2 hybrids: Granite 4.0 (model_type granitemoehybrid: a Mamba-2 or attention mixer
and a feed-forward block in every layer, as rigplan's layers are) and Nemotron-H (model_type nemotron_h: NVIDIA's
Nemotron-H and Nemotron 3 hybrids), whose layers are single blocks: a Mamba-2 mixer (M), a full-attention mixer (*),
an MoE (E) or a dense MLP (-), each behind its own RMSNorm and residual (transformers' NemotronHConfig,
hybrid_override_pattern or layers_block_type).

rigplan's layer is a token mixer followed by a feed-forward block, so the reader pairs each mixer block with the
feed-forward block right after it; a mixer followed by another mixer is a layer without a feed-forward block, read
as a dense layer of an MoE model whose dense MLP is absent (ffn 0, domain.model.MoE.dense_layers), or in a dense
model as one of its listed mixer-only layers (domain.model.Architecture.ffn_free_layers); dense MLP blocks that
follow one another stay with the mixer before them (Architecture.extra_ffn_blocks). Parameters and
FLOPs are the blocks' sums (a layer without a feed-forward block has one norm; the count equals transformers'
NemotronHForCausalLM), and a pipeline stage boundary falls between layers, not between the blocks of one.
"""

from __future__ import annotations

from typing import Any

from rigplan.catalog.hf_moe_families import hybrid_layout
from rigplan.catalog.hf_reader import ConfigReader, Reader, standard
from rigplan.domain.model import LinearAttention, MoE

BLOCK_SYMBOLS = {"mamba": "M", "attention": "*", "moe": "E", "mlp": "-", "linear_attention": "M",
                 "full_attention": "*"}
"""layers_block_type's names for hybrid_override_pattern's symbols: the Nemotron 3 configs' (mamba, attention, moe,
mlp) and those transformers 5's NemotronHConfig writes (linear_attention for mamba, full_attention for attention:
configuration_nemotron_h.py, remap_legacy_layer_types)."""
MIXERS, FEED_FORWARDS = "M*", "E-"


def _blocks(r: ConfigReader, num_blocks: int) -> str:
    """The block pattern: hybrid_override_pattern, else layers_block_type's names as its symbols; one symbol a
    block, num_hidden_layers of them."""
    pattern = r.cfg.get("hybrid_override_pattern")
    if pattern is None and isinstance(r.cfg.get("layers_block_type"), list):
        names = r.cfg["layers_block_type"]
        if not all(isinstance(n, str) and n in BLOCK_SYMBOLS for n in names):
            raise r.fail(f"key '{r.prefix}layers_block_type' must name {', '.join(BLOCK_SYMBOLS)} blocks, "
                         f"got {names!r}")
        pattern = "".join(BLOCK_SYMBOLS[n] for n in names)
    if not isinstance(pattern, str) or len(pattern) != num_blocks or set(pattern) - set(MIXERS + FEED_FORWARDS):
        raise r.fail(f"key '{r.prefix}hybrid_override_pattern' must give one of M, *, E and - for each of the "
                     f"{num_blocks} blocks, got {pattern!r}")
    return pattern


def _pair(r: ConfigReader, pattern: str) -> list[tuple[str, str]]:
    """(mixer, feed-forward blocks) per rigplan layer: each mixer block with the feed-forward blocks after it, up to
    the next mixer ('' for none; several dense MLPs in a row, as Nemotron-H 47B's M---, stay with their mixer)."""
    layers: list[tuple[str, str]] = []
    for i, block in enumerate(pattern):
        if block in MIXERS:
            layers.append((block, ""))
        elif layers and (not layers[-1][1] or block == "-" == layers[-1][1][-1]):
            layers[-1] = (layers[-1][0], layers[-1][1] + block)
        else:
            raise r.fail(f"block {i} ({block}) of '{r.prefix}hybrid_override_pattern' {pattern} follows no mixer; "
                         "rigplan reads each feed-forward block after a Mamba or attention block (dense MLPs "
                         "may follow one another)")
    return layers


def _nemotron_h(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Nemotron-H and Nemotron 3 (transformers NemotronHConfig): attention without positional encoding (GQA of
    head_dim, no biases), Mamba-2 mixers (mamba_num_heads of mamba_head_dim, n_groups groups of ssm_state_size,
    conv_kernel taps, chunk_size), squared-ReLU MLPs (up and down) of intermediate_size, and MoE blocks of
    n_routed_experts experts of moe_intermediate_size (top num_experts_per_tok, sigmoid router) with
    n_shared_experts of moe_shared_expert_intermediate_size, the routed experts at moe_latent_size where it is
    given (a latent MoE: Nemotron 3 Super and Ultra). Mixers without a feed-forward block are refused beside both
    MoE blocks and dense MLPs, and where no layer has a feed-forward block; dense MLP blocks in a row beside MoE
    blocks are refused."""
    listed_blocks = r.cfg.get("layers_block_type")
    if "num_hidden_layers" not in r.cfg and isinstance(listed_blocks, list):
        blocks = len(listed_blocks)  # transformers 5 writes the block list alone (num_hidden_layers deprecated)
    else:
        blocks = r.req_int("num_hidden_layers")
    pattern = _blocks(r, blocks)
    layers = _pair(r, pattern)
    bare = [i for i, (_, ffn) in enumerate(layers) if not ffn]
    dense = [i for i, (_, ffn) in enumerate(layers) if ffn.startswith("-")]
    extra = [i for i, (_, ffn) in enumerate(layers) for _ in ffn[1:]]  # a layer's second and later MLP blocks
    routed = any(ffn == "E" for _, ffn in layers)
    if bare and (dense if routed else not dense):
        raise r.fail(f"'{r.prefix}hybrid_override_pattern' {pattern} has mixers without a feed-forward block beside "
                     f"{'both MoE blocks and dense MLPs' if routed else 'no feed-forward block at all'}; rigplan "
                     "reads such mixers in a model whose feed-forward blocks are all MoE or all dense MLPs")
    if routed and extra:
        raise r.fail(f"'{r.prefix}hybrid_override_pattern' {pattern} has dense MLP blocks in a row beside MoE "
                     "blocks; rigplan reads MLP blocks in a row in a model without MoE blocks")
    full = [i for i, (mixer, _) in enumerate(layers) if mixer == "*"]
    interval, listed = hybrid_layout(r, "hybrid_override_pattern", full, len(layers))
    heads = r.req_int("num_attention_heads")
    fields: dict[str, Any] = {
        "num_layers": len(layers), "hidden": r.req_int("hidden_size"), "num_heads": heads,
        "num_kv_heads": r.opt_int("num_key_value_heads", default=heads),
        "head_dim": r.opt_int("head_dim", "attention_head_dim"),
        "ffn": 0 if bare and routed else r.req_int("intermediate_size"), "vocab": r.req_int("vocab_size"),
        "context_length": r.opt_int("max_position_embeddings"), "tied_embeddings": r.flag("tie_word_embeddings", False),
        "mlp": "plain", "positions": "none", "qkv_bias": r.flag("attention_bias", False),
        "attn_out_bias": r.flag("attention_bias", False), "mlp_bias": r.flag("mlp_bias", False),
    }
    fields["linear_attention"] = LinearAttention(
        num_key_heads=r.req_int("n_groups"), num_value_heads=r.req_int("mamba_num_heads"),
        key_head_dim=r.req_int("ssm_state_size"), value_head_dim=r.req_int("mamba_head_dim"),
        conv_kernel=r.opt_int("conv_kernel", default=4), full_attention_interval=interval,
        full_attention_layers=listed, kind="mamba2", chunk_size=r.opt_int("chunk_size", default=128))
    notes = [f"{pattern.count('M')} Mamba-2, {pattern.count('*')} attention, {pattern.count('E')} MoE and "
             f"{pattern.count('-')} MLP blocks read as {len(layers)} layers (a mixer and the feed-forward block after "
             "it)"]
    if routed:
        shared = r.opt_int("n_shared_experts")
        fields["moe"] = MoE(num_experts=r.req_int("n_routed_experts"), top_k=r.req_int("num_experts_per_tok"),
                            expert_ffn=r.req_int("moe_intermediate_size"), num_shared_experts=shared,
                            shared_expert_ffn=r.opt_int("moe_shared_expert_intermediate_size") if shared else 0,
                            dense_layers=tuple(bare or dense), router="sigmoid",
                            mtp_layers=r.opt_int("num_nextn_predict_layers"),
                            latent_size=r.opt_int("moe_latent_size"))
    else:
        fields.update({"ffn_free_layers": tuple(bare), "extra_ffn_blocks": tuple(extra)})
    if bare:
        notes.append(f"layers {bare} (from 0) are mixers without a feed-forward block")
    if extra:
        notes.append(f"layers {sorted(set(extra))} (from 0) have more than one MLP block after their mixer")
    return fields, notes


GRANITE_MIXERS = ("mamba", "attention")
"""The mixer kinds of Granite 4.0's layer_types (GraniteMoeHybridConfig refuses any other)."""
GRANITE_SHARED_FFN_DEFAULT = 1024
"""GraniteMoeHybridConfig's shared_intermediate_size when a config.json leaves it out."""


def _granite_mamba(r: ConfigReader, hidden: int, interval: int, listed: tuple[int, ...]) -> LinearAttention:
    """Granite 4.0's Mamba-2 mixer: mamba_n_heads heads of mamba_d_head ('auto' or absent: mamba_expand x hidden over
    the heads, as GraniteMoeHybridConfig derives it), mamba_n_groups groups of mamba_d_state, mamba_d_conv taps."""
    heads = r.opt_int("mamba_n_heads", default=128)
    if heads < 1:
        raise r.fail(f"key '{r.prefix}mamba_n_heads' must be >= 1, got {heads}")
    raw_head = r.cfg.get("mamba_d_head")
    if raw_head is None or raw_head == "auto":
        width = r.opt_int("mamba_expand", default=2) * hidden
        if width % heads:
            raise r.fail(f"key '{r.prefix}mamba_n_heads' ({heads}) must divide mamba_expand x hidden_size ({width})")
        head_dim = width // heads
    else:
        head_dim = r.req_int("mamba_d_head")
    return LinearAttention(num_key_heads=r.opt_int("mamba_n_groups", default=1), num_value_heads=heads,
                           key_head_dim=r.opt_int("mamba_d_state", default=256), value_head_dim=head_dim,
                           conv_kernel=r.opt_int("mamba_d_conv", default=4), full_attention_interval=interval,
                           full_attention_layers=listed, kind="mamba2",
                           chunk_size=r.opt_int("mamba_chunk_size", default=256))


def _granitemoehybrid(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """Granite 4.0 (IBM; transformers GraniteMoeHybridConfig): every layer a Mamba-2 or an attention mixer (layer_types;
    all Mamba-2 when absent, as the config class reads it) and then num_local_experts routed experts of
    intermediate_size (top num_experts_per_tok, softmax router without bias) beside one shared MLP of
    shared_intermediate_size, or that shared MLP alone where num_local_experts is 0 (the dense Granite 4.0 models).
    Attention without position encoding unless position_embedding_type is 'rope'; GQA with attention_bias on every
    projection; the Mamba-2 mixers of _granite_mamba, their conv with its bias. The embedding, residual, attention
    and logit multipliers scale activations, not parameters. A config whose layers are all attention (Granite 4.0
    Micro) is a plain transformer."""
    fields = standard(r, tie_default=False)
    layers = fields["num_layers"]
    kinds = r.cfg.get("layer_types")
    if kinds is None:
        kinds = ["mamba"] * layers
    if not isinstance(kinds, list) or len(kinds) != layers or any(k not in GRANITE_MIXERS for k in kinds):
        raise r.fail(f"key '{r.prefix}layer_types' must name mamba or attention for each of the {layers} layers, "
                     f"got {kinds!r}")
    bias = r.flag("attention_bias", False)
    rope = r.cfg.get("position_embedding_type") == "rope"
    fields.update(qkv_bias=bias, attn_out_bias=bias, positions="rope" if rope else "none",
                  ffn=r.opt_int("shared_intermediate_size", default=GRANITE_SHARED_FFN_DEFAULT))
    full = [i for i, kind in enumerate(kinds) if kind == "attention"]
    notes = [f"{layers - len(full)} Mamba-2 and {len(full)} attention layers, each with its feed-forward block"]
    if len(full) < layers:
        interval, listed = hybrid_layout(r, "layer_types", full, layers)
        fields["linear_attention"] = _granite_mamba(r, fields["hidden"], interval, listed)
        if r.flag("mamba_proj_bias", False):
            notes.append("mamba_proj_bias: the Mamba-2 in_proj and out_proj biases not counted")
        if not r.flag("mamba_conv_bias", True):
            notes.append("mamba_conv_bias false: the conv bias counted all the same (a few thousand parameters)")
    experts = r.opt_int("num_local_experts", default=8)
    if experts:
        fields["moe"] = MoE(num_experts=experts, top_k=r.opt_int("num_experts_per_tok", default=2),
                            expert_ffn=r.req_int("intermediate_size"), num_shared_experts=1,
                            shared_expert_ffn=fields["ffn"])
    return fields, notes


HYBRID_FAMILIES: dict[str, Reader] = {
    "granitemoehybrid": _granitemoehybrid,
    "nemotron_h": _nemotron_h,
}
