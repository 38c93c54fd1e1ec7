"""config.json readers for families whose modeling code ships with the checkpoint (loaded with trust_remote_code)
rather than with transformers: ChatGLM (model_type chatglm: ChatGLM2/3-6B and GLM-4-9B in its original format) and
InternLM 2 / 2.5 and 3 (internlm2, internlm3). Each returns the fields and notes on what it assumed, as the readers
of hf_families.py do; hf_config.py joins the tables."""

from __future__ import annotations

from typing import Any

from rigplan.catalog.hf_reader import ConfigReader, Reader, standard


def _chatglm(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """ChatGLM (ChatGLMConfig of the THUDM / zai-org checkpoints): num_layers layers of hidden_size with
    num_attention_heads query heads of kv_channels, multi_query_group_num key/value groups when
    multi_query_attention (else one per head), a fused query_key_value projection with add_qkv_bias, a SwiGLU MLP of
    ffn_hidden_size, add_bias_linear on the output projection and the MLP, RMSNorm (LayerNorm with bias when rmsnorm
    is false), a final norm when post_layer_norm, and a separate output layer over padded_vocab_size (never tied).
    The rotary embedding covers half of each head (no parameters)."""
    heads = r.req_int("num_attention_heads")
    grouped = r.flag("multi_query_attention", False)
    linear_bias = r.flag("add_bias_linear", False)
    rms = r.flag("rmsnorm", True)
    notes = ["fused query_key_value and dense_h_to_4h counted as separate projections (same total)"]
    if not r.flag("post_layer_norm", True):
        notes.append("post_layer_norm false: the final norm counted all the same (hidden_size parameters)")
    return {
        "num_layers": r.req_int("num_layers"),
        "hidden": r.req_int("hidden_size"),
        "num_heads": heads,
        "num_kv_heads": r.opt_int("multi_query_group_num", default=1) if grouped else heads,
        "head_dim": r.opt_int("kv_channels"),
        "ffn": r.req_int("ffn_hidden_size"),
        "vocab": r.req_int("padded_vocab_size"),
        "context_length": r.opt_int("seq_length"),
        "tied_embeddings": False,
        "qkv_bias": r.flag("add_qkv_bias", False),
        "attn_out_bias": linear_bias,
        "mlp_bias": linear_bias,
        "norm": "rmsnorm" if rms else "layernorm",
        "norm_bias": not rms,
        "fused_projections": True,
    }, notes


def _internlm2(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """InternLM 2 and 2.5 (InternLM2Config of the internlm checkpoints): Llama's keys and layout with a fused wqkv
    projection; bias puts a bias on wqkv and wo (the MLP has none); untied embeddings by default."""
    fields = standard(r, tie_default=False)
    bias = r.flag("bias", True)
    fields.update(qkv_bias=bias, attn_out_bias=bias)
    return fields, ["fused wqkv counted as q, k and v projections (same total; LoRA on q, k or v adapts them one by "
                    "one here, where peft adapts wqkv once)"]


def _internlm3(r: ConfigReader) -> tuple[dict[str, Any], list[str]]:
    """InternLM 3 (InternLM3Config of the internlm checkpoints): Llama's keys and layout with head_dim; qkv_bias on
    the q, k, v and output projections, bias on the MLP's; untied embeddings by default."""
    fields = standard(r, tie_default=False)
    qkv_bias = r.flag("qkv_bias", False)
    fields.update(qkv_bias=qkv_bias, attn_out_bias=qkv_bias, mlp_bias=r.flag("bias", False))
    return fields, []


REMOTE_CODE_FAMILIES: dict[str, Reader] = {
    "chatglm": _chatglm,
    "internlm2": _internlm2,
    "internlm3": _internlm3,
}
