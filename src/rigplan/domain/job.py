"""A training job: method, precision, optimizer, sequence and batch, and memory-saving switches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from rigplan.errors import InvalidSpec

Method = Literal["full", "lora", "qlora"]
CudaGraphs = Literal["none", "full"]
CudaGraphScope = Literal["attn", "mamba", "moe_router", "moe_preprocess"]
"""Per-module CUDA graph scopes rigplan models (Megatron-Core cuda_graph_scope names)."""
CUDA_GRAPH_SCOPES: tuple[str, ...] = get_args(CudaGraphScope)
PrecisionRecipe = Literal["fp32", "bf16-mixed", "fp16-mixed", "bf16-true", "fp8"]
Optimizer = Literal["adamw", "paged-adamw", "adamw-8bit", "paged-adamw-8bit", "sgd", "sgd-momentum", "adafactor",
                    "muon"]
Recompute = Literal["none", "selective", "op", "full"]
RecomputeMethod = Literal["uniform", "block", "every"]
AttentionImpl = Literal["flash", "eager"]
Offload = Literal["none", "optimizer", "all"]
LossImpl = Literal["unfused", "fused", "chunked", "bf16", "head-chunked", "compiled"]
LOSS_IMPLS: tuple[str, ...] = get_args(LossImpl)
"""The cross-entropy implementations in the order --loss lists them."""
KernelStack = Literal["fused", "eager", "hf", "litgpt", "torchtune"]
KERNEL_STACKS: tuple[str, ...] = get_args(KernelStack)
"""The kernel stacks in the order --kernels lists them."""
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
CheckpointLoad = Literal["sharded", "full"]
Nf4Quantizer = Literal["bitsandbytes", "bitsandbytes-legacy", "torchao-unchunked"]
Fp8Recipe = Literal["delayed", "current", "blockwise", "mxfp8", "nvfp4"]
FP8_RECIPES: tuple[str, ...] = get_args(Fp8Recipe)
AttentionKernel = Literal["fa2", "fa3", "cudnn", "triton", "sdpa"]
GradReduceDtype = Literal["fp32", "bf16"]

LORA_TARGET_NAMES = ("q", "k", "v", "o", "gate", "up", "down", "in_proj", "out_proj")
"""q, k, v, o: attention projections; gate, up, down: MLP (and expert) linears; in_proj, out_proj: a linear-attention
mixer's (Gated DeltaNet, Mamba-2) input projections and output projection (estimate.linear_attention.lora_linears)."""
DEFAULT_LORA_TARGETS = ("q", "v")
"""PEFT's default for Llama-style models (q_proj, v_proj)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """What is trained and how; the parallel layout is separate (domain.layout.Layout)."""

    method: Method = "full"
    precision: PrecisionRecipe = "bf16-mixed"
    optimizer: Optimizer = "adamw"
    seq_len: int = 4096
    micro_batch: int = 1
    recompute: Recompute = "none"
    recompute_method: RecomputeMethod = "uniform"
    """With recompute 'full': which layers (estimate.recompute): 'uniform' saves one input per
    recompute_layers layers (Megatron --recompute-method uniform), 'block' recomputes the first
    recompute_layers of each chunk (Megatron block), 'every' every recompute_layers-th layer
    (torchtitan's layer-level selective checkpointing)."""
    recompute_layers: int = 1
    """Megatron --recompute-num-layers, or torchtitan's checkpointing frequency for 'every'."""
    recompute_moe_act: bool = False
    """Megatron-Core --recompute-modules moe_act: the routed experts' activation function (SwiGLU) is
    checkpointed without its output, which is freed once fc2 has run and recomputed from the fc1 output
    before fc2's backward (megatron/core/transformer/moe/experts.py, TEGroupedMLP activation_recompute).
    Applies beside recompute 'none' or 'selective'; a fully recomputed layer keeps only its input anyway."""
    recompute_moe: bool = False
    """Megatron-Core --recompute-modules moe: each MoE block (router, dispatch, experts, combine) keeps only its
    input and runs its whole forward again before its backward (megatron/core/transformer/moe/moe_layer.py,
    moe_layer_recompute; estimate.recompute_modules). Applies beside recompute 'none' or 'selective'."""
    recompute_mla_up_proj: bool = False
    """Megatron-Core --recompute-modules mla_up_proj: MLA's q and kv up-projections and rotary embedding are
    checkpointed without their outputs; the query, key and value are freed after core attention and rebuilt
    before its backward (megatron/core/transformer/multi_latent_attention.py; estimate.recompute_modules).
    MLA models only; beside recompute 'none' or 'selective'."""
    recompute_layernorm: bool = False
    """Megatron-Core --recompute-modules layernorm: the input and pre-MLP norms that are modules of their own
    are checkpointed without their outputs (megatron/core/transformer/transformer_layer.py;
    estimate.recompute_modules). Beside recompute 'none' or 'selective'."""
    recompute_mlp: bool = False
    """Megatron-Core --recompute-modules mlp: each dense (non-MoE) layer's MLP is checkpointed, keeping its
    input only, and runs again in backward (transformer_layer.py; estimate.recompute_modules). Beside
    recompute 'none' or 'selective'."""
    op_save_grouped_mm: bool = False
    """With recompute 'op' on an MoE model: the routed experts' grouped-GEMM outputs (fc1's and fc2's) are in
    torchtitan's per-op save list, so backward does not run those GEMMs again. torchtitan's own list leaves
    aten._grouped_mm out (flops.ROUTED_EXPERTS_OP_RECOMPUTED); Lambda's torchtitan fork adds it
    (save_grouped_mm, gb300/TUNING_RESULTS_SAC_GMM.md @ c94ee3f7: +13.9% tokens/s on gpt-oss-20b over 64 GB300,
    11.80 GiB more memory per sequence of 8,192 tokens, measured)."""
    attention: AttentionImpl = "flash"
    offload: Offload = "none"
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    optimizer_in_backward: bool = False
    """Optimizer step fused into backward (torchtune optimizer_in_bwd): one parameter's gradient
    lives at a time instead of all of them."""
    optimizer_foreach: bool = False
    """torch.optim's multi-tensor (foreach) path, not the fused kernel: its step allocates temporaries
    (Hugging Face Trainer and lit-gpt use plain torch.optim.AdamW)."""
    activation_offload: bool = False
    """Checkpointed layer inputs are moved to host memory (torchtune enable_activation_offloading)."""
    qlora_double_quant: bool = True
    """QLoRA double quantization of the NF4 block constants (bitsandbytes bnb_4bit_use_double_quant)."""
    loss: LossImpl = "unfused"
    """Cross-entropy implementation: 'unfused' upcasts the logits to fp32 (Hugging Face, torchtitan);
    'fused' keeps one fp32 copy (Megatron vocab-parallel CE, Liger); 'chunked' upcasts a chunk at a
    time (torchtune CEWithChunkedOutputLoss)."""
    kernels: KernelStack = "fused"
    """'fused': Megatron-LM / NeMo / TransformerEngine kernels (fused norms, activations, softmax,
    cuDNN or FlashAttention-3 attention); 'eager': plain PyTorch modules (torchtitan, llm-foundry,
    Hugging Face) with FlashAttention-2 through SDPA and unfused element-wise ops; 'hf': Hugging Face
    transformers' own modules, eager plus fp32 norm copies and (eager attention) fp32 softmax outputs;
    'litgpt': lit-gpt's own 2023 modules (fp32 RMSNorm, merged qkv held whole, LoRA dropout; estimate.litgpt);
    'torchtune': torchtune's own modules (fp32 RMSNorm, k and v expanded under GQA, the chunked loss's fp32
    log-probabilities; estimate.torchtune)."""
    compile: bool = False
    """torch.compile on the model (torchtitan --compile, Inductor): element-wise chains fused into
    single kernels (time and saved-tensor traffic as with fused kernels); attention stays SDPA."""
    autocast: bool = False
    """torch.autocast mixed precision (Composer amp_bf16, Hugging Face Trainer bf16=True): the residual
    stream stays fp32 and every matmul input is cast to bf16 first (extra element-wise traffic)."""
    attention_kernel: AttentionKernel | None = None
    """Flash-attention kernel when attention is 'flash': None = the kernel stack's default (cuDNN under
    Transformer Engine on Hopper/Blackwell, PyTorch SDPA otherwise); 'triton' = the Triton FlashAttention
    kernel (llm-foundry attn_impl triton)."""
    fp8_recipe: Fp8Recipe = "delayed"
    """fp8 scaling when precision is fp8: 'delayed' per-tensor (Transformer Engine default on Hopper),
    'current' per-tensor dynamic (torchao float8 tensorwise, torchtitan), 'blockwise' one fp32 scale per 1 x 128
    elements of activations and gradients and per 128 x 128 block of weights (DeepSeek-V3's scheme; Transformer
    Engine's Float8BlockScaling, Megatron --fp8-recipe blockwise; Hopper, and Blackwell through MXFP8 GEMMs),
    'mxfp8' blockwise (Blackwell);
    'nvfp4' runs the linear layers' GEMMs in 4-bit E2M1 with E4M3 scales per 16 elements (Transformer Engine's
    NVFP4BlockScaling, passed to the same fp8 autocast; Megatron --fp4-format e2m1 --fp4-recipe nvfp4;
    NVIDIA Blackwell)."""
    dropout: bool = False
    """Dropout layers are active (1-byte masks saved); off for most modern LLM recipes."""
    checkpoint_load: CheckpointLoad = "sharded"
    """How the checkpoint reaches the GPU: 'sharded' (each rank reads its shard: torch.distributed.checkpoint,
    Megatron dist-ckpt, single-GPU loads) or 'full' (the whole checkpoint is materialised on every rank
    before FSDP shards it: FSDP1 full-state-dict loads, lit-gpt 2023, torchtune 2024-04)."""
    nf4_quantizer: Nf4Quantizer = "bitsandbytes"
    """QLoRA: what stores and quantizes the base: bitsandbytes' CUDA kernel (its load peak,
    estimate/setup_peaks.py); 'bitsandbytes-legacy', bitsandbytes before 0.43.2, whose 4-bit matmul also
    saves its input for backward (estimate/activations.py); or torchao's NF4Tensor before it quantized in
    chunks (torchtune, 2024-H1)."""
    kbit_fp32_upcast: bool = False
    """QLoRA through PEFT's prepare_model_for_kbit_training: every weight that is not 4-bit (embeddings,
    LM head, norms) is cast to fp32, so the residual stream is fp32 too (estimate/states.py, activations.py)."""
    main_grads_fp32: bool = False
    """Megatron/NeMo: gradients accumulate in an fp32 main-grad buffer (4 B/param, not 2)."""
    ddp_grad_copy: bool = False
    """PyTorch DDP's buckets are a second copy of the gradients (gradient_as_bucket_view=False)."""
    fsdp_prefetch: int = 1
    """FSDP units all-gathered ahead of the one computing (FSDP2 default 1)."""
    fsdp_flat_params: bool = False
    """ZeRO-3 is FSDP1 (FullyShardedDataParallel with use_orig_params=True, as Lightning Fabric sets it): a unit
    with any trainable parameter gets a gradient for its whole flat parameter, frozen elements included, and
    gradient accumulation under no_sync() keeps it unsharded between micro-batches (estimate.framework_buffers)."""
    fp8_transpose_cache: bool = False
    """TransformerEngine fp8 keeps the transposed fp8 weight too (+1 B/param)."""
    fp8_param_gather: bool = False
    """Megatron --fp8-param-gather: the model's weights are fp8 tensors (Transformer Engine Float8Tensor /
    MXFP8Tensor), with no bf16 copy beside them; the fp32 master weights stay in the distributed optimizer,
    and the parameter all-gather moves fp8 (1 B/param). megatron/training/arguments.py: 'Keep the compute param
    in fp8 (do not use any other intermediate dtype) and perform the param all-gather in fp8.'"""
    bf16_moments: bool = False
    """Adam's two moments stored in bf16 (Megatron --use-precision-aware-optimizer --exp-avg-dtype bf16
    --exp-avg-sq-dtype bf16, megatron/training/arguments.py; Megatron-Bridge's 2026 MoE recipes set it):
    4 B/param of optimizer moments instead of 8, beside the fp32 master weights (estimate.states)."""
    cuda_graphs: CudaGraphs = "none"
    """'full': the whole iteration (every micro-batch's forward and backward) is captured once and replayed as
    one CUDA graph (Megatron-Core cuda_graph_impl 'full_iteration', Megatron-Bridge's 2026 MoE recipes), so the
    host issues one launch per step instead of every op: the per-layer host pacing of dropless MoE
    (estimate.moe_host.host_paced_s) goes. Capture needs static shapes (Megatron pads the experts with its paged
    stash); the GPU-side gaps between kernels stay (elementwise.KERNEL_GAP_S). 'none': eager launches.
    Per-module graphs are cuda_graph_scope."""
    cuda_graph_scope: tuple[str, ...] = ()
    """Per-module CUDA graphs (Megatron-Core / Transformer Engine cuda_graph_scope, with cuda_graph_impl
    transformer_engine): of 'attn', 'mamba' (a hybrid's Mamba-2 mixers), 'moe_router' and 'moe_preprocess', the
    modules captured and replayed with
    one launch each, forward and backward (estimate.moe_host.CUDA_GRAPH_SCOPE_OPS); the per-layer host sync of
    dropless routing stays. Ignored under cuda_graphs 'full'."""
    fp8_attention: bool = False
    """FP8 dot-product attention (Megatron --fp8-dot-product-attention, Transformer Engine NVTE_FP8_DPA=1 with
    cuDNN's fused FP8 attention; Megatron-Bridge fp8_dot_product_attention): the attention kernel's QK^T and
    PV products, forward and backward, run on the fp8 tensor cores: at the fp8 / bf16 rate cuDNN's benchmark
    measured for its kernel (KernelCurve.fp8_gain), else with the softmax exponentials at their own rate
    (estimate.efficiency.attention_kernel_efficiency). Left out: the casts of Q, K, V and
    O to fp8 (a few bytes per element beside the kernel) and any change to what attention saves for backward."""
    fused_swiglu: bool = False
    """Megatron-Core/TE fused SwiGLU: 3f saved per token instead of 4f."""
    fp8_activation_store: bool = False
    """Megatron-Core activation_func_fp8_input_store (--activation-func-fp8-input-store): the fused gated
    activation (bias_swiglu_impl, and weighted_bias_swiglu_impl in the routed experts) saves its 2f input for
    backward as input.to(torch.float8_e4m3fn), 1 byte an element in place of the compute dtype, and casts it back
    there (megatron/core/fusions/fused_bias_swiglu.py: 'Store the input of MLP activation function in FP8 for
    backprop to save memory'). NVIDIA's MLPerf Llama 2 70B LoRA recipes set it (FP8_ACT=1), as their logs print
    (estimate.activations, estimate.elementwise)."""
    fp8_experts: bool = False
    """Only the routed experts' grouped GEMMs run in fp8 (fp8_recipe, MXFP8 on Blackwell), their inputs quantized
    per micro-batch around them, while every other linear, the saved activations and the weights stay in the
    compute dtype: torchao's MoE training recipe (quantize.grouped_mm.mx on the experts in torchtitan; PyTorch's
    'MXFP8 training for MoEs' and 'MXFP8 and DeepEP for DeepSeek-V3 on B200' posts). precision stays bf16-mixed."""
    bf16_experts: bool = False
    """Under precision fp8, the routed experts' grouped GEMMs stay in the compute dtype while every other linear of
    the blocks runs in fp8: torchao's float8 linear conversion as torchtitan applies it (quantize.linear.float8 swaps
    the nn.Linear modules; the grouped experts are converted only by its grouped-mm converter, fp8_experts). The
    experts' weights keep no quantized copy, their operands are not cast and the all-to-all carries the compute
    dtype. Not a Megatron-Core / Transformer Engine setting: there fp8 covers the grouped experts too."""
    rope_factor_unfused: bool = False
    """The stack's fused rotary kernel takes no factor on cos and sin, so a model whose YaRN scales them
    (Architecture.rope_attention_factor != 1: gpt-oss) runs its rotary embedding as unfused tensor ops: Megatron-Core's
    apply_rotary_pos_emb warns 'mscale=... is not supported by TE's fused RoPE. Using unfused implementation.' and
    takes _apply_rotary_pos_emb_bshd even with apply_rope_fusion (estimate.elementwise.UNFUSED_SCALED_ROPE_TRAFFIC)."""
    nvls_buffers: bool = False
    """NCCL NVLS buffers on NVSwitch systems (on by default in NCCL 2.18-2.19): 1 GiB per 8-GPU communicator."""
    expandable_segments: bool = False
    """PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows one segment per pool
    instead of taking a new one per large request (estimate.allocator)."""
    varying_lengths: bool = False
    """Batches are padded to their longest sample, so tensor shapes change from step to step (unpacked
    instruction data); False: packed or fixed-length batches. Sets how much the caching allocator keeps
    reserved beyond the live tensors (estimate.allocator) and, with kernels='hf', that transformers passes SDPA
    an explicit padding mask (estimate.activations.hf_sdpa_input_bytes)."""
    global_batch: int = 0
    """Sequences per optimizer step; 0 means micro_batch x dp (no accumulation)."""
    tokens: float = 0.0
    """Tokens to train on (for time-to-train); 0 when not given."""
    moe_imbalance: float = 0.0
    """MoE routing: tokens on the busiest expert-parallel rank over the mean; 0 means the default of
    estimate.moe (DEFAULT_IMBALANCE), 1 is perfectly balanced routing (benchmarks' forced balance)."""
    capacity_factor: float = 0.0
    """MoE expert capacity as a multiple of the mean load (tokens over it are dropped); 0 = dropless."""
    a2a_overlap: bool = False
    """Expert all-to-all overlapped with the computation of another micro-batch (DeepEP with
    Megatron-Core's 1F1B A2A overlap, DeepSeek's DualPipe)."""
    a2a_overlap_schedule: Literal["1f1b", "dualpipe"] = "1f1b"
    """Which schedule overlaps the all-to-all (with a2a_overlap): Megatron-Core's 1F1B EP overlap (the
    forward of one micro-batch beside the backward of another; hides part of it) or DeepSeek's DualPipe
    (hides all of it behind computation)."""
    moe_dispatcher: Literal["alltoall", "deepep", "hybridep", "einsum", "allgather"] | None = None
    """How routed tokens cross the expert-parallel group: 'alltoall' (NCCL all-to-all of every copy,
    Megatron-Core's alltoall dispatcher), 'deepep' or 'hybridep' (DeepEP's normal kernels or NVIDIA's HybridEP,
    Megatron-Core's flex dispatcher with that backend: one crossing per destination node, forwarded over NVLink
    inside it; timed alike, DeepEP's buffers counted, estimate.ep_buffers), or 'einsum' (GShard's one-hot dispatch
    and combine einsums over capacity slots, MaxText's dense_matmul with a capacity factor, then an all-to-all of
    the padded slots: needs capacity_factor and pads every expert to it; estimate.moe.dispatch_einsum_flop_per_token),
    or 'allgather' (Megatron-Core's allgather dispatcher, Megatron-LM's default --moe-token-dispatcher-type: every token
    gathered over the etp·ep ranks, the output reduce-scattered back; estimate.moe_allgather).
    None = deepep with a2a_overlap, else alltoall."""
    moe_pad_to_capacity: bool = False
    """With a capacity factor, every expert's input is padded to its capacity (Megatron
    --moe-pad-expert-input-to-capacity; Megatron-Bridge's token-drop recipes): static shapes, so no
    per-layer device-to-host sync, and every expert computes capacity tokens."""
    moe_fused_grouped_mlp: bool = False
    """The routed experts run Transformer Engine's fused grouped MLP (its operation fuser with
    NVTE_CUTEDSL_FUSED_GROUPED_MLP=1; Megatron-Bridge cutedsl_fused_grouped_mlp; MXFP8 on Blackwell only):
    forward, fc1's grouped GEMM emits the SwiGLU and its MXFP8 quantization in its epilogue and fc2 reads it;
    backward, fc2's data-gradient GEMM applies dSwiGLU and quantizes in its epilogue (TransformerEngine
    PR #2622 / #2769, transformer_engine/pytorch/ops/fused/forward_grouped_mlp.py and backward_grouped_mlp.py).
    So the experts' activation passes and the casts between their GEMMs leave HBM, and the grouped GEMMs
    run at the dense fp8 curve (estimate.efficiency: fp8_grouped_half_dim is for the unfused path)."""
    moe_rank_capacity_factor: float | None = None
    """Megatron-Core's static-shape MoE (--moe-expert-rank-capacity-factor, HybridEP only): each expert rank's receive
    buffer is fixed at this factor times its balanced share of the routed tokens, so no layer copies the tokens per
    expert to the host and syncs (TransformerConfig: 'set for static shapes (fixed receive buffer, CUDA-graph
    capturable, needs the fused grouped GEMM)'), and the experts run Transformer Engine's operation fuser with one
    grouped GEMM a linear whose split sizes stay on the device (on Hopper Megatron-Bridge's Qwen3.5 spec puts
    torch.grouped_mm there), not a GEMM per expert. None: the dynamic path, a sync a layer and per-expert GEMMs."""
    transformers_modules: bool = False
    """The fused stack runs the model as transformers' modules with peft's adapters (Unsloth: flow.resolve sets it for
    that preset), not Megatron-Core's; the stacks other than 'fused' always do
    (estimate.linear_attention.transformers_modules)."""
    moe_expert_module: Literal["megatron", "te_ops", "own", "unsloth"] = "megatron"
    """Which code runs the routed experts around their grouped GEMMs where the fused grouped MLP does not
    (estimate.moe.megatron_expert_path): 'megatron', Megatron-Core's TEGroupedMLP with its clamp and per-expert
    bias loop; 'te_ops', Transformer Engine's operation fuser with unfused ops (flow.resolve sets it for biased
    experts that asked for the fused grouped MLP); 'own', a framework's own expert code outside Megatron-Core (NeMo
    AutoModel's torch.compile'd activations: flow.resolve for that preset); 'unsloth', Unsloth's MoE backend on
    transformers 5's experts (torch._grouped_mm, or its Triton grouped GEMMs where that falls back, and its split
    LoRA on the routed tokens; routed_experts_implementation, estimate.hf_experts)."""
    experts_implementation: Literal["grouped_mm", "eager"] | None = None
    """How Hugging Face transformers runs the routed experts (from_pretrained's experts_implementation;
    estimate.hf_experts): 'grouped_mm', transformers 5's default, one torch._grouped_mm per expert linear and no host
    wait; 'eager', transformers 4's path, a Python loop over the experts with a host wait at each. None = grouped_mm
    on the 'hf' kernels, and no transformers experts on other stacks."""
    tp_comm_overlap: bool = False
    """Tensor-parallel all-gather/reduce-scatter split into chunks and overlapped with the GEMMs that
    use or produce them (Megatron --tp-comm-overlap with Transformer Engine userbuffers, PyTorch async
    TP); needs sequence parallelism (estimate.overlap)."""
    tp_async_backward: bool | None = None
    """Tensor-parallel backward collectives of the column-parallel linears issued asynchronously beside
    their backward GEMMs (Megatron-Core / Transformer Engine linears, estimate.tensor_parallel). None = on
    for the fused (Megatron/TE) kernel stack, off for eager PyTorch (DTensor) stacks."""
    overlap_grad_reduce: bool = True
    """Data-parallel gradient all-reduce/reduce-scatter issued bucket by bucket during backward (PyTorch
    DDP and FSDP always; Megatron --overlap-grad-reduce, off by default there)."""
    overlap_param_gather: bool | None = None
    """Parameter all-gather overlapped with compute: Megatron --overlap-param-gather (ZeRO-1/2, gathered
    during the next forward), FSDP prefetch (ZeRO-3). None = FSDP's default for ZeRO-3 (on) and
    Megatron's for ZeRO-1/2 (off)."""
    grad_bucket_params: float = 0.0
    """Parameters per gradient bucket of the data-parallel reduction (Megatron --ddp-bucket-size, DeepSpeed's
    reduce_bucket_size): the last bucket's reduce-scatter and the first bucket's all-gather have no computation to
    hide behind (estimate.step). 0 = not given: one layer's share stands in for the bucket, as before (Megatron-Core's
    own default, max(40M, 1M x dp) parameters, is below a layer's share for most models)."""
    step_overhead_s: float = 0.0
    """Seconds of every optimizer step outside the micro-batches' computation and communication that the GPU
    spends waiting on the host: the training loop's host synchronisations, issuing the optimizer step, loss
    reduction and logging (estimate.step adds it once to each step). 0 = not modelled; the Megatron-Core
    presets (megatron, nemo) set MEGATRON_STEP_OVERHEAD_MS."""
    pp_comm_overlap: bool = False
    """Pipeline send/recv overlapped with another chunk's compute (Megatron --overlap-p2p-communication,
    on by default there); it hides only in an interleaved schedule (vpp > 1), where the next chunk's work
    does not wait for the transfer."""
    cp_comm_overlap: bool = True
    """Context-parallel ring K/V exchange overlapped with the attention of the current block
    (Transformer Engine's ring attention, torchtitan's context_parallel)."""
    cp_comm_type: Literal["p2p", "a2a"] = "p2p"
    """How context parallelism exchanges the sequence: 'p2p', a ring passing K/V blocks under the attention of
    the current block (Liu et al. 2023, ring attention; Transformer Engine's default cp_comm_type); 'a2a',
    all-to-all of q, k, v before the attention core and of its output after (Jacobs et al. 2023, DeepSpeed-Ulysses,
    arXiv 2309.14509; Transformer Engine cp_comm_type 'a2a'): each rank then attends over the whole sequence
    for heads/cp of the heads, and the exchanges are exposed (estimate.comm.ulysses_all_to_all_s)."""
    grad_reduce_dtype: GradReduceDtype | None = None
    """Data type of the data-parallel gradient reduction: 'fp32' (Megatron with fp32 main grads,
    torchtitan's FSDP2 mixed_precision_reduce), 'bf16' (16-bit: FSDP MixedPrecision reduce_dtype bf16);
    None = the gradients' own dtype (estimate.states.grad_bytes_per_param)."""

    def __post_init__(self) -> None:
        if not 1 <= self.seq_len <= 16_777_216:
            raise InvalidSpec(f"--seq must be between 1 and 16M tokens, got {self.seq_len}")
        if not 1 <= self.micro_batch <= 65_536:
            raise InvalidSpec(f"--micro-batch must be between 1 and 65536, got {self.micro_batch}")
        if self.method != "full" and not 1 <= self.lora_rank <= 65_536:
            raise InvalidSpec(f"--lora-rank must be between 1 and 65536, got {self.lora_rank}")
        unknown = [t for t in self.lora_targets if t not in LORA_TARGET_NAMES]
        if unknown:
            raise InvalidSpec(
                f"unknown LoRA target(s) {', '.join(unknown)}; choose from {', '.join(LORA_TARGET_NAMES)} or 'all'"
            )
        repeated = sorted({t for t in self.lora_targets if self.lora_targets.count(t) > 1})
        if repeated:
            raise InvalidSpec(f"--lora-targets names {', '.join(repeated)} more than once; give each module once")
        if self.method != "full" and not self.lora_targets:
            raise InvalidSpec("LoRA needs at least one target module (--lora-targets q,v)")
        if self.fp8_experts and self.precision not in ("bf16-mixed", "bf16-true"):
            raise InvalidSpec(f"--fp8-experts puts only the routed experts' grouped GEMMs in fp8 and the rest in bf16: "
                              f"it needs --precision bf16-mixed or bf16-true, not {self.precision} (with --precision "
                              "fp8 every linear is in fp8 already)")
        if self.fp8_experts and self.fp8_recipe not in ("mxfp8", "current"):
            raise InvalidSpec("--fp8-experts follows torchao's MoE recipes: give --fp8-recipe mxfp8 (Blackwell) or "
                              "current (row-wise scaling)")
        if self.bf16_experts and self.precision != "fp8":
            raise InvalidSpec(f"--bf16-experts keeps the routed experts in bf16 while the other linears run in fp8: it "
                              f"needs --precision fp8, not {self.precision} (for fp8 experts alone use --fp8-experts)")
        if self.bf16_experts and self.kernels == "fused":
            raise InvalidSpec("--bf16-experts is torchao's float8 linear conversion (torchtitan): Megatron-Core and "
                              "Transformer Engine run the grouped experts in fp8 too under --precision fp8; give "
                              "--kernels eager (or --framework torchtitan)")
        if self.fp8_recipe == "blockwise" and self.precision == "fp8" and self.kernels != "fused":
            raise InvalidSpec(f"--fp8-recipe blockwise is Transformer Engine's Float8BlockScaling, which --kernels "
                              f"{self.kernels} does not run: give --kernels fused (Megatron-Core, NeMo), or "
                              "--fp8-recipe current or mxfp8 for torchao's float8 and MX training")
        if self.fp8_recipe != "delayed" and self.precision != "fp8" and not self.fp8_experts:
            raise InvalidSpec(f"--fp8-recipe {self.fp8_recipe} sets how the low-precision GEMMs scale: it needs "
                              "--precision fp8 (drop it for other precisions)")
        if self.fp8_activation_store and not (self.kernels == "fused" and self.fused_swiglu):
            raise InvalidSpec("--fp8-activation-store keeps the input of Megatron-Core's fused SwiGLU in fp8: it needs "
                              "--kernels fused with --fused-swiglu (--framework megatron or nemo sets both)")
        if self.fp8_param_gather and self.precision != "fp8":
            raise InvalidSpec("--fp8-param-gather keeps the weights in fp8: it needs --precision fp8 (drop it "
                              "for other precisions)")
        if self.optimizer == "muon" and self.offload != "none":
            raise InvalidSpec("Muon's Newton-Schulz iterations run on the GPU: --offload needs another optimizer "
                              "(drop --offload, or use --optimizer adamw)")
        if self.bf16_moments and self.optimizer not in ("adamw", "paged-adamw"):
            raise InvalidSpec("--bf16-moments keeps Adam's moments in bf16: it needs --optimizer adamw (drop it "
                              "otherwise)")
        unknown_scopes = [s for s in self.cuda_graph_scope if s not in CUDA_GRAPH_SCOPES]
        if unknown_scopes:
            raise InvalidSpec(f"unknown CUDA graph scope(s) {', '.join(unknown_scopes)}; choose from "
                              f"{', '.join(CUDA_GRAPH_SCOPES)}")
        if self.fp8_attention and (self.precision != "fp8" or self.attention != "flash"):
            raise InvalidSpec("--fp8-attention runs the fused attention kernel in fp8: it needs --precision fp8 and "
                              "--attention flash (drop it otherwise)")
        if self.moe_fused_grouped_mlp and not (self.precision == "fp8" and self.fp8_recipe == "mxfp8"):
            raise InvalidSpec("--moe-fused-grouped-mlp is Transformer Engine's MXFP8 kernel: it needs --precision fp8 "
                              "--fp8-recipe mxfp8 (drop it for other precisions)")
        if self.experts_implementation is not None and self.kernels not in ("hf", "eager"):
            raise InvalidSpec(f"--experts-implementation is Hugging Face transformers' switch: it needs the model's "
                              f"own PyTorch modules (--kernels hf or eager, e.g. --framework hf), not --kernels "
                              f"{self.kernels}")
        if self.grad_bucket_params < 0:
            raise InvalidSpec(f"--grad-bucket-params must be >= 0, got {self.grad_bucket_params:g}")
        if self.step_overhead_s < 0:
            raise InvalidSpec(f"--step-overhead-ms must be >= 0, got {self.step_overhead_s * 1000:g}")
        if self.moe_imbalance and self.moe_imbalance < 1.0:
            raise InvalidSpec(f"--moe-imbalance (busiest rank load / mean) must be >= 1, got {self.moe_imbalance}")
        if self.capacity_factor and self.capacity_factor < 1.0:
            raise InvalidSpec(f"--capacity-factor must be >= 1 (0: dropless), got {self.capacity_factor}")
        if self.moe_pad_to_capacity and not self.capacity_factor:
            raise InvalidSpec("--moe-pad-to-capacity needs --capacity-factor (the capacity each expert is padded to)")
        dispatcher = self.moe_dispatcher or ("deepep" if self.a2a_overlap else "alltoall")
        if dispatcher == "allgather" and self.a2a_overlap:
            raise InvalidSpec("--a2a-overlap is Megatron-Core's 1F1B overlap of the expert all-to-all, which the "
                              "allgather dispatcher does not run: use --moe-dispatcher alltoall, deepep or hybridep "
                              "with it, or drop --a2a-overlap")
        if dispatcher == "einsum" and not self.capacity_factor:
            raise InvalidSpec("--moe-dispatcher einsum dispatches into capacity slots (GShard, MaxText's dense_matmul) "
                              "and needs --capacity-factor, e.g. 1.25; for dropless routing use alltoall")
        if self.moe_rank_capacity_factor is not None:
            if self.moe_rank_capacity_factor < 1.0:
                raise InvalidSpec("--moe-rank-capacity-factor sizes each expert rank's static receive buffer as a "
                                  "multiple of its balanced share; it must be >= 1 (Megatron-Bridge's recipes use "
                                  f"1.05-1.5), got {self.moe_rank_capacity_factor:g}")
            if dispatcher != "hybridep":
                raise InvalidSpec("--moe-rank-capacity-factor is Megatron-Core's static-shape MoE for the HybridEP "
                                  "flex dispatcher: add --moe-dispatcher hybridep (or drop it for the dynamic path)")
        if self.moe_pad_to_capacity and dispatcher == "deepep":
            raise InvalidSpec("the DeepEP dispatcher does not pad experts to capacity (Megatron-Core's flex dispatcher "
                              "refuses moe_pad_expert_input_to_capacity with DeepEP); use --moe-dispatcher alltoall "
                              "or hybridep")
        if self.recompute_layers < 1:
            raise InvalidSpec(f"--recompute-num-layers must be >= 1, got {self.recompute_layers}")
        if self.recompute != "full" and (self.recompute_method != "uniform" or self.recompute_layers != 1):
            raise InvalidSpec("--recompute-method, --recompute-num-layers and --recompute-every choose which layers "
                              f"a full recompute covers; add --recompute full (got --recompute {self.recompute})")
        if not 0 <= self.fsdp_prefetch <= 64:
            raise InvalidSpec(f"--fsdp-prefetch must be between 0 and 64, got {self.fsdp_prefetch}")
        if self.global_batch < 0 or self.tokens < 0:
            raise InvalidSpec("--global-batch and --tokens must be >= 0")

    @property
    def is_peft(self) -> bool:
        return self.method in ("lora", "qlora")

    @property
    def forced_balance(self) -> bool:
        """MoE routing forced to balance (moe_imbalance 1: --balanced-routing), as benchmarks run it: Megatron-Core's
        moe_router_force_load_balancing, torchtitan's debug.moe_force_load_balance (round-robin experts)."""
        return self.moe_imbalance == 1.0

    @property
    def experts_padded(self) -> bool:
        """Every expert computes its whole capacity (static shapes): --moe-pad-to-capacity, or the einsum
        dispatcher, whose one-hot dispatch fills capacity slots whether tokens reach them or not."""
        return bool(self.capacity_factor) and (self.moe_pad_to_capacity or self.moe_dispatcher == "einsum")

    @property
    def routed_experts_implementation(self) -> str | None:
        """The Hugging Face transformers experts implementation that runs the routed experts: the one given,
        'grouped_mm' (transformers 5's default, PreTrainedModel.get_correct_experts_implementation) on the Hugging
        Face preset's 'hf' kernels and under Unsloth's MoE backend (moe_expert_module 'unsloth'), None outside
        transformers (estimate.hf_experts)."""
        if self.experts_implementation is not None:
            return self.experts_implementation
        return "grouped_mm" if self.kernels == "hf" or self.moe_expert_module == "unsloth" else None

    @property
    def compute_dtype_bytes(self) -> int:
        """Bytes per element of activations and of the compute copy of weights."""
        return 4 if self.precision == "fp32" else 2

    @property
    def matmul_precision(self) -> str:
        if self.precision == "fp8" and self.fp8_recipe == "nvfp4":
            return "fp4"
        return {"fp32": "tf32", "fp8": "fp8", "fp16-mixed": "fp16"}.get(self.precision, "bf16")

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.seq_len * self.micro_batch
