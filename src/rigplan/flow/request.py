"""Request models: what the CLI flags and the HTTP API accept, validated once by pydantic.

The validators and methods apply the rules of flow/fields.py, which also checks command-line values
against a table derived from these models without importing pydantic (rigplan's start-up path).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from rigplan.bounds import Bounded
from rigplan.domain.frameworks import FrameworkName
from rigplan.domain.job import CudaGraphs, CudaGraphScope, Fp8Recipe, KernelStack, LossImpl, Optimizer
from rigplan.flow import fields as rules
from rigplan.flow.framework import FrameworkApplied, apply_preset

FRAMEWORK_DESCRIPTION = (
    "Training framework whose defaults fill every field not given (kernels, loss, recompute, optimizer "
    "buffers, ZeRO stage, fp8 recipe ...; see docs/methodology/frameworks.md); explicit fields win")


class FrameworkPresetMixin(BaseModel):
    """`framework`: a preset applied once, right after validation; `framework_applied` records it."""

    framework: FrameworkName | None = Field(None, description=FRAMEWORK_DESCRIPTION)
    _framework_applied: FrameworkApplied | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._framework_applied = apply_preset(self)

    @property
    def framework_applied(self) -> FrameworkApplied | None:
        return self._framework_applied


class ModelSpec(BaseModel):
    """MODEL and the shape flags that build or override it."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, description="Catalog id, path to a config.json (or its folder), or a size like 7b")
    layers: Annotated[int, Bounded("layers")] | None = None
    hidden: Annotated[int, Bounded("hidden")] | None = None
    heads: Annotated[int, Bounded("heads")] | None = None
    kv_heads: Annotated[int, Bounded("kv_heads")] | None = None
    head_dim: Annotated[int, Bounded("head_dim")] | None = None
    ffn: Annotated[int, Bounded("ffn")] | None = None
    vocab: Annotated[int, Bounded("vocab")] | None = None
    mlp: Literal["gated", "plain"] | None = None
    positions: Literal["rope", "learned", "alibi", "none"] | None = None
    norm: Literal["rmsnorm", "layernorm"] | None = None
    tied_embeddings: bool | None = None
    experts: Annotated[int, Bounded("experts")] | None = None
    top_k: Annotated[int, Bounded("top_k")] | None = None
    expert_ffn: Annotated[int, Bounded("expert_ffn")] | None = None
    shared_experts: Annotated[int, Bounded("shared_experts")] | None = None
    mtp_layers: Annotated[int, Bounded("mtp_layers")] | None = None
    dense_layers: Annotated[int, Bounded("dense_layers")] | None = None
    """MoE: leading layers with a dense MLP of --ffn instead of experts (DeepSeek-V3: 3)."""
    moe_latent_size: Annotated[int, Bounded("moe_latent_size")] | None = None
    """MoE: the routed experts' latent width, tokens projected to it before dispatch (domain.model.MoE.latent_size;
    Nemotron 3 Super: 1,024); 0 = the hidden size."""
    expert_groups: Annotated[int, Bounded("expert_groups")] | None = None
    """MoE: expert groups of a group-limited router (domain.model.MoE.routing_groups; DeepSeek-V3: 8)."""
    group_top_k: Annotated[int, Bounded("group_top_k")] | None = None
    """MoE: groups a token may route to (domain.model.MoE.routing_group_topk; DeepSeek-V3: 4)."""

    def shape_flags(self) -> dict[str, object]:
        return rules.shape_flags(self, [n for n in ModelSpec.model_fields if n != "model"])

    def shape_flag_args(self) -> list[str]:
        """The given shape fields as command-line flags, for a reproduce line."""
        return rules.shape_flag_args(self.shape_flags())


