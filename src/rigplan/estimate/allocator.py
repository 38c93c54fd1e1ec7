"""Reserved versus allocated: what PyTorch's caching allocator holds beyond the live tensors.

torch.cuda.max_memory_allocated() counts live blocks; max_memory_reserved() counts the segments the
caching allocator took from the driver (c10/cuda/CUDACachingAllocator.cpp, constants in
c10/core/AllocatorConfig.h). Its rules: sizes rounded to 512 B; requests up to 1 MiB come from a small
pool of 2 MiB segments, larger ones from a large pool (20 MiB segments below 10 MiB, else the request
rounded up to 2 MiB); a request takes the smallest cached free block that fits and splits it when the
remainder is over 1 MiB (large pool); freed blocks merge only with free neighbours of their own segment,
and cached segments go back to the driver only when a cudaMalloc fails (then every segment with no live
block is released and the request retried) or on empty_cache(). With expandable_segments:True one
segment per pool grows in 20 MiB pages (2 MiB small), so freed space anywhere in it serves any request
and free pages are unmapped under pressure.

So a step's peak has two overheads above its allocated peak, both proportional to the step's churn (the
bytes it allocates and frees again: activations, logits, the working set and gradients not kept between
steps; not ZeRO's gather and reduce buffers, one size per unit, which the allocator hands back to the
same requests):

    reserved - allocated = phi · churn      the cache at the peak (what max_memory_reserved() adds)
    needed   - allocated = psi · churn      what an out-of-memory retry cannot give back: segments
                                            (expandable: pages) that hold a live block

`needed` decides whether a job runs (plus the CUDA context and NCCL, which only nvidia-smi sees);
`reserved` is what a run logs. phi and psi depend on the allocator mode, on whether parameter-shaped
tensors (gradients, optimizer work) are allocated inside the step among activation-shaped ones (full
training) or not (LoRA/QLoRA), and on whether tensor shapes repeat from step to step (packed or
fixed-length batches) or change (batches padded to their longest sample: every new length leaves
blocks of a size no later request fits exactly).

Source of phi: a real allocator, measured (docs/measurements/h200-2026-12.md): the 36 scenarios below, run
on an NVIDIA H200 with torch 2.11 under each allocator mode (benchmarks/gpu_session.sh second), each
figure max_memory_reserved() - max_memory_allocated() over the step's churn (peak allocated minus what
stays allocated between steps); the tables hold the median of each group, quartiles in the comments.
The grid: transformers' LlamaForCausalLM with Llama 3 8B and 3.2 1B widths, 8 layers, 128k vocabulary,
SDPA; full training (fused and foreach AdamW) and LoRA r=8 on q,v; with and without gradient
checkpointing; fixed shapes (3 steps of 1 x 2048 and of 4 x 1024 tokens) and 24 padded batches of 2.
QLoRA on Hugging Face modules (bitsandbytes NF4, peft's k-bit preparation; Llama 3.1 8B, Qwen2.5 7B and
Llama 2 7B, with and without autocast; benchmarks/gpu_qlora.py, qlora*.json) is a regime of its own where
measured (caching allocator, fixed shapes): each layer's dequantized bf16 weights come and go among the
activations, and its cache under full recompute is 0.38 of the churn against LoRA's 0.23, without recompute
0.05 against 0.12 (its fp32 activations are large, even blocks); elsewhere, and for other stacks' NF4
(torchao in torchtune), it takes LoRA's figures.
Checkpointing is its own regime because it changes the cache by a factor of 2-4: recomputing a layer in
the backward allocates its activations among the parameter gradients being created, so freed blocks
lie between live ones (caching full fixed: 0.17 without, 0.58 with; expandable 0.10 and 0.48, since
pages are unmapped only under pressure). Only full recompute of every layer selects it.

Source of psi (which a run without memory pressure cannot show): benchmarks/allocator_replay.py, which
records the same scenarios' allocation traces under FakeTensorMode and replays them through a port of
the allocator's block rules; the medians of each group, capped at phi (what cannot be released is part
of the cache). The port reproduces the direction and size of a published pair: torchtune issue #1185
(Llama 3 8B QLoRA, batch 2, alpaca) logged 16.39 GiB reserved with the default allocator and 10.83 GiB
with expandable segments (1.51x); the replay of that configuration gives 1.84x (21.47 and 11.65 GiB).
The port's phi, set beside the measured one, is low for LoRA (0.044 against 0.12-0.23) and mixes the
checkpointing regimes (0.25 for full training); that is why phi comes from the device.

Under memory pressure the cache is bounded by the device: when cudaMalloc fails the allocator frees every
cached segment with no live block and retries, so max_memory_reserved() never exceeds what the device
has beside the CUDA context and NCCL (cache_within_device; a long-context run sized to fill the GPU
logs a reserved peak just under its capacity), and never falls below what cannot be released.

Left out: several CUDA streams (FSDP's all-gather and reduce-scatter streams keep separate caches),
max_split_size_mb / roundup_power2_divisions / garbage_collection_threshold settings, CUDA graphs' private
pools, memory other libraries allocate outside PyTorch (bitsandbytes paged optimizers, NCCL).
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.estimate import arrays as xp

Num = Any

RESERVED_OVER_CHURN = {
    ("caching", "full", "fixed", "plain"): 0.170,  # quartiles 0.132-0.369, 8 runs
    ("caching", "full", "fixed", "recompute"): 0.584,  # 0.282-0.743, 8
    ("caching", "full", "varying", "plain"): 1.012,  # 0.615-1.334, 4
    ("caching", "full", "varying", "recompute"): 1.243,  # 0.860-1.964, 4
    ("caching", "peft", "fixed", "plain"): 0.123,  # 0.116-0.129, 4
    ("caching", "peft", "fixed", "recompute"): 0.227,  # 0.206-0.251, 4
    ("caching", "peft", "varying", "plain"): 1.212,  # 1.066 and 1.357, 2
    ("caching", "peft", "varying", "recompute"): 1.259,  # 0.995 and 1.523, 2
    ("expandable", "full", "fixed", "plain"): 0.104,  # 0.064-0.145, 8
    ("expandable", "full", "fixed", "recompute"): 0.478,  # 0.096-0.603, 8
    ("expandable", "full", "varying", "plain"): 0.107,  # 0.094-0.124, 4
    ("expandable", "full", "varying", "recompute"): 0.438,  # 0.227-0.491, 4
    ("expandable", "peft", "fixed", "plain"): 0.111,  # 0.043-0.217, 4
    ("expandable", "peft", "fixed", "recompute"): 0.204,  # 0.062-0.289, 4
    ("expandable", "peft", "varying", "plain"): 0.083,  # 0.060 and 0.105, 2
    ("expandable", "peft", "varying", "recompute"): 0.273,  # 0.043 and 0.503, 2
    ("caching", "qlora", "fixed", "plain"): 0.047,  # 0.038-0.060, 6 (qlora*.json)
    ("caching", "qlora", "fixed", "recompute"): 0.376,  # 0.319-0.448, 8
}
"""phi: (reserved - allocated) / churn at the step's peak, median of the H200 measurements (module docstring)."""
_REPLAYED_NEEDED_OVER_CHURN = {
    ("caching", "full", "fixed"): 0.126,  # 0.043-0.321
    ("caching", "full", "varying"): 0.130,  # 0.103-0.156
    ("caching", "peft", "fixed"): 0.020,  # 0.014-0.028
    ("caching", "peft", "varying"): 0.072,  # 0.028-0.133
    ("expandable", "full", "fixed"): 0.014,  # 0.006-0.019
    ("expandable", "full", "varying"): 0.015,  # 0.012-0.024
    ("expandable", "peft", "fixed"): 0.012,  # 0.010-0.014
    ("expandable", "peft", "varying"): 0.007,  # 0.004-0.009
}
"""psi of benchmarks/allocator_replay.py by (mode, kind, shapes), its scenarios with and without checkpointing
pooled (quartiles in the comments)."""
NEEDED_OVER_CHURN = {
    key: min(_REPLAYED_NEEDED_OVER_CHURN[(key[0], "peft" if key[1] == "qlora" else key[1], key[2])], phi)
    for key, phi in RESERVED_OVER_CHURN.items()}
