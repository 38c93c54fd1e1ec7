"""What every rule sees: the build, its GPU's catalog record, derived quantities, the workloads to check."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from rigplan.catalog.schema import GpuRecord
from rigplan.lint.workload import Workload, WorkloadEval, evaluate
from rigplan.servers.power import NodeLoad, gpu_power_w, node_load
from rigplan.servers.schema import ServerRecord
from rigplan.units import GiB


@dataclass
class LintContext:
    build: ServerRecord
    gpu: GpuRecord
    overlays: tuple[str, ...] = ()
    workloads: tuple[Workload, ...] = ()
    unchecked_claims: tuple[str, ...] = field(default=())
    """Claims of the build that name no workload (nothing to compute)."""

    @cached_property
    def load(self) -> NodeLoad:
        return node_load(self.build, self.gpu.tdp_w)

    @property
    def gpu_power_w(self) -> float:
        return gpu_power_w(self.build, self.gpu.tdp_w)

    @property
    def gpu_bytes(self) -> float:
        """Nominal memory of one GPU in bytes (the datasheet GiB)."""
        return self.gpu.memory_gib * GiB

    @property
    def gpu_bytes_per_node(self) -> float:
        return self.gpu_bytes * self.build.gpus.count

    @property
    def ram_bytes(self) -> float | None:
        return self.build.memory.ram_gib * GiB if self.build.memory else None

    @cached_property
    def evals(self) -> tuple[WorkloadEval, ...]:
        return tuple(evaluate(self.build, w, self.overlays) for w in self.workloads)
