"""How far rigplan's MoE step time has been from published runs like this job: the regime an MoE job falls in, and
the MoE validation suite's figures for that regime, quoted beside every MoE estimate.

A regime is a few labels a user can read off their own job (regime_of): the host the GPUs hang off, CUDA graphs,
tokens per GPU per micro-batch, the training stack, the routing and the token dispatcher, and one rigplan's estimate
gives it, the host load (HOST_LOAD_AXIS). The accuracy line uses the first three, the ones the suite shows rigplan's
error to follow (docs/methodology/moe.md, 'Validation'), narrowed by the host load and the dispatcher where the
narrower cell holds enough runs (NARROWINGS, HOST_LOAD_AXIS, DISPATCHER_AXIS): each cell's tokens/s errors,
rigplan's over the measured minus one, are summarised in MOE_REGIME_FIGURES, which `python tools/moe_regimes.py`
regenerates from the suite (rigplan.validation.regimes) and tests/validation/test_moe_regimes.py checks is current.
The figures are the suite's own (in sample): an error bar for the estimate, not a correction of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.moe import dispatcher, flex_dispatched

if TYPE_CHECKING:
    from rigplan.flow.resolve import TrainingSetup

REGIME_AXES = ("host", "CUDA graphs", "tokens per GPU per micro-batch", "stack", "routing", "dispatcher",
               "host load", "GPU", "tensor x context parallel")
ACCURACY_AXES = REGIME_AXES[:3]
"""The axes of the cells the accuracy line quotes."""
DISPATCHER_AXIS = REGIME_AXES[5]
"""The axis the accuracy line narrows its cell by when the narrower cell holds MIN_RUNS runs: in the MoE suite the
eager runs with NCCL's all-to-all dispatcher, dropless across expert ranks, sit well above the rest of their cell (on
x86 hosts at most 2,048 tokens per GPU per micro-batch, 33 runs at a median of +68% against +25% for the cell's other
29, on 2026-12-07; docs/validation.md, MoE by regime), where neither the host, the graphs nor the tokens tell them
apart."""
HOST_LOAD_AXIS = REGIME_AXES[6]
"""The axis the accuracy line narrows its cell by first (with the dispatcher, then alone) where the narrower cell
holds MIN_RUNS runs: rigplan's own host load of the job (estimate.moe_host.HostTiming.load, the host's time to issue a
micro-batch's ops over its GPU time, on the rank that paces the pipeline). The suite's eager runs drift from
rigplan's step time as it rises: on 2026-12-07, 106 eager runs with a host load under 0.3 came out at a median tokens/s
error of -0.1%, 76 between 0.3 and 0.7 at +13% and 65 at 0.7 or more at +34% (31 of them beyond 35%), in every host,
stack and dispatcher (docs/validation.md, MoE by regime). rigplan's host-paced step is the longer of the host's and
the GPU's times (estimate.moe_host.host_paced_s); the runs say the GPU already waits well before the host's time
reaches its own, which that bound leaves out. The figures widen the estimate's error bar; they do not change the
estimate."""
SHARDING_AXIS = REGIME_AXES[8]
"""tp x cp: an axis the report groups the suite by, as it does by the part (REGIME_AXES[7]), and prints by host load
(validation.regimes.cross_table): where the host paces a run, the suite's runs with tp x cp above 1 drift further from
rigplan's step time than those without. The accuracy line does not narrow by it: tried as a narrowing before the
others, the leave-one-out check of validation.regimes put the quoted median 11.6% from a run's own error at the
median against 10.6% without it, and after them 10.6% as without (2026-12-07)."""
SHARDING_LABELS = ("tp x cp = 1", "tp x cp 2-4", "tp x cp 8 or more")
"""The SHARDING_AXIS labels: no tensor or context parallelism, up to 4 ranks, 8 or more."""
HOST_LOAD_BANDS = (0.3, 0.7)
"""Bounds of the host-load bands (HOST_LOAD_AXIS)."""
HOST_LOAD_LABELS = ("host load under 0.3", "host load 0.3-0.7", "host load 0.7 or more")
"""The HOST_LOAD_AXIS labels, by HOST_LOAD_BANDS."""
NCCL_ALL_TO_ALL = "NCCL all-to-all, dropless"
"""Megatron-Core's alltoall dispatcher (or another stack's NCCL all-to-all) over more than one expert rank, unpadded."""
FLEX = "DeepEP or HybridEP"
NO_DROPLESS_ALL_TO_ALL = "no dropless all-to-all"
"""One expert rank, expert inputs padded to capacity, or the einsum dispatcher."""
ALLGATHER = "allgather"
"""Megatron-Core's allgather dispatcher over more than one rank: every token gathered, not routed copies; the suite
has no run of it, so the accuracy line keeps the broader cell."""
SMALL_TOKENS, LARGE_TOKENS = 2048, 8192
"""Bounds of the tokens-per-GPU-per-micro-batch bands (micro-batch x sequence / (tp x cp))."""
MEGATRON_STACKS = ("megatron", "nemo")
MIN_RUNS = 5
"""Fewest published runs in a cell for the accuracy line to quote the cell; below it, the whole suite is quoted."""
ALL_RUNS = "all"
"""MOE_REGIME_FIGURES' key for the whole suite."""