class MoERoutingSpec(BaseModel):
    """How a mixture-of-experts model's tokens are routed and its experts run (ignored for dense models)."""

    model_config = ConfigDict(extra="forbid")

    moe_imbalance: Annotated[float, Bounded("moe_imbalance")] | None = Field(
        None, description="Busiest expert-parallel rank's tokens over the mean; default: estimate.moe's "
                          "DEFAULT_IMBALANCE for dropless routing")
    balanced_routing: bool = Field(False, description="Forced balanced routing, as benchmarks run (imbalance 1)")
    capacity_factor: Annotated[float, Bounded("capacity_factor")] = Field(
        0.0, description="Expert capacity over the mean load, tokens beyond it dropped; 0 = dropless")
    a2a_overlap: bool = Field(False, description="Expert all-to-all overlapped with another micro-batch's "
                                                  "computation (Megatron-Core 1F1B EP overlap, DualPipe); implies "
                                                  "the DeepEP dispatcher unless moe_dispatcher says otherwise")
    a2a_overlap_schedule: Literal["1f1b", "dualpipe"] = Field(
        "1f1b", description="With a2a_overlap: Megatron-Core's 1F1B EP overlap (hides part of the all-to-all) or "
                            "DeepSeek's DualPipe (hides all of it)")
    moe_dispatcher: Literal["alltoall", "deepep", "hybridep", "einsum", "allgather"] | None = Field(
        None, description="Token dispatcher: 'alltoall' (NCCL all-to-all, every routed copy crosses), 'deepep' or "
                          "'hybridep' (DeepEP or HybridEP, Megatron-Core's flex dispatcher: one copy per destination "
                          "rank, one crossing per destination node), 'einsum' (GShard's one-hot dispatch and combine "
                          "einsums into capacity slots, MaxText's dense_matmul, DeepSpeed-MoE; needs capacity_factor), "
                          "'allgather' (Megatron-LM's default: every token gathered over the expert tensor x expert "
                          "parallel ranks, the output reduce-scattered back); default deepep with a2a_overlap, else "
                          "alltoall")
    moe_pad_to_capacity: bool = Field(False, description="Pad every expert's input to its capacity (needs "
                                                          "capacity_factor): static shapes, no per-layer host sync")
    moe_fused_grouped_mlp: bool = Field(False, description="Routed experts through Transformer Engine's fused "
                                                            "MXFP8 grouped MLP (needs fp8 with fp8_recipe mxfp8)")
    experts_implementation: Literal["grouped_mm", "eager"] | None = Field(
        None, description="Hugging Face transformers' experts implementation: 'grouped_mm' (transformers 5's "
                          "default, no host wait) or 'eager' (transformers 4's per-expert Python loop, a host wait "
                          "per expert); default grouped_mm on the hf kernels")
    moe_rank_capacity_factor: Annotated[float, Bounded("moe_rank_capacity_factor")] | None = Field(
        None, description="Megatron-Core's static-shape MoE (--moe-expert-rank-capacity-factor, HybridEP): fixed "
                          "receive buffers at this multiple of the balanced share, one grouped GEMM a linear, no "
                          "host sync a layer")

    def routing_values(self) -> dict[str, object]:
        """Job fields: moe_imbalance (0 = default, 1 = balanced), capacity_factor, a2a_overlap, its schedule,
        moe_dispatcher, moe_pad_to_capacity."""
        return rules.routing_values(self)


