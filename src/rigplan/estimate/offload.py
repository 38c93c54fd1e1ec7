"""Seconds a step spends on CPU offload (--offload optimizer | all), beside the GPU's own work.

Optimizer offload (DeepSpeed ZeRO-Offload, FSDP2's CPUOffloadPolicy, Megatron --optimizer-cpu-offload) keeps the
fp32 master weights and the optimizer states in host memory and runs the optimizer step on the CPU. The schedule of
ZeRO-Offload (Ren et al., USENIX ATC 2021, Sec. 4.1 and Fig. 5): the gradients stream to the host during backward,
the CPU updates the weights after it, and the updated compute-precision weights come back before the next forward.
Per GPU and step, with U the parameters this GPU updates, B the host link's achievable rate (catalog
host_bus_bytes_per_s, from the PCIe generation: 25 GB/s Gen4, 50 Gen5) and M the host memory bandwidth one GPU's
optimizer gets:

    t = U · A / M  +  U · p / B  +  max(0, U · g / B - t_backward)

A the bytes the CPU optimizer reads and writes per parameter (CPU_OPTIMIZER_BYTES_TOUCHED; CPU Adam is bound by
memory bandwidth), p the weight bytes sent back, g the gradient bytes sent to the host in the compute precision, as
ZeRO-Offload sends them (hidden behind the step's backward as far as it lasts).

Full offload (--offload all: ZeRO-3 parameter offload, FSDP CPU offload of the parameters) also keeps the weight
shards in host memory: every micro-batch brings this GPU's shard over the host link for the forward and again for
the backward, and sends its gradient shard back; prefetching overlaps them with the micro-batch's computation:

    t_mb = max(0, U · (2p + g) / B - t_compute,mb)

Left out: the CPU-side copies between pageable and pinned buffers, NVMe offload (ZeRO-Infinity), DeepSpeed's
one-step delayed update (DPU) that hides the CPU step behind the next step, and several GPUs sharing one PCIe
switch's uplink (each GPU is taken to have its own x16 link, as in HGX and DGX systems).
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.estimate import arrays as xp

Num = Any

CPU_OPTIMIZER_BYTES_TOUCHED = {"adamw": 30.0, "paged-adamw": 30.0, "adamw-8bit": 14.0, "paged-adamw-8bit": 14.0,
                               "sgd": 14.0, "sgd-momentum": 22.0, "adafactor": 18.0}
"""Host bytes read and written per parameter by the CPU optimizer step: AdamW reads the gradient (fp32, 4) and the
fp32 master weight, m and v (12) and writes them back (12) and the compute-precision copy to send (2): 30; the other
optimizers by the same count of their states (the GPU-side OPTIMIZER_BYTES_TOUCHED with the fp32 gradient read and
the copy written)."""
HOST_MEMORY_BYTES_PER_S_PER_GPU = 60e9
"""Host memory bandwidth one GPU's CPU optimizer gets: a two-socket server with eight DDR5-4800 channels a socket
(307 GB/s each, Intel Xeon 4th/5th generation; AMD EPYC 9004 has twelve, 461 GB/s) reaches about 80% of that in
STREAM triad, about 490 GB/s for two sockets, shared by the node's eight GPUs: 60 GB/s each. A server whose sockets
feed fewer GPUs gives each more; the figure is an assumption of the server, not a measurement of one."""
HOST_LINK_FALLBACK_BYTES_PER_S = 25e9
"""The host link of a part with no PCIe generation in the catalog: Gen4 x16's achievable 25 GB/s
(catalog.schema.PCIE_X16_ACHIEVABLE_GB_PER_S)."""


def host_link_bytes_per_s(gpu: Gpu) -> float:
    """The part's achievable host<->device copy rate (one direction)."""
    return gpu.host_bus_bytes_per_s or HOST_LINK_FALLBACK_BYTES_PER_S


def optimizer_offload_s(job: Job, gpu: Gpu, updated_params: Num, backward_s: Num) -> Num:
    """Seconds of one step's CPU optimizer and its copies (module docstring); 0 without optimizer offload."""
    if job.offload not in ("optimizer", "all"):
        return 0.0 * xp.asarray(updated_params)
    cpu_s = updated_params * CPU_OPTIMIZER_BYTES_TOUCHED[job.optimizer] / HOST_MEMORY_BYTES_PER_S_PER_GPU
    copy_s = updated_params * float(job.compute_dtype_bytes) / host_link_bytes_per_s(gpu)  # p = g bytes each way
    return cpu_s + copy_s + xp.maximum(copy_s - backward_s, 0.0)


def parameter_offload_s(job: Job, gpu: Gpu, shard_params: Num, compute_s: Num) -> Num:
    """Exposed seconds per micro-batch of bringing this GPU's weight shard from the host for forward and backward
    and sending its gradient shard back (module docstring); 0 unless the parameters are offloaded."""
    if job.offload != "all":
        return 0.0 * xp.asarray(shard_params)
    p = float(job.compute_dtype_bytes)
    moved_s = shard_params * (2.0 * p + p) / host_link_bytes_per_s(gpu)
    return xp.maximum(moved_s - compute_s, 0.0)
