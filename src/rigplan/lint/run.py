"""Run every lint rule over one build: `lint_build(build, workload=...)` -> LintResult."""

from __future__ import annotations

from collections.abc import Sequence

from rigplan.catalog.load import load_catalog
from rigplan.errors import InvalidSpec
from rigplan.lint import rules as _rules  # noqa: F401  (registers the rules)
from rigplan.lint.context import LintContext
from rigplan.lint.findings import SEVERITY_ORDER, Finding, LintResult
from rigplan.lint.money import CNY_PER_USD_SOURCE
from rigplan.lint.registry import RULES
from rigplan.lint.workload import Workload
from rigplan.servers.schema import ServerRecord

ASSUMPTIONS = (
    "load = vendor maximum system power where recorded, else GPUs + CPUs + RAM/drives/NICs/board x 1.15 "
    "(x 1.35 with NVSwitch baseboards; rigplan estimate)",
    "air cooling: plan 25 kW per rack, ~30 kW limit; airflow at a 20 F rise (158 CFM/kW)",
    f"currency: {CNY_PER_USD_SOURCE}",
)


def workloads_of(build: ServerRecord, workload: Workload | None) -> tuple[tuple[Workload, ...], tuple[str, ...]]:
    """The workload to check: the --for one if given, else the build's claims that name a model."""
    if workload is not None:
        return (workload,), ()
    checked = tuple(Workload(text=c.text, model=c.model, method=c.method, tokens=c.tokens, seq=c.seq, origin="claim")
                    for c in build.claims if c.model)
    unchecked = tuple(c.text for c in build.claims if not c.model)
    return checked, unchecked


def lint_build(build: ServerRecord, *, workload: Workload | None = None,
               overlays: Sequence[str] = ()) -> LintResult:
    """Check a build with every rule; findings sorted errors first (stable within a severity)."""
    catalog = load_catalog(list(overlays))
    gpu = catalog.gpu(build.gpus.id)
    missing = [what for what, value in (("host PCIe generation", gpu.pcie_gen),
                                        ("reference NIC rate", gpu.node.nic_gbit_per_s_per_gpu)) if value is None]
    if missing:
        raise InvalidSpec(f"build '{build.id}': {gpu.name} has no published {' or '.join(missing)}, which the "
                          "server-build rules need; a build of it cannot be checked")
    checked, unchecked = workloads_of(build, workload)
    ctx = LintContext(build=build, gpu=gpu, overlays=tuple(overlays), workloads=checked, unchecked_claims=unchecked)
    findings: list[Finding] = []
    for r in RULES:
        findings.extend(r(ctx))
    findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    summary = {"id": build.id, "name": build.name, "category": build.category, "nodes": build.nodes,
               "gpu": build.gpus.id, "gpus_per_node": build.gpus.count, "gpus": build.total_gpus}
    return LintResult(build=summary, findings=tuple(findings), workloads=tuple(e.to_dict() for e in ctx.evals),
                      assumptions=ASSUMPTIONS)
