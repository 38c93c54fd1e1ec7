"""Every export format read back by its framework's own config classes, for dense, MoE, LoRA and
pipeline layouts; what a framework cannot express is an Unsupported error naming the feature."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest
import yaml

from rigplan.domain.stages import virtual_stage_layers
from rigplan.estimate.moe import flex_dispatched
from rigplan.export import Unsupported, export
from rigplan.flow.request import EstimateRequest
from rigplan.flow.resolve import build_setup

LAYOUTS = {
    "dense": dict(model="llama-3.1-8b", gpus=16, tp=2, zero=1, recompute="selective", global_batch=256),
    "dense-fsdp": dict(model="llama-3.1-8b", gpus=16, zero=3, recompute="full", global_batch=256),
    "moe": dict(model="mixtral-8x7b", gpus=32, ep=8, zero=1, global_batch=256),
    "moe-fsdp": dict(model="mixtral-8x7b", gpus=16, zero=3, global_batch=256),
    "lora": dict(model="llama-3.1-8b", gpus=8, method="lora", lora_targets="q,k,v,o", precision="bf16-mixed",
                 global_batch=64),
    "lora-zero2": dict(model="llama-3.1-8b", gpus=8, method="lora", zero=2, precision="bf16-mixed", global_batch=64),
    "pipeline": dict(model="llama-3.1-70b", gpus=64, tp=8, pp=4, vpp=5, zero=1, sequence_parallel=True,
                     recompute="full", global_batch=512),
    "pipeline-zero1": dict(model="llama-3.1-70b", gpus=32, pp=4, zero=1, global_batch=256),
}


def setup_of(name: str, **changes: object):
    return build_setup(EstimateRequest(**{**LAYOUTS[name], **changes}))


def need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install 'rigplan[frameworks]'")


# --- Megatron-LM / megatron-core -------------------------------------------------------------------


@pytest.mark.parametrize("name,changes", [("dense", {}), ("moe", {}), ("pipeline", {}), ("dense-fsdp", {}),
                                          ("moe", {"tp": 2, "etp": 1, "ep": 4, "sequence_parallel": True}),
                                          ("moe", {"a2a_overlap": True}),
                                          ("moe", {"moe_dispatcher": "hybridep"}),
                                          ("moe", {"moe_dispatcher": "allgather", "tp": 2,
                                                   "sequence_parallel": True}),
                                          ("moe", {"a2a_overlap": True, "moe_dispatcher": "alltoall",
                                                   "capacity_factor": 1.0, "moe_pad_to_capacity": True}),
                                          ("dense", {"gpu": "b200", "precision": "fp8", "fp8_recipe": "mxfp8"}),
                                          ("dense", {"gpu": "b200", "precision": "fp8", "fp8_recipe": "nvfp4"}),
                                          ("dense", {"precision": "fp8", "fp8_recipe": "blockwise"}),
                                          ("dense", {"gpu": "b200", "precision": "fp8", "fp8_recipe": "mxfp8",
                                                     "fp8_attention": True, "fp8_param_gather": True,
                                                     "tp_comm_overlap": True, "bf16_moments": True,
                                                     "cuda_graph_scope": ["attn"]}),
                                          ("moe", {"cuda_graphs": "full"}),
                                          ("moe", {"balanced_routing": True, "framework": "megatron",
                                                   "fp8_activation_store": True}),
                                          ("dense", {"cp": 2, "seq": 8192, "cp_comm_type": "a2a"})])
def test_megatron_args_build_megatron_core_configs(name: str, changes: dict) -> None:
    need("megatron.core")
    import torch
    from megatron.core.distributed import DistributedDataParallelConfig
    from megatron.core.optimizer import OptimizerConfig
    from megatron.core.transformer.transformer_config import TransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    setup = setup_of(name, **changes)
    out = export(setup, "megatron")
    args = out.values
    kwargs = core_config_kwargs(args)
    if args.get("swiglu"):  # Megatron-LM's --swiglu sets the activation (arguments.py: args.activation_func)
        kwargs["activation_func"] = torch.nn.functional.silu
    dtype = torch.bfloat16 if args.get("bf16") else torch.float32
    config = TransformerConfig(**kwargs, params_dtype=dtype, pipeline_dtype=dtype)
    lay = setup.layout
    assert (config.tensor_model_parallel_size, config.pipeline_model_parallel_size) == (lay.tp, lay.pp)
    assert config.expert_model_parallel_size == lay.ep and config.sequence_parallel == lay.sequence_parallel
    if setup.arch.moe:
        assert (config.expert_tensor_parallel_size or config.tensor_model_parallel_size) == lay.expert_tp
    assert config.num_layers == setup.arch.num_layers and config.num_query_groups == setup.arch.kv_heads
    if lay.vpp > 1:
        assert config.virtual_pipeline_model_parallel_size == lay.vpp
    if setup.arch.moe:
        assert config.num_moe_experts == setup.arch.moe.num_experts
        assert config.overlap_moe_expert_parallel_comm == setup.job.a2a_overlap
        assert config.moe_pad_expert_input_to_capacity == setup.job.moe_pad_to_capacity
        if setup.job.a2a_overlap and setup.job.moe_dispatcher is None:  # DeepEP with the overlap by default
            assert config.moe_token_dispatcher_type == "flex" and config.moe_flex_dispatcher_backend == "deepep"
        if setup.job.moe_dispatcher == "hybridep":
            assert config.moe_token_dispatcher_type == "flex" and config.moe_flex_dispatcher_backend == "hybridep"
        if not flex_dispatched(setup.job):  # named even at ep 1: Megatron-LM's default is allgather
            named = "allgather" if setup.job.moe_dispatcher == "allgather" else "alltoall"
            assert config.moe_token_dispatcher_type == named
            assert f"--moe-token-dispatcher-type {named}" in out.command
        assert config.moe_router_force_load_balancing == setup.job.forced_balance
        assert ("--moe-router-force-load-balancing" in out.command) == setup.job.forced_balance
    assert config.recompute_granularity == {"none": None, "selective": "selective", "full": "full"}[setup.job.recompute]
    ddp = DistributedDataParallelConfig(overlap_grad_reduce=args["overlap_grad_reduce"],
                                        overlap_param_gather=args["overlap_param_gather"],
                                        use_distributed_optimizer=args["use_distributed_optimizer"])
    assert ddp.use_distributed_optimizer == (lay.zero == 1)
    OptimizerConfig(optimizer=args["optimizer"], bf16=bool(args.get("bf16")),
                    use_distributed_optimizer=args["use_distributed_optimizer"])
    for flag in ("--tensor-model-parallel-size", "--micro-batch-size", "--global-batch-size"):
        assert flag in out.command
    job = setup.job
    assert (config.fp8_dot_product_attention, config.fp8_param, config.tp_comm_overlap) == (
        job.fp8_attention, job.fp8_param_gather, job.tp_comm_overlap)
    assert config.activation_func_fp8_input_store == job.fp8_activation_store
    assert ("--activation-func-fp8-input-store" in out.command) == job.fp8_activation_store
    if job.cuda_graphs == "full":
        assert (config.cuda_graph_impl, "--cuda-graph-scope full_iteration" in out.command) == ("local", True)
    elif job.cuda_graph_scope:
        assert config.cuda_graph_impl == "transformer_engine"
    if lay.cp > 1:
        assert config.context_parallel_size == lay.cp and config.cp_comm_type == job.cp_comm_type
        assert f"--cp-comm-type {job.cp_comm_type}" in out.command
    if job.bf16_moments:
        assert "--exp-avg-dtype bf16" in out.command and "--use-precision-aware-optimizer" in out.command
    if setup.job.precision == "fp8" and setup.job.fp8_recipe == "blockwise":
        assert (config.fp8, config.fp8_recipe) == ("e4m3", "blockwise")
        assert "--fp8-recipe blockwise" in out.command
    if setup.job.precision == "fp8" and setup.job.fp8_recipe == "nvfp4":
        assert (config.fp4, config.fp4_recipe, config.fp8) == ("e2m1", "nvfp4", None)
        assert "--fp4-recipe nvfp4" in out.command and "--fp8-format" not in out.command
    elif setup.job.precision == "fp8":
        assert config.fp8_recipe == {"current": "tensorwise"}.get(setup.job.fp8_recipe, setup.job.fp8_recipe)


def test_megatron_moe_layer_freq_follows_interleaved_and_leading_dense_layers() -> None:
    maverick = export(build_setup(EstimateRequest(model="llama-4-maverick", gpus=128, ep=16, pp=4, zero=1,
                                                  global_batch=256)), "megatron").values
    assert maverick["moe_layer_freq"] == "'[" + ",".join(["0", "1"] * 24) + "]'"
    deepseek = export(build_setup(EstimateRequest(model="deepseek-v3", gpus=256, ep=64, pp=4, zero=1,
                                                  global_batch=256)), "megatron").values
    assert deepseek["moe_layer_freq"] == "'[" + ",".join(["0"] * 3 + ["1"] * 58) + "]'"


def test_megatron_writes_the_router_and_the_mtp_modules_the_estimate_counts() -> None:
    """DeepSeek-V3's sigmoid router and its multi-token-prediction module (counted on the last stage) reach
    megatron-core's TransformerConfig; a softmax model writes neither."""
    need("megatron.core")
    import torch
    from megatron.core.transformer.transformer_config import MLATransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    deepseek = export(build_setup(EstimateRequest(model="deepseek-v3", gpus=256, ep=64, pp=4, zero=1,
                                                  global_batch=256)), "megatron")
    assert "--mtp-num-layers 1" in deepseek.command and "--moe-router-score-function sigmoid" in deepseek.command
    config = MLATransformerConfig(**core_config_kwargs(deepseek.values), params_dtype=torch.bfloat16,
                                  pipeline_dtype=torch.bfloat16)  # MLA's ranks and head dims too
    assert (config.mtp_num_layers, config.moe_router_score_function) == (1, "sigmoid")
    assert (config.kv_lora_rank, config.v_head_dim) == (512, 128)
    # DeepSeek's group-limited routing (n_group 8, topk_group 4), as Megatron-Bridge passes it on
    assert "--moe-router-num-groups 8" in deepseek.command and "--moe-router-group-topk 4" in deepseek.command
    assert (config.moe_router_num_groups, config.moe_router_group_topk) == (8, 4)
    qwen = export(setup_of("moe", model="qwen3-30b-a3b"), "megatron").values
    assert "mtp_num_layers" not in qwen and "moe_router_score_function" not in qwen
    assert "moe_router_num_groups" not in qwen


