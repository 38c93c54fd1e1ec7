"""Catalog listings: the objects `rigplan models|gpus [show ID] --json` print and the web API returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigplan.catalog.load import load_catalog
from rigplan.estimate.params import count_params


def models_list(overlays: Sequence[str] = ()) -> list[dict[str, Any]]:
    catalog = load_catalog(list(overlays))
    rows = []
    for record in catalog.models.values():
        counts = count_params(record.to_domain())
        rows.append({"id": record.id, "name": record.name, "family": record.family,
                     "params_total": counts.total, "params_active": counts.active_published,
                     "params_active_matmul": counts.active_matmul,
                     "official_params": record.official_params, "layers": record.num_layers,
                     "hidden": record.hidden, "context_length": record.context_length, "moe": record.moe is not None})
    return rows


def model_show(model_id: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    record = load_catalog(list(overlays)).model(model_id)
    counts = count_params(record.to_domain())
    return {**record.model_dump(mode="json"), "params_total": counts.total, "params_active": counts.active_published,
            "params_active_matmul": counts.active_matmul}


def gpus_list(overlays: Sequence[str] = ()) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in load_catalog(list(overlays)).gpus.values()]


def gpu_show(gpu_id: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    return load_catalog(list(overlays)).gpu(gpu_id).model_dump(mode="json")


def models_listing(overlays: Sequence[str] = ()) -> dict[str, Any]:
    """What `rigplan models --json` prints and GET /api/models returns: one object, {"models": [...]}."""
    return {"models": models_list(overlays)}


def gpus_listing(overlays: Sequence[str] = ()) -> dict[str, Any]:
    """What `rigplan gpus --json` prints and GET /api/gpus returns: one object, {"gpus": [...]}."""
    return {"gpus": gpus_list(overlays)}
