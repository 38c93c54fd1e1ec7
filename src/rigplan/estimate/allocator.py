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

Source of phi and psi: benchmarks/allocator_replay.py records the allocation trace of real training
steps (transformers' Llama with Llama 3 8B and 3.2 1B widths, 8 layers, full / LoRA / QLoRA, with and
without checkpointing, fixed and padded variable-length batches; 48 scenarios) and replays it through a
port of the allocator's block rules; the values below are the medians over the scenarios of each group
(quartiles in the comments). The port reproduces the direction and size of a published pair: torchtune
issue #1185 (Llama 3 8B QLoRA, batch 2, alpaca) logged 16.39 GiB reserved with the default allocator and
10.83 GiB with expandable segments (1.51x); the replay of that configuration gives 1.84x (21.47 and
11.65 GiB).

Left out: several CUDA streams (FSDP's all-gather and reduce-scatter streams keep separate caches),
max_split_size_mb / roundup_power2_divisions / garbage_collection_threshold settings, CUDA graphs' private
pools, memory other libraries allocate outside PyTorch (bitsandbytes paged optimizers, NCCL).
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job

Num = Any

RESERVED_OVER_CHURN = {
    ("caching", "full", "fixed"): 0.250,  # quartiles 0.065-0.399, 16 scenarios
    ("caching", "full", "varying"): 0.799,  # 0.575-1.121, 8
    ("caching", "peft", "fixed"): 0.044,  # 0.030-0.070, 16
    ("caching", "peft", "varying"): 0.983,  # 0.255-1.262, 8
    ("expandable", "full", "fixed"): 0.059,  # 0.012-0.241, 16
    ("expandable", "full", "varying"): 0.074,  # 0.017-0.189, 8
    ("expandable", "peft", "fixed"): 0.016,  # 0.014-0.025, 16
    ("expandable", "peft", "varying"): 0.014,  # 0.010-0.025, 8
}
"""phi: (reserved - allocated) / churn at the step's peak, median of benchmarks/allocator_replay.py."""
NEEDED_OVER_CHURN = {
    ("caching", "full", "fixed"): 0.126,  # 0.043-0.321
    ("caching", "full", "varying"): 0.130,  # 0.103-0.156
    ("caching", "peft", "fixed"): 0.020,  # 0.014-0.028
    ("caching", "peft", "varying"): 0.072,  # 0.028-0.133
    ("expandable", "full", "fixed"): 0.014,  # 0.006-0.019
    ("expandable", "full", "varying"): 0.015,  # 0.012-0.024
    ("expandable", "peft", "fixed"): 0.012,  # 0.010-0.014
    ("expandable", "peft", "varying"): 0.007,  # 0.004-0.009
}
"""psi: (needed - allocated) / churn, median of benchmarks/allocator_replay.py."""
REPLAY_CHECK_RATIO = 1.84
"""Default / expandable reserved of the torchtune #1185 configuration in the replay (`--check`: 21.47 and
11.65 GiB, against the 16.39 and 10.83 GiB the issue logged; its padded lengths are drawn, not alpaca's)."""


def regime(job: Job, *, load: bool = False) -> tuple[str, str, str]:
    """(allocator mode, training kind, shapes) that select phi and psi. Loading happens once, so its shapes
    do not vary from step to step."""
    return ("expandable" if job.expandable_segments else "caching", "peft" if job.is_peft else "full",
            "varying" if job.varying_lengths and not load else "fixed")


def reserved_overhead_bytes(job: Job, churn_bytes: Num, *, load: bool = False) -> Num:
    """max_memory_reserved() - max_memory_allocated() at a peak that churned `churn_bytes`: phi · churn."""
    return RESERVED_OVER_CHURN[regime(job, load=load)] * churn_bytes


def unreleasable_overhead_bytes(job: Job, churn_bytes: Num, *, load: bool = False) -> Num:
    """Cached bytes an out-of-memory retry cannot release (segments or pages holding a live block): psi · churn."""
    return NEEDED_OVER_CHURN[regime(job, load=load)] * churn_bytes
