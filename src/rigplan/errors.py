"""Errors raised for bad input. Infeasible jobs are results with violations, never exceptions.

May import: nothing.
"""

from __future__ import annotations

from collections.abc import Iterable


class RigplanError(Exception):
    """Base class: a user-facing problem whose message is one clear line."""


class InvalidSpec(RigplanError):
    """An input value is malformed, out of range, or inconsistent with another input."""


class UnknownEntry(RigplanError):
    """A catalog id was not found; the message suggests the closest ids."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        import difflib  # only when a name is unknown

        known_list = sorted(known)
        close = difflib.get_close_matches(name.lower(), known_list, n=4, cutoff=0.5)
        if not close:
            close = [k for k in known_list if name.lower() in k][:4]
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(known_list[:12])}"
        if len(known_list) > 12 and not close:
            hint += ", ..."
        super().__init__(f"unknown {kind} '{name}'{hint}")
        self.kind = kind
        self.name = name
        self.suggestions = close


class UnsupportedPrecision(InvalidSpec):
    """The chosen GPU has no tensor cores for the recipe's precision (bf16 on V100, fp8 on A100)."""
