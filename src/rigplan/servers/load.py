"""Load server builds: the built-in records, user overlays, or one BUILD.yaml file.

Built-in records live in `src/rigplan/servers/data/*.yaml`. Overlay folders are the catalog overlays
(`--catalog DIR`, the RIGPLAN_CATALOG environment variable); each may hold `servers/*.yaml`, and a record
with the id of a built-in one replaces it. Nothing is read at import time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from rigplan.bounds import located_message
from rigplan.catalog.load import normalize_id, overlay_dirs_from_env
from rigplan.errors import InvalidSpec, UnknownEntry
from rigplan.files import load_yaml, paths_allowed, read_text, user_path
from rigplan.servers.schema import ServerRecord

BUILTIN_DIR = Path(__file__).parent / "data"
OVERLAY_SUBDIR = "servers"


def _validation_message(where: str, err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(record)"
    return f"{where}: {located_message(first, loc)} ({err.error_count()} problem(s) in this build)"


def parse_server(raw: object, where: str) -> ServerRecord:
    """Validate one build given as a mapping; `where` names it in error messages."""
    if not isinstance(raw, dict):
        raise InvalidSpec(f"{where}: a server build must be a YAML mapping")
    try:
        return ServerRecord.model_validate(raw)
    except ValidationError as exc:
        raise InvalidSpec(_validation_message(where, exc)) from exc


def read_server_file(path: str | Path) -> ServerRecord:
    """One BUILD.yaml (any file name; the id inside is kept)."""
    file = Path(path)
    return parse_server(load_yaml(read_text(file, "server build"), str(file)), str(file))


def _read_folder(folder: Path) -> dict[str, ServerRecord]:
    records: dict[str, ServerRecord] = {}
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.y*ml")):
        record = read_server_file(path)
        if path.stem != record.id:
            raise InvalidSpec(f"{path}: file name must match id '{record.id}'")
        records[record.id] = record
    return records


@lru_cache(maxsize=16)
def _load(overlays: tuple[Path, ...]) -> dict[str, ServerRecord]:
    servers = _read_folder(BUILTIN_DIR)
    for folder in overlays:
        if not folder.is_dir():
            raise InvalidSpec(f"catalog overlay '{folder}' is not a folder; pass a folder holding servers/")
        servers.update(_read_folder(folder / OVERLAY_SUBDIR))
    return servers


def load_servers(overlays: Sequence[str | Path] | None = None) -> dict[str, ServerRecord]:
    """Built-in builds plus overlays from the environment and then `overlays`, by id."""
    folders: Iterable[Path] = (*overlay_dirs_from_env(), *(user_path(p, "--catalog") for p in overlays or ()))
    return dict(_load(tuple(p.resolve() for p in folders)))


def get_server(server_id: str, overlays: Sequence[str | Path] | None = None) -> ServerRecord:
    servers = load_servers(overlays)
    key = normalize_id(server_id)
    if key in servers:
        return servers[key]
    raise UnknownEntry("server build", server_id, servers)


def resolve_build(spec: str, overlays: Sequence[str | Path] | None = None) -> ServerRecord:
    """A BUILD.yaml path (anything ending in .yaml/.yml or an existing file) or a build id."""
    if not paths_allowed():
        if spec.lower().endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec:
            user_path(spec, "build", "send the build's YAML text as build_yaml")
        return get_server(spec, overlays)
    path = Path(spec)
    if spec.lower().endswith((".yaml", ".yml")) or "/" in spec or path.exists():
        path = user_path(spec, "build", "send the build's YAML text as build_yaml")
        if not path.exists():
            raise InvalidSpec(f"build file '{spec}' not found")
        return read_server_file(path)
    return get_server(spec, overlays)
