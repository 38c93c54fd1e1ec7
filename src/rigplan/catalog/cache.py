"""The built-in catalog's domain values, kept between runs so that a command needs neither YAML nor pydantic.

The first run reads and validates every built-in record (load.py) and stores the domain values (Gpu,
Architecture) in the user's cache folder; later runs read them back when the fingerprint matches. The
fingerprint is a SHA-256 over the bytes of every built-in record file and of the code that turns a
record into domain values (catalog/, domain/, units.py), so an edited record or conversion is a miss,
never stale data. User overlays (--catalog DIR, RIGPLAN_CATALOG) never come from here: they are
validated on every run. The values are JSON; a file that does not parse into them is a miss.

`load_json` / `store_json` keep other values derived from rigplan's own code the same way, each kind under
its own key (flow/fields.py: the table of the request models' fields).

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
from rigplan.domain.model import MLA, Architecture, LinearAttention, MoE, SparseAttention
from rigplan.errors import RigplanError
from rigplan.files import read_bytes

CACHE_ENV_VAR = "RIGPLAN_CACHE_DIR"
FORMAT = 2
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


def _path(kind: str, key: str) -> Path:
    return cache_dir() / f"{kind}-{key[:32]}.json"


def load_json(kind: str, key: str) -> Any:
    """The JSON value stored for `kind` under this key, or None (absent, unreadable, or another key's)."""
    path = _path(kind, key)
    if not path.is_file():
        return None
    try:
        data = json.loads(read_bytes(path, f"{kind} cache"))
    except (RigplanError, ValueError):
        return None
    return data.get("value") if isinstance(data, dict) and data.get("key") == key else None


def store_json(kind: str, key: str, value: Any) -> None:
    """Store `value` for `kind` under this key (atomically) and drop all but the KEEP newest files of that
    kind; never fails (a folder that cannot be written only means the next run computes it again)."""
    target = _path(kind, key)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "value": value}, allow_nan=False), encoding="utf-8")
        os.replace(tmp, target)
        by_age = sorted(target.parent.glob(f"{kind}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in by_age[KEEP:]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError, TypeError):
        return


def _tuples(d: dict[str, Any]) -> dict[str, Any]:
    """JSON arrays back to the tuples the frozen domain values hold (their only sequence type)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def _gpu(d: dict[str, Any]) -> Gpu:
    return Gpu(**{**_tuples(d), "link": Link(**d["link"])})


def _arch(d: dict[str, Any]) -> Architecture:
    linear, sparse = d.get("linear_attention"), d.get("sparse_attention")
    return Architecture(**{**_tuples(d), "moe": MoE(**_tuples(d["moe"])) if d["moe"] else None,
                           "mla": MLA(**_tuples(d["mla"])) if d["mla"] else None,
                           "linear_attention": LinearAttention(**_tuples(linear)) if linear else None,
                           "sparse_attention": SparseAttention(**_tuples(sparse)) if sparse else None})


def load(key: str) -> tuple[dict[str, Gpu], dict[str, Architecture]] | None:
    """The stored domain values for this fingerprint, or None (absent, unreadable, or another key)."""
    data = load_json("catalog", key)
    if data is None:
        return None
    try:
        return ({k: _gpu(v) for k, v in data["gpus"].items()}, {k: _arch(v) for k, v in data["models"].items()})
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def store(key: str, gpus: dict[str, Gpu], models: dict[str, Architecture]) -> None:
    """Write the values for this fingerprint; never fails."""
    store_json("catalog", key, {"gpus": {k: dataclasses.asdict(v) for k, v in gpus.items()},
                                "models": {k: dataclasses.asdict(v) for k, v in models.items()}})
