"""The fit boundary: how sure rigplan is that a job fits, and what to change when it does not.

Uncertainty: MEMORY_UNCERTAINTY_FRACTION of the predicted total. A job whose headroom (or overrun)
is within it is borderline: "fits with 1.2 GiB to spare (within the model's uncertainty)".

Advice: each remedy that applies to this job is re-estimated and ranked by the bytes it saves.
Nothing that is already on is suggested again, and nothing that needs GPUs the job does not have
(ZeRO-3 on one GPU, tensor or pipeline parallelism) is suggested.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.errors import InvalidSpec
from rigplan.estimate.memory import peak_memory
from rigplan.estimate.offload import optimizer_offload_s
from rigplan.estimate.states import model_states
from rigplan.flow.resolve import TrainingSetup

MEMORY_UNCERTAINTY_FRACTION = 0.105
"""80th percentile of |predicted / measured - 1| over the memory validation cases within their
tolerance (`rigplan validate --suite memory --json`, 64 cases, with FSDP1's flat-parameter gradients on
lit-gpt's FSDP rows; 0.125 over 64 cases before them, 0.127 over 54 before the caching-allocator model);
four in five published peaks lie within it.
tests/unit/test_fit.py recomputes it from the suite."""


def fit_verdict(total_bytes: float, usable_bytes: float) -> dict[str, Any]:
    """fits / fits-borderline / over-borderline / does-not-fit, with the uncertainty in bytes."""
    uncertainty = total_bytes * MEMORY_UNCERTAINTY_FRACTION
    headroom = usable_bytes - total_bytes
    borderline = abs(headroom) <= uncertainty
    if headroom >= 0:
        verdict = "fits-borderline" if borderline else "fits"
    else:
        verdict = "over-borderline" if borderline else "does-not-fit"
    return {"verdict": verdict, "borderline": borderline, "uncertainty_bytes": uncertainty,
            "uncertainty_fraction": MEMORY_UNCERTAINTY_FRACTION}


def _remedies(job: Job, layout: Layout, adapters: bool = True) -> list[tuple[str, Job, Layout]]:
    """The switches that may bring this job's peak down, each with the job and layout it gives; `adapters`: whether
    QLoRA is open to the model (not to a hybrid with linear-attention layers, whose adapters rigplan refuses)."""
    out: list[tuple[str, Job, Layout]] = []
    if job.offload == "none" and job.optimizer != "muon":  # Muon's Newton-Schulz stays on the GPU
        out.append(("--offload optimizer", replace(job, offload="optimizer"), layout))
    if not job.expandable_segments:
        out.append(("--expandable-segments", replace(job, expandable_segments=True), layout))
    if job.recompute != "full":
        out.append(("--recompute full", replace(job, recompute="full"), layout))
    if job.kernels == "fused" and job.fused_swiglu and not job.fp8_activation_store:
        # Megatron-Core's own memory savers, as NVIDIA's recipes set them: the SwiGLU input in fp8 (a plain MLP
        # saves nothing and is not listed) and, under fp8, the weights as fp8 tensors without a bf16 copy
        out.append(("--fp8-activation-store", replace(job, fp8_activation_store=True), layout))
    if job.kernels == "fused" and job.precision == "fp8" and not job.fp8_param_gather:
        out.append(("--fp8-param-gather", replace(job, fp8_param_gather=True), layout))
    if job.micro_batch > 1:
        half = job.micro_batch // 2
        out.append((f"--micro-batch {half}", replace(job, micro_batch=half), layout))
    step = 128 * layout.cp
    if job.seq_len >= 2 * step:
        half_seq = job.seq_len // 2 // step * step
        out.append((f"--seq {half_seq}", replace(job, seq_len=half_seq), layout))
    if adapters and job.method != "qlora" and job.precision not in ("fp32", "fp8"):
        # QLoRA recipes run with full recompute; the suggestion says so when it turns it on.
        label = "--method qlora" + (" --recompute full" if job.recompute == "none" else "")
        out.append((label, replace(job, method="qlora", precision="bf16-true",
                                   recompute="full" if job.recompute == "none" else job.recompute), layout))
    shards = layout.dp * layout.cp
    if layout.zero < 3 and shards > 1:
        out.append(("--zero 3", job, replace(layout, zero=3)))
    else:
        gpus = layout.num_gpus * 2
        out.append((f"--gpus {gpus}" + (" --fsdp" if layout.zero < 3 else ""), job,
                    replace(layout, dp=layout.dp * 2, zero=3)))
    return out


def advice(setup: TrainingSetup, total_bytes: float, usable_bytes: float) -> list[dict[str, Any]]:
    """Remedies for this job, each re-estimated, the one that saves most first."""
    rows: list[dict[str, Any]] = []
    for flag, job, layout in _remedies(setup.job, setup.layout, adapters=setup.arch.linear_attention is None):
        try:
            new_total = float(peak_memory(setup.arch, job, layout).total_bytes)
        except InvalidSpec:
            continue
        saves = total_bytes - new_total
        if saves <= 0:
            continue
        row: dict[str, Any] = {"flag": flag, "saves_bytes": saves, "total_bytes": new_total,
                               "fits": new_total <= usable_bytes}
        if job.offload != setup.job.offload:
            row["host_s_per_step"] = _host_optimizer_s(setup, job, layout)
        rows.append(row)
    rows.sort(key=lambda r: -r["saves_bytes"])
    return rows


def _host_optimizer_s(setup: TrainingSetup, job: Job, layout: Layout) -> float:
    """What an offload remedy costs each step at least: the host optimizer and the weights' copy back
    (estimate.offload; the gradients' copy is taken as hidden behind the backward)."""
    states = model_states(setup.arch, job, layout, 0)
    shards = layout.dp * layout.cp if layout.zero >= 1 else 1
    return float(optimizer_offload_s(job, setup.gpu, float(states.trainable_params) / shards, math.inf))


def nothing_fits_note(setup: TrainingSetup, weights_bytes: float, fixed_bytes: float,
                      usable_bytes: float) -> str:
    """Why --find-max found no micro-batch: the weights alone, or one sequence of this length."""
    if weights_bytes + fixed_bytes > usable_bytes:
        over = weights_bytes + fixed_bytes - usable_bytes
        return (f"the weights alone ({weights_bytes / 2**30:.2f} GiB, plus {fixed_bytes / 2**30:.2f} GiB of CUDA "
                f"context and NCCL) exceed the {usable_bytes / 2**30:.2f} GiB usable by {over / 2**30:.2f} GiB; "
                "no micro-batch fits")
    return (f"not even one sequence of {setup.job.seq_len} tokens fits next to the model states; "
            "see the advice below")
