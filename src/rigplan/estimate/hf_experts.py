"""The host's side of a Hugging Face transformers MoE layer: the routed experts as transformers runs them
(experts_implementation), what their ops cost on the host, and how long a micro-batch takes when the host issues
them. Used by estimate.stage_time in place of estimate.moe_host for stacks that train a transformers model (the 'hf'
kernels, or any eager stack told --experts-implementation).

Two implementations (transformers src/transformers/integrations/moe.py and the models' Experts classes):
- 'grouped_mm', transformers 5's default (PreTrainedModel.get_correct_experts_implementation): the routed copies are
  sorted by expert, counted with torch.histc and cumsum on the device, and both expert linears run as one
  torch._grouped_mm each. No value goes back to the host, so the host may run ahead of the GPU through the
  micro-batch.
  Off sm_90 / sm_100 (and with fp32 experts) torch._grouped_mm falls back to a wait and one mm per expert
  (fused_grouped_mm).
- 'eager', transformers 4's only path and 5's experts_implementation='eager': a Python loop over the experts that
  got tokens (expert_hit from .nonzero()), each iteration finding its tokens with torch.where (a nonzero: the host
  copies the count back and waits for the GPU) and running its linears on them. The host cannot run ahead across a
  wait, so the expert phase of a layer and the rest of it follow one another (serial_phases_s).

peft's parameter adapters on transformers 5's 3-D expert weights add their host ops here (estimate.peft_experts, which
times their GPU side).

Left out: transformers' batched_mm (a decode path that gathers every routed token's expert weights; the switch
offers grouped_mm and eager only), expert parallelism inside transformers (GroupedGemmParallel: every rank of the
group gets the same micro-batch; domain.frameworks names it) and the GPU side, which estimate.stage_time times as for
any grouped GEMM of the same thin shapes (the eager loop's per-expert linears have the grouped GEMM's per-expert
shapes).
"""

from __future__ import annotations

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate import arrays as xp
from rigplan.estimate import peft_experts
from rigplan.estimate.moe import Num
from rigplan.estimate.moe_host import TORCH_LINEAR_CPU_S, HostTiming, issues_moe_ops, no_host_time

HF_KERNEL_STACKS = ("hf", "eager")
"""Kernel stacks that run a model's own PyTorch modules, where transformers' experts implementations apply: 'hf' (the
Hugging Face Trainer preset) and 'eager' (DeepSpeed and plain FSDP wrap the user's model, often a transformers one)."""

ROUTER_OPS = 6.0
"""Host ops of transformers' top-k router per MoE layer and pass: the gate linear, the fp32 softmax, topk, the
renormalising sum and division (norm_topk_prob), the cast back (Qwen3MoeTopKRouter, MixtralTopKRouter)."""
GROUPED_MM_OPS = {"forward": 18.0, "backward": 24.0}
"""Host ops of transformers' grouped_mm_experts_forward per MoE layer, counted from integrations/moe.py: forward,
zeros_like, arange and the expanded token index, two argsorts, four gathers (states, ids, weights, sorted states), the
histc count with its float cast, cumsum, two torch._grouped_mm, the activation, its product, the routing-weight
product, the inverse permutation and index_add_ (18; views counted as nothing); backward, the autograd nodes of those
with a gradient: index_add_ and the gathers (index_select, and a zero-fill with index_put for each gather), the
products (two each), the activation, and each grouped GEMM's data and weight gradients (24)."""
EAGER_LAYER_OPS = 5.0
"""Host ops of the eager loop's set-up per MoE layer forward: zeros_like, one_hot, the per-expert sum, greater and
the nonzero that lists the experts hit (a host wait)."""
EAGER_EXPERT_OPS = {"forward": 9.0, "backward": 13.0}
"""Host ops per expert hit in the eager loop: forward, torch.where (a nonzero, a host wait), the token gather, the
gate-up linear, the activation and its product, the down linear, the routing-weight gather and product, index_add_
(9; transformers 4's separate gate_proj and up_proj add one); backward, their autograd nodes: the gathers' zero-fill
and index_put (2 each), the products (2 each), the activation, and each linear's data and weight gradients (13)."""
LORA_LINEAR_OPS = 4.0
"""Host ops peft's LoRA adds to one wrapped linear a pass: lora_A, lora_B, the scaling product and the add (its
dropout module is an identity at dropout 0). Under the eager loop (transformers 4's ModuleList of nn.Linear experts)
each targeted expert linear of every expert hit carries them."""
SHARED_EXPERT_OPS = 5.0
"""Host ops of a shared expert's gated MLP a pass: gate and up linears, the activation, the product, the down
linear; Qwen2-MoE's sigmoid gate on its output adds a linear, the sigmoid and a product."""


def experts_implementation(job: Job) -> str | None:
    """The transformers experts implementation that runs the job's routed experts (Job.routed_experts_implementation:
    the one given, 'grouped_mm' on the 'hf' kernels, None outside transformers)."""
    return job.routed_experts_implementation


