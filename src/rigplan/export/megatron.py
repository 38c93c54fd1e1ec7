"""Megatron-LM arguments (pretrain_gpt.py under torchrun; pretrain_mamba.py for a Mamba-2 hybrid), and the
megatron-core configs they make.

Argument names are Megatron-LM's (megatron/training/arguments.py). `core_config_kwargs` is the
translation Megatron-LM applies when it builds megatron-core's TransformerConfig from them
(core_transformer_config_from_args: most fields share the argument's name; --num-experts becomes
num_moe_experts, --swiglu gated_linear_unit with SiLU, --disable-bias-linear add_bias_linear=False,
--num-layers-per-virtual-pipeline-stage the virtual pipeline size).
Not expressible here: LoRA/QLoRA (Megatron-LM has no PEFT; NeMo's PEFT adds it), ZeRO-2 (the
distributed optimizer is ZeRO-1, FSDP2 is ZeRO-3), bf16 weights without fp32 masters, torchtitan's
per-op selective recompute, parameter offload.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.domain.stages import dense_layer_mask, virtual_stage_layers
from rigplan.estimate.moe import dispatcher, flex_dispatched
from rigplan.export.common import (
    FORCED_BALANCE_NOTE,
    Exported,
    batch_of,
    flag_line,
    require,
    torchrun_prefix,
    unsupported,
)
from rigplan.flow.resolve import TrainingSetup

NAME = "Megatron-LM"


LOW_PRECISION_RECIPE_ARGS: dict[str, dict[str, Any]] = {
    "delayed": {"fp8_recipe": "delayed"},
    "current": {"fp8_recipe": "tensorwise"},
    "blockwise": {"fp8_format": "e4m3", "fp8_recipe": "blockwise"},
    "mxfp8": {"fp8_format": "e4m3", "fp8_recipe": "mxfp8"},
    "nvfp4": {"fp8_format": None, "fp4_format": "e2m1", "fp4_recipe": "nvfp4"},
}
"""Megatron-LM's flags for each of rigplan's fp8 recipes (megatron/training/arguments.py --fp8-recipe
{delayed, tensorwise, mxfp8, blockwise}; --fp4-format e2m1 --fp4-recipe nvfp4, which replace --fp8-format)."""

def megatron_args(setup: TrainingSetup) -> dict[str, Any]:
    """Megatron-LM's arguments for the setup, in the order they are printed."""
    arch, job, lay = setup.arch, setup.job, setup.layout
    require(NAME, setup, allgather=True)
    if job.method == "lora":
        raise unsupported(NAME, "LoRA", "NeMo's PEFT (LoRA on Megatron-Core) or Hugging Face PEFT do")
    if lay.zero == 2:
        raise unsupported(NAME, "ZeRO-2", "use --zero 1 (distributed optimizer) or --zero 3 (--use-torch-fsdp2)")
    if job.precision == "bf16-true":
        raise unsupported(NAME, "bf16 weights without fp32 master weights (bf16-true)",
                          "Megatron's --bf16 keeps fp32 masters: use --precision bf16-mixed")
    if job.recompute == "op":
        raise unsupported(NAME, "per-op selective recompute (--recompute op)",
                          "use --recompute selective (attention core) or full")
    if job.offload == "all":
        raise unsupported(NAME, "parameter offload (--offload all)", "--offload optimizer is supported")
    if job.optimizer not in ("adamw", "sgd", "muon"):
        raise unsupported(NAME, f"the {job.optimizer} optimizer", "Megatron-LM has adam (AdamW), sgd and muon")
    if job.optimizer == "muon" and lay.zero not in (0, 1):
        raise unsupported(NAME, f"Muon with ZeRO-{lay.zero}", "Megatron's dist_muon shards by layer: use --zero 1 or 0")
    if job.activation_offload or job.optimizer_in_backward:
        raise unsupported(NAME, "activation offload / optimizer-in-backward")
    hybrid = arch.has_mamba2  # pretrain_mamba.py's model
    if arch.positions != "rope" and not (hybrid and arch.positions == "none"):
        raise unsupported(NAME, f"{arch.positions} positions in this export", "rope models (and Mamba hybrids "
                          "without positions) only")
    b = batch_of(setup)
    args: dict[str, Any] = {
        "num_layers": arch.num_layers, "hidden_size": arch.hidden, "num_attention_heads": arch.num_heads,
        "kv_channels": arch.dim_per_head,
        "group_query_attention": arch.kv_heads < arch.num_heads,
        "num_query_groups": arch.kv_heads if arch.kv_heads < arch.num_heads else None,
        "ffn_hidden_size": arch.ffn, "seq_length": job.seq_len,
        "max_position_embeddings": max(arch.context_length or 0, job.seq_len),
        "position_embedding_type": "rope", "swiglu": arch.mlp == "gated",
        "normalization": "RMSNorm" if arch.norm == "rmsnorm" else "LayerNorm",
        "untie_embeddings_and_output_weights": not arch.tied_embeddings,
        "disable_bias_linear": not (arch.qkv_bias or arch.mlp_bias),
        "add_qkv_bias": arch.qkv_bias, "qk_layernorm": arch.qk_norm,
        "vocab_size": arch.vocab, "tokenizer_type": "NullTokenizer",
    }
    args.update(_attention_and_activation_args(arch))
    args.update(hybrid_args(arch, lay.pp) if hybrid else _linear_attention_args(arch, lay.cp))
    if arch.mla is not None:
        m = arch.mla
        args.update({"multi_latent_attention": True, "q_lora_rank": m.q_lora_rank or None,
                     "kv_lora_rank": m.kv_lora_rank, "qk_head_dim": m.qk_nope_head_dim,
                     "qk_pos_emb_head_dim": m.qk_rope_head_dim, "v_head_dim": m.v_head_dim})
    if arch.sparse_attention is not None:
        args.update(_sparse_attention_args(arch))
    if arch.moe is not None:
        moe = arch.moe
        args.update({"num_experts": moe.num_experts, "moe_router_topk": moe.top_k,
                     "moe_ffn_hidden_size": moe.expert_ffn,
                     "moe_shared_expert_intermediate_size": (moe.shared_expert_ffn or moe.expert_ffn)
                     * moe.num_shared_experts or None,
                     # always named: Megatron-LM's default is allgather, which rigplan times only when asked for
                     "moe_grouped_gemm": True,
                     "moe_token_dispatcher_type": "allgather" if dispatcher(job) == "allgather" else "alltoall"})
        if moe.router == "sigmoid":  # DeepSeek-V3, Llama 4, GLM-4.5 (Megatron-Core's default is softmax)
            args["moe_router_score_function"] = "sigmoid"
        if moe.mtp_layers:  # the multi-token-prediction modules the estimate counts on the last stage
            args["mtp_num_layers"] = moe.mtp_layers
        if moe.latent_size:  # a latent MoE (Megatron-Core MoELayer fc1/fc2_latent_proj)
            args["moe_latent_size"] = moe.latent_size
        if moe.routing_groups > 1:  # DeepSeek's group-limited routing (Megatron-Core group_limited_topk)
            args["moe_router_num_groups"] = moe.routing_groups
            args["moe_router_group_topk"] = moe.routing_group_topk
        if (moe.first_dense_layers or moe.moe_layer_step > 1 or moe.dense_layers) and not hybrid:  # a hybrid's pattern
            dense = [0 if d else 1 for d in dense_layer_mask(arch.num_layers, moe.dense_pattern())]
            args["moe_layer_freq"] = _quoted_list(dense)
        if job.capacity_factor:
            args["moe_expert_capacity_factor"] = job.capacity_factor
            args["moe_pad_expert_input_to_capacity"] = job.moe_pad_to_capacity
        if job.forced_balance:  # the estimate's balanced routing, as Megatron-Bridge's performance recipes force it
            args["moe_router_force_load_balancing"] = True
        if job.moe_rank_capacity_factor is not None:  # sync-free experts (Megatron-LM docs, 'MoE Paged Stash')
            args.update({"moe_expert_rank_capacity_factor": job.moe_rank_capacity_factor,
                         "use_transformer_engine_op_fuser": True})
        if lay.ep > 1 and flex_dispatched(job):
            # Megatron-Core's flex dispatcher with DeepEP or HybridEP (--moe-flex-dispatcher-backend, core 0.15+)
            args.update({"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": dispatcher(job)})
        if job.a2a_overlap and lay.ep > 1:
            if job.a2a_overlap_schedule == "dualpipe":
                raise unsupported(NAME, "DualPipe", "Megatron-LM overlaps the expert all-to-all with its 1F1B "
                                                    "schedule: --a2a-overlap-schedule 1f1b")
            # EP all-to-all beside the other micro-batch (Megatron-Bridge's set_moe_a2a_overlap_overrides)
            args.update({"overlap_moe_expert_parallel_comm": True, "delay_wgrad_compute": True})
    stages = virtual_stage_layers(lay.split, arch.num_layers, lay.pp, lay.vpp) if lay.pp > 1 else ()
    even = len(set(stages)) <= 1
    args.update({
        "tensor_model_parallel_size": lay.tp, "pipeline_model_parallel_size": lay.pp,
        "num_layers_per_virtual_pipeline_stage": stages[0] if lay.vpp > 1 and even else None,
        "pipeline_model_parallel_layout": None if even else pipeline_layout(
            stages, arch.moe.mtp_layers if arch.moe is not None else 0),
        "context_parallel_size": lay.cp, "cp_comm_type": job.cp_comm_type if lay.cp > 1 else None,
        "expert_model_parallel_size": lay.ep,
        "expert_tensor_parallel_size": lay.expert_tp if arch.moe is not None and lay.expert_tp != lay.tp else None,
        "sequence_parallel": lay.sequence_parallel,
        "use_distributed_optimizer": lay.zero == 1, "use_torch_fsdp2": lay.zero == 3,
        "overlap_grad_reduce": lay.dp * lay.cp > 1, "overlap_param_gather": lay.zero == 1 and lay.dp * lay.cp > 1,
        "ddp_bucket_size": int(job.grad_bucket_params) if job.grad_bucket_params else None,
        "micro_batch_size": b.micro_batch, "global_batch_size": b.global_batch,
    })
    if job.recompute == "selective":
        args["recompute_granularity"] = "selective"
    elif job.recompute == "full":
        args.update({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1})
    precision = {"bf16-mixed": {"bf16": True}, "fp16-mixed": {"fp16": True},
                 "fp8": {"bf16": True, "fp8_format": "hybrid", "transformer_impl": "transformer_engine"},
                 "fp32": {}}[job.precision]
    if job.precision == "fp8":
        precision = dict(precision, **LOW_PRECISION_RECIPE_ARGS[job.fp8_recipe])
    args.update(precision)
    args["attention_backend"] = "flash" if job.attention == "flash" else "unfused"
    args["optimizer"] = {"adamw": "adam", "sgd": "sgd"}.get(job.optimizer, "dist_muon" if lay.zero == 1 else "muon")
    if job.optimizer == "muon":  # layer-wise sharding in place of the distributed (Adam) optimizer
        args.update({"use_distributed_optimizer": False, "overlap_param_gather": False, "muon_num_ns_steps": 5})
    if job.offload == "optimizer":
        args.update({"optimizer_cpu_offload": True, "use_precision_aware_optimizer": True})
    args.update(_switch_args(job))
    return args


