"""Catalog listings for HTTP: the same objects `rigplan models|gpus|servers [show ID] --json` print.

Every listing is one object ({"models": [...]}, {"gpus": [...]}, {"servers": [...]}), as every
`--json` output is.
"""

from __future__ import annotations

from rigplan.catalog.views import gpu_show, model_show
from rigplan.catalog.views import gpus_listing as gpus_list
from rigplan.catalog.views import models_listing as models_list
from rigplan.servers.listing import server_show
from rigplan.servers.listing import servers_listing as servers_list

__all__ = ["gpu_show", "gpus_list", "model_show", "models_list", "server_show", "servers_list"]
