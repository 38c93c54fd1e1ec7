"""What every exporter shares."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rigplan.errors import InvalidSpec
from rigplan.flow.estimate import default_global_batch
from rigplan.flow.resolve import TrainingSetup


class Unsupported(InvalidSpec):
    """The framework cannot express this layout or recipe (the message names the missing feature)."""


MEGATRON_ONLY_RECIPES = ("nvfp4", "blockwise")
"""fp8 recipes only the Megatron-LM export writes (Transformer Engine's NVFP4BlockScaling and Float8BlockScaling):
torchtitan's converters, accelerate's fp8 and the Hugging Face Trainer have no such recipe."""


FORCED_BALANCE_NOTE = (
    "{flag}: the estimate's balanced routing (--balanced-routing), which benchmarks force by routing tokens "
    "round-robin or at random; a model trained for its loss routes by its own scores: drop it, and estimate "
    "without --balanced-routing (rigplan's dropless default load)")
"""Export note beside forced balanced routing, with the framework's flag."""


def unsupported(framework: str, feature: str, hint: str = "") -> Unsupported:
    return Unsupported(f"{framework} cannot express {feature}" + (f"; {hint}" if hint else ""))


@dataclass(frozen=True)
class Exported:
    """Files to write (name -> text) and the command that launches them."""

    framework: str
    files: dict[str, str]
    command: str
    notes: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    """The settings as structured data (what --json prints next to the files)."""

    def to_dict(self) -> dict[str, Any]:
        return {"framework": self.framework, "files": self.files, "command": self.command, "notes": self.notes,
                "values": self.values}


@dataclass(frozen=True)
class Batch:
    micro_batch: int
    accumulation: int
    global_batch: int
    data_parallel: int


def batch_of(setup: TrainingSetup) -> Batch:
    """Micro-batch, accumulation steps and global batch (sequences) of the setup's data-parallel group;
    without --global-batch, rigplan estimate's default of about 4M tokens."""
    dp = setup.layout.dp
    mb = setup.job.micro_batch
    global_batch = setup.job.global_batch or default_global_batch(mb, dp, setup.job.seq_len)
    if global_batch % (mb * dp):
        raise InvalidSpec(f"global batch {global_batch} is not a multiple of micro-batch*dp = {mb}*{dp}")
    return Batch(micro_batch=mb, accumulation=global_batch // (mb * dp), global_batch=global_batch, data_parallel=dp)


def nodes_of(setup: TrainingSetup) -> tuple[int, int]:
    """(nodes, processes per node) for the setup's GPU count and node size."""
    n = setup.layout.num_gpus
    per_node = min(setup.gpu.gpus_per_node, n)
    return math.ceil(n / per_node), per_node


def torchrun_prefix(setup: TrainingSetup) -> str:
    nodes, per_node = nodes_of(setup)
    if nodes == 1:
        return f"torchrun --nproc-per-node {per_node}"
    return (f"torchrun --nnodes {nodes} --nproc-per-node {per_node} --rdzv-backend c10d "
            "--rdzv-endpoint $MASTER_ADDR:29500")


def require(framework: str, setup: TrainingSetup, *, tp: bool = True, pp: bool = True, cp: bool = True,
            ep: bool = True, lora: bool = True, qlora: bool = False, einsum: bool = False,
            allgather: bool = False) -> None:
    """Raise Unsupported for the axes and methods a framework lacks (False = not expressible); `einsum`: whether its
    MoE layer dispatches by one-hot einsums into capacity slots (--moe-dispatcher einsum); `allgather`: whether it
    has Megatron-Core's allgather dispatcher (--moe-dispatcher allgather)."""
    lay, job = setup.layout, setup.job
    checks = [(tp, lay.tp > 1, f"tensor parallelism (tp={lay.tp})"),
              (pp, lay.pp > 1, f"pipeline parallelism (pp={lay.pp})"),
              (cp, lay.cp > 1, f"context parallelism (cp={lay.cp})"),
              (ep, lay.ep > 1, f"expert parallelism (ep={lay.ep})"),
              (lora, job.method == "lora", "LoRA"), (qlora, job.method == "qlora", "QLoRA (4-bit NF4 base weights)")]
    if not tp and setup.arch.moe is not None and lay.expert_tp > 1:
        checks.append((False, True, f"expert tensor parallelism (etp={lay.expert_tp})"))
    for allowed, used, feature in checks:
        if used and not allowed:
            raise unsupported(framework, feature)
    if setup.arch.moe is not None and job.moe_dispatcher == "einsum" and not einsum:
        feature = ("the einsum dispatcher (GShard's one-hot dispatch and combine, MaxText's dense_matmul in JAX, "
                   "DeepSpeed-MoE)")
        raise unsupported(framework, feature, "for capacity-padded experts give --moe-dispatcher alltoall "
                                              "--moe-pad-to-capacity")
    if setup.arch.moe is not None and job.moe_dispatcher == "allgather" and not allgather:
        raise unsupported(framework, "Megatron-Core's allgather token dispatcher",
                          "give --moe-dispatcher alltoall, or export with --framework megatron")


def flag_line(args: dict[str, Any]) -> str:
    """`--name value` pairs (True: a bare flag; False/None: left out), names with dashes."""
    parts = []
    for name, value in args.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        parts.append(flag if value is True else f"{flag} {value}")
    return " \\\n  ".join(parts)
