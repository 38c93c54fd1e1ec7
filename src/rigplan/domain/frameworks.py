"""Framework presets: what each training stack does by default, as request field values.

A user knows their framework, not the name of its loss kernel. `--framework NAME` fills every
request field the user did not give with that framework's default, as its own source code or
documentation states it (the source sits next to each value). Explicit flags always win; the flow
(flow.request) applies a preset once and records what it set.

Each setting names request fields (JobSpec / PlanRequest field names, which are the `rigplan memory`
flags without dashes), their values, the source, and when the default holds (`when`): 'always',
'bf16_or_fp8' (bf16 or fp8 recipes), 'fp8', 'mixed' (fp32 master weights with bf16/fp16 compute),
'tp>1', 'zero<3' (replicated or ZeRO-1/2 data parallelism, not FSDP), 'qlora' (a QLoRA job),
'mixed_or_qlora', 'compile' and 'no_compile' (with or without --compile). A setting is applied as a
whole or not at all (recompute and its granularity together).

Left out on purpose (not a framework default): NCCL's NVLS buffers (an NCCL version and system
property, --nvls-buffers), the precision of a mixed-precision run (every stack here runs bf16 when
asked; rigplan's default bf16-mixed stands, except torchtune, whose recipes train in pure bf16), the
optimizer (AdamW everywhere; 8-bit optimizers are a recipe choice), the parallel degrees themselves.
The CUDA allocator's expandable segments are set where a framework sets PYTORCH_CUDA_ALLOC_CONF itself
(torchtitan's launch script, Unsloth's and torchtune's package import); Megatron-LM, NeMo 2.0 /
Megatron-Bridge (its PerfEnvPlugin sets no allocator option; Megatron-Core refuses expandable segments
with nccl_ub), accelerate/Trainer and DeepSpeed leave the default caching allocator.
FSDP2's fp32 sharded gradients (it casts each reduce-scattered gradient to the sharded fp32
parameter's dtype) need no switch: fp32 sharded parameter + fp32 gradient + moments is 16 B/param,
the total rigplan's bf16-mixed already counts (2 + 2 + 4 + 8); Megatron's main-grad buffer is on top
of a bf16 parameter and an fp32 master copy (18 B/param), hence main_grads_fp32 there only.

May import: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Condition = Literal["always", "bf16_or_fp8", "fp8", "mixed", "tp>1", "zero<3", "qlora", "mixed_or_qlora", "compile",
                    "no_compile"]
FrameworkName = Literal["megatron", "nemo", "ms-swift", "torchtitan", "fsdp", "automodel", "deepspeed", "hf",
                        "unsloth", "torchtune"]
"""The preset names (the keys of FRAMEWORK_PRESETS, spelled out for the request schemas)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PresetSetting:
    """Request fields a framework sets together by default, and where that default is written."""

    values: tuple[tuple[str, object], ...]
    source: str
    when: Condition = "always"
    coupled: bool = False
    """The fields are one switch of the framework (Megatron-LM's grad_reduce_in_fp32 decides both the main-grad
    buffer's dtype and the reduction's): a user who gives some of them at the preset's values gets the rest from
    the preset too; any other value keeps the whole setting the user's."""

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.values)

    @property
    def label(self) -> str:
        return ", ".join(f"{name}={_shown(value)}" for name, value in self.values)


@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkPreset:
    """One framework's defaults."""

    name: str
    title: str
    settings: tuple[PresetSetting, ...]
    note: str = ""
    """What the preset leaves to the user (and why)."""
    no_pipeline: str = ""
    """Why the framework runs no pipeline-parallel schedule, with its source ('' where it runs one): plan keeps such
    a framework's layouts at one pipeline stage, and an estimate given --pp says it times what the framework does
    not run."""
    unmodelled_expert_parallel: str = ""
    """How the framework's expert parallelism differs from the one rigplan times (Megatron-Core's: each rank's tokens
    sent to the ranks holding their experts), with its source ('' where it is that one): plan keeps such a
    framework's MoE layouts at one expert rank, and an estimate given --ep says what it times instead."""