def test_megatron_writes_deepseek_sparse_attention() -> None:
    """DeepSeek-V3.2's indexer reaches megatron-core's MLATransformerConfig as the 'dsa' variant with the KL loss over
    the selected keys (the sparse stage the estimate times); GLM's index sharing, which 0.16 lacks, is refused."""
    need("megatron.core")
    import torch
    from megatron.core.transformer.transformer_config import MLATransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    request = {"model": "deepseek-v3.2", "gpus": 64, "ep": 8, "pp": 8, "zero": 1, "global_batch": 64}
    out = export(build_setup(EstimateRequest(**request)), "megatron")
    assert "--experimental-attention-variant dsa" in out.command and "--dsa-indexer-use-sparse-loss" in out.command
    config = MLATransformerConfig(**core_config_kwargs(out.values), params_dtype=torch.bfloat16,
                                  pipeline_dtype=torch.bfloat16)
    assert (config.dsa_indexer_n_heads, config.dsa_indexer_head_dim, config.dsa_indexer_topk) == (64, 128, 2048)
    assert config.dsa_indexer_loss_coeff > 0 and config.dsa_indexer_use_sparse_loss
    assert export(build_setup(EstimateRequest(**{**request, "model": "deepseek-v3.1"})), "megatron").values.get(
        "experimental_attention_variant") is None