def expert_weights_fp32(job: Job, zero: Num = 0) -> Num:
    """1 where transformers' grouped_mm experts are held in fp32, else 0 (and 0 outside grouped_mm, whose eager
    loop's matmuls autocast to the compute dtype): QLoRA's experts after peft's
    prepare_model_for_kbit_training (bitsandbytes leaves transformers 5's 3-D experts unquantized,
    peft_experts.experts_left_unquantized), and a mixed-precision job's fp32 base under torch.autocast without
    sharding (zero 0: DDP; FSDP's mixed-precision policy and DeepSpeed hand the experts bf16 weights). transformers
    casts the experts' input to the weights' dtype (grouped_mm is not autocast-enabled, integrations/moe.py
    _grouped_mm), so their GEMMs then run in fp32."""
    bf16 = job.compute_dtype_bytes == 2 and job.routed_experts_implementation == "grouped_mm"
    qlora = bf16 and job.method == "qlora" and job.kbit_fp32_upcast
    autocast = bf16 and job.autocast
    return xp.where(qlora | (autocast & (xp.asarray(zero) == 0)), 1.0, 0.0)


def fp32_experts_possible(arch: Architecture, job: Job) -> bool:
    """Whether an MoE job's routed experts run fp32 GEMMs under some ZeRO stage (expert_weights_fp32 at stage 0)."""
    return arch.moe is not None and float(expert_weights_fp32(job, 0)) > 0


FUSED_GROUPED_MM_ARCHITECTURES = ("Hopper", "Blackwell (2-die", "Blackwell Ultra", "Blackwell + Grace", "CDNA 3",
                                  "CDNA 4")
"""Architectures (catalog prefixes) where torch._grouped_mm runs a fused kernel on bf16 operands: sm_90 and sm_100
(PyTorch GroupedBlas.cpp, _grouped_mm_cuda: _scaled_mm_allowed_device(sm90_only, sm100_only) && bf16; CUDA 13.3's
cuBLASLt grouped GEMM takes majors 9 to 11), and on ROCm gfx942 / gfx950 with Composable Kernel. Not the GB202
Blackwell parts (sm_120: RTX 5090, RTX PRO 6000), Ada, Ampere or older (PyTorch issue #186620: no fused variant
is planned for Ampere)."""


def fused_grouped_mm(gpu: Gpu, job: Job, zero: Num = 0) -> Num:
    """1 where transformers' grouped_mm experts run torch._grouped_mm's fused kernel (FUSED_GROUPED_MM_ARCHITECTURES,
    bf16 experts), else 0: PyTorch's _grouped_mm_fallback (GroupedMMUtils.h) copies the offsets to the host, which
    waits for the GPU, and issues one at::mm per expert (transformers' own fallback below sm_80 does the same from
    Python). Parts of other vendors keep the fused path (not modelled), and so does Unsloth, whose Triton grouped
    GEMMs run where torch._grouped_mm falls back (2.5x torch._grouped_mm on an A100, its MoE guide)."""
    arch_ok = (gpu.vendor not in ("nvidia", "amd") or gpu.architecture.startswith(FUSED_GROUPED_MM_ARCHITECTURES)
               or job.moe_expert_module == "unsloth")
    return xp.where(xp.asarray(expert_weights_fp32(job, zero)) > 0, 0.0, 1.0 if arch_ok else 0.0)


def experts_hit(arch: Architecture, tokens: Num, ep: Num = 1.0) -> Num:
    """A rank's experts (E/ep of them, expert parallelism sharding them) that receive at least one of a micro-batch's
    T tokens, each token picking k of E uniformly: (E/ep)·(1 - (1 - k/E)^T)."""
    assert arch.moe is not None
    e, k = float(arch.moe.num_experts), float(arch.moe.top_k)
    return e / xp.asfloat(ep) * (1.0 - (1.0 - k / e) ** xp.maximum(xp.asfloat(tokens), 1.0))


def _lora_expert_linears(job: Job) -> float:
    """Expert linears of a gated MLP that peft wraps under the job's LoRA targets (gate, up, down)."""
    return float(sum(t in job.lora_targets for t in ("gate", "up", "down"))) if job.is_peft else 0.0


def moe_layer_ops(arch: Architecture, job: Job, tokens: Num, phase: str, ep: Num = 1.0) -> Num:
    """Host ops of one MoE layer in `phase` ('forward' or 'backward') beyond its dense kernels: the router, the
    shared expert where the model has one, and the routed experts as the implementation runs them."""
    assert arch.moe is not None
    shared = SHARED_EXPERT_OPS + (3.0 if arch.moe.shared_expert_gate else 0.0) if arch.moe.num_shared_experts else 0.0
    own = ROUTER_OPS + shared + 0.0 * xp.asfloat(tokens)
    if experts_implementation(job) == "grouped_mm":
        return own + GROUPED_MM_OPS[phase] + peft_experts.host_ops(arch, job, phase)
    per_expert = EAGER_EXPERT_OPS[phase] + LORA_LINEAR_OPS * _lora_expert_linears(job)
    setup = EAGER_LAYER_OPS if phase == "forward" else 0.0
    return own + setup + experts_hit(arch, tokens, ep) * per_expert