def tokens_per_gpu_micro_batch(job: Job, layout: Layout) -> float:
    """Tokens each GPU's micro-batch holds: micro-batch x sequence / (tp x cp)."""
    return job.micro_batch * job.seq_len / (layout.tp * layout.cp)


def host_load_band(load: float) -> str:
    """The HOST_LOAD_AXIS label of a host load (HOST_LOAD_BANDS, HOST_LOAD_LABELS)."""
    low, high = HOST_LOAD_BANDS
    return HOST_LOAD_LABELS[0 if load < low else 1 if load < high else 2]


HOST_LOAD_NOTE = ("host load {load:.2f}: the host needs {load:.0%} of the GPU's time to issue each micro-batch's MoE "
                  "ops, where the suite's eager runs drift furthest from rigplan's step time (the validation line "
                  "quotes them); --cuda-graphs full or --cuda-graph-scope take the host out if your stack captures "
                  "CUDA graphs")


def host_load_note(host_load: float) -> str | None:
    """HOST_LOAD_NOTE for a job whose host load is in the top band (HOST_LOAD_BANDS), else None."""
    if host_load < HOST_LOAD_BANDS[1]:
        return None
    return HOST_LOAD_NOTE.format(load=host_load)


def regime_of(gpu: Gpu, job: Job, layout: Layout, framework: str | None, host_load: float = 0.0) -> dict[str, str]:
    """The regime labels of one job, by REGIME_AXES; `framework`: the preset's name (None without one); `host_load`:
    the estimate's host load (estimate.step.StepBreakdown.host_load)."""
    if gpu.vendor != "nvidia":
        host = "other vendors (not NVIDIA)"
    else:
        host = "NVIDIA, Grace host" if gpu.host_cpu == "grace" else "NVIDIA, x86 host"
    graphs = ("full iteration" if job.cuda_graphs == "full"
              else "per module" if job.cuda_graph_scope else "none (eager)")
    tokens = tokens_per_gpu_micro_batch(job, layout)
    band = (f"<= {SMALL_TOKENS:,}" if tokens <= SMALL_TOKENS
            else f"{SMALL_TOKENS + 1:,}-{LARGE_TOKENS:,}" if tokens <= LARGE_TOKENS else f"> {LARGE_TOKENS:,}")
    stack = ("Megatron-Core (Megatron-LM, NeMo, Megatron-Bridge)" if framework in MEGATRON_STACKS
             else "torchtitan" if framework == "torchtitan" else "NeMo AutoModel" if framework == "automodel"
             else "other (MaxText, Primus, ms-swift, MindSpore, ...)")
    routing = ("forced balance" if job.forced_balance else "padded to capacity" if job.experts_padded
               else "natural, dropless or capped")
    tokens_moved = (FLEX if flex_dispatched(job)
                    else NCCL_ALL_TO_ALL if dispatcher(job) == "alltoall" and layout.ep > 1 and not job.experts_padded
                    else ALLGATHER if dispatcher(job) == "allgather" and layout.ep * layout.expert_tp > 1
                    else NO_DROPLESS_ALL_TO_ALL)
    shards = layout.tp * layout.cp
    sharding = SHARDING_LABELS[0 if shards == 1 else 1 if shards <= 4 else 2]
    labels = (host, graphs, band, stack, routing, tokens_moved, host_load_band(host_load), gpu.id, sharding)
    return dict(zip(REGIME_AXES, labels, strict=True))


def setup_regime(setup: TrainingSetup, host_load: float = 0.0) -> dict[str, str]:
    """The regime labels of a resolved job whose estimate puts its host load at `host_load`."""
    return regime_of(setup.gpu, setup.job, setup.layout, setup.framework.name if setup.framework else None,
                     host_load)


def cell_key(labels: dict[str, str], *, by_dispatcher: bool = False, by_host_load: bool = False) -> str:
    """The MOE_REGIME_FIGURES key of a job's ACCURACY_AXES labels, with `by_dispatcher` its DISPATCHER_AXIS label
    after them and with `by_host_load` its HOST_LOAD_AXIS label last."""
    axes = ((*ACCURACY_AXES, DISPATCHER_AXIS) if by_dispatcher else ACCURACY_AXES) + (
        (HOST_LOAD_AXIS,) if by_host_load else ())
    return " | ".join(labels[axis] for axis in axes)