def test_megatron_writes_index_sharing_as_its_schedule_and_refuses_other_patterns(tmp_path: Path) -> None:
    """GLM-5.2's 21 indexer layers are Megatron-Core's --dsa-indexer-topk-freq 4 from --dsa-indexer-skip-topk-offset 3;
    a sharing pattern no such schedule gives is refused in one line."""
    from rigplan.export.megatron import index_sharing_schedule

    glm = export(build_setup(EstimateRequest(model="glm-5.2", gpus=192, pp=6, ep=32, zero=1, global_batch=192)),
                 "megatron")
    assert "--dsa-indexer-topk-freq 4" in glm.command and "--dsa-indexer-skip-topk-offset 3" in glm.command
    assert index_sharing_schedule((0, 3, 5), 6) is None
    cfg = {"model_type": "glm_moe_dsa", "vocab_size": 512, "hidden_size": 256, "intermediate_size": 512,
           "moe_intermediate_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "n_routed_experts": 8,
           "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "q_lora_rank": 96,
           "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "index_topk": 64,
           "index_n_heads": 4, "index_head_dim": 32,
           "indexer_types": ["full", "shared", "shared", "full", "shared", "full"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    with pytest.raises(Unsupported, match="index sharing"):
        export(build_setup(EstimateRequest(model=str(path), gpus=8, ep=8, global_batch=8)), "megatron")


def test_megatron_writes_the_gated_deltanet_layers_of_a_hybrid_model() -> None:
    """Qwen3-Next's Gated DeltaNet layers and gated attention reach megatron-core's TransformerConfig with the shapes
    rigplan counts; context parallelism, which Megatron-Core 0.16 rejects with gated_delta_net, is refused."""
    need("megatron.core")
    import torch
    from megatron.core.transformer.transformer_config import TransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    request = {"model": "qwen3-next-80b-a3b", "gpus": 128, "pp": 4, "ep": 32, "zero": 1, "global_batch": 256}
    hybrid = export(build_setup(EstimateRequest(**request)), "megatron")
    assert "--experimental-attention-variant gated_delta_net" in hybrid.command
    assert "--linear-attention-freq 4" in hybrid.command and "--attention-output-gate" in hybrid.command
    config = TransformerConfig(**core_config_kwargs(hybrid.values), params_dtype=torch.bfloat16,
                               pipeline_dtype=torch.bfloat16)
    assert (config.linear_num_key_heads, config.linear_num_value_heads, config.linear_key_head_dim) == (16, 32, 128)
    assert config.attention_output_gate and config.linear_attention_freq == 4
    with pytest.raises(Unsupported, match="context parallelism"):
        export(build_setup(EstimateRequest(**{**request, "cp": 2, "gpus": 256})), "megatron")


NEMOTRON_H_56B_PATTERN = ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
                          "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")
"""Megatron-Bridge NemotronHModel56BProvider's hybrid_override_pattern."""


@pytest.mark.parametrize(("model", "pattern"), [
    ("nemotron-h-56b", NEMOTRON_H_56B_PATTERN),
    ("nemotron-3-nano-30b-a3b", "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"),
], ids=["dense-56b", "moe-nano"])
def test_megatron_writes_a_mamba_hybrid_as_pretrain_mamba_reads_it(model: str, pattern: str) -> None:
    """A Nemotron-H hybrid exports as pretrain_mamba.py with the model's own block pattern (rigplan's layers turned
    back into Megatron's blocks), which megatron-core's allocate_layers accepts, and a TransformerConfig with the
    Mamba-2 shapes rigplan counts; no moe_layer_freq (the pattern places the MoE blocks)."""
    need("megatron.core")
    import torch
    from megatron.core.ssm.mamba_hybrid_layer_allocation import allocate_layers
    from megatron.core.transformer.transformer_config import TransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    request = {"model": model, "gpu": "h100-sxm", "gpus": 16, "tp": 2, "sequence_parallel": True, "zero": 1,
               "global_batch": 64, "seq": 8192, **({"ep": 8} if "nano" in model else {})}
    out = export(build_setup(EstimateRequest(**request)), "megatron")
    assert " pretrain_mamba.py " in out.command and f"--hybrid-override-pattern '{pattern}'" in out.command
    args = out.values
    assert args["num_layers"] == len(pattern) and "moe_layer_freq" not in args and args["squared_relu"]
    assert allocate_layers(len(pattern), 0.0, 0.0, pattern) == list(pattern)
    config = TransformerConfig(**core_config_kwargs(args), params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16)
    la = build_setup(EstimateRequest(**request)).arch.linear_attention
    assert la is not None and config.is_hybrid_model
    assert (config.mamba_num_heads, config.mamba_head_dim, config.mamba_state_dim, config.mamba_num_groups) == (
        la.num_value_heads, la.value_head_dim, la.key_head_dim, la.num_key_heads)


def test_megatron_refuses_pipeline_stages_and_mtp_of_a_mamba_hybrid() -> None:
    base = {"model": "nemotron-h-8b", "gpu": "h100-sxm", "gpus": 16, "global_batch": 64}
    with pytest.raises(Unsupported, match=r"pipeline stages \(pp=2\) of a Mamba hybrid"):
        export(build_setup(EstimateRequest(**base, pp=2)), "megatron")
    with pytest.raises(Unsupported, match="multi-token prediction in a Mamba hybrid"):
        export(build_setup(EstimateRequest(**{**base, "model": "nemotron-3-super-120b-a12b", "ep": 16,
                                              "mtp_layers": 1})), "megatron")


def test_megatron_refuses_dualpipe() -> None:
    with pytest.raises(Unsupported, match="DualPipe"):
        export(setup_of("moe", a2a_overlap=True, a2a_overlap_schedule="dualpipe"), "megatron")


def test_megatron_refuses_lora_and_zero2() -> None:
    with pytest.raises(Unsupported, match="Megatron-LM cannot express LoRA"):
        export(setup_of("lora"), "megatron")
    with pytest.raises(Unsupported, match="ZeRO-2"):
        export(setup_of("lora-zero2", method="full"), "megatron")


# --- torchtitan -------------------------------------------------------------------------------------


def torchtitan_config_manager():
    """torchtitan's own ConfigManager and JobConfig, without the package __init__: torchtitan 0.2.2
    imports its MoE Triton kernels there, and the CPU build of torch has no Triton."""
    if "torchtitan" not in sys.modules:
        need("torchtitan")
        root = Path(importlib.util.find_spec("torchtitan").origin).parent
        package = types.ModuleType("torchtitan")
        package.__path__ = [str(root)]
        sys.modules["torchtitan"] = package
    from torchtitan.config.manager import ConfigManager

    return ConfigManager


@pytest.mark.parametrize("name,changes", [
    ("dense-fsdp", {"recompute": "op", "tp": 2}),
    ("pipeline", {"zero": 3, "recompute": "op", "vpp": 2}),
    ("moe-fsdp", {"model": "deepseek-v3", "gpus": 64, "ep": 8, "zero": 3}),
    ("dense-fsdp", {"recompute": "op", "gpu": "b200", "precision": "fp8", "fp8_recipe": "mxfp8"}),
    ("dense-fsdp", {"recompute": "op", "gpu": "h100-sxm", "precision": "fp8", "fp8_recipe": "current"}),
    ("moe-fsdp", {"model": "deepseek-v3", "gpus": 64, "ep": 8, "gpu": "b200", "precision": "fp8",
                  "fp8_recipe": "mxfp8"}),
    ("moe-fsdp", {"model": "deepseek-v3", "gpus": 64, "ep": 8, "gpu": "h100-sxm", "precision": "fp8",
                  "fp8_recipe": "current", "kernels": "eager", "bf16_experts": True}),
    ("moe-fsdp", {"model": "deepseek-v3", "gpus": 64, "ep": 8, "gpu": "b200", "fp8_experts": True,
                  "fp8_recipe": "mxfp8"}),
    ("moe-fsdp", {"model": "deepseek-v3", "gpus": 64, "ep": 8, "moe_dispatcher": "deepep"}),
    ("dense-fsdp", {"recompute": "op", "framework": "torchtitan", "compile": True}),
    ("dense-fsdp", {"recompute": "op", "framework": "torchtitan", "compile": True, "loss": "unfused"}),
    ("moe-fsdp", {"model": "qwen3-30b-a3b", "gpus": 16, "ep": 8, "recompute": "full", "balanced_routing": True}),
    ("pipeline", {"model": "llama-3.1-405b", "gpus": 128, "tp": 8, "pp": 16, "vpp": 1, "zero": 3,
                  "recompute": "full", "sequence_parallel": True}),
    ("moe-fsdp", {"model": "gpt-oss-20b", "gpus": 8, "recompute": "full", "framework": "torchtitan"}),
    ("moe-fsdp", {"model": "llama-4-scout", "gpus": 64, "ep": 16, "gpu": "b200", "precision": "fp8",
                  "fp8_recipe": "mxfp8"}),
])
def test_torchtitan_toml_parses_with_its_config_manager(tmp_path: Path, name: str, changes: dict) -> None:
    config_manager = torchtitan_config_manager()
    setup = setup_of(name, **changes)
    out = export(setup, "torchtitan")
    path = tmp_path / "job.toml"
    path.write_text(out.files["torchtitan_job.toml"])
    config = config_manager().parse_args(["--job.config_file", str(path)])
    lay = setup.layout
    p = config.parallelism
    assert (p.tensor_parallel_degree, p.pipeline_parallel_degree, p.expert_parallel_degree) == (lay.tp, lay.pp, lay.ep)
    assert p.data_parallel_shard_degree == lay.dp
    assert p.expert_parallel_comm_backend == ("deepep" if setup.job.moe_dispatcher == "deepep" else "standard")
    assert config.training.seq_len == setup.job.seq_len
    compiled = setup.job.compile or setup.job.kernels == "fused"
    assert config.compile.enable == compiled
    if compiled:  # the loss compiled as the estimate counted it (--loss compiled)
        assert ("loss" in config.compile.components) == (setup.job.loss == "compiled")
    assert config.training.global_batch_size == out.values["training"]["global_batch_size"]
    assert config.debug.moe_force_load_balance == (setup.arch.moe is not None and setup.job.forced_balance)
    if lay.pp > 1:
        assert p.pipeline_parallel_schedule == ("Interleaved1F1B" if lay.vpp > 1 else "1F1B")
        parts = p.module_fqns_per_model_part
        layers = [int(n.split(".")[1]) for part in parts for n in part if n.startswith("layers.")]
        assert len(parts) == lay.pp * lay.vpp and layers == list(range(setup.arch.num_layers))
        assert parts[0][0] == "tok_embeddings" and parts[-1][-2:] == ["norm", "output"]
        counts = [sum(n.startswith("layers.") for n in part) for part in parts]  # rigplan's split, uneven or not
        assert counts == list(virtual_stage_layers(lay.split, setup.arch.num_layers, lay.pp, lay.vpp))
        assert p.pipeline_parallel_layers_per_stage is None
    assert config.activation_checkpoint.mode == {"none": "none", "op": "selective", "full": "full"}[
        setup.job.recompute]
    job, moe = setup.job, setup.arch.moe is not None
    linear = ["quantize.linear.mx" if job.fp8_recipe == "mxfp8" else "quantize.linear.float8"] \
        if job.precision == "fp8" else []
    grouped = ["quantize.grouped_mm.mx" if job.fp8_recipe == "mxfp8" else "quantize.grouped_mm.float8"] \
        if moe and ((job.precision == "fp8" and not job.bf16_experts) or job.fp8_experts) else []
    assert list(config.model.converters) == linear + grouped
    if linear == ["quantize.linear.mx"]:
        assert config.quantize.linear.mx.recipe_name == "mxfp8_cublas"
    elif linear:
        assert config.quantize.linear.float8.enable_fsdp_float8_all_gather is True
    if grouped == ["quantize.grouped_mm.mx"]:
        assert config.quantize.grouped_mm.mx.recipe_name == "mxfp8"
    if grouped:
        experts = config.quantize.grouped_mm.mx.fqns if "mx" in grouped[0] else config.quantize.grouped_mm.float8.fqns
        assert experts in (["experts"], "experts")


MOE_B200 = {"model": "deepseek-v3", "gpus": 64, "ep": 8, "gpu": "b200"}


@pytest.mark.parametrize("changes,converters", [
    ({**MOE_B200, "precision": "fp8", "fp8_recipe": "mxfp8"}, ["quantize.linear.mx", "quantize.grouped_mm.mx"]),
    ({**MOE_B200, "precision": "fp8", "fp8_recipe": "current"},
     ["quantize.linear.float8", "quantize.grouped_mm.float8"]),
    ({**MOE_B200, "precision": "fp8", "fp8_recipe": "mxfp8", "kernels": "eager", "bf16_experts": True},
     ["quantize.linear.mx"]),
    ({**MOE_B200, "fp8_experts": True, "fp8_recipe": "mxfp8"}, ["quantize.grouped_mm.mx"]),
    ({"gpu": "b200", "precision": "fp8", "fp8_recipe": "mxfp8"}, ["quantize.linear.mx"]),
])
def test_torchtitan_converters_follow_what_the_estimate_puts_in_fp8(changes: dict, converters: list[str]) -> None:
    """The exported converters quantize what the estimate ran in fp8: the linears under --precision fp8, an MoE's
    grouped experts too unless --bf16-experts, the experts alone with --fp8-experts."""
    name = "moe-fsdp" if "ep" in changes else "dense-fsdp"
    values = export(setup_of(name, **changes), "torchtitan").values
    assert values["model"].get("converters", []) == converters


def test_torchtitan_refuses_a_grouped_mm_save_list_it_has_no_option_for() -> None:
    with pytest.raises(Unsupported, match=r"torchtitan cannot express aten._grouped_mm in the per-op save list"):
        export(setup_of("moe-fsdp", **MOE_B200, recompute="op", op_save_grouped_mm=True), "torchtitan")
    values = export(setup_of("moe-fsdp", **MOE_B200, recompute="op"), "torchtitan").values
    assert values["activation_checkpoint"]["mode"] == "selective"


def test_torchtitan_refuses_all_to_all_context_parallelism() -> None:
    with pytest.raises(Unsupported, match=r"torchtitan cannot express all-to-all context parallelism.*p2p"):
        export(setup_of("dense-fsdp", cp=2, seq=8192, cp_comm_type="a2a"), "torchtitan")


def test_torchtitan_refuses_lora_zero1_and_unknown_models() -> None:
    with pytest.raises(Unsupported, match="torchtitan cannot express LoRA"):
        export(setup_of("lora"), "torchtitan")
    with pytest.raises(Unsupported, match="ZeRO-1"):
        export(setup_of("dense"), "torchtitan")
    with pytest.raises(Unsupported, match="model registry"):
        export(setup_of("moe-fsdp"), "torchtitan")


# --- DeepSpeed --------------------------------------------------------------------------------------


class DataParallelGroup:
    """The one query DeepSpeed's config makes of its `mpu` argument: the data-parallel size."""

    def __init__(self, size: int) -> None:
        self.size = size

    def get_data_parallel_world_size(self) -> int:
        return self.size


@pytest.fixture(scope="module")
def deepspeed_comm():
    """A one-process gloo group: DeepSpeed's config asks the data-parallel size of its `mpu` only once
    a process group exists (otherwise it takes a world of 1)."""
    need("deepspeed")
    import os
    import socket

    import deepspeed
    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = not dist.is_initialized()
    if started:
        os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1",
                           "LOCAL_RANK": "0"})
        dist.init_process_group("gloo", rank=0, world_size=1)
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)
    yield
    if started:
        dist.destroy_process_group()
        for key in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
            os.environ.pop(key, None)


