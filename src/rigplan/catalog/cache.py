"""The built-in catalog's domain values, kept between runs so that a command needs neither YAML nor pydantic.

The first run reads and validates every built-in record (load.py) and stores the domain values (Gpu,
Architecture) in the user's cache folder; later runs read them back when the fingerprint matches. The
fingerprint is a SHA-256 over the bytes of every built-in record file and of the code that turns a
record into domain values (catalog/, domain/, units.py), so an edited record or conversion is a miss,
never stale data. User overlays (--catalog DIR, RIGPLAN_CATALOG) never come from here: they are
validated on every run. The values are JSON; a file that does not parse into them is a miss.

Folder: $RIGPLAN_CACHE_DIR, else $XDG_CACHE_HOME/rigplan, else ~/.cache/rigplan. A folder that
cannot be written only makes every run take the validating path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rigplan.domain.hardware import Gpu, Link
from rigplan.domain.model import MLA, Architecture, MoE
from rigplan.errors import RigplanError
from rigplan.files import read_bytes

CACHE_ENV_VAR = "RIGPLAN_CACHE_DIR"
FORMAT = 1
KEEP = 4
"""Cache files kept (several rigplan versions or checkouts in use side by side do not evict each other)."""
_PACKAGE = Path(__file__).resolve().parent.parent
_CODE = ("catalog/schema.py", "catalog/load.py", "catalog/cache.py", "domain/hardware.py", "domain/model.py",
         "units.py")
"""Modules whose code decides the domain values of a record."""


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV_VAR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rigplan"


def fingerprint(data_dir: Path) -> str | None:
    """SHA-256 over the record files under data_dir (names and bytes) and the conversion code; None
    when a file cannot be read (the validating path then says why)."""
    digest = hashlib.sha256(f"format {FORMAT}\n".encode())
    files = sorted(data_dir.glob("*/*.y*ml"))
    try:
        for path in [*files, *(_PACKAGE / name for name in _CODE)]:
            data = read_bytes(path, "catalog record")
            digest.update(f"{path.parent.name}/{path.name}\0{len(data)}\0".encode())
            digest.update(data)
    except RigplanError:
        return None
    return digest.hexdigest()


def _path(key: str) -> Path:
    return cache_dir() / f"catalog-{key[:32]}.json"


def _tuples(d: dict[str, Any]) -> dict[str, Any]:
    """JSON arrays back to the tuples the frozen domain values hold (their only sequence type)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def _gpu(d: dict[str, Any]) -> Gpu:
    return Gpu(**{**_tuples(d), "link": Link(**d["link"])})


def _arch(d: dict[str, Any]) -> Architecture:
    return Architecture(**{**_tuples(d), "moe": MoE(**_tuples(d["moe"])) if d["moe"] else None,
                           "mla": MLA(**_tuples(d["mla"])) if d["mla"] else None})


def load(key: str) -> tuple[dict[str, Gpu], dict[str, Architecture]] | None:
    """The stored domain values for this fingerprint, or None (absent, unreadable, or another key)."""
    path = _path(key)
    if not path.is_file():
        return None
    try:
        data = json.loads(read_bytes(path, "catalog cache"))
        if data["key"] != key:
            return None
        return ({k: _gpu(v) for k, v in data["gpus"].items()}, {k: _arch(v) for k, v in data["models"].items()})
    except (RigplanError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(key: str, gpus: dict[str, Gpu], models: dict[str, Architecture]) -> None:
    """Write the values for this fingerprint (atomically) and drop all but the KEEP newest; never fails."""
    target = _path(key)
    data = {"key": key, "gpus": {k: dataclasses.asdict(v) for k, v in gpus.items()},
            "models": {k: dataclasses.asdict(v) for k, v in models.items()}}
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, allow_nan=False), encoding="utf-8")
        os.replace(tmp, target)
        by_age = sorted(target.parent.glob("catalog-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in by_age[KEEP:]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError):
        return
