"""Catalog listings for HTTP: the same objects `rigplan models|gpus [show ID] --json` print."""

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
                     "params_total": counts.total, "params_active": counts.active,
                     "official_params": record.official_params, "layers": record.num_layers,
                     "hidden": record.hidden, "context_length": record.context_length, "moe": record.moe is not None})
    return rows


def model_show(model_id: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    record = load_catalog(list(overlays)).model(model_id)
    counts = count_params(record.to_domain())
    return {**record.model_dump(mode="json"), "params_total": counts.total, "params_active": counts.active}


def gpus_list(overlays: Sequence[str] = ()) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in load_catalog(list(overlays)).gpus.values()]


def gpu_show(gpu_id: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    return load_catalog(list(overlays)).gpu(gpu_id).model_dump(mode="json")


def servers_list(overlays: Sequence[str] = (), category: str | None = None) -> list[dict[str, Any]]:
    from rigplan.cli.servers import CATEGORIES, server_summary
    from rigplan.servers.load import load_servers

    dirs = tuple(overlays)
    records = sorted((r for r in load_servers(dirs).values() if category is None or r.category == category),
                     key=lambda r: (CATEGORIES.index(r.category), r.id))
    return [{"id": r.id, "name": r.name, "category": r.category, "corrects": r.corrects, "nodes": r.nodes,
             "gpu": r.gpus.id, "gpus_per_node": r.gpus.count, "gpu_link": r.gpus.link,
             "cpu": r.cpu.model, "cpus_per_node": r.cpu.count, "chassis": r.chassis.model,
             "psu": r.psu.model_dump() if r.psu else None, **server_summary(r, dirs)} for r in records]


def server_show(server_id: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    from rigplan.cli.servers import server_summary
    from rigplan.servers.load import get_server

    dirs = tuple(overlays)
    record = get_server(server_id, dirs)
    return {**record.model_dump(mode="json"), "derived": server_summary(record, dirs)}