class CommOverlapSpec(BaseModel):
    """Which communication overlaps compute, and the gradient reduction's dtype (estimate.overlap);
    None = rigplan's default (domain.job.Job), or a framework preset's."""

    model_config = ConfigDict(extra="forbid")

    tp_comm_overlap: bool | None = Field(None, description="TP all-gather/reduce-scatter overlapped with GEMMs "
                                                           "(Megatron --tp-comm-overlap, async TP); needs "
                                                           "sequence parallelism")
    tp_async_backward: bool | None = Field(None, description="Column-parallel TP backward collectives beside "
                                                             "their backward GEMMs (Megatron-Core/TE linears); "
                                                             "default: on with fused kernels")
    overlap_grad_reduce: bool | None = Field(None, description="Gradient reduction overlapped with backward "
                                                               "(DDP/FSDP; Megatron --overlap-grad-reduce)")
    overlap_param_gather: bool | None = Field(None, description="Parameter all-gather overlapped with compute "
                                                                "(Megatron --overlap-param-gather; FSDP prefetch)")
    pp_comm_overlap: bool | None = Field(None, description="Pipeline send/recv overlapped with compute "
                                                           "(Megatron --overlap-p2p-communication)")
    cp_comm_overlap: bool | None = Field(None, description="Ring-attention K/V exchange overlapped with "
                                                           "the attention core")
    cp_comm_type: Literal["p2p", "a2a"] | None = Field(
        None, description="Context-parallel exchange: p2p (ring K/V) or a2a (all-to-all of q, k, v and the "
                          "output, DeepSpeed-Ulysses); default p2p, a2a for models with learned attention sinks")
    grad_reduce_dtype: Literal["fp32", "bf16"] | None = Field(
        None, description="Dtype of the data-parallel gradient reduction; default: the gradients' own")

    def overlap_values(self) -> dict[str, object]:
        """Job fields for the switches that were given (the others keep Job's defaults)."""
        return rules.overlap_values(self, CommOverlapSpec.model_fields)


class StepCostSpec(BaseModel):
    """What a step costs beyond its micro-batches: the training loop's host work and the gradient buckets."""

    model_config = ConfigDict(extra="forbid")

    step_overhead_ms: Annotated[float, Bounded("step_overhead_ms")] | None = Field(
        None, description="Milliseconds of host-side training-loop work per optimizer step (host syncs, optimizer "
                          "issue, logging); default: the framework preset's figure (megatron, nemo: 42), else 0")
    grad_bucket_params: Annotated[float, Bounded("grad_bucket_params")] | None = Field(
        None, description="Parameters per data-parallel gradient bucket (Megatron --ddp-bucket-size): the last "
                          "bucket's reduction and the first one's all-gather run exposed; default: one layer's share")


