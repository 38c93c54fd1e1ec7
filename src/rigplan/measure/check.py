"""`rigplan check`: train a small model for a few steps with torch and compare with rigplan's estimate.

The model is built locally from the request's shape (measure/tiny_model.py, random weights), trained
in the requested configuration (full or LoRA; fp32, bf16-true or bf16-mixed with fp32 master weights;
no or full recompute; micro-batch, sequence, accumulation; FSDP2 full sharding or DDP over the
processes torchrun starts) and measured:

    weights / gradients / optimizer   exact bytes of this rank's parameters, their .grad tensors after
                                      backward, and the optimizer's state tensors (+ fp32 masters)
    saved activations                 bytes the autograd graph keeps for backward during one micro-
                                      batch's forward (torch.autograd.graph.saved_tensors_hooks; one
                                      count per storage, parameters excluded), inside the transformer
                                      blocks and, separately, in the head and loss
    peak device memory (GPU)          torch.cuda.max_memory_allocated / max_memory_reserved
    step time                         median wall time of the measured steps, slowest rank

and rigplan's estimate of the same job is computed beside it: memory from the estimators, step time
from estimate/step.py on this device as the calibration (from `rigplan probe`, or a quick probe run
here) describes it. The error column is (estimate - measured) / measured.
Left out: MoE, pipeline and tensor parallelism (one process per data-parallel rank only).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from rigplan.calibration.file import CalibrationFile, device_gpu
from rigplan.domain.hardware import Gpu
from rigplan.errors import InvalidSpec
from rigplan.estimate.step import step_time
from rigplan.flow.memory import memory_of
from rigplan.flow.resolve import TrainingSetup
from rigplan.measure.probe import _torch, pick_device, process_group

SUPPORTED_PRECISIONS = ("fp32", "bf16-true", "bf16-mixed")


@dataclass
class Measured:
    weights_bytes: float = 0.0
    gradients_bytes: float = 0.0
    optimizer_bytes: float = 0.0
    saved_layers_bytes: float = 0.0
    saved_head_bytes: float = 0.0
    step_times_s: list[float] = field(default_factory=list)
    max_allocated_bytes: float | None = None
    max_reserved_bytes: float | None = None
    ranks: int = 1
    device: str = "cpu"

    @property
    def step_time_s(self) -> float:
        return statistics.median(self.step_times_s)


class SavedTensorMeter:
    """Bytes autograd saves for backward while `active`, one count per storage, parameters excluded."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.active = False
        self.region = "layers"
        self.seen: dict[str, set[int]] = {"layers": set(), "head": set()}
        self.bytes: dict[str, float] = {"layers": 0.0, "head": 0.0}

    def pack(self, tensor: Any) -> Any:
        if self.active:
            storage = tensor.untyped_storage()
            ptr = storage.data_ptr()
            params = {_storage_ptr(p) for p in self.model.parameters()}
            if ptr not in params and ptr not in self.seen[self.region]:
                self.seen[self.region].add(ptr)
                self.bytes[self.region] += storage.nbytes()
        return tensor

    @staticmethod
    def unpack(tensor: Any) -> Any:
        return tensor


def _storage_ptr(tensor: Any) -> int | None:
    """Address of a tensor's storage; None for a freed one (FSDP's resharded parameters)."""
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    try:
        return int(local.untyped_storage().data_ptr())
    except RuntimeError:
        return None


def _local_bytes(tensor: Any) -> float:
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return float(local.numel() * local.element_size())