@pytest.mark.parametrize("name,changes", [
    ("dense-fsdp", {"zero": 2, "offload": "optimizer", "recompute": "none"}),
    ("moe", {}),
    ("lora-zero2", {}),
    ("lora-zero2", {"precision": "bf16-true"}),
    ("pipeline-zero1", {}),
    ("dense-fsdp", {"offload": "all"}),
])
def test_deepspeed_json_loads_in_its_config_class(deepspeed_comm, name: str, changes: dict) -> None:
    from deepspeed.runtime.config import DeepSpeedConfig

    setup = setup_of(name, **changes)
    out = export(setup, "deepspeed")
    config = DeepSpeedConfig(json.loads(out.files["ds_config.json"]), mpu=DataParallelGroup(setup.layout.dp))
    assert config.zero_optimization_stage == setup.layout.zero
    assert config.train_batch_size == setup.job.global_batch
    assert config.train_micro_batch_size_per_gpu == setup.job.micro_batch
    assert config.bfloat16_config.enabled == setup.job.precision.startswith("bf16")
    assert config.bfloat16_config.bf16_master_weights_and_grads == (setup.job.precision == "bf16-true")
    if setup.job.offload != "none":
        assert config.zero_config.offload_optimizer is not None
    if setup.layout.pp > 1:
        assert any("PipelineModule" in n for n in out.notes)


