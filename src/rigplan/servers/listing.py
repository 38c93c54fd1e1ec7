"""Server-build listings: the objects `rigplan servers [show ID] --json` print and the web API returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigplan.catalog.load import load_catalog
from rigplan.servers.load import get_server, load_servers
from rigplan.servers.power import node_load
from rigplan.servers.schema import ServerRecord
from rigplan.units import GiB

CATEGORIES = ("article", "corrected", "standard", "user")


def server_summary(record: ServerRecord, catalog_dirs: Sequence[str] = ()) -> dict[str, Any]:
    """Derived figures shown next to a record (base units)."""
    gpu = load_catalog(list(catalog_dirs)).gpu(record.gpus.id)
    load = node_load(record, gpu.tdp_w)
    return {
        "total_gpus": record.total_gpus,
        "gpu_name": gpu.name,
        "gpu_memory_bytes_per_node": gpu.memory_gib * GiB * record.gpus.count,
        "host_ram_bytes_per_node": record.memory.ram_gib * GiB if record.memory else None,
        "load_w_per_node": load.load_w,
        "load_source": load.source,
    }


def server_records(overlays: Sequence[str] = (), category: str | None = None) -> list[ServerRecord]:
    """The builds, by category (article, corrected, standard, user) and id."""
    return sorted((r for r in load_servers(tuple(overlays)).values() if category is None or r.category == category),
                  key=lambda r: (CATEGORIES.index(r.category), r.id))


def server_row(record: ServerRecord, overlays: Sequence[str] = ()) -> dict[str, Any]:
    return {"id": record.id, "name": record.name, "category": record.category, "corrects": record.corrects,
            "nodes": record.nodes, "gpu": record.gpus.id, "gpus_per_node": record.gpus.count,
            "gpu_link": record.gpus.link, "cpu": record.cpu.model, "cpus_per_node": record.cpu.count,
            "chassis": record.chassis.model, "psu": record.psu.model_dump() if record.psu else None,
            **server_summary(record, overlays)}


def servers_list(overlays: Sequence[str] = (), category: str | None = None) -> list[dict[str, Any]]:
    return [server_row(r, overlays) for r in server_records(overlays, category)]


def server_show(server_id: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    dirs = tuple(overlays)
    record = get_server(server_id, dirs)
    return {**record.model_dump(mode="json"), "derived": server_summary(record, dirs)}


def servers_listing(overlays: Sequence[str] = (), category: str | None = None) -> dict[str, Any]:
    """What `rigplan servers --json` prints and GET /api/servers returns: one object, {"servers": [...]}."""
    return {"servers": servers_list(overlays, category)}