def _build(setup: TrainingSetup, torch: Any, device: Any, fsdp: bool) -> tuple[Any, list[Any], list[Any] | None]:
    """(model, trainable parameters, fp32 masters or None), placed and wrapped for the process group."""
    from rigplan.measure.tiny_model import TinyDecoder, add_lora

    job = setup.job
    torch.manual_seed(1234)
    with torch.device(device):  # weights initialised where they train: an 8B model in seconds on a GPU
        model = TinyDecoder(setup.arch)
        if job.is_peft:
            add_lora(model, job.lora_targets, job.lora_rank)
    if job.precision in ("bf16-true", "bf16-mixed"):
        model = model.to(torch.bfloat16)
    model.checkpoint_blocks = job.recompute == "full"
    dist = torch.distributed
    if dist.is_initialized() and dist.get_world_size() > 1:
        if fsdp:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard

            mesh = init_device_mesh(device.type, (dist.get_world_size(),))
            for block in model.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
        else:
            model = torch.nn.parallel.DistributedDataParallel(model)
    trainable = [p for p in model.parameters() if p.requires_grad]
    masters = None
    if job.precision == "bf16-mixed":
        masters = [p.detach().float().clone().requires_grad_(True) for p in trainable]
    return model, trainable, masters


def _inner(model: Any) -> Any:
    return model.module if hasattr(model, "module") and not hasattr(model, "blocks") else model


def train_and_measure(setup: TrainingSetup, *, steps: int, warmup: int, accumulation: int, fsdp: bool,
                      device: str | None = None, tick: Callable[[], None] | None = None) -> Measured:
    """Train `warmup + steps` optimizer steps on random tokens and measure (module docstring)."""
    torch = _torch()
    job = setup.job
    if job.precision not in SUPPORTED_PRECISIONS:
        raise InvalidSpec(f"rigplan check trains in {', '.join(SUPPORTED_PRECISIONS)}; --precision {job.precision} "
                          "is not supported here")
    if job.method == "qlora":
        raise InvalidSpec("rigplan check does not build 4-bit (QLoRA) models; use --method full or lora")
    if job.recompute not in ("none", "full"):
        raise InvalidSpec(f"rigplan check recomputes whole blocks or nothing: --recompute none|full, "
                          f"not {job.recompute}")
    if job.optimizer != "adamw":
        raise InvalidSpec(f"rigplan check trains with AdamW; --optimizer {job.optimizer} is not supported here")
    dev = pick_device(torch, device)
    model, trainable, masters = _build(setup, torch, dev, fsdp)
    core = _inner(model)
    opt_params = masters if masters is not None else trainable
    fused = dev.type in ("cuda", "cpu")
    optimizer = torch.optim.AdamW(opt_params, lr=1e-4, fused=fused)
    gen = torch.Generator().manual_seed(int(os.environ.get("RANK", "0")))
    shape = (job.micro_batch, job.seq_len)
    batches = [(torch.randint(0, setup.arch.vocab, shape, generator=gen).to(dev),
                torch.randint(0, setup.arch.vocab, shape, generator=gen).to(dev)) for _ in range(accumulation)]
    meter = SavedTensorMeter(core)
    out = Measured(device=str(dev))
    dist = torch.distributed
    out.ranks = dist.get_world_size() if dist.is_initialized() else 1

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    @contextmanager
    def region(name: str) -> Iterator[None]:
        previous, meter.region = meter.region, name
        try:
            yield
        finally:
            meter.region = previous

    core.region = region

    for step in range(warmup + steps):
        measuring = step == warmup
        if measuring and dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        sync()
        start = time.perf_counter()
        for i, (tokens, labels) in enumerate(batches):
            meter.active = measuring and i == 0
            with torch.autograd.graph.saved_tensors_hooks(meter.pack, meter.unpack):
                loss = model(tokens, labels) / accumulation
            meter.active = False
            loss.backward()
        if measuring:
            out.weights_bytes = sum(_local_bytes(p) for p in core.parameters())
            out.gradients_bytes = sum(_local_bytes(p.grad) for p in trainable if p.grad is not None)
        if masters is not None:
            for master, p in zip(masters, trainable, strict=True):
                master.grad = p.grad.float() if p.grad is not None else None
        optimizer.step()
        if masters is not None:
            with torch.no_grad():
                for master, p in zip(masters, trainable, strict=True):
                    p.copy_(master)
                    master.grad = None
        optimizer.zero_grad(set_to_none=True)
        for p in trainable:
            p.grad = None
        sync()
        elapsed = time.perf_counter() - start
        if step >= warmup:
            out.step_times_s.append(elapsed)
        if tick:
            tick()
    states = sum(_local_bytes(t) for s in optimizer.state.values() for t in s.values()
                 if hasattr(t, "numel") and t.dim() > 0)
    out.optimizer_bytes = states + (sum(_local_bytes(m) for m in masters) if masters else 0.0)
    out.saved_layers_bytes, out.saved_head_bytes = meter.bytes["layers"], meter.bytes["head"]
    if dev.type == "cuda":
        out.max_allocated_bytes = float(torch.cuda.max_memory_allocated(dev))
        out.max_reserved_bytes = float(torch.cuda.max_memory_reserved(dev))
    if dist.is_initialized():
        slowest = torch.tensor(out.step_times_s, dtype=torch.float64, device=dev if dev.type == "cuda" else "cpu")
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        out.step_times_s = [float(x) for x in slowest.tolist()]
    return out