def test_deepspeed_refuses_expert_tensor_parallelism() -> None:
    with pytest.raises(Unsupported, match="expert tensor parallelism"):
        export(setup_of("moe", etp=2), "deepspeed")


def test_deepspeed_refuses_tensor_parallel_and_zero3_pipelines() -> None:
    with pytest.raises(Unsupported, match="tensor parallelism"):
        export(setup_of("dense"), "deepspeed")
    with pytest.raises(Unsupported, match="ZeRO-3 with pipeline"):
        export(setup_of("pipeline-zero1", zero=3), "deepspeed")


# --- accelerate -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,changes", [
    ("dense-fsdp", {}), ("moe-fsdp", {}), ("lora", {}), ("lora-zero2", {"offload": "all", "zero": 3}),
])
def test_accelerate_config_loads(tmp_path: Path, name: str, changes: dict) -> None:
    need("accelerate")
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.utils import FullyShardedDataParallelPlugin

    setup = setup_of(name, **changes)
    out = export(setup, "accelerate")
    path = tmp_path / "accelerate.yaml"
    path.write_text(out.files["accelerate_config.yaml"])
    cluster = ClusterConfig.from_yaml_file(yaml_file=str(path))
    assert cluster.num_processes == setup.layout.num_gpus
    if setup.layout.zero >= 2:
        assert str(cluster.distributed_type).endswith("FSDP")
        fsdp = yaml.safe_load(path.read_text())["fsdp_config"]
        plugin = FullyShardedDataParallelPlugin(
            fsdp_version=fsdp["fsdp_version"], reshard_after_forward=fsdp["fsdp_reshard_after_forward"],
            cpu_offload=fsdp["fsdp_offload_params"], activation_checkpointing=fsdp["fsdp_activation_checkpointing"],
            auto_wrap_policy=fsdp["fsdp_auto_wrap_policy"], state_dict_type=fsdp["fsdp_state_dict_type"],
            cpu_ram_efficient_loading=fsdp["fsdp_cpu_ram_efficient_loading"])
        assert plugin.reshard_after_forward == (setup.layout.zero == 3)
    else:
        assert str(cluster.distributed_type).endswith("MULTI_GPU")