def _shown(value: object) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


def condition_holds(when: Condition, *, precision: str, tp: int, zero: int = 0, method: str = "full",
                    compile: bool = False) -> bool:
    """Whether a setting's default applies to a job of this precision recipe, tensor-parallel degree,
    ZeRO stage, method and torch.compile."""
    if when in ("compile", "no_compile"):
        return compile == (when == "compile")
    if when == "qlora":
        return method == "qlora"
    if when == "mixed_or_qlora":
        return method == "qlora" or precision in ("bf16-mixed", "fp16-mixed")
    if when == "bf16_or_fp8":
        return precision in ("bf16-mixed", "bf16-true", "fp8")
    if when == "fp8":
        return precision == "fp8"
    if when == "mixed":
        return precision in ("bf16-mixed", "fp16-mixed")
    if when == "tp>1":
        return tp > 1
    if when == "zero<3":
        return zero < 3
    return True


def _s(source: str, when: Condition = "always", *, coupled: bool = False, **values: object) -> PresetSetting:
    return PresetSetting(values=tuple(values.items()), source=source, when=when, coupled=coupled)


_MCORE_ARGS = "Megatron-LM megatron/training/arguments.py"

MEGATRON_STEP_OVERHEAD_MS = 42.0
"""Host-side training-loop time per optimizer step of a Megatron-Core stack (Job.step_overhead_s). The mechanism:
Megatron-LM's training iteration blocks the host 142 times (Megatron-LM pull request #7076, 2026-09: NaN checks
reading one device flag per gradient bucket, loss and grad-norm reductions, logging), and each block leaves the GPU
launch-starved until the host issues work again; removing 104 of them cut 105.8 ms of launch-starved time per
iteration there. The figure: the median of measured minus predicted step time over the 12 MLPerf Training v6.0
GPT-OSS-20B runs that use neither expert nor context parallelism (one micro-batch per step, 8 to 32 B200, B300 and
GB300, their 768M-parameter gradient buckets counted; 3.8 to 62.8 ms, median 42.4 ms, when it was set; 4.0 to 63.2
ms, median 42.8, since MXFP8's cast bytes were corrected), recomputed by tests/validation/test_step_overhead.py.
Other frameworks' loop overhead is not modelled (0)."""
_MEGATRON_CORE: tuple[PresetSetting, ...] = (
    _s(f"{_MCORE_ARGS}: --transformer-impl defaults to transformer_engine (TE fused norm-linear, fused "
       "softmax/attention through TE DotProductAttention)", kernels="fused"),
    _s("megatron/core/tensor_parallel/cross_entropy.py: vocab-parallel cross-entropy on one fp32 copy of the "
       "logits, exp and normalisation in place", loss="fused"),
    _s(f"{_MCORE_ARGS}: --no-bias-swiglu-fusion turns it off, so bias_swiglu_fusion defaults on (fused SwiGLU "
       "saves its 2f input)", fused_swiglu=True),
    _s("megatron/core/models/common/embeddings/rope_utils.py apply_rotary_pos_emb: with apply_rope_fusion, 'mscale=... "
       "is not supported by TE's fused RoPE. Using unfused implementation.' (a YaRN model's concentration factor, "
       "yarn_rotary_pos_embedding._yarn_get_concentration_factor: gpt-oss 1.3466)", rope_factor_unfused=True),
    _s(f"{_MCORE_ARGS} validate_args: --bf16 sets accumulate_allreduce_grads_in_fp32 (unless --grad-reduce-in-bf16), "
       "so gradients accumulate in an fp32 main-grad buffer (param.main_grad) and the data-parallel reduction runs "
       "on it; one flag for both: megatron/core/distributed/distributed_data_parallel.py allocates the buffer as "
       "torch.float if grad_reduce_in_fp32 else param.dtype, so --grad-reduce-dtype bf16 keeps bf16 gradients. "
       "fp16 keeps them in fp16", "bf16_or_fp8", coupled=True, main_grads_fp32=True, grad_reduce_dtype="fp32"),
    _s(f"{_MCORE_ARGS}: --fp8-recipe defaults to delayed (TE DelayedScaling)", "fp8", fp8_recipe="delayed"),
    _s("TransformerEngine transformer_engine/pytorch/tensor/float8_tensor.py: the fp8 weight keeps its "
       "transpose for the dgrad/wgrad GEMMs", "fp8", fp8_transpose_cache=True),
    _s("megatron/core/optimizer/__init__.py: Adam is TE/Apex FusedAdam (multi-tensor kernel, no foreach "
       "temporaries)", optimizer_foreach=False),
    _s("megatron/core/distributed/param_and_grad_buffer.py: DDP reduces straight from the contiguous grad "
       "buffer (no second bucket copy)", ddp_grad_copy=False),
    _s("Megatron-LM runs no torch.compile and no torch.autocast (parameters are cast to bf16, fp32 main "
       "params in the optimizer)", compile=False, autocast=False),
    _s(f"{_MCORE_ARGS}: --recompute-granularity defaults to None (no recomputation); 'selective' there is "
       "rigplan's selective (attention core)", recompute="none"),
    _s("TransformerEngine context-parallel attention (cp_comm_type p2p): the ring K/V exchange runs under the "
       "attention of the current block", cp_comm_overlap=True),
    _s("the Megatron-Core training loop's host work per step (host synchronisations, optimizer issue, logging): "
       "MEGATRON_STEP_OVERHEAD_MS, from the MLPerf Training v6.0 GPT-OSS-20B runs without expert or context "
       "parallelism (domain.frameworks)", step_overhead_ms=MEGATRON_STEP_OVERHEAD_MS),
    _s("megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication (and Transformer "
       "Engine's linears): the column-parallel input-gradient all-reduce / reduce-scatter runs beside the "
       "weight-gradient GEMM, the re-gathered input beside the input-gradient GEMM", tp_async_backward=True),
)
_MEGATRON_LM_OVERLAP = (
    _s(f"{_MCORE_ARGS}: --tp-comm-overlap is a store_true flag, off unless given", tp_comm_overlap=False),
    _s(f"{_MCORE_ARGS}: --overlap-grad-reduce and --overlap-param-gather are store_true flags, off unless given "
       "(for DDP and the distributed optimizer; Megatron's FSDP paths overlap by construction, so --zero 3 keeps "
       "rigplan's FSDP default)", "zero<3", overlap_grad_reduce=False, overlap_param_gather=False),
    _s(f"{_MCORE_ARGS}: --no-overlap-p2p-communication turns it off, so the interleaved schedule's send/recv "
       "overlaps by default", pp_comm_overlap=True),
)
_SWIFT_ARGS = "ms-swift docs/source_en/Megatron-SWIFT/Command-line-parameters.md @ 7e8e6b0"
_FSDP2_PREFETCH = _s("torch.distributed.fsdp.fully_shard: implicit forward prefetch of the next unit", fsdp_prefetch=1)
_FSDP2_OVERLAP = _s(
    "torch.distributed.fsdp.fully_shard: reduce-scatter issued per unit during backward and the next unit's "
    "all-gather prefetched", overlap_grad_reduce=True, overlap_param_gather=True)

