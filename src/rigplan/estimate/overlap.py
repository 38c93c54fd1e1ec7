"""Communication hidden under computation, and what the overlap costs the computation.

A collective of C seconds overlapped with W seconds of computation (both measured alone) shares the
GPU with it: the communication kernels hold a share s of the SMs while they run, so the computation
progresses at (1 - s) of its speed during the overlap. The pair then takes

    W + s·min(C', W/(1-s)) + max(C' - W/(1-s), 0) + F

where F is the part of C that has no computation to hide behind (the first FSDP unit's gather, the
last gradient bucket, what chunking a TP collective leaves exposed) and C' = C - F. So

    exposed = F + max(C' - W/(1-s), 0),   hidden = C - exposed,   tax = s·min(C', W/(1-s))

and `tax` is added to the computation. With the switch off, the whole of C is exposed and nothing is
taxed. Each axis has its own s (the SM shares below, with their sources) and its own window W
(estimate.step says which computation each collective may hide behind).

Left out: HBM bandwidth taken by the communication (it reads and writes every byte it moves: at
NVLink rates ~10-15% of H100 HBM, which slows memory-bound kernels, not GEMMs), the wave-quantization
cliff of persistent GEMM kernels that launch one block per SM (pytorch/pytorch issue #143988 measured
matmuls 2x slower when NCCL held ~10% of the SMs, before a knob to launch fewer blocks), and, outside
TP overlap (where the measured TP_OVERLAP_HIDDEN_SHARE covers it), the cost of splitting work into
chunks. SM shares are taken as fractions of an H100's 132 SMs and applied unchanged to other parts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rigplan.domain.job import Job
from rigplan.estimate.states import grad_bytes_per_param

Num = Any

H100_SMS = 132.0
TP_OVERLAP_SM_SHARE = 7.8 / H100_SMS
"""SMs Transformer Engine's userbuffers overlap takes, mean over the ten overlapped GEMMs of a layer in
NeMo's H100 config for Llama 3 70B at TP4 (NVIDIA/NeMo nemo/collections/llm/recipes/tp_overlap_configs/
userbuffers.py, userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192): ring-exchange all-gathers 1 SM each
(qkv/fc1 fprop, proj/fc2 dgrad), pipelined reduce-scatters 24 and 16 (proj/fc2 fprop, set_sm_margin:
the GEMM runs on the rest), bulk overlaps in backward 4, 24, 2 and 4: 78 SMs over 10 GEMMs. PyTorch
async TP moves data with copy engines instead (no SMs); rigplan charges it the same share."""
TP_OVERLAP_HIDDEN_SHARE = 0.5
"""Largest share of the TP collectives that overlap takes off the critical path. What stays exposed is
what splitting each GEMM and its collective into chunks costs (the first chunk of an all-gather and
the last of a reduce-scatter have nothing to run beside, the smaller GEMMs run slower, both kernels
contend for HBM: 'decomposition and contention based slowdowns', arXiv 2512.10236). Measured: torchtitan's
async TP against vanilla TP on Grand Teton H100s (torchtitan docs, async TP benchmark, June 2025), speedups
1.09 (Llama 3 70B, 256 GPUs, TP8, bf16), 1.10 (8B, 64 GPUs, bf16), 1.16 (70B, float8 tensorwise) and
1.10 (8B, float8) on rigplan's TP traffic for those layouts hide 49%, 46%, 63% and 38% of it net of the
SM share below (tests/unit/test_overlap.py reproduces the four); 0.5 is their mean. Transformer Engine's
userbuffers overlap is charged the same."""
DP_OVERLAP_SM_SHARE = 0.10
"""Share of the SMs NCCL's data-parallel collectives hold while FSDP/DDP overlap them with GEMMs on
H100: "NCCL only occupies ~10% of the SMs", the matmuls then ~10% slower when they fit in one wave
(pytorch/pytorch issue #143988, FSDP training on H100). Same order as NCCL's channel count: one CTA
per channel, up to 16 channels for an inter-node ring on 8 NICs (16/132 = 12%)."""
P2P_OVERLAP_SM_SHARE = 2.0 / H100_SMS
"""Pipeline and ring-attention send/recv: NCCL runs point-to-point on NCCL_NCHANNELS_PER_NET_PEER
channels, 'typically 2' (NVIDIA/nccl issue #1424, NCCL maintainer), one CTA (SM) each."""


def hide(comm_s: Num, window_s: Num, sm_share: float, *, on: Any, floor_s: Num = 0.0) -> tuple[Num, Num, Num]:
    """(exposed, hidden, tax) seconds of a collective of comm_s overlapped with window_s of compute
    (formula in the module docstring); `on` and every time may be numpy arrays."""
    comm = np.asarray(comm_s, dtype=np.float64)
    scalar_on = np.ndim(on) == 0
    if scalar_on and not on:  # switched off everywhere: nothing to hide (the batch fast path)
        zero = np.zeros_like(comm)
        return comm, zero, zero
    stretched = np.asarray(window_s, dtype=np.float64) / (1.0 - sm_share)
    if np.ndim(floor_s) == 0 and floor_s == 0.0:
        floor: Num = 0.0
        rest = comm
    else:
        floor = np.minimum(np.asarray(floor_s, dtype=np.float64), comm)
        rest = comm - floor
    hidden_wall = np.minimum(rest, stretched)
    exposed_on = floor + (rest - hidden_wall)
    tax_on = sm_share * hidden_wall
    if scalar_on:
        return exposed_on, comm - exposed_on, tax_on
    enabled = np.asarray(on, dtype=bool)
    exposed = np.where(enabled, exposed_on, comm)
    tax = np.where(enabled, tax_on, 0.0)
    return exposed, comm - exposed, tax


def hidden_in_idle(exposed_s: Num, comm_s: Num, floor_s: Num, idle_s: Num, on: Any) -> Num:
    """What stays exposed of an overlapped collective (hide's exposed_s) once it also runs while the GPU
    idles, waiting for the host to issue a host-paced MoE pass (idle_s): max(exposed - idle, min(floor, comm)), the
    floor (the last bucket) never hiding; unchanged where the overlap is off."""
    floor = np.minimum(floor_s, comm_s)
    return np.where(np.asarray(on, dtype=bool), np.maximum(exposed_s - idle_s, np.minimum(floor, exposed_s)), exposed_s)


def grad_reduce_bytes_per_param(job: Job) -> float:
    """Bytes per gradient element in the data-parallel reduction: 4 for an fp32 reduce, 2 for bf16,
    and with no choice the gradients' own dtype (4 with fp32 main grads or fp32 training).

    fp32 is the default of Megatron with bf16 ('accumulate and all-reduce gradients in fp32 for
    bfloat16 data type', megatron/training/arguments.py: accumulate_allreduce_grads_in_fp32 is set for
    --bf16 unless --grad-reduce-in-bf16) and of torchtitan (mixed_precision_reduce = "float32", its
    FSDP2 MixedPrecisionPolicy reduce_dtype). Plain FSDP2 with MixedPrecisionPolicy(param_dtype=bf16)
    and no reduce_dtype reduces in bf16.
    """
    if job.grad_reduce_dtype == "fp32":
        return 4.0
    if job.grad_reduce_dtype == "bf16":
        return 2.0
    return grad_bytes_per_param(job)


def param_gather_overlapped(job: Job, zero: Num) -> Num:
    """Whether the parameter all-gather overlaps compute: the job's switch, or by default on under
    ZeRO-3 (FSDP prefetch, unless fsdp_prefetch is 0) and off under ZeRO-1/2 (Megatron's default)."""
    z = np.asarray(zero)
    if job.overlap_param_gather is None:
        return (z >= 3) & (job.fsdp_prefetch > 0)
    return np.full(z.shape, job.overlap_param_gather)