class JobSpec(FrameworkPresetMixin, ModelSpec, MoERoutingSpec, CommOverlapSpec, StepCostSpec):
    """Model, training recipe, parallel layout and GPU: the inputs of `rigplan memory`."""

    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: Annotated[int, Bounded("lora_rank")] = 16
    lora_targets: list[str] = Field(default_factory=lambda: ["q", "v"])
    qlora_double_quant: bool = True
    seq: Annotated[int, Bounded("seq")] | None = None
    micro_batch: Annotated[int, Bounded("micro_batch")] = 1
    global_batch: Annotated[int, Bounded("global_batch")] = 0
    """0 (the default, never accepted when given): about 4M tokens per step (see flow.estimate)."""
    precision: Literal["fp32", "bf16-mixed", "fp16-mixed", "bf16-true", "fp8", "bf16", "fp16"] | None = None
    """None: bf16-mixed for full training, bf16-true for LoRA/QLoRA (base model loaded in bf16)."""
    optimizer: Optimizer = "adamw"
    zero: Literal[0, 1, 2, 3] = 0
    tp: Annotated[int, Bounded("tp")] = 1
    pp: Annotated[int, Bounded("pp")] = 1
    vpp: Annotated[int, Bounded("vpp")] = 1
    dp: Annotated[int, Bounded("dp")] | None = None
    cp: Annotated[int, Bounded("cp")] = 1
    ep: Annotated[int, Bounded("ep")] = 1
    etp: Annotated[int, Bounded("etp")] = 0
    """Expert-tensor-parallel degree; 0 = equal to tp (Megatron-Core's default), or 1 when ep*tp does not divide
    the tp*cp*dp GPUs of a pipeline stage (flow.resolve)."""
    sequence_parallel: bool = False
    stage_layers: list[Annotated[int, Bounded("stage_layers")]] = Field(
        default_factory=list, description="Layers of each virtual pipeline stage (pp*vpp entries), e.g. 7,8,8,7")
    source_notes: list[str] = Field(
        default_factory=list, description="What reading the request from a file (--megatron-args, --torchtitan-config) "
                                          "assumed or skipped; shown with the estimate's assumptions")
    pipeline_layout: str | None = Field(
        None, description="Megatron-Core's --pipeline-model-parallel-layout, e.g. Et*3|(tt|)*29,m|L (sets the "
                          "per-stage split, and vpp = stages / pp)")
    first_stage_layers: Annotated[int, Bounded("first_stage_layers")] | None = None
    last_stage_layers: Annotated[int, Bounded("last_stage_layers")] | None = None
    embedding_layer_weight: Annotated[int, Bounded("embedding_layer_weight")] | None = None
    head_layer_weight: Annotated[int, Bounded("head_layer_weight")] | None = None
    recompute: Literal["none", "selective", "op", "full"] | None = None
    recompute_method: Literal["uniform", "block"] = "uniform"
    recompute_num_layers: Annotated[int, Bounded("recompute_num_layers")] | None = None
    recompute_every: Annotated[int, Bounded("recompute_every")] | None = None
    """None: full for QLoRA (QLoRA recipes turn gradient checkpointing on), none otherwise."""
    attention: Literal["flash", "eager"] = "flash"
    offload: Literal["none", "optimizer", "all"] = "none"
    optimizer_in_backward: bool = False
    activation_offload: bool = False
    optimizer_foreach: bool = False
    loss: LossImpl = "unfused"
    dropout: bool = False
    kernels: KernelStack = "fused"
    checkpoint_load: Literal["sharded", "full"] = "sharded"
    nf4_quantizer: Literal["bitsandbytes", "bitsandbytes-legacy", "torchao-unchunked"] = "bitsandbytes"
    kbit_fp32_upcast: bool = False
    """PEFT prepare_model_for_kbit_training: the non-4-bit weights in fp32 (QLoRA)."""
    main_grads_fp32: bool = False
    ddp_grad_copy: bool = False
    fsdp_prefetch: Annotated[int, Bounded("fsdp_prefetch")] = 1
    fsdp_flat_params: bool = False
    """FSDP1 flat parameters: gradients over frozen elements, unsharded under no_sync accumulation."""
    fp8_transpose_cache: bool = False
    fp8_param_gather: bool = False
    """Megatron --fp8-param-gather: fp8 weights, no bf16 copy (domain.job.Job.fp8_param_gather)."""
    bf16_moments: bool = False
    """Megatron --use-precision-aware-optimizer with bf16 moments (domain.job.Job.bf16_moments)."""
    fp8_attention: bool = False
    """Megatron --fp8-dot-product-attention: attention's matrix products in fp8 (domain.job.Job.fp8_attention)."""
    cuda_graphs: CudaGraphs = "none"
    """'full': a full-iteration CUDA graph, no host pacing (domain.job.Job.cuda_graphs)."""
    cuda_graph_scope: list[CudaGraphScope] = Field(default_factory=list)
    """Per-module CUDA graphs: the scopes captured (domain.job.Job.cuda_graph_scope)."""
    fused_swiglu: bool = False
    fp8_activation_store: bool = False
    """The fused SwiGLU saves its input in fp8 (domain.job.Job.fp8_activation_store)."""
    rope_factor_unfused: bool = False
    """The fused rotary kernel cannot scale cos and sin (domain.job.Job.rope_factor_unfused)."""
    fp8_experts: bool = False
    """Only the routed experts' grouped GEMMs in fp8 (domain.job.Job.fp8_experts)."""
    bf16_experts: bool = False
    """Under fp8, the routed experts' grouped GEMMs stay bf16 (domain.job.Job.bf16_experts)."""
    recompute_moe_act: bool = False
    """Megatron --recompute-modules moe_act (domain.job.Job.recompute_moe_act)."""
    recompute_moe: bool = False
    """Megatron --recompute-modules moe, the whole MoE block (domain.job.Job.recompute_moe)."""
    recompute_mla_up_proj: bool = False
    """Megatron --recompute-modules mla_up_proj (domain.job.Job.recompute_mla_up_proj)."""
    recompute_layernorm: bool = False
    """Megatron --recompute-modules layernorm (domain.job.Job.recompute_layernorm)."""
    recompute_mlp: bool = False
    """Megatron --recompute-modules mlp, dense layers only (domain.job.Job.recompute_mlp)."""
    op_save_grouped_mm: bool = False
    """With recompute op: the routed experts' grouped-GEMM outputs saved (domain.job.Job.op_save_grouped_mm)."""
    nvls_buffers: bool = False
    expandable_segments: bool = False
    """PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (estimate.allocator)."""
    varying_lengths: bool = False
    """Batches padded to their longest sample: shapes change from step to step (estimate.allocator)."""
    autocast: bool = False
    """torch.autocast mixed precision: fp32 residual stream, matmul inputs cast to bf16."""
    compile: bool = False
    """torch.compile: element-wise chains fused (the eager stack's extra traffic goes)."""
    attention_kernel: Literal["fa2", "fa3", "cudnn", "triton", "sdpa"] | None = None
    """Flash-attention kernel; None = the kernel stack's default on the GPU."""
    fp8_recipe: Fp8Recipe = "delayed"
    """fp8 scaling recipe when --precision fp8."""
    gpu: str = "h100-sxm"
    gpus: Annotated[int, Bounded("gpus")] | None = None
    ecc: bool | None = None
    catalog: list[str] = Field(default_factory=list)
    calibration: str | dict[str, Any] | None = Field(
        None, description="Calibration file path (rigplan probe / calibrate), or its content inline (HTTP API)")

    @field_validator("lora_targets", mode="before")
    @classmethod
    def _split_targets(cls, value: object) -> object:
        return rules.split_lora_targets(value)

    @field_validator("precision")
    @classmethod
    def _alias_precision(cls, value: str | None) -> str | None:
        return rules.alias_precision(value)

    @field_validator("cuda_graph_scope", mode="before")
    @classmethod
    def _split_graph_scope(cls, value: object) -> object:
        return rules.split_graph_scope(value)

    @field_validator("stage_layers", mode="before")
    @classmethod
    def _split_stage_layers(cls, value: object) -> object:
        return rules.split_stage_layers(value)


