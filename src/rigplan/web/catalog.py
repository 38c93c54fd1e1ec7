"""Catalog listings for HTTP: the same objects `rigplan models|gpus|servers [show ID] --json` print."""

from __future__ import annotations

from rigplan.catalog.views import gpu_show, gpus_list, model_show, models_list
from rigplan.servers.listing import server_show, servers_list

__all__ = ["gpu_show", "gpus_list", "model_show", "models_list", "server_show", "servers_list"]
