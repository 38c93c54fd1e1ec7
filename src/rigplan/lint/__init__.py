"""Server-build checks: one function per rule, each with a stable code; the result is a list of findings.

Each rule sees one LintContext (the build, its GPU record, derived power, the workloads to check);
the workload checks run the flow's memory and estimate steps.

May import: flow, cost, servers, catalog, estimate, domain, units, errors.
"""

from rigplan.lint.findings import Finding, LintResult
from rigplan.lint.registry import RULES, Rule
from rigplan.lint.run import lint_build
from rigplan.lint.workload import Workload

__all__ = ["RULES", "Finding", "LintResult", "Rule", "Workload", "lint_build"]