"""psi: (needed - allocated) / churn, the replay's median capped at phi (QLoRA: LoRA's replay)."""
REPLAY_CHECK_RATIO = 1.84
"""Default / expandable reserved of the torchtune #1185 configuration in the replay (`--check`: 21.47 and
11.65 GiB, against the 16.39 and 10.83 GiB the issue logged; its padded lengths are drawn, not alpaca's)."""


def regime(job: Job, *, load: bool = False) -> tuple[str, str, str, str]:
    """(allocator mode, training kind, shapes, recompute) that select phi and psi. Loading happens once, so its
    shapes do not vary from step to step and nothing is recomputed."""
    recompute = job.recompute == "full" and not load
    mode = "expandable" if job.expandable_segments else "caching"
    shapes = "varying" if job.varying_lengths and not load else "fixed"
    steps = "recompute" if recompute else "plain"
    kind = "peft" if job.is_peft else "full"
    if (job.method == "qlora" and job.kernels == "hf" and job.nf4_quantizer == "bitsandbytes"
            and (mode, "qlora", shapes, steps) in RESERVED_OVER_CHURN):
        kind = "qlora"
    return mode, kind, shapes, steps


def reserved_overhead_bytes(job: Job, churn_bytes: Num, *, load: bool = False) -> Num:
    """max_memory_reserved() - max_memory_allocated() at a peak that churned `churn_bytes`: phi · churn."""
    return RESERVED_OVER_CHURN[regime(job, load=load)] * churn_bytes


def unreleasable_overhead_bytes(job: Job, churn_bytes: Num, *, load: bool = False) -> Num:
    """Cached bytes an out-of-memory retry cannot release (segments or pages holding a live block): psi · churn."""
    return NEEDED_OVER_CHURN[regime(job, load=load)] * churn_bytes


def cache_within_device(cache_bytes: Num, *, allocated_bytes: Num, unreleasable_bytes: Num,
                        device_bytes: Num) -> Num:
    """The cache at a peak on a device with `device_bytes` for PyTorch (usable memory less the CUDA context
    and NCCL): min(phi · churn, max(room left beside the allocated bytes, psi · churn)), so pressure never
    takes back what cannot be released."""
    room = xp.maximum(xp.as_num(device_bytes) - xp.as_num(allocated_bytes), 0.0)
    return xp.minimum(cache_bytes, xp.maximum(room, unreleasable_bytes))
