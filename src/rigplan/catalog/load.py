"""Load the built-in catalog and user overlays (lazily; never at import time).

Overlay folders come from `--catalog DIR` or the RIGPLAN_CATALOG environment variable (several
folders separated by the OS path separator). Each folder may hold `gpus/*.yaml` and
`models/*.yaml`; a record with the id of a built-in one replaces it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rigplan.catalog.schema import GpuRecord, ModelRecord
from rigplan.errors import InvalidSpec, UnknownEntry
from rigplan.files import load_yaml, read_text, user_path

BUILTIN_DIR = Path(__file__).parent / "data"
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it (about 10x faster), else the pure-Python one."""
ENV_VAR = "RIGPLAN_CATALOG"

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, GpuRecord]
    models: dict[str, ModelRecord]
    overlay_dirs: tuple[Path, ...] = ()

    def gpu(self, gpu_id: str) -> GpuRecord:
        key = normalize_id(gpu_id)
        if key in self.gpus:
            return self.gpus[key]
        raise UnknownEntry("gpu", gpu_id, self.gpus)

    def model(self, model_id: str) -> ModelRecord:
        key = normalize_id(model_id)
        if key in self.models:
            return self.models[key]
        raise UnknownEntry("model", model_id, self.models)


def normalize_id(text: str) -> str:
    return text.strip().lower().replace("_", "-").replace(" ", "-")


def _format_validation_error(path: Path, err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(record)"
    return f"{path}: {where}: {first['msg']} ({err.error_count()} problem(s) in this record)"


def _read_records(folder: Path, schema: type[R]) -> dict[str, R]:
    records: dict[str, R] = {}
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.y*ml")):
        raw = load_yaml(read_text(path, "catalog record"), str(path), _SafeLoader)
        if not isinstance(raw, dict):
            raise InvalidSpec(f"{path}: a catalog record must be a YAML mapping")
        try:
            record = schema.model_validate(raw)
        except ValidationError as exc:
            raise InvalidSpec(_format_validation_error(path, exc)) from exc
        record_id = record.id  # type: ignore[attr-defined]
        if path.stem != record_id:
            raise InvalidSpec(f"{path}: file name must match id '{record_id}'")
        records[record_id] = record
    return records


def overlay_dirs_from_env() -> tuple[Path, ...]:
    value = os.environ.get(ENV_VAR, "")
    return tuple(Path(p) for p in value.split(os.pathsep) if p)


@lru_cache(maxsize=16)
def _load(overlays: tuple[Path, ...]) -> Catalog:
    gpus = _read_records(BUILTIN_DIR / "gpus", GpuRecord)
    models = _read_records(BUILTIN_DIR / "models", ModelRecord)
    for folder in overlays:
        if not folder.is_dir():
            raise InvalidSpec(f"catalog overlay '{folder}' is not a folder; pass a folder holding gpus/ and models/")
        gpus.update(_read_records(folder / "gpus", GpuRecord))
        models.update(_read_records(folder / "models", ModelRecord))
    return Catalog(gpus=gpus, models=models, overlay_dirs=overlays)


def load_catalog(overlays: Sequence[str | Path] | None = None) -> Catalog:
    """The built-in catalog plus overlays from the environment and then `overlays`."""
    folders: Iterable[Path] = (*overlay_dirs_from_env(), *(user_path(p, "--catalog") for p in overlays or ()))
    return _load(tuple(p.resolve() for p in folders))