PRESETS: tuple[FrameworkPreset, ...] = (
    FrameworkPreset(
        name="megatron", title="Megatron-LM / Megatron-Core", settings=(
            *_MEGATRON_CORE,
            _s(f"{_MCORE_ARGS}: --use-distributed-optimizer is off by default (pass --zero 1 for it: the "
               "optimizer states sharded over dp, ZeRO-1)", zero=0),
            _s(f"{_MCORE_ARGS} _add_regularization_args: --attention-dropout and --hidden-dropout default to 0.1 "
               "(Llama-style launch scripts pass 0.0: --no-dropout)", dropout=True),
            *_MEGATRON_LM_OVERLAP,
        ),
        note="sequence parallelism, tp/pp/vpp and --use-distributed-optimizer (--zero 1) as you launch them; "
             "--no-dropout when your script passes --attention-dropout 0 --hidden-dropout 0"),
    FrameworkPreset(
        name="nemo", title="NVIDIA NeMo (Megatron-Core underneath)", settings=(
            *_MEGATRON_CORE,
            _s("NeMo 2.0 nemo/collections/llm/recipes/optim/adam.py (distributed_fused_adam_with_cosine_annealing: "
               "use_distributed_optimizer=True) and the NeMo launcher's optim.name distributed_fused_adam: "
               "optimizer states sharded over dp (ZeRO-1)", zero=1),
            _s("NeMo-Framework-Launcher conf/training/gpt3/*.yaml and llama/*.yaml: sequence_parallel true "
               "wherever tensor_model_parallel_size > 1", "tp>1", sequence_parallel=True),
            _s("NeMo 2.0 / Megatron-Bridge recipes: DistributedDataParallelConfig(grad_reduce_in_fp32=True, "
               "overlap_grad_reduce=True, overlap_param_gather=True, use_distributed_optimizer=True)",
               overlap_grad_reduce=True, overlap_param_gather=True),
            _s("NeMo 2.0 MegatronCommOverlapCallback and Megatron-Bridge CommOverlapConfig "
               "(_get_model_comm_overlap_cfgs): overlap_p2p_comm on, batch_p2p_comm off, whenever the pipeline is "
               "interleaved (vp_size > 1); NVIDIA's performance scripts carry that config for DeepSeek-V3, Kimi K2, "
               "Qwen3 MoE, Mixtral, Llama 4 and Grok-1 (Megatron-Bridge's Qwen3 MoE and gpt-oss library recipes "
               "leave it unset: --no-pp-comm-overlap there)", pp_comm_overlap=True),
        ),
        note="tp/pp/vpp/cp as the recipe sets them"),
    FrameworkPreset(
        name="ms-swift", title="ms-swift Megatron-SWIFT (Megatron-Core underneath)", settings=(
            *(setting for setting in _MEGATRON_CORE if "recompute" not in setting.fields),
            _s(f"{_SWIFT_ARGS}: recompute_granularity defaults to 'selective' with recompute_modules ['core_attn'] "
               "(rigplan's selective: the attention core)", recompute="selective"),
            _s(f"{_SWIFT_ARGS}: use_distributed_optimizer defaults to True (optimizer states sharded over dp, ZeRO-1)",
               zero=1),
            _s(f"{_SWIFT_ARGS}: attention_dropout and hidden_dropout default to 0", dropout=False),
            _s(f"{_SWIFT_ARGS}: tp_comm_overlap defaults to False", tp_comm_overlap=False),
            _s(f"{_SWIFT_ARGS}: overlap_grad_reduce and overlap_param_gather default to False", "zero<3",
               overlap_grad_reduce=False, overlap_param_gather=False),
            _s(f"{_MCORE_ARGS} (which Megatron-SWIFT passes on): --no-overlap-p2p-communication turns it off, so the "
               "interleaved schedule's send/recv overlaps by default", pp_comm_overlap=True),
        ),
        note="sequence parallelism and tp/pp/ep as your command sets them; before ms-swift 3.9 expert tensor "
             "parallelism followed tp (pass --etp as your --tensor_model_parallel_size there); rigplan runs the routed "
             "experts as grouped GEMMs, as Megatron-SWIFT's MoE examples pass --moe_grouped_gemm true (its default is "
             "False, one GEMM per expert); its example scripts launch with PYTORCH_CUDA_ALLOC_CONF="
             "'expandable_segments:True': pass --expandable-segments when yours do; its LoRA defaults are rank 8 on "
             "every linear layer: pass --lora-rank 8 and --lora-targets as your --target_modules"),
    FrameworkPreset(
        name="torchtitan", title="torchtitan (PyTorch FSDP2 / DTensor)", settings=(
            _s("torchtitan/models/llama3/model.py: plain PyTorch modules, RMSNorm/rotary/SwiGLU unfused",
               kernels="eager"),
            _s("torchtitan/models/attention.py: F.scaled_dot_product_attention (SDPA flash backend)",
               attention_kernel="sdpa"),
            _s("torchtitan/components/loss.py cross_entropy_loss: pred.float() upcasts the whole logits tensor",
               "no_compile", loss="unfused"),
            _s("torchtitan/components/loss.py build_cross_entropy_loss: torch.compile wraps the loss when "
               "compile.enable and 'loss' is in compile.components (its default, with 'model')", "compile",
               loss="compiled"),
            _s("torchtitan/config/job_config.py: compile.enable defaults to False", compile=False),
            _s("torchtitan/config/job_config.py Parallelism.data_parallel_shard_degree = -1: FSDP2 over every "
               "GPU left after tp/pp/cp (ZeRO-3)", zero=3),
            _FSDP2_PREFETCH,
            _FSDP2_OVERLAP,
            _s("torchtitan/config/job_config.py Parallelism.mixed_precision_reduce defaults to float32 (FSDP2 "
               "MixedPrecisionPolicy reduce_dtype)", "mixed", grad_reduce_dtype="fp32"),
            _s("torchtitan/config/job_config.py Parallelism.enable_async_tensor_parallel defaults to False",
               tp_comm_overlap=False),
            _s("torch.distributed.tensor.parallel (DTensor): each tensor-parallel collective runs in line in the "
               "autograd graph", tp_async_backward=False),
            _s("torchtitan context_parallel: ring attention overlaps the K/V exchange", cp_comm_overlap=True),
            _s("torchtitan/config/job_config.py Float8.recipe_name None: torchao tensorwise dynamic scaling",
               "fp8", fp8_recipe="current"),
            _s("torchao float8 Float8Linear casts the weight and its transpose each step (no cached transpose)",
               "fp8", fp8_transpose_cache=False),
            _s("torchtitan/config/job_config.py Optimizer.implementation defaults to 'fused'",
               optimizer_foreach=False),
            _s("torchtitan/config/job_config.py ActivationCheckpoint: mode 'selective', selective_ac_option '2' "
               "(every 2nd layer checkpointed whole; 'op' there is rigplan's --recompute op)",
               recompute="full", recompute_every=2),
            _s("torchtitan trains in fp32 master weights with bf16 FSDP2 MixedPrecisionPolicy, not autocast",
               autocast=False),
            _s("torchtitan run_train.sh launches torchrun with PYTORCH_ALLOC_CONF=\"expandable_segments:True\" "
               "(PYTORCH_CUDA_ALLOC_CONF in its run_llama_train.sh of 2024-25)", expandable_segments=True),
        ),
        note="its shipped llama3 8B/70B configs choose selective_ac_option 'op' and the 405B one 'full': "
             "pass --recompute op / full as your TOML says; its 2026 model registries wrap the loss in "
             "ChunkedLossWrapper (LM head and loss eight sequence chunks at a time): pass --loss head-chunked; "
             "its 2024 train.py left the loss eager under compile ('compiling loss function causes CUDA errors'): "
             "pass --loss unfused for a run of then; "
             "with --precision fp8 on an MoE model, its float8 converter swaps nn.Linear modules only: pass "
             "--bf16-experts unless your TOML also converts the grouped experts (quantize.grouped_mm)"),
    FrameworkPreset(
        name="fsdp", title="plain PyTorch FSDP2 (fully_shard + torch.optim.AdamW)", settings=(
            _s("a plain PyTorch model: nn.Module norms and activations, unfused", kernels="eager"),
            _s("torch.nn.functional.scaled_dot_product_attention", attention_kernel="sdpa"),
            _s("F.cross_entropy on the upcast logits", loss="unfused"),
            _s("torch.distributed.fsdp.fully_shard: reshard_after_forward=True (ZeRO-3)", zero=3),
            _FSDP2_PREFETCH,
            _FSDP2_OVERLAP,
            _s("torch.distributed.fsdp.MixedPrecisionPolicy: reduce_dtype None reduces in param_dtype (bf16)",
               "mixed", grad_reduce_dtype="bf16"),
            _s("torch/optim/adamw.py: foreach=None and fused=None pick the foreach path on CUDA "
               "(torch.optim._default_to_fused_or_foreach)", optimizer_foreach=True),
            _s("torch.nn.parallel.DistributedDataParallel: gradient_as_bucket_view=False (with --zero 0)",
               ddp_grad_copy=True),
            _s("no torch.compile unless the script calls it; MixedPrecisionPolicy, not autocast",
               compile=False, autocast=False),
        ),
        note="activation checkpointing as the script applies it (--recompute)",
        no_pipeline="a plain fully_shard script shards one model replica over the data-parallel ranks; a pipeline "
                    "needs torch.distributed.pipelining, which it does not call"),
    FrameworkPreset(
        name="automodel", title="NVIDIA NeMo AutoModel (PyTorch FSDP2 with Transformer Engine modules)", settings=(
            _s("NeMo AutoModel BackendConfig linear/rms_norm 'te' (examples/benchmark/configs/*_te_deepep.yaml): "
               "Transformer Engine linears and RMSNorm", kernels="fused"),
            _s("BackendConfig attn 'te': Transformer Engine DotProductAttention, which prefers its FusedAttention "
               "(cuDNN) backend on Hopper and later (transformer_engine/pytorch/attention/dot_product_attention/"
               "utils.py get_attention_backend: 'Disabling FlashAttention to give FusedAttention preference on "
               "Hopper+'); FlashAttention on earlier parts", attention_kernel="cudnn"),
            _s("the HF-shaped model's cross-entropy on the upcast logits", loss="unfused"),
            _s("nemo_automodel/components/distributed/fsdp2.py FSDP2Manager: fully_shard over the data-parallel "
               "ranks (ZeRO-3)", zero=3),
            _FSDP2_PREFETCH,
            _FSDP2_OVERLAP,
            _s("nemo_automodel/components/moe/parallelizer.py apply_fsdp: MixedPrecisionPolicy(param_dtype bf16, "
               "reduce_dtype float32)", "mixed", grad_reduce_dtype="fp32"),
            _s("the benchmark YAMLs' optimizer torch.optim.Adam (foreach path on CUDA)", optimizer_foreach=True),
            _s("no torch.compile in the benchmark YAMLs; MixedPrecisionPolicy, not autocast",
               compile=False, autocast=False),
        ),
        note="activation_checkpointing as the YAML sets it (--recompute full), the DeepEP dispatcher "
             "(--moe-dispatcher deepep) and FlexAttention models (--attention-kernel triton)"),
    FrameworkPreset(
        name="deepspeed", title="DeepSpeed (ZeRO engine)", settings=(
            _s("DeepSpeed wraps the user's PyTorch model (no kernel replacement in training)", kernels="eager"),
            _s("torch.nn.functional.scaled_dot_product_attention in the wrapped model", attention_kernel="sdpa"),
            _s("the wrapped model's F.cross_entropy on the upcast logits", loss="unfused"),
            _s("deepspeed/runtime/zero/config.py: zero_optimization.stage defaults to 0 (pass --zero as your "
               "config's stage)", zero=0),
            _s("deepspeed/runtime/engine.py _configure_basic_optimizer: 'Adam'/'AdamW' is FusedAdam on GPU",
               optimizer_foreach=False),
            _s("DeepSpeed's engine runs no autocast by default (bf16.enabled casts the model)", autocast=False,
               compile=False),
        ),
        note="the ZeRO stage (--zero) and offload (--offload) as your ds_config sets them; its contiguous "
             "gradient and bucket buffers (reduce_bucket_size) are not modelled",
        no_pipeline="DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py) runs a "
                    "deepspeed.pipe.PipelineModule, not the plain model the ZeRO engine wraps"),
    FrameworkPreset(
        name="hf", title="Hugging Face Trainer / accelerate", settings=(
            _s("transformers models (modeling_llama.py ...): their own modules, fp32 RMSNorm intermediates",
               kernels="hf"),
            _s("transformers modeling_utils: attn_implementation defaults to 'sdpa' where torch supports it",
               attention_kernel="sdpa"),
            _s("transformers/loss/loss_utils.py ForCausalLMLoss: logits.float() before cross-entropy",
               loss="unfused"),
            _s("transformers training_args.py bf16=True: accelerate wraps the forward in torch.autocast, over "
               "fp32 weights (and, for QLoRA, over the weights PEFT cast to fp32)", "mixed_or_qlora", autocast=True),
            _s("peft/utils/other.py prepare_model_for_kbit_training (TRL's SFTTrainer calls it for a 4-bit model): "
               "'cast all non INT8 parameters to fp32', so embeddings, LM head and norms are fp32", "qlora",
               kbit_fp32_upcast=True),
            _s("transformers training_args.py: default_optim 'adamw_torch' (torch.optim.AdamW, foreach on CUDA); "
               "with torch >= 2.8 it becomes 'adamw_torch_fused' (pass --no-optimizer-foreach)",
               optimizer_foreach=True),
            _s("accelerate DistributedDataParallelKwargs: gradient_as_bucket_view=False (torch DDP's default)",
               ddp_grad_copy=True),
            _s("torch DDP all-reduces each bucket during backward, on the fp32 .grad of fp32 weights under "
               "autocast", "mixed", overlap_grad_reduce=True, grad_reduce_dtype="fp32"),
            _s("transformers training_args.py: torch_compile defaults to False", compile=False),
            _s("accelerate launches DDP unless an FSDP or DeepSpeed config is given (pass --zero 3 / --zero N)",
               zero=0),
        ),
        note="gradient_checkpointing as TrainingArguments sets it (--recompute full); QLoRA keeps rigplan's "
             "default of full recompute (peft prepare_model_for_kbit_training turns it on)",
        no_pipeline="Trainer hands accelerate one model replica per data-parallel rank (DDP, FSDP or DeepSpeed "
                    "ZeRO); accelerate's pipelining (prepare_pippy) is in its inference reference",
        unmodelled_expert_parallel="transformers' expert parallelism (DistributedConfig enable_expert_parallel, "
                                   "GroupedGemmParallel) shards the experts but gives every rank of the group the "
                                   "same micro-batch and all-reduces the expert outputs (TRL issue #5713, 2026-05)"),
    FrameworkPreset(
        name="unsloth", title="Unsloth (single-GPU LoRA / QLoRA)", settings=(
            _s("unsloth/kernels/rms_layernorm.py, rope_embedding.py, swiglu.py: Triton kernels for the "
               "element-wise chain", kernels="fused"),
            _s("unsloth/models/llama.py: FlashAttention-2 when installed (xformers/SDPA otherwise)",
               attention_kernel="fa2"),
            _s("unsloth/kernels/cross_entropy_loss.py Fast_CrossEntropyLoss: logsumexp over vocab chunks in a "
               "Triton kernel, no full fp32 logits copy", loss="chunked"),
            _s("unsloth FastLanguageModel.get_peft_model: use_gradient_checkpointing='unsloth' by default, "
               "which checkpoints every layer and offloads the saved inputs to host memory",
               recompute="full", activation_offload=True),
            _s("unsloth loads the base in bf16/4-bit and trains without autocast or torch.compile",
               autocast=False, compile=False),
            _s("unsloth/__init__.py sets PYTORCH_CUDA_ALLOC_CONF=\"expandable_segments:True,roundup_power2_divisions:"
               "[32:256,64:128,256:64,>:32]\" (PYTORCH_ALLOC_CONF expandable_segments:True with torch >= 2.9) unless "
               "the user set one", expandable_segments=True),
        ),
        note="the optimizer (its notebooks choose adamw_8bit: --optimizer adamw-8bit) and --method lora/qlora",
        no_pipeline="Unsloth trains one model replica a GPU"),
    FrameworkPreset(
        name="torchtune", title="torchtune (single-device and distributed recipes)", settings=(
            _s("torchtune recipes/configs/*/*.yaml dtype: bf16 (pure bf16 weights, no fp32 master copy)",
               precision="bf16-true"),
            _s("torchtune/modules (rms_norm.py, attention.py, feed_forward.py, peft/lora.py, "
               "loss/ce_chunked_output_loss.py): its own modules, fp32 RMSNorm copies, k and v expanded under GQA, "
               "the chunked loss's fp32 log-probabilities (estimate/torchtune.py)", kernels="torchtune"),
            _s("torchtune/modules/attention.py: F.scaled_dot_product_attention", attention_kernel="sdpa"),
            _s("torchtune recipes/configs: loss torchtune.modules.loss.CEWithChunkedOutputLoss", loss="chunked"),
            _s("torchtune recipes/configs: enable_activation_checkpointing True", recompute="full"),
            _s("torchtune recipes/configs: optimizer torch.optim.AdamW with fused: True", optimizer_foreach=False),
            _s("torchtune recipes/configs: compile False", compile=False, autocast=False),
            _s("torchtune sets expandable_segments:True for the CUDA allocator by default since 2025 "
               "(pytorch/torchtune PR #2881: 'the way torchtune by default sets expandable_segments to True'); its "
               "2024 releases did not (issue #1185 measured the default allocator; PR #1309 left open)",
               expandable_segments=True),
        ),
        note="enable_activation_offloading and optimizer_in_bwd as your config sets them"),
)

