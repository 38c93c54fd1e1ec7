"""Imported once by the worker pool's forkserver (rigplan.web.workers), never by the server itself: the
computing modules and the parsed built-in catalogs, so that every worker forked from it answers its first
request warm (parsing the catalog's YAML costs about 0.4-0.7 s per process on a 2-CPU machine; a fork
shares the parsed records copy-on-write)."""

from __future__ import annotations

import contextlib
import gc

import rigplan.web.jobs  # noqa: F401  (imported for the forks to inherit)
from rigplan.catalog.load import load_catalog
from rigplan.errors import RigplanError
from rigplan.servers.load import load_servers

with contextlib.suppress(RigplanError):  # a broken RIGPLAN_CATALOG overlay is reported to each request instead
    catalog = load_catalog()
    list(catalog.gpus.values())  # the validated records too, not only the cached domain values
    list(catalog.models.values())
with contextlib.suppress(RigplanError):
    load_servers()

gc.freeze()
