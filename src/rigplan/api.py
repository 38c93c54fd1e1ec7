"""One facade for every front end: the CLI, the web app and the reports call these functions.

Each function takes a validated request (`rigplan.flow.request`) and returns a result whose
`.to_dict()` is the JSON of record (the CLI's `--json`, the web API's response). The work is done
below, in `rigplan.flow` (request -> resolved setup -> memory / estimate / plan). The heavier steps
are imported when first called, so that `rigplan memory` does not load numpy.

May import: flow. Imported by: report, validation, web, cli.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigplan.flow.memory import MAX_SEARCH_BATCH, MAX_SEARCH_SEQ, MemoryResult, memory, memory_of

if TYPE_CHECKING:
    from rigplan.flow.compare import Comparison
    from rigplan.flow.estimate import EstimateResult
    from rigplan.flow.plan import PlanResult, Progress
    from rigplan.flow.request import EstimateRequest, PlanRequest

__all__ = ["MAX_SEARCH_BATCH", "MAX_SEARCH_SEQ", "MemoryResult", "compare", "describe_model", "estimate", "memory",
           "memory_of", "plan"]


def estimate(request: EstimateRequest) -> EstimateResult:
    """Speed, time and energy of one training job on one layout, with its memory check."""
    from rigplan.flow.estimate import estimate as run

    return run(request)


def plan(request: PlanRequest, progress: Progress | None = None) -> PlanResult:
    """Search GPU types, counts, layouts and purchase modes under a budget and a deadline."""
    from rigplan.flow.plan import plan as run

    return run(request, progress)


def compare(base: PlanRequest, options: list[str]) -> Comparison:
    """Concrete COUNTxGPU options side by side."""
    from rigplan.flow.compare import compare as run

    return run(base, options)


def describe_model(model: str, overlays: tuple[str, ...] = ()) -> dict[str, Any]:
    """The architecture and parameter counts rigplan reads from MODEL: a catalog id's record (with its sources),
    or what a config.json, a hub name or a size resolves to."""
    from rigplan.flow.model_source import describe_model as describe

    return describe(model, overlays)