def test_accelerate_refuses_pipelines_and_zero1() -> None:
    with pytest.raises(Unsupported, match="pipeline parallelism"):
        export(setup_of("pipeline-zero1"), "accelerate")
    with pytest.raises(Unsupported, match="ZeRO-1"):
        export(setup_of("moe", ep=1), "accelerate")


# --- Hugging Face TrainingArguments -----------------------------------------------------------------


@pytest.mark.parametrize("name,changes", [
    ("dense-fsdp", {}), ("moe-fsdp", {}), ("lora", {}), ("lora", {"method": "qlora", "precision": None}),
])
def test_training_arguments_construct(tmp_path: Path, name: str, changes: dict) -> None:
    need("transformers")
    from transformers import TrainingArguments

    setup = setup_of(name, **changes)
    data = json.loads(export(setup, "hf-trainer").files["hf_training.json"])
    kwargs = {**data["training_arguments"], "output_dir": str(tmp_path)}
    # use_cpu: TrainingArguments checks bf16 against the hardware it runs on; the file is for GPUs.
    args = TrainingArguments(**kwargs, use_cpu=True)
    assert args.per_device_train_batch_size == setup.job.micro_batch
    assert args.gradient_accumulation_steps * setup.job.micro_batch * setup.layout.dp == setup.job.global_batch
    fsdp = setup.layout.zero >= 2
    assert args.gradient_checkpointing == (setup.job.recompute == "full" and not fsdp)
    if fsdp:
        assert args.fsdp and args.fsdp_config["reshard_after_forward"] == (setup.layout.zero == 3)
        assert args.fsdp_config["activation_checkpointing"] == (setup.job.recompute == "full")
    if setup.job.is_peft:
        assert data["peft"]["r"] == setup.job.lora_rank
    if setup.job.method == "qlora":
        assert data["quantization"]["bnb_4bit_quant_type"] == "nf4"


@pytest.mark.parametrize("changes,expected", [
    ({}, ["experts.gate_up_proj", "experts.down_proj"]),
    ({"lora_targets": "q,v,down"}, ["experts.down_proj"]),
    ({"lora_targets": "q,v"}, None),  # no expert target
    ({"experts_implementation": "eager", "kernels": "hf"}, None),  # transformers 4's per-expert nn.Linear modules
    ({"model": "llama-3.1-8b"}, None),
])
def test_lora_on_moe_experts_names_their_3d_parameters(changes: dict, expected: list[str] | None) -> None:
    """transformers 5 holds an MoE layer's routed experts as 3-D parameters: peft reaches them through
    target_parameters, not target_modules (tests/validation/test_hf_moe_lora.py applies the exported arguments)."""
    setup = setup_of("moe-fsdp", **{"method": "lora", "lora_targets": "q,v,gate,up,down", **changes})
    peft_arguments = json.loads(export(setup, "hf-trainer").files["hf_training.json"])["peft"]
    assert peft_arguments.get("target_parameters") == expected


