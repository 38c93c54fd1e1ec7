"""A request is resolved once: each facade call enters the catalog loader once, and the search and the
candidate estimates below it look nothing up again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rigplan.catalog.load as catalog_load
from rigplan import api
from rigplan.flow.request import EstimateRequest, MemoryRequest, PlanRequest


@pytest.fixture
def loader_entries(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every entry into the catalog loader (load_catalog calls _load once per call)."""
    entries: list[tuple[Any, ...]] = []
    real = catalog_load._load

    def counting(overlays: tuple[Any, ...]) -> Any:
        entries.append(overlays)
        return real(overlays)

    monkeypatch.setattr(catalog_load, "_load", counting)
    return entries


CALLS: dict[str, Callable[[], Any]] = {
    "memory": lambda: api.memory(MemoryRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, zero=3)),
    "estimate": lambda: api.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, tokens="10B")),
    "plan": lambda: api.plan(PlanRequest(model="llama-3.1-8b", tokens="10B", gpus_max=64)),
    "compare": lambda: api.compare(PlanRequest(model="llama-2-7b", tokens="2B"), ["8xa100-80gb-sxm", "4xh100-sxm"]),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_one_entry_into_the_catalog_loader(name: str, loader_entries: list[tuple[Any, ...]]) -> None:
    CALLS[name]()
    assert len(loader_entries) == 1


def test_plan_estimates_its_candidates_without_resolving_the_model_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import rigplan.flow.resolve as resolve

    resolved: list[str | None] = []
    real = resolve.resolve_model

    def counting(model: str | None, *args: Any, **kwargs: Any) -> Any:
        resolved.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(resolve, "resolve_model", counting)
    result = api.plan(PlanRequest(model="llama-3.1-8b", tokens="10B", gpus_max=64))
    assert result.ranked and resolved == ["llama-3.1-8b"]