class MemoryRequest(JobSpec):
    """`rigplan memory`: the job, plus whether to search the largest micro-batch and sequence."""

    find_max: bool = False


class EstimateRequest(JobSpec):
    """`rigplan estimate`: the job plus the cluster's network and the training length."""

    tokens: Annotated[str | float, Bounded("tokens", parse="count")] | None = Field(
        None, description="Tokens to train on, e.g. 2T or 300B")
    gpus_per_node: Annotated[int, Bounded("gpus_per_node")] | None = None
    nic_gbit: Annotated[float, Bounded("nic_gbit")] | None = None
    nics_per_node: Annotated[int, Bounded("nics_per_node")] | None = None
    host_power_w: Annotated[float, Bounded("host_power_w")] = 250.0
    storage: Literal["auto", "nvme", "nvme-gen5", "raid0-4", "ceph-4", "tectonic"] = "auto"
    """Where checkpoints are written: one PCIe 4 NVMe per node, a PCIe 5 drive, RAID 0 of 4 drives,
    a 4-node Ceph cluster, or a Tectonic-class parallel file system (2 TB/s); 'auto': node-local NVMe on one
    host (up to 8 GPUs of one node), shared storage (ceph-4) beyond."""
    restart_s: Annotated[float, Bounded("restart_s")] | None = None
    preemptions_per_node_month: Annotated[float, Bounded("preemptions_per_node_month")] = 0.0
    """Reclaims of rented capacity per node and month (spot, community), added to the failure rate."""
    checkpoint_interval_s: Annotated[float, Bounded("checkpoint_interval_s")] | None = None