def test_qlora_on_moe_says_the_experts_stay_unquantized() -> None:
    """BitsAndBytesConfig quantizes nn.Linear modules only: the export says transformers 5's 3-D experts stay out."""
    qlora = export(setup_of("moe-fsdp", method="qlora", precision=None), "hf-trainer")
    assert any("bitsandbytes issue #1849" in note for note in qlora.notes)
    dense = export(setup_of("lora", method="qlora", precision=None), "hf-trainer")
    assert not any("#1849" in note for note in dense.notes)


def test_training_arguments_refuse_tensor_parallel() -> None:
    with pytest.raises(Unsupported, match="tensor parallelism"):
        export(setup_of("dense"), "hf-trainer")


def test_cli_export_writes_files_and_refuses_overwrite(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rigplan.cli.main import cli

    args = ["export", "llama-3.1-8b", "--gpus", "8", "--zero", "2", "--framework", "deepspeed",
            "--output-dir", str(tmp_path)]
    runner = CliRunner()
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert json.loads((tmp_path / "ds_config.json").read_text())["zero_optimization"]["stage"] == 2
    again = runner.invoke(cli, args)
    assert again.exit_code == 2 and "exists" in again.output
    refused = runner.invoke(cli, ["export", "llama-3.1-8b", "--gpus", "8", "--method", "lora", "--framework",
                                  "megatron"])
    assert refused.exit_code == 2 and "rigplan: error: Megatron-LM cannot express LoRA" in refused.output
    as_json = runner.invoke(cli, ["export", "llama-3.1-8b", "--gpus", "8", "--fsdp", "--framework", "accelerate",
                                  "--json"])
    assert json.loads(as_json.output)["values"]["distributed_type"] == "FSDP"


def test_nvfp4_exports_to_megatron_only() -> None:
    nvfp4 = {"gpu": "b200", "precision": "fp8", "fp8_recipe": "nvfp4"}
    with pytest.raises(Unsupported, match=r"torchtitan cannot express --fp8-recipe nvfp4; .*--framework megatron"):
        export(setup_of("dense-fsdp", **nvfp4), "torchtitan")
    with pytest.raises(Unsupported, match="accelerate cannot express --fp8-recipe nvfp4"):
        export(setup_of("dense-fsdp", **nvfp4), "accelerate")
    mx = export(setup_of("dense-fsdp", gpu="b200", precision="fp8", fp8_recipe="mxfp8"), "torchtitan").values
    assert mx["model"]["converters"] == ["quantize.linear.mx"]


def test_muon_exports_to_megatron_dist_muon_and_is_refused_elsewhere() -> None:
    out = export(setup_of("dense", optimizer="muon"), "megatron")
    assert out.values["optimizer"] == "dist_muon" and out.values["use_distributed_optimizer"] is False
    assert "--optimizer dist_muon" in out.command and "--muon-num-ns-steps 5" in out.command
    with pytest.raises(Unsupported, match="Muon with ZeRO-3"):
        export(setup_of("dense-fsdp", optimizer="muon"), "megatron")
    for framework in ("torchtitan", "deepspeed", "hf-trainer"):
        with pytest.raises(Unsupported, match="muon optimizer"):
            export(setup_of("dense-fsdp", optimizer="muon"), framework)


def test_hf_trainer_points_nvfp4_to_megatron_and_accelerate_names_a_non_default_optimizer() -> None:
    nvfp4 = {"gpu": "b200", "precision": "fp8", "fp8_recipe": "nvfp4"}
    with pytest.raises(Unsupported, match="--framework megatron runs it"):
        export(setup_of("dense-fsdp", **nvfp4), "hf-trainer")
    notes = export(setup_of("dense-fsdp", optimizer="muon"), "accelerate").notes
    assert any(note.startswith("optimizer muon: build it in train.py") for note in notes)


def test_torchtitan_names_the_expert_parallel_backend_and_says_what_hybridep_needs() -> None:
    moe = {"model": "deepseek-v3", "gpus": 64, "ep": 8}
    assert "expert_parallel_comm_backend" not in export(setup_of("moe-fsdp", **moe), "torchtitan").values["parallelism"]
    out = export(setup_of("moe-fsdp", **moe, moe_dispatcher="hybridep"), "torchtitan")
    assert out.values["parallelism"]["expert_parallel_comm_backend"] == "hybridep"
    assert 'expert_parallel_comm_backend = "hybridep"' in out.files["torchtitan_job.toml"]
    assert any("pytorch/torchtitan PR #2207" in note for note in out.notes)


def test_torchtitan_flavors_are_in_its_registry() -> None:
    """Every catalog model the torchtitan export maps is a flavor of that torchtitan model (read from the installed
    package's registry source: importing the models needs Triton, which the CPU build of torch lacks)."""
    torchtitan_config_manager()  # the package without its __init__, as the TOML tests load it
    from rigplan.export.torchtitan import FLAVORS, UNPIPELINED

    root = Path(next(iter(sys.modules["torchtitan"].__path__)))
    for model_id, (name, flavor) in FLAVORS.items():
        registry = (root / "models" / name / "__init__.py").read_text(encoding="utf-8")
        assert f'"{flavor}": ' in registry, (model_id, name, flavor)
        assert ("pipelining_fn=None" in registry) == (name in UNPIPELINED), name


def test_torchtitan_says_it_drops_deepseeks_mtp_module() -> None:
    notes = export(setup_of("moe-fsdp", model="deepseek-v3", gpus=64, ep=8), "torchtitan").notes
    assert any("no multi-token-prediction module" in n for n in notes)
    qwen = export(setup_of("moe-fsdp", model="qwen3-30b-a3b", ep=8, recompute="full"), "torchtitan")
    assert not any("multi-token" in n for n in qwen.notes)


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "gpt-oss-20b"])
def test_torchtitan_refuses_pipelines_its_model_cannot_run(model: str) -> None:
    with pytest.raises(Unsupported, match="pipeline parallelism"):
        export(setup_of("moe-fsdp", model=model, gpus=16, pp=2, recompute="full"), "torchtitan")