def _attention_and_activation_args(arch: Architecture) -> dict[str, Any]:
    """Megatron-LM's flags for the attention and activation variants rigplan counts (gpt-oss's, as Megatron-Bridge's
    GPT-OSS provider sets them): learned sinks (--softmax-type learnable), sliding windows on some layers
    (--window-size W,0 with --window-attn-skip-freq N: N - 1 windowed layers, then one full), and the clamped GLU
    of gpt-oss's experts (--quick-geglu with --activation-func-clamp-value and the +1 on the linear half,
    --glu-linear-offset 1). One window size per model: Megatron-Core has no per-layer sizes."""
    args: dict[str, Any] = {}
    if arch.attention_sinks:
        args["softmax_type"] = "learnable"
    windows = [w for w in arch.attention_windows if w]
    if windows:
        if len(set(windows)) > 1:
            raise unsupported(NAME, f"sliding windows of several sizes ({', '.join(map(str, sorted(set(windows))))})",
                              "Megatron-Core takes one --window-size")
        pattern = [1 if w else 0 for w in arch.attention_windows]
        args["window_size"] = f"{windows[0]},0"
        period = pattern.index(0) + 1 if 0 in pattern else 0
        if period and pattern == ([1] * (period - 1) + [0]) * (len(pattern) // period):
            args["window_attn_skip_freq"] = period
        elif period:
            args["window_attn_skip_freq"] = _quoted_list(pattern)
    if arch.moe is not None and arch.moe.expert_act_clamp > 0.0:
        args.update({"swiglu": False, "quick_geglu": True,
                     "activation_func_clamp_value": arch.moe.expert_act_clamp, "glu_linear_offset": 1.0})
    return args


DSA_INDEXER_LOSS_COEFF = 1.0
"""--dsa-indexer-loss-coeff: the indexer learns from its KL loss alone, its input detached (DeepSeek-V3.2, arXiv
2512.02556, Sec. 2.1.1), so the coefficient scales only the indexer's gradients, which Adam normalises; Megatron-Core
has no default (None: no indexer loss, an untrained indexer)."""


def index_sharing_schedule(indexer_layers: tuple[int, ...], num_layers: int) -> tuple[int, int] | None:
    """(freq, offset) of Megatron-Core's DSA index sharing that gives these 0-based indexer layers, or None: the
    1-based layer n runs its own indexer when max(n - offset, 0) % freq == 0 (is_dsa_skip_topk_layer; transformers'
    GlmMoeDsaConfig reads index_topk_freq and index_skip_topk_offset the same way)."""
    wanted = list(indexer_layers)
    for freq in range(2, num_layers + 1):
        for offset in range(1, num_layers + 1):
            if [i for i in range(num_layers) if max(i + 1 - offset, 0) % freq == 0] == wanted:
                return freq, offset
    return None


def _sparse_attention_args(arch: Architecture) -> dict[str, Any]:
    """DeepSeek Sparse Attention as Megatron-Core's experimental 'dsa' variant (megatron-core 0.16 TransformerConfig
    dsa_*): the indexer's heads, head dim and top-k, its KL loss over the selected keys (the sparse training stage,
    what the estimate times). GLM's index sharing is written as --dsa-indexer-topk-freq and
    --dsa-indexer-skip-topk-offset (Megatron-Core after 0.16); a sharing pattern those two cannot express is refused."""
    sparse = arch.sparse_attention
    assert sparse is not None
    args: dict[str, Any] = {
        "experimental_attention_variant": "dsa", "dsa_indexer_n_heads": sparse.indexer_heads,
        "dsa_indexer_head_dim": sparse.indexer_head_dim, "dsa_indexer_topk": sparse.topk,
        "dsa_indexer_loss_coeff": DSA_INDEXER_LOSS_COEFF, "dsa_indexer_use_sparse_loss": True}
    if sparse.indexer_layers:
        schedule = index_sharing_schedule(sparse.indexer_layers, arch.num_layers)
        if schedule is None:
            raise unsupported(NAME, "this DeepSeek Sparse Attention index sharing (layers reusing another's top-k)",
                              "Megatron-Core shares indexes every --dsa-indexer-topk-freq layers after "
                              "--dsa-indexer-skip-topk-offset")
        args["dsa_indexer_topk_freq"], args["dsa_indexer_skip_topk_offset"] = schedule
    return args


def _linear_attention_args(arch: Architecture, cp: int) -> dict[str, Any]:
    """Megatron-Core's flags for a hybrid model's Gated DeltaNet layers (Qwen3-Next; TransformerConfig's linear
    attention fields: --experimental-attention-variant gated_delta_net, --linear-attention-freq N, whose N - 1
    linear layers then one full one are the interval rule rigplan models, the conv and head shapes) and the output
    gate of its full-attention layers (--attention-output-gate); listed full-attention layers are written as
    --linear-attention-freq's per-layer list. Kimi Delta Attention is refused. Partial rotary (Qwen3-Next's 0.25,
    --rotary-percent) is not a field of rigplan's model and is left to the user. Megatron-Core 0.16 asserts
    context_parallel_size == 1 for gated_delta_net, so a layout with cp > 1 is refused."""
    args: dict[str, Any] = {"attention_output_gate": True} if arch.attention_output_gate else {}
    la = arch.linear_attention
    if la is None:
        return args
    if la.kind != "gated_deltanet":
        raise unsupported(NAME, "Kimi Delta Attention layers", "Megatron-Core's linear attention is gated_delta_net")
    if cp > 1:
        raise unsupported(NAME, f"context parallelism (cp={cp}) with Gated DeltaNet layers",
                          "Megatron-Core 0.16 asserts context_parallel_size == 1 for gated_delta_net; use cp 1")
    freq: int | str = la.full_attention_interval
    if la.full_attention_layers:  # the per-layer list form, 1 for a linear-attention layer, quoted for the shell
        full = set(la.full_attention_layers)
        freq = _quoted_list([0 if i in full else 1 for i in range(arch.num_layers)])
    return {**args, "experimental_attention_variant": "gated_delta_net", "linear_attention_freq":
            freq, "linear_conv_kernel_dim": la.conv_kernel, "linear_key_head_dim":
            la.key_head_dim, "linear_value_head_dim": la.value_head_dim, "linear_num_key_heads": la.num_key_heads,
            "linear_num_value_heads": la.num_value_heads}


def hybrid_pattern(arch: Architecture) -> str:
    """Megatron-Core's --hybrid-override-pattern of a Mamba-2 hybrid: per rigplan layer its mixer ('M' Mamba-2, '*'
    attention) and the feed-forward blocks after it ('E' an MoE layer, '-' a dense MLP, repeated for a dense model's
    extra_ffn_blocks, nothing in a layer without one: a dense model's ffn_free_layers, an MoE model's dense layers
    of width 0), the reading of catalog.hf_hybrid_families in reverse
    (megatron/core/ssm/mamba_hybrid_layer_allocation.py, Symbols)."""
    assert arch.linear_attention is not None
    full = set(arch.linear_attention.full_layers(arch.num_layers))
    dense = (dense_layer_mask(arch.num_layers, arch.moe.dense_pattern()) if arch.moe is not None
             else [True] * arch.num_layers)
    free = set(arch.ffn_free_layers)
    blocks = []
    for i in range(arch.num_layers):
        mlps = 0 if i in free or not arch.ffn else 1 + arch.extra_ffn_blocks.count(i)
        blocks.append(("*" if i in full else "M") + ("E" if not dense[i] else "-" * mlps))
    return "".join(blocks)


def hybrid_args(arch: Architecture, pp: int) -> dict[str, Any]:
    """pretrain_mamba.py's flags for a Mamba-2 hybrid (Megatron-LM's Nemotron-H scripts): the block pattern, whose
    length is --num-layers (Megatron counts blocks, rigplan layers: a mixer and its feed-forward block), the Mamba-2
    shapes, squared-ReLU MLPs (Nemotron-H's relu2, the plain MLP rigplan reads from nemotron_h configs), no position
    embedding, and Megatron-Core's Mamba stack spec. Refused: pipeline stages (Megatron-Core splits a hybrid's blocks
    evenly, rigplan's estimate its layers) and multi-token prediction (a hybrid MTP has its own pattern)."""
    la = arch.linear_attention
    assert la is not None
    if pp > 1:
        raise unsupported(NAME, f"pipeline stages (pp={pp}) of a Mamba hybrid", "Megatron-Core splits its blocks, "
                          "rigplan's estimate its layers: use --pp 1")
    if arch.moe is not None and arch.moe.mtp_layers:
        raise unsupported(NAME, "multi-token prediction in a Mamba hybrid", "use --mtp-layers 0")
    pattern = hybrid_pattern(arch)
    args: dict[str, Any] = {
        "num_layers": len(pattern), "hybrid_override_pattern": f"'{pattern}'",  # quoted: '*' is a shell glob
        "mamba_num_heads": la.num_value_heads,
        "mamba_head_dim": la.value_head_dim, "mamba_state_dim": la.key_head_dim, "mamba_num_groups": la.num_key_heads,
        "position_embedding_type": "none", "spec": "megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec"}
    if arch.mlp == "plain":
        args["squared_relu"] = True
    if not arch.ffn:
        args["ffn_hidden_size"] = None
    return args


def pipeline_layout(stages: tuple[int, ...], mtp_layers: int) -> str:
    """Megatron-Core's --pipeline-model-parallel-layout for an uneven split: one entry per virtual stage in layer
    order (stage k on rank k mod pp, chunk k // pp, as domain.stages orders them), 'E' the embedding on the first,
    't' each decoder layer, 'm' the MTP modules and 'L' the loss on the last; runs of equal stages written as
    (stage|)*n (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list), e.g. DeepSeek-V3's
    PP16 VPP2 "Et|(tt|)*30mL"."""
    texts = ["E" * (k == 0) + "t" * n + ("m" * mtp_layers + "L") * (k == len(stages) - 1) for k, n in enumerate(stages)]
    parts: list[str] = []
    k = 0
    while k < len(texts):
        run = 1
        while k + run < len(texts) - 1 and texts[k + run] == texts[k]:
            run += 1
        last = k + run == len(texts)
        parts.append(texts[k] if last else (f"({texts[k]}|)*{run}" if run > 1 else texts[k] + "|"))
        k += run
    return "'" + "".join(parts) + "'"


def _switch_args(job: Job) -> dict[str, Any]:
    """Megatron-LM's flags for the job's switches that change the estimate: fp8 attention and parameter gather,
    the fused SwiGLU's fp8 input store, bf16 Adam moments (the precision-aware optimizer), TP communication
    overlap and CUDA graphs (full-iteration
    graphs are Megatron-Core's 'local' implementation with scope full_iteration; per-module ones Transformer
    Engine's), and dropout off where the estimate has it off."""
    args: dict[str, Any] = {"fp8_dot_product_attention": job.fp8_attention, "fp8_param_gather": job.fp8_param_gather,
                            "activation_func_fp8_input_store": job.fp8_activation_store,
                            "tp_comm_overlap": job.tp_comm_overlap}
    if not job.dropout:  # Megatron-LM's defaults are 0.1 each; the estimate took dropout off
        args.update({"attention_dropout": 0.0, "hidden_dropout": 0.0})
    if job.bf16_moments:
        args.update({"use_precision_aware_optimizer": True, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"})
    if job.cuda_graphs == "full":
        args.update({"cuda_graph_impl": "local", "cuda_graph_scope": "full_iteration"})
    elif job.cuda_graph_scope:
        args.update({"cuda_graph_impl": "transformer_engine", "cuda_graph_scope": " ".join(job.cuda_graph_scope)})
    return args


def _quoted_list(values: list[int]) -> str:
    """A per-layer list flag as Megatron-LM's argparse takes it, quoted for the shell: '[1,1,0]'."""
    return f"'[{','.join(map(str, values))}]'"


def _unquoted_list(text: str) -> list[int]:
    """The list a _quoted_list flag holds."""
    return [int(v) for v in text.strip("'[]").split(",")]


def core_config_kwargs(args: dict[str, Any]) -> dict[str, Any]:
    """megatron-core TransformerConfig keyword arguments that Megatron-LM derives from `args`."""
    renamed = {"num_experts": "num_moe_experts"}
    direct = ("num_layers", "hidden_size", "num_attention_heads", "kv_channels", "num_query_groups",
              "ffn_hidden_size", "normalization", "qk_layernorm", "tensor_model_parallel_size",
              "pipeline_model_parallel_size", "context_parallel_size", "cp_comm_type", "expert_model_parallel_size",
              "expert_tensor_parallel_size",
              "sequence_parallel", "recompute_granularity", "recompute_method", "recompute_num_layers",
              "bf16", "fp16", "num_experts", "moe_router_topk", "moe_ffn_hidden_size",
              "moe_shared_expert_intermediate_size", "moe_grouped_gemm", "moe_token_dispatcher_type",
              "moe_flex_dispatcher_backend", "moe_expert_capacity_factor", "moe_pad_expert_input_to_capacity",
              "moe_router_force_load_balancing", "moe_router_score_function", "moe_router_num_groups",
              "moe_router_group_topk", "mtp_num_layers",
              "pipeline_model_parallel_layout",
              "overlap_moe_expert_parallel_comm", "delay_wgrad_compute",
              "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim",
              "attention_output_gate", "experimental_attention_variant", "linear_attention_freq",
              "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads",
              "linear_num_value_heads", "hybrid_override_pattern", "mamba_num_heads", "mamba_head_dim",
              "mamba_state_dim", "mamba_num_groups", "dsa_indexer_n_heads", "dsa_indexer_head_dim", "dsa_indexer_topk",
              "dsa_indexer_loss_coeff", "dsa_indexer_use_sparse_loss")
    out: dict[str, Any] = {renamed.get(k, k): args[k] for k in direct if args.get(k) not in (None, False)}
    if "pipeline_model_parallel_layout" in out:  # quoted for the shell
        out["pipeline_model_parallel_layout"] = out["pipeline_model_parallel_layout"].strip("'")
    out["gated_linear_unit"] = bool(args.get("swiglu") or args.get("quick_geglu"))
    if args.get("hybrid_override_pattern"):  # pretrain_mamba.py's model
        out["is_hybrid_model"] = True
        del out["hybrid_override_pattern"]  # MambaModel's argument, not a TransformerConfig field
    for key in ("softmax_type", "glu_linear_offset", "activation_func_clamp_value"):
        if args.get(key) is not None:
            out[key] = args[key]
    if args.get("window_size"):
        out["window_size"] = tuple(int(v) for v in args["window_size"].split(","))
        freq = args.get("window_attn_skip_freq")
        if isinstance(freq, str):  # a per-layer pattern, quoted for the shell
            out["window_attn_skip_freq"] = _unquoted_list(freq)
        elif freq:
            out["window_attn_skip_freq"] = freq
    out["add_bias_linear"] = not args.get("disable_bias_linear", False)
    out["add_qkv_bias"] = bool(args.get("add_qkv_bias"))
    if args.get("num_layers_per_virtual_pipeline_stage"):
        per_stage = args["num_layers"] // args["pipeline_model_parallel_size"]
        out["virtual_pipeline_model_parallel_size"] = per_stage // args["num_layers_per_virtual_pipeline_stage"]
    if args.get("fp8_format"):
        out["fp8"] = args["fp8_format"]
    for key in ("fp8_recipe", "fp4_recipe", "fp8_dot_product_attention", "tp_comm_overlap", "cuda_graph_impl",
                "activation_func_fp8_input_store"):
        if args.get(key):
            out[key] = args[key]
    if args.get("fp8_param_gather"):
        out["fp8_param"] = True
    for key in ("attention_dropout", "hidden_dropout"):
        if key in args:
            out[key] = args[key]
    if isinstance(args.get("linear_attention_freq"), str):  # a per-layer pattern, quoted for the shell
        out["linear_attention_freq"] = _unquoted_list(args["linear_attention_freq"])
    if args.get("cuda_graph_scope"):
        out["cuda_graph_scope"] = args["cuda_graph_scope"].split()
    if args.get("fp4_format"):
        out["fp4"] = args["fp4_format"]
    return out


def export_megatron(setup: TrainingSetup) -> Exported:
    args = megatron_args(setup)
    script = "pretrain_mamba.py" if args.get("hybrid_override_pattern") else "pretrain_gpt.py"
    command = (f"{torchrun_prefix(setup)} {script} \\\n  {flag_line(args)} \\\n"
               "  --data-path $DATA --train-iters $ITERS --lr 3e-4 --save $CHECKPOINTS")
    notes = ["run from a Megatron-LM checkout; --tokenizer-type NullTokenizer keeps the vocabulary size: use "
             "your tokenizer (e.g. --tokenizer-type HuggingFaceTokenizer --tokenizer-model ...) for real data"]
    if args.get("fp8_format"):
        notes.append("fp8 needs TransformerEngine and an fp8-capable GPU (Hopper or later)")
    if args.get("fp4_format"):
        notes.append("NVFP4 needs TransformerEngine with NVFP4BlockScaling and an NVIDIA Blackwell GPU")
    if args.get("dsa_indexer_topk_freq"):
        notes.append("--dsa-indexer-topk-freq and --dsa-indexer-skip-topk-offset (DSA index sharing) need a "
                     "Megatron-LM newer than Megatron-Core 0.16, which runs an indexer on every layer")
    if args.get("moe_router_force_load_balancing"):
        notes.append(FORCED_BALANCE_NOTE.format(flag="--moe-router-force-load-balancing"))
    if setup.arch.rope_attention_factor != 1.0:
        notes.append("the model's YaRN scaling of the rotary embedding (cos and sin multiplied by "
                     f"{setup.arch.rope_attention_factor:.4g}) has no Megatron-LM flag here: Megatron-Bridge's model "
                     "provider sets it; this command runs plain RoPE")
    return Exported(framework="megatron", files={"megatron_args.sh": command + "\n"}, command=command, notes=notes,
                    values=args)