FRAMEWORK_PRESETS: dict[str, FrameworkPreset] = {p.name: p for p in PRESETS}


def expert_parallel_note(name: str | None, ep: int | None = None) -> str | None:
    """The line saying that preset `name` runs an expert parallelism rigplan does not model
    (FrameworkPreset.unmodelled_expert_parallel): for plan, which keeps one expert rank (ep None), or for an estimate
    given `ep` ranks, which it times as Megatron-Core's. None where there is no such preset or difference."""
    preset = FRAMEWORK_PRESETS.get(name or "")
    if preset is None or not preset.unmodelled_expert_parallel:
        return None
    if ep is None:
        return (f"--framework {name}: {preset.unmodelled_expert_parallel}, which rigplan does not model: the search "
                "keeps one expert rank")
    return (f"--framework {name}: {preset.unmodelled_expert_parallel}, which rigplan does not model: it times --ep "
            f"{ep} as Megatron-Core's, each rank's own tokens sent to the ranks holding their experts")


def no_pipeline_note(name: str | None, pp: int | None = None) -> str | None:
    """The line saying that preset `name` runs no pipeline schedule (FrameworkPreset.no_pipeline): for plan, which
    keeps one stage (pp None), or for an estimate given `pp` stages, which it times as asked. None where the preset
    runs pipelines, or there is none."""
    preset = FRAMEWORK_PRESETS.get(name or "")
    if preset is None or not preset.no_pipeline:
        return None
    if pp is None:
        return f"--framework {name} runs no pipeline schedule ({preset.no_pipeline}): the search keeps one stage"
    return f"--framework {name} runs no pipeline schedule ({preset.no_pipeline}); rigplan times --pp {pp} as asked"
FRAMEWORK_NAMES: tuple[str, ...] = tuple(FRAMEWORK_PRESETS)
RELATED_FIELDS: dict[str, tuple[str, ...]] = {
    "recompute": ("recompute", "recompute_method", "recompute_num_layers", "recompute_every"),
}
"""A setting on the left is skipped when the user gave any field on the right (a recompute granularity
without --recompute would otherwise get the preset's recompute under it)."""