def eager_expert_phase_ops(arch: Architecture, job: Job, tokens: Num, ep: Num = 1.0) -> Num:
    """Forward host ops of one MoE layer between its first host wait (the nonzero of expert_hit) and the end of its
    expert loop: every expert hit's ops (EAGER_EXPERT_OPS and peft's, LORA_LINEAR_OPS)."""
    return experts_hit(arch, tokens, ep) * (EAGER_EXPERT_OPS["forward"] + LORA_LINEAR_OPS * _lora_expert_linears(job))


def serial_phases_s(gpu_s: Num, host_s: Num, expert_gpu_s: Num, expert_host_s: Num) -> Num:
    """Seconds of a forward pass whose MoE layers wait on the host before their expert loop and at every expert
    (the eager loop): the expert phases and the rest of the pass cannot overlap, and inside each the host and the
    GPU work as one queue, so the pass takes max(G - G_e, H - H_e) + max(G_e, H_e), with G_e and H_e the expert
    phases' GPU and host seconds (balanced experts: the sum over experts of max(g, h) is the max of the sums).
    Leaves out the latency of each wait (a device-to-host copy of a few bytes)."""
    rest = xp.maximum(gpu_s - expert_gpu_s, host_s - expert_host_s)
    return xp.maximum(rest, 0.0) + xp.maximum(expert_gpu_s, expert_host_s)


def host_timing(arch: Architecture, job: Job, gpu: Gpu, ep: Num, gpu_s: Num, *, tokens: Num, kernels: float,
                layers: Num, dense_layers: Num, lm_head: Num, recomputed_layers: Num,
                expert_forward_s: Num = 0.0, zero: Num = 0) -> HostTiming:
    """The host's side of one micro-batch of a transformers MoE model on one rank (moe_host.HostTiming): its ops at
    a plain PyTorch op's CPU time (moe_host.TORCH_LINEAR_CPU_S: no Transformer Engine modules), a layer's `kernels`
    and its MoE ops (moe_layer_ops) each pass, the recomputed layers' forward again inside the backward. Under
    grouped_mm's fused kernel the host runs ahead: max(G, H); in its fallback (fused_grouped_mm) each call waits
    and issues one mm per local expert (two calls a layer forward, two backward and two more where the experts'
    weights take a gradient), so each pass, backward too, takes serial_phases_s with the loops as its expert phase.
    Under the eager loop each forward (and recompute) pass takes serial_phases_s and the backward max(G_b, H_b), the
    GPU time split by FLOPs as in moe_host.host_paced_s (forward 1, recompute r, backward 2 of 3 + r);
    `expert_forward_s` is the experts' forward GPU seconds, `zero` the layout's ZeRO stage."""
    if not issues_moe_ops(arch, job, gpu):
        return no_host_time(gpu_s)
    assert arch.moe is not None
    op_s = TORCH_LINEAR_CPU_S.get(gpu.host_cpu, TORCH_LINEAR_CPU_S["x86"])
    moe_layers = layers - dense_layers + lm_head * arch.moe.mtp_layers
    share = recomputed_layers / xp.maximum(xp.asfloat(layers), 1.0)
    forward = (layers * kernels + moe_layers * moe_layer_ops(arch, job, tokens, "forward", ep)) * op_s
    backward = (layers * kernels + moe_layers * moe_layer_ops(arch, job, tokens, "backward", ep)) * op_s
    issue = forward * (1.0 + share) + backward
    stream = xp.asfloat(gpu_s)
    passes = 3.0 + share
    forward_gpu, backward_gpu = stream / passes, stream * 2.0 / passes
    expert_gpu = xp.minimum(xp.asfloat(expert_forward_s), forward_gpu)
    if experts_implementation(job) == "grouped_mm":
        fused = fused_grouped_mm(gpu, job, zero)
        local = arch.moe.num_experts / xp.asfloat(ep)
        backward_calls = 2.0 + (2.0 if job.method == "full" or peft_experts.applies(arch, job) else 0.0)
        forward_loop = moe_layers * 2.0 * local * op_s
        backward_loop = moe_layers * backward_calls * local * op_s
        forward_f = forward + forward_loop - moe_layers * 2.0 * op_s  # the loops replace the grouped GEMM ops
        backward_f = backward + backward_loop - moe_layers * backward_calls * op_s
        fallback = (serial_phases_s(forward_gpu, forward_f, expert_gpu, forward_loop) * (1.0 + share)
                    + serial_phases_s(backward_gpu, backward_f,
                                      xp.minimum(expert_gpu * backward_calls / 2.0, backward_gpu), backward_loop))
        paced = xp.where(fused > 0, xp.maximum(stream, issue), fallback)
        issue = xp.where(fused > 0, issue, forward_f * (1.0 + share) + backward_f)
    else:
        expert_host = moe_layers * eager_expert_phase_ops(arch, job, tokens, ep) * op_s
        paced = (serial_phases_s(forward_gpu, forward, expert_gpu, expert_host) * (1.0 + share)
                 + xp.maximum(backward_gpu, backward))
    return HostTiming(exposed_s=xp.maximum(paced - stream, 0.0), load=issue / xp.maximum(stream, 1e-30))