NARROWINGS = (("dispatcher and host load", True, True), ("host load", False, True), ("dispatcher", True, False))
"""The narrower cells the accuracy line tries, in order: (name, by_dispatcher, by_host_load)."""


# written by `python tools/moe_regimes.py` from the MoE suite; do not edit by hand
BAND_HELD_LEAVE_ONE_OUT = 0.647
"""Share of the MoE suite's runs inside the 10th-90th percentile band their own accuracy line quotes when its
figures are taken from the other runs alone (validation.regimes.leave_one_out): what the printed band holds on a run
it was not drawn from, where 0.8 would mean it is as wide as it says."""
MOE_REGIME_FIGURES: dict[str, tuple[int, float, float, float, int]] = {
    "NVIDIA, Grace host | full iteration | 2,049-8,192": (23, -0.13, -0.298, -0.016, 2),
    "NVIDIA, Grace host | full iteration | 2,049-8,192 | DeepEP or HybridEP": (23, -0.13, -0.298, -0.016, 2),
    "NVIDIA, Grace host | full iteration | 2,049-8,192 | DeepEP or HybridEP | host load under 0.3":
        (23, -0.13, -0.298, -0.016, 2),
    "NVIDIA, Grace host | full iteration | 2,049-8,192 | host load under 0.3": (23, -0.13, -0.298, -0.016, 2),
    "NVIDIA, Grace host | full iteration | <= 2,048": (12, -0.065, -0.137, 0.111, 0),
    "NVIDIA, Grace host | full iteration | <= 2,048 | DeepEP or HybridEP": (6, -0.002, -0.111, 0.232, 0),
    "NVIDIA, Grace host | full iteration | <= 2,048 | DeepEP or HybridEP | host load under 0.3":
        (6, -0.002, -0.111, 0.232, 0),
    "NVIDIA, Grace host | full iteration | <= 2,048 | host load under 0.3": (12, -0.065, -0.137, 0.111, 0),
    "NVIDIA, Grace host | full iteration | <= 2,048 | no dropless all-to-all": (6, -0.096, -0.141, -0.061, 0),
    "NVIDIA, Grace host | full iteration | <= 2,048 | no dropless all-to-all | host load under 0.3":
        (6, -0.096, -0.141, -0.061, 0),
    "NVIDIA, Grace host | full iteration | > 8,192": (17, -0.06, -0.081, 0.006, 0),
    "NVIDIA, Grace host | full iteration | > 8,192 | DeepEP or HybridEP": (16, -0.061, -0.083, -0.012, 0),
    "NVIDIA, Grace host | full iteration | > 8,192 | DeepEP or HybridEP | host load under 0.3":
        (16, -0.061, -0.083, -0.012, 0),
    "NVIDIA, Grace host | full iteration | > 8,192 | host load under 0.3": (17, -0.06, -0.081, 0.006, 0),
    "NVIDIA, Grace host | full iteration | > 8,192 | no dropless all-to-all": (1, 0.02, 0.02, 0.02, 0),
    "NVIDIA, Grace host | full iteration | > 8,192 | no dropless all-to-all | host load under 0.3":
        (1, 0.02, 0.02, 0.02, 0),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192": (33, 0.034, -0.13, 0.68, 5),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | DeepEP or HybridEP": (6, -0.085, -0.121, 1.564, 1),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | DeepEP or HybridEP | host load under 0.3":
        (6, -0.085, -0.121, 1.564, 1),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless": (14, -0.044, -0.121, 0.936, 3),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless | host load 0.3-0.7":
        (7, -0.085, -0.113, 0.938, 2),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (7, -0.003, -0.152, 0.426, 1),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | host load 0.3-0.7": (7, -0.085, -0.113, 0.938, 2),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | host load 0.7 or more": (3, 0.163, -0.083, 0.333, 1),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | host load under 0.3": (23, 0.034, -0.128, 0.317, 2),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | no dropless all-to-all": (13, 0.202, -0.128, 0.317, 1),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | no dropless all-to-all | host load 0.7 or more":
        (3, 0.163, -0.083, 0.333, 1),
    "NVIDIA, Grace host | none (eager) | 2,049-8,192 | no dropless all-to-all | host load under 0.3":
        (10, 0.212, -0.075, 0.315, 0),
    "NVIDIA, Grace host | none (eager) | <= 2,048": (7, 1.577, -0.116, 2.833, 4),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | DeepEP or HybridEP": (1, 4.586, 4.586, 4.586, 1),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | DeepEP or HybridEP | host load 0.3-0.7":
        (1, 4.586, 4.586, 4.586, 1),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | NCCL all-to-all, dropless": (2, -0.127, -0.179, -0.074, 0),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | NCCL all-to-all, dropless | host load 0.7 or more":
        (2, -0.127, -0.179, -0.074, 0),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | host load 0.3-0.7": (4, 1.621, 1.577, 3.709, 4),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | host load 0.7 or more": (3, -0.065, -0.167, -0.061, 0),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | no dropless all-to-all": (4, 1.577, 0.428, 1.639, 3),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | no dropless all-to-all | host load 0.3-0.7":
        (3, 1.577, 1.577, 1.647, 3),
    "NVIDIA, Grace host | none (eager) | <= 2,048 | no dropless all-to-all | host load 0.7 or more":
        (1, -0.065, -0.065, -0.065, 0),
    "NVIDIA, Grace host | none (eager) | > 8,192": (20, 0.223, -0.249, 0.489, 7),
    "NVIDIA, Grace host | none (eager) | > 8,192 | DeepEP or HybridEP": (4, 0.396, 0.201, 0.46, 3),
    "NVIDIA, Grace host | none (eager) | > 8,192 | DeepEP or HybridEP | host load 0.3-0.7": (4, 0.396, 0.201, 0.46, 3),
    "NVIDIA, Grace host | none (eager) | > 8,192 | NCCL all-to-all, dropless": (9, 0.312, -0.042, 0.65, 4),
    "NVIDIA, Grace host | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load 0.3-0.7":
        (4, 0.12, -0.091, 0.27, 0),
    "NVIDIA, Grace host | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load 0.7 or more":
        (3, 0.538, 0.452, 0.987, 3),
    "NVIDIA, Grace host | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (2, 0.331, 0.316, 0.346, 1),
    "NVIDIA, Grace host | none (eager) | > 8,192 | host load 0.3-0.7": (8, 0.268, -0.052, 0.427, 3),
    "NVIDIA, Grace host | none (eager) | > 8,192 | host load 0.7 or more": (4, 0.484, 0.259, 0.931, 3),
    "NVIDIA, Grace host | none (eager) | > 8,192 | host load under 0.3": (8, -0.216, -0.267, 0.323, 1),
    "NVIDIA, Grace host | none (eager) | > 8,192 | no dropless all-to-all": (7, -0.22, -0.269, -0.027, 0),
    "NVIDIA, Grace host | none (eager) | > 8,192 | no dropless all-to-all | host load 0.7 or more":
        (1, 0.185, 0.185, 0.185, 0),
    "NVIDIA, Grace host | none (eager) | > 8,192 | no dropless all-to-all | host load under 0.3":
        (6, -0.234, -0.271, -0.19, 0),
    "NVIDIA, Grace host | per module | 2,049-8,192": (18, -0.111, -0.151, 0.135, 1),
    "NVIDIA, Grace host | per module | 2,049-8,192 | DeepEP or HybridEP": (17, -0.112, -0.151, 0.096, 0),
    "NVIDIA, Grace host | per module | 2,049-8,192 | DeepEP or HybridEP | host load 0.3-0.7":
        (3, -0.111, -0.117, 0.152, 0),
    "NVIDIA, Grace host | per module | 2,049-8,192 | DeepEP or HybridEP | host load 0.7 or more":
        (1, -0.109, -0.109, -0.109, 0),
    "NVIDIA, Grace host | per module | 2,049-8,192 | DeepEP or HybridEP | host load under 0.3":
        (13, -0.121, -0.153, 0.063, 0),
    "NVIDIA, Grace host | per module | 2,049-8,192 | NCCL all-to-all, dropless": (1, 0.986, 0.986, 0.986, 1),
    "NVIDIA, Grace host | per module | 2,049-8,192 | NCCL all-to-all, dropless | host load 0.3-0.7":
        (1, 0.986, 0.986, 0.986, 1),
    "NVIDIA, Grace host | per module | 2,049-8,192 | host load 0.3-0.7": (4, 0.053, -0.116, 0.756, 1),
    "NVIDIA, Grace host | per module | 2,049-8,192 | host load 0.7 or more": (1, -0.109, -0.109, -0.109, 0),
    "NVIDIA, Grace host | per module | 2,049-8,192 | host load under 0.3": (13, -0.121, -0.153, 0.063, 0),
    "NVIDIA, Grace host | per module | > 8,192": (11, 0.155, -0.084, 0.246, 1),
    "NVIDIA, Grace host | per module | > 8,192 | DeepEP or HybridEP": (9, -0.017, -0.097, 0.257, 1),
    "NVIDIA, Grace host | per module | > 8,192 | DeepEP or HybridEP | host load 0.3-0.7": (7, -0.017, -0.064, 0.289, 1),
    "NVIDIA, Grace host | per module | > 8,192 | DeepEP or HybridEP | host load under 0.3":
        (2, 0.035, -0.113, 0.183, 0),
    "NVIDIA, Grace host | per module | > 8,192 | NCCL all-to-all, dropless": (2, 0.242, 0.238, 0.245, 0),
    "NVIDIA, Grace host | per module | > 8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (2, 0.242, 0.238, 0.245, 0),
    "NVIDIA, Grace host | per module | > 8,192 | host load 0.3-0.7": (7, -0.017, -0.064, 0.289, 1),
    "NVIDIA, Grace host | per module | > 8,192 | host load under 0.3": (4, 0.229, -0.039, 0.243, 0),
    "NVIDIA, x86 host | full iteration | 2,049-8,192": (2, 0.083, -0.014, 0.18, 0),
    "NVIDIA, x86 host | full iteration | 2,049-8,192 | DeepEP or HybridEP": (1, -0.039, -0.039, -0.039, 0),
    "NVIDIA, x86 host | full iteration | 2,049-8,192 | DeepEP or HybridEP | host load under 0.3":
        (1, -0.039, -0.039, -0.039, 0),
    "NVIDIA, x86 host | full iteration | 2,049-8,192 | host load under 0.3": (2, 0.083, -0.014, 0.18, 0),
    "NVIDIA, x86 host | full iteration | 2,049-8,192 | no dropless all-to-all": (1, 0.205, 0.205, 0.205, 0),
    "NVIDIA, x86 host | full iteration | 2,049-8,192 | no dropless all-to-all | host load under 0.3":
        (1, 0.205, 0.205, 0.205, 0),
    "NVIDIA, x86 host | full iteration | <= 2,048": (1, -0.128, -0.128, -0.128, 0),
    "NVIDIA, x86 host | full iteration | <= 2,048 | host load under 0.3": (1, -0.128, -0.128, -0.128, 0),
    "NVIDIA, x86 host | full iteration | <= 2,048 | no dropless all-to-all": (1, -0.128, -0.128, -0.128, 0),
    "NVIDIA, x86 host | full iteration | <= 2,048 | no dropless all-to-all | host load under 0.3":
        (1, -0.128, -0.128, -0.128, 0),
    "NVIDIA, x86 host | full iteration | > 8,192": (12, 0.006, -0.009, 0.033, 0),
    "NVIDIA, x86 host | full iteration | > 8,192 | DeepEP or HybridEP": (12, 0.006, -0.009, 0.033, 0),
    "NVIDIA, x86 host | full iteration | > 8,192 | DeepEP or HybridEP | host load under 0.3":
        (12, 0.006, -0.009, 0.033, 0),
    "NVIDIA, x86 host | full iteration | > 8,192 | host load under 0.3": (12, 0.006, -0.009, 0.033, 0),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192": (77, 0.119, -0.131, 0.417, 13),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | DeepEP or HybridEP": (44, 0.072, -0.147, 0.38, 5),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | DeepEP or HybridEP | host load 0.3-0.7":
        (16, 0.041, -0.146, 0.12, 0),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | DeepEP or HybridEP | host load 0.7 or more":
        (16, 0.286, -0.022, 0.803, 4),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | DeepEP or HybridEP | host load under 0.3":
        (12, 0.006, -0.203, 0.151, 1),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless": (19, 0.12, -0.064, 0.451, 4),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless | host load 0.3-0.7":
        (6, 0.137, 0.02, 0.786, 2),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless | host load 0.7 or more":
        (8, 0.193, 0.045, 0.281, 1),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (5, -0.06, -0.114, 0.46, 1),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | host load 0.3-0.7": (30, 0.097, -0.128, 0.322, 3),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | host load 0.7 or more": (25, 0.242, 0.005, 0.634, 5),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | host load under 0.3": (22, 0.006, -0.152, 0.44, 5),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | no dropless all-to-all": (14, 0.215, 0.018, 0.471, 4),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | no dropless all-to-all | host load 0.3-0.7":
        (8, 0.215, 0.081, 0.379, 1),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | no dropless all-to-all | host load 0.7 or more":
        (1, 0.149, 0.149, 0.149, 0),
    "NVIDIA, x86 host | none (eager) | 2,049-8,192 | no dropless all-to-all | host load under 0.3":
        (5, 0.378, 0.032, 0.46, 3),
    "NVIDIA, x86 host | none (eager) | <= 2,048": (63, 0.383, -0.102, 1.188, 33),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | DeepEP or HybridEP": (16, 0.299, 0.002, 1.13, 6),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | DeepEP or HybridEP | host load 0.3-0.7": (5, 0.279, 0.033, 0.331, 0),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | DeepEP or HybridEP | host load 0.7 or more":
        (7, 0.846, 0.036, 1.09, 5),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | DeepEP or HybridEP | host load under 0.3":
        (4, 0.024, -0.043, 1.535, 1),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | NCCL all-to-all, dropless": (33, 0.679, -0.035, 1.333, 25),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | NCCL all-to-all, dropless | host load 0.3-0.7":
        (10, 0.675, 0.415, 1.211, 9),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | NCCL all-to-all, dropless | host load 0.7 or more":
        (16, 0.887, 0.41, 2.438, 15),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | NCCL all-to-all, dropless | host load under 0.3":
        (7, -0.036, -0.251, 0.536, 1),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | host load 0.3-0.7": (16, 0.453, 0.127, 1.065, 10),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | host load 0.7 or more": (29, 0.795, 0.244, 1.468, 21),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | host load under 0.3": (18, -0.033, -0.165, 0.479, 2),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | no dropless all-to-all": (14, 0.214, -0.133, 0.349, 2),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | no dropless all-to-all | host load 0.3-0.7":
        (1, 0.354, 0.354, 0.354, 1),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | no dropless all-to-all | host load 0.7 or more":
        (6, 0.322, 0.01, 0.373, 1),
    "NVIDIA, x86 host | none (eager) | <= 2,048 | no dropless all-to-all | host load under 0.3":
        (7, -0.102, -0.123, 0.207, 0),
    "NVIDIA, x86 host | none (eager) | > 8,192": (27, -0.057, -0.116, 0.592, 6),
    "NVIDIA, x86 host | none (eager) | > 8,192 | DeepEP or HybridEP": (9, -0.082, -0.116, -0.066, 0),
    "NVIDIA, x86 host | none (eager) | > 8,192 | DeepEP or HybridEP | host load 0.3-0.7":
        (3, -0.107, -0.144, -0.093, 0),
    "NVIDIA, x86 host | none (eager) | > 8,192 | DeepEP or HybridEP | host load under 0.3":
        (6, -0.077, -0.09, -0.063, 0),
    "NVIDIA, x86 host | none (eager) | > 8,192 | NCCL all-to-all, dropless": (12, 0.289, -0.059, 0.844, 5),
    "NVIDIA, x86 host | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load 0.3-0.7":
        (1, 0.446, 0.446, 0.446, 1),
    "NVIDIA, x86 host | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load 0.7 or more":
        (1, 1.027, 1.027, 1.027, 1),
    "NVIDIA, x86 host | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (10, 0.223, -0.062, 0.816, 3),
    "NVIDIA, x86 host | none (eager) | > 8,192 | host load 0.3-0.7": (6, -0.111, -0.143, 0.178, 1),
    "NVIDIA, x86 host | none (eager) | > 8,192 | host load 0.7 or more": (1, 1.027, 1.027, 1.027, 1),
    "NVIDIA, x86 host | none (eager) | > 8,192 | host load under 0.3": (20, -0.04, -0.084, 0.459, 4),
    "NVIDIA, x86 host | none (eager) | > 8,192 | no dropless all-to-all": (6, -0.074, -0.125, 0.319, 1),
    "NVIDIA, x86 host | none (eager) | > 8,192 | no dropless all-to-all | host load 0.3-0.7":
        (2, -0.123, -0.13, -0.117, 0),
    "NVIDIA, x86 host | none (eager) | > 8,192 | no dropless all-to-all | host load under 0.3":
        (4, 0.107, -0.093, 0.347, 1),
    "NVIDIA, x86 host | per module | 2,049-8,192": (16, 0.077, -0.161, 0.22, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | DeepEP or HybridEP": (16, 0.077, -0.161, 0.22, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | DeepEP or HybridEP | host load 0.3-0.7":
        (10, 0.134, -0.08, 0.238, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | DeepEP or HybridEP | host load 0.7 or more":
        (5, -0.045, -0.158, 0.071, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | DeepEP or HybridEP | host load under 0.3":
        (1, -0.198, -0.198, -0.198, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | host load 0.3-0.7": (10, 0.134, -0.08, 0.238, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | host load 0.7 or more": (5, -0.045, -0.158, 0.071, 0),
    "NVIDIA, x86 host | per module | 2,049-8,192 | host load under 0.3": (1, -0.198, -0.198, -0.198, 0),
    "NVIDIA, x86 host | per module | <= 2,048": (2, -0.061, -0.071, -0.05, 0),
    "NVIDIA, x86 host | per module | <= 2,048 | DeepEP or HybridEP": (2, -0.061, -0.071, -0.05, 0),
    "NVIDIA, x86 host | per module | <= 2,048 | DeepEP or HybridEP | host load 0.3-0.7": (1, -0.074, -0.074, -0.074, 0),
    "NVIDIA, x86 host | per module | <= 2,048 | DeepEP or HybridEP | host load under 0.3":
        (1, -0.047, -0.047, -0.047, 0),
    "NVIDIA, x86 host | per module | <= 2,048 | host load 0.3-0.7": (1, -0.074, -0.074, -0.074, 0),
    "NVIDIA, x86 host | per module | <= 2,048 | host load under 0.3": (1, -0.047, -0.047, -0.047, 0),
    "NVIDIA, x86 host | per module | > 8,192": (10, 0.124, -0.107, 0.493, 2),
    "NVIDIA, x86 host | per module | > 8,192 | DeepEP or HybridEP": (9, 0.064, -0.11, 0.355, 1),
    "NVIDIA, x86 host | per module | > 8,192 | DeepEP or HybridEP | host load 0.3-0.7": (7, 0.026, -0.116, 0.321, 1),
    "NVIDIA, x86 host | per module | > 8,192 | DeepEP or HybridEP | host load 0.7 or more": (1, 0.324, 0.324, 0.324, 0),
    "NVIDIA, x86 host | per module | > 8,192 | DeepEP or HybridEP | host load under 0.3": (1, 0.184, 0.184, 0.184, 0),
    "NVIDIA, x86 host | per module | > 8,192 | NCCL all-to-all, dropless": (1, 0.61, 0.61, 0.61, 1),
    "NVIDIA, x86 host | per module | > 8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (1, 0.61, 0.61, 0.61, 1),
    "NVIDIA, x86 host | per module | > 8,192 | host load 0.3-0.7": (7, 0.026, -0.116, 0.321, 1),
    "NVIDIA, x86 host | per module | > 8,192 | host load 0.7 or more": (1, 0.324, 0.324, 0.324, 0),
    "NVIDIA, x86 host | per module | > 8,192 | host load under 0.3": (2, 0.397, 0.227, 0.567, 1),
    "all": (371, 0.028, -0.148, 0.812, 77),
    "other vendors (not NVIDIA) | none (eager) | 2,049-8,192": (4, -0.083, -0.234, 0.206, 0),
    "other vendors (not NVIDIA) | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless":
        (1, -0.046, -0.046, -0.046, 0),
    "other vendors (not NVIDIA) | none (eager) | 2,049-8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (1, -0.046, -0.046, -0.046, 0),
    "other vendors (not NVIDIA) | none (eager) | 2,049-8,192 | host load under 0.3": (4, -0.083, -0.234, 0.206, 0),
    "other vendors (not NVIDIA) | none (eager) | 2,049-8,192 | no dropless all-to-all": (3, -0.12, -0.25, 0.228, 0),
    "other vendors (not NVIDIA) | none (eager) | 2,049-8,192 | no dropless all-to-all | host load under 0.3":
        (3, -0.12, -0.25, 0.228, 0),
    "other vendors (not NVIDIA) | none (eager) | <= 2,048": (1, 0.881, 0.881, 0.881, 1),
    "other vendors (not NVIDIA) | none (eager) | <= 2,048 | host load under 0.3": (1, 0.881, 0.881, 0.881, 1),
    "other vendors (not NVIDIA) | none (eager) | <= 2,048 | no dropless all-to-all": (1, 0.881, 0.881, 0.881, 1),
    "other vendors (not NVIDIA) | none (eager) | <= 2,048 | no dropless all-to-all | host load under 0.3":
        (1, 0.881, 0.881, 0.881, 1),
    "other vendors (not NVIDIA) | none (eager) | > 8,192": (15, -0.037, -0.147, 0.641, 2),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | DeepEP or HybridEP": (5, -0.112, -0.167, 0.487, 1),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | DeepEP or HybridEP | host load 0.3-0.7":
        (4, -0.132, -0.17, -0.064, 0),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | DeepEP or HybridEP | host load under 0.3":
        (1, 0.841, 0.841, 0.841, 1),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | NCCL all-to-all, dropless": (1, 1.0, 1.0, 1.0, 1),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | NCCL all-to-all, dropless | host load under 0.3":
        (1, 1.0, 1.0, 1.0, 1),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | host load 0.3-0.7": (5, -0.112, -0.167, 0.175, 0),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | host load under 0.3": (10, 0.042, -0.118, 0.857, 2),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | no dropless all-to-all": (9, 0.011, -0.121, 0.325, 0),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | no dropless all-to-all | host load 0.3-0.7":
        (1, 0.321, 0.321, 0.321, 0),
    "other vendors (not NVIDIA) | none (eager) | > 8,192 | no dropless all-to-all | host load under 0.3":
        (8, -0.013, -0.123, 0.174, 0),
}
"""Cell key -> (runs, median tokens/s error, its 10th and 90th percentiles, runs beyond 35% either way)."""


def _pct(value: float) -> str:
    return f"{100 * value:+.0f}%"


def quoted_figures(labels: dict[str, str], figures: dict[str, tuple[int, float, float, float, int]] | None = None
                   ) -> tuple[str, tuple[int, float, float, float, int], int]:
    """(what is quoted, its figures, the runs in the job's own cell): the first of NARROWINGS whose MOE_REGIME_FIGURES
    cell (the job's cell narrowed by its dispatcher and host load, by its host load, by its dispatcher) has at least
    MIN_RUNS runs, a host load taken only where it leaves out some of the cell's runs (under full-iteration CUDA
    graphs every run's is 0); else 'regime', the cell's, where it has; else 'all' and the whole suite's. `figures`:
    other figures of the same form (default MOE_REGIME_FIGURES; the report's leave-one-out check passes its own)."""
    table = MOE_REGIME_FIGURES if figures is None else figures
    for name, by_dispatcher, by_host_load in NARROWINGS:
        if by_host_load and HOST_LOAD_AXIS not in labels:
            continue
        narrow = table.get(cell_key(labels, by_dispatcher=by_dispatcher, by_host_load=by_host_load))
        wider = table.get(cell_key(labels, by_dispatcher=by_dispatcher), (0,))
        if narrow and narrow[0] >= MIN_RUNS and (not by_host_load or narrow[0] < wider[0]):
            return name, narrow, narrow[0]
    cell = table.get(cell_key(labels))
    seen = cell[0] if cell else 0
    if cell and seen >= MIN_RUNS:
        return "regime", cell, seen
    return "all", table[ALL_RUNS], seen


def moe_accuracy_note(labels: dict[str, str]) -> str:
    """The accuracy line of an MoE estimate in regime `labels` (MOE_REGIME_FIGURES)."""
    host, graphs, band = (labels[axis] for axis in ACCURACY_AXES)
    cell = f"{host}; CUDA graphs: {graphs}; {band} tokens per GPU per micro-batch"
    quoted, (runs, median, low, high, beyond), seen = quoted_figures(labels)
    if "dispatcher" in quoted:
        cell = f"{cell}; dispatcher: {labels[DISPATCHER_AXIS]}"
    if "host load" in quoted:
        cell = f"{cell}; {labels[HOST_LOAD_AXIS]}"
    if quoted != "all":
        return (f"validation: on the {runs} published MoE runs in this regime ({cell}), rigplan's tokens/s came out "
                f"{_pct(median)} against the measured at the median ({_pct(low)} to {_pct(high)} from the 10th to the "
                f"90th percentile, a band that held {BAND_HELD_LEAVE_ONE_OUT:.0%} of the suite's runs each left out "
                f"of it; + is rigplan faster), {beyond} of them beyond 35% (docs/validation.md, MoE by regime)")
    return (f"validation: too few published MoE runs in this regime to quote ({cell}: {seen}, fewer than {MIN_RUNS}); "
            f"on all {runs}, "
            f"rigplan's tokens/s came out {_pct(median)} against the measured at the median ({_pct(low)} to "
            f"{_pct(high)} from the 10th to the 90th percentile; + is rigplan faster) (docs/validation.md, MoE by "
            "regime)")


def measured_spread(value: float, low: float, high: float) -> tuple[float, float]:
    """What a duration (or GPU-hours) estimated at `value` came to on the quoted runs, from their 10th to their 90th
    percentile of tokens/s error e = rigplan's tokens/s / the measured - 1: value·(1 + low) to value·(1 + high). A
    run measured at tokens/s T/(1 + e) takes (1 + e) times the estimated time. It restates the validation
    spread in the user's own units; the estimate itself is unchanged."""
    return value * (1.0 + low), value * (1.0 + high)


def moe_accuracy(labels: dict[str, str], time_to_train_s: float | None = None,
                 gpu_hours: float | None = None) -> dict[str, object]:
    """The accuracy line's figures as JSON values: the job's regime labels, the cell quoted (a NARROWINGS name,
    'regime', or 'all' where none has MIN_RUNS runs: quoted_figures) and its runs, median tokens/s error, 10th and
    90th percentile and runs beyond 35%, with the line itself; given the estimate's time to train and GPU-hours,
    their measured_spread over the quoted runs (None without a token count)."""
    quoted, (runs, median, low, high, beyond), _ = quoted_figures(labels)
    return {"regime": dict(labels), "quoted": quoted, "runs": runs, "median_tokens_error": median,
            "p10_tokens_error": low, "p90_tokens_error": high, "beyond_35": beyond,
            "band_held_leave_one_out": BAND_HELD_LEAVE_ONE_OUT, "note": moe_accuracy_note(labels),
            "time_to_train_s_spread": measured_spread(time_to_train_s, low, high) if time_to_train_s else None,
            "gpu_hours_spread": measured_spread(gpu_hours, low, high) if gpu_hours else None}


def wall_spread(estimate: dict[str, Any], wall_time_s: float) -> dict[str, Any] | None:
    """An option's accuracy figures (the estimate's moe_accuracy) with its wall time, failures and checkpoints
    included, under the same spread (`wall_time_s_spread`: measured_spread, the failure and checkpoint time taken to
    scale with the training time); None for a dense model."""
    accuracy = estimate.get("moe_accuracy")
    if accuracy is None:
        return None
    low, high = float(accuracy["p10_tokens_error"]), float(accuracy["p90_tokens_error"])
    return accuracy | {"wall_time_s_spread": measured_spread(wall_time_s, low, high)}
