"""Importing this package registers every rule in rigplan.lint.registry.RULES, ordered by topic."""

from rigplan.lint.registry import RULES
from rigplan.lint.rules import cost, hardware, io, power, workload

_TOPIC_ORDER = [m.__name__ for m in (hardware, power, io, cost, workload)]
RULES.sort(key=lambda r: _TOPIC_ORDER.index(r.func.__module__))

__all__ = ["cost", "hardware", "io", "power", "workload"]
