"""Catalog listings for HTTP: the same objects `rigplan models|gpus [show ID] --json` print."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigplan.catalog.views import gpu_show, gpus_list, model_show, models_list

__all__ = ["gpu_show", "gpus_list", "model_show", "models_list", "server_show", "servers_list"]


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