def test_forced_balance_is_exported_with_a_note_to_drop_it() -> None:
    """--balanced-routing is what benchmarks run; the export writes the framework's switch for it and says that a
    model trained for its loss routes by its own scores."""
    megatron = export(setup_of("moe", balanced_routing=True), "megatron")
    assert megatron.values["moe_router_force_load_balancing"] is True
    assert any(n.startswith("--moe-router-force-load-balancing: ") for n in megatron.notes)
    titan = export(setup_of("moe-fsdp", model="qwen3-30b-a3b", gpus=16, ep=8, recompute="full",
                            balanced_routing=True), "torchtitan")
    assert titan.values["debug"] == {"moe_force_load_balance": True}
    assert "[debug]" in titan.files["torchtitan_job.toml"]
    assert any(n.startswith("[debug] moe_force_load_balance: ") for n in titan.notes)
    natural = export(setup_of("moe"), "megatron")
    assert "moe_router_force_load_balancing" not in natural.values


def test_megatron_writes_uneven_pipelines_as_a_layer_layout() -> None:
    """An uneven split (DeepSeek-V3's 1 | 2 x 30 | 0 over PP16 x VPP2 with its MTP module on the last stage, rigplan's
    default 7 | 8 x 14 | 7 for 126 layers over PP16) is Megatron-Core's --pipeline-model-parallel-layout, which its
    own parser reads back to the same per-stage counts; an even split keeps the per-chunk layer count."""
    need("megatron.core")
    import torch
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.transformer_config import MLATransformerConfig, TransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    stages = [1] + [2] * 30 + [0]
    deepseek = export(build_setup(EstimateRequest(model="deepseek-v3", gpu="h800-sxm", gpus=2048, pp=16, vpp=2, ep=64,
                                                  zero=1, global_batch=15360, stage_layers=stages)), "megatron")
    assert "--pipeline-model-parallel-layout 'Et|(tt|)*30mL'" in deepseek.command
    assert "--num-layers-per-virtual-pipeline-stage" not in deepseek.command
    config = MLATransformerConfig(**core_config_kwargs(deepseek.values), params_dtype=torch.bfloat16,
                                  pipeline_dtype=torch.bfloat16)
    layout = config.pipeline_model_parallel_layout
    layout.validate_layer_layout(num_layers=61, mtp_num_layers=1)
    assert config.virtual_pipeline_model_parallel_size == 2
    by_stage = [layout.layout[k % 16][k // 16].count(LayerType.decoder) for k in range(32)]
    assert by_stage == stages
    llama = export(setup_of("pipeline", model="llama-3.1-405b", gpus=128, tp=8, pp=16, vpp=1), "megatron")
    config = TransformerConfig(**core_config_kwargs(llama.values), params_dtype=torch.bfloat16,
                               pipeline_dtype=torch.bfloat16)
    assert [row[0].count(LayerType.decoder) for row in config.pipeline_model_parallel_layout.layout] == \
        [7] + [8] * 14 + [7]
    even = export(setup_of("pipeline", model="llama-3.1-70b", gpus=64, tp=4, pp=4, vpp=5), "megatron").values
    assert even["pipeline_model_parallel_layout"] is None and even["num_layers_per_virtual_pipeline_stage"] == 4


@pytest.mark.parametrize("model, freq", [("gpt-oss-20b", 2), ("gemma-2-9b", 2), ("gemma-3-27b", None),
                                         ("mistral-7b", 0)])
def test_megatron_writes_sinks_windows_and_gpt_oss_activation(model: str, freq: int | None) -> None:
    """The attention and activation variants rigplan counts reach megatron-core's TransformerConfig: learned sinks,
    the sliding window with its layer pattern (every other layer; Gemma 3's five in six, whose 62 layers take the
    explicit list; every layer for Mistral 7B) and gpt-oss's clamped quick-GELU GLU with its +1 offset."""
    need("megatron.core")
    import torch
    from megatron.core.transformer.transformer_config import TransformerConfig

    from rigplan.export.megatron import core_config_kwargs

    setup = build_setup(EstimateRequest(model=model, gpus=8, zero=1, ep=8 if model.startswith("gpt-oss") else 1))
    args = export(setup, "megatron").values
    config = TransformerConfig(**core_config_kwargs(args), params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16)
    arch = setup.arch
    assert config.window_size == (max(arch.attention_windows), 0)
    pattern = [1 if w else 0 for w in arch.attention_windows]
    if freq is None:
        assert config.window_attn_skip_freq == pattern
    elif freq:
        assert config.window_attn_skip_freq == freq and pattern[:freq] == [1] * (freq - 1) + [0]
    else:
        assert config.window_attn_skip_freq is None and set(pattern) == {1}
    gpt_oss = model.startswith("gpt-oss")
    assert (config.softmax_type == "learnable") == gpt_oss
    assert (config.activation_func_clamp_value, config.glu_linear_offset) == ((7.0, 1.0) if gpt_oss else (None, 0.0))
    assert ("quick_geglu" in args) == gpt_oss and args.get("swiglu") == (not gpt_oss)
    assert any("YaRN" in n for n in export(setup, "megatron").notes) == gpt_oss


def test_only_megatron_expresses_the_allgather_dispatcher() -> None:
    setup = setup_of("moe", moe_dispatcher="allgather")
    assert "--moe-token-dispatcher-type allgather" in export(setup, "megatron").command
    for framework in ("torchtitan", "deepspeed"):
        with pytest.raises(Unsupported, match="allgather token dispatcher"):
            export(setup, framework)