def estimate_for(setup: TrainingSetup, device: Gpu, calibration: CalibrationFile | None, *, accumulation: int,
                 ranks: int) -> dict[str, float]:
    """rigplan's figures for the job `train_and_measure` ran (the same layout, this device for time)."""
    mem = memory_of(setup, None).breakdown
    global_batch = setup.job.micro_batch * setup.layout.dp * accumulation
    job = replace(setup.job, global_batch=global_batch)
    domain = calibration.to_domain() if calibration else None
    step = step_time(setup.arch, job, setup.layout, device, global_batch=global_batch, calibration=domain)
    return {"weights_bytes": mem.weights_bytes, "gradients_bytes": mem.model_gradients_bytes,
            "optimizer_bytes": mem.optimizer_bytes, "activations_bytes": mem.activations_bytes,
            "logits_bytes": mem.logits_bytes, "allocated_bytes": mem.allocated_bytes,
            "reserved_bytes": mem.reserved_bytes, "step_time_s": float(step.step_time_s)}


def comparison_rows(measured: Measured, estimate: dict[str, float]) -> list[dict[str, Any]]:
    """(quantity, measured, estimated, relative error) rows of the table `rigplan check` prints."""
    pairs: list[tuple[str, float | None, float, str]] = [
        ("weights", measured.weights_bytes, estimate["weights_bytes"], "bytes"),
        ("gradients", measured.gradients_bytes, estimate["gradients_bytes"], "bytes"),
        ("optimizer states", measured.optimizer_bytes, estimate["optimizer_bytes"], "bytes"),
        ("saved activations (blocks)", measured.saved_layers_bytes, estimate["activations_bytes"], "bytes"),
        ("logits (saved | rigplan: live at loss)", measured.saved_head_bytes, estimate["logits_bytes"], "bytes"),
        ("peak allocated (device)", measured.max_allocated_bytes, estimate["allocated_bytes"], "bytes"),
        ("peak reserved (device)", measured.max_reserved_bytes, estimate["reserved_bytes"], "bytes"),
        ("step time", measured.step_time_s, estimate["step_time_s"], "s"),
    ]
    rows = []
    for name, got, est, unit in pairs:
        if got is None:
            continue
        error = (est - got) / got if got else None
        rows.append({"quantity": name, "unit": unit, "measured": got, "estimated": est, "error": error})
    return rows


def calibration_here(device: str | None) -> CalibrationFile:
    """A quick probe of this device, for the step-time estimate when no --calibration is given."""
    from rigplan.measure.probe import run_probe

    return run_probe(device=device, quick=True)


def device_for(calibration: CalibrationFile, catalog_gpu: Gpu | None) -> Gpu:
    return catalog_gpu if catalog_gpu is not None else device_gpu(calibration)


@contextmanager
def check_group(device: str | None) -> Iterator[Any]:
    torch = _torch()
    dev = pick_device(torch, device)
    with process_group(torch, dev):
        yield dev