class PlanRequest(FrameworkPresetMixin, ModelSpec, MoERoutingSpec, CommOverlapSpec, StepCostSpec):
    """`rigplan plan`: what to train, and the limits of budget, time and cluster size."""

    tokens: Annotated[str | float, Bounded("tokens", parse="count")] = Field(
        ..., description="Tokens to train on, e.g. 2T")
    budget: str | float | None = Field(
        None, description="Total budget in USD (e.g. 500k, 3M), or CNY with --currency cny")
    deadline: Annotated[str | float, Bounded("deadline", parse="duration")] | None = Field(
        None, description="Longest acceptable time to train, e.g. 30d")
    gpus_max: Annotated[int, Bounded("gpus_max")] = 4096
    gpus_min: Annotated[int, Bounded("gpus_min")] = 1
    gpu_counts: list[Annotated[int, Bounded("gpu_counts")]] = Field(
        default_factory=list, description="Exact GPU counts to try instead of node multiples up to gpus_max")
    gpu: list[str] = Field(default_factory=list, description="GPU ids to consider; empty = the whole catalog")
    gpus_per_node: Annotated[int, Bounded("gpus_per_node")] | None = None
    """Node size of a stated cluster (--cluster 6x8); default: each GPU's catalog node."""
    interruptible: bool = False
    """Also price spot, community and serverless offers for large multi-week jobs."""
    unpriced: bool = False
    """Keep GPU types without any price (no cloud offer, no purchase price) as options with speed and memory only,
    never cheaper than a priced one; `rigplan compare` sets it so that a part rigplan cannot price is still timed."""
    mode: Literal["cloud", "onprem", "both"] = "both"
    server: str | None = None
    """A server build id or BUILD.yaml: plan on its GPU, with its price and power for owning."""
    onprem_basis: Literal["purchase", "amortized"] = "purchase"
    """purchase: buying the GPUs counts in full (their residual value is reported); amortized: the job pays
    its share of a cluster kept busy at the scenario's utilisation."""
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: Annotated[int, Bounded("lora_rank")] = 16
    lora_targets: list[str] = Field(default_factory=lambda: ["q", "v"])
    seq: Annotated[int, Bounded("seq")] | None = None
    global_batch: Annotated[int, Bounded("global_batch")] = 0
    """0 (the default, never accepted when given): about 4M tokens per step (see flow.estimate)."""
    precision: Literal["fp32", "bf16-mixed", "fp16-mixed", "bf16-true", "fp8", "bf16", "fp16"] | None = None
    optimizer: Optimizer = "adamw"
    loss: LossImpl = "unfused"
    kernels: KernelStack = "fused"
    compile: bool = False
    autocast: bool = False
    attention_kernel: Literal["fa2", "fa3", "cudnn", "triton", "sdpa"] | None = None
    fp8_recipe: Fp8Recipe = "delayed"
    fp8_attention: bool = False
    fp8_param_gather: bool = False
    bf16_moments: bool = False
    fp8_activation_store: bool = False
    cuda_graphs: CudaGraphs = "none"
    cuda_graph_scope: list[CudaGraphScope] = Field(default_factory=list)
    currency: Literal["usd", "cny"] = "usd"
    fx_cny_per_usd: Annotated[float, Bounded("fx_cny_per_usd")] | None = None
    top: Annotated[int, Bounded("top")] = 10
    catalog: list[str] = Field(default_factory=list)
    calibration: str | dict[str, Any] | None = Field(
        None, description="Calibration file path (rigplan probe / calibrate), or its content inline (HTTP API)")

    _split_targets = field_validator("lora_targets", mode="before")(JobSpec._split_targets.__func__)  # type: ignore[attr-defined]
    _split_graph_scope = field_validator("cuda_graph_scope", mode="before")(JobSpec._split_graph_scope.__func__)  # type: ignore[attr-defined]
    _alias_precision = field_validator("precision")(JobSpec._alias_precision.__func__)  # type: ignore[attr-defined]

    @field_validator("gpu", "gpu_counts")
    @classmethod
    def _once_each(cls, value: list[Any]) -> list[Any]:
        """A GPU or count named twice is searched once (5,000 copies of one id made a search 5,000 times longer)."""
        return list(dict.fromkeys(value))
