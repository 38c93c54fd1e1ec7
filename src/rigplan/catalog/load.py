"""Load the built-in catalog and user overlays (lazily; never at import time).

Overlay folders come from `--catalog DIR` or the RIGPLAN_CATALOG environment variable (several
folders separated by the OS path separator). Each folder may hold `gpus/*.yaml` and
`models/*.yaml`; a record with the id of a built-in one replaces it.

Without overlays the domain values of the built-in records come from a cache of an earlier run's
validated values (catalog/cache.py: keyed by a hash of the record files and the conversion code),
so `rigplan memory` imports neither YAML nor pydantic; the records themselves are read and validated
when a command asks for them (Catalog.gpus / .models). Overlays are read and validated on every run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from rigplan.bounds import located_message
from rigplan.catalog import cache
from rigplan.domain.hardware import Gpu
from rigplan.domain.model import Architecture
from rigplan.errors import InvalidSpec, UnknownEntry
from rigplan.files import load_yaml, read_text, user_path

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from rigplan.catalog.schema import GpuRecord, ModelRecord

BUILTIN_DIR = Path(__file__).parent / "data"
ENV_VAR = "RIGPLAN_CATALOG"

R = TypeVar("R", bound="BaseModel")


class LazyRecords(Mapping[str, R], Generic[R]):
    """Records by id whose ids are known at once and whose pydantic records are read and validated on
    first use (the memory path needs only the domain values, which the cache holds)."""

    def __init__(self, ids: Iterable[str], read: Callable[[], dict[str, R]]) -> None:
        self._ids = list(ids)
        self._read = read
        self._records: dict[str, R] | None = None

    def _all(self) -> dict[str, R]:
        if self._records is None:
            self._records = self._read()
        return self._records

    def __getitem__(self, key: str) -> R:
        return self._all()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._ids if self._records is None else key in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids if self._records is None else self._records)

    def __len__(self) -> int:
        return len(self._ids) if self._records is None else len(self._records)


@dataclass(frozen=True)
class Catalog:
    gpus: Mapping[str, GpuRecord]
    models: Mapping[str, ModelRecord]
    overlay_dirs: tuple[Path, ...] = ()
    gpu_values: Mapping[str, Gpu] | None = None
    """Domain values of the built-in GPUs from the cache (catalog/cache.py); None: from the records."""
    model_values: Mapping[str, Architecture] | None = None

    def gpu(self, gpu_id: str) -> GpuRecord:
        key = self.gpu_id(gpu_id)
        if key in self.gpus:
            return self.gpus[key]
        raise UnknownEntry("gpu", gpu_id, self.gpus)

    def gpu_id(self, gpu_id: str) -> str:
        """The catalog id a GPU name means: the id itself, or the one part whose id extends it by a variant
        (h800 -> h800-sxm, v100 -> v100-32gb; the output names the part in full). A name that several parts
        extend (h100: sxm, pcie, nvl) is left as typed, so that the error lists them."""
        key = normalize_id(gpu_id)
        if key in self.gpus:
            return key
        variants = [k for k in self.gpus if k.startswith(key + "-")]
        return variants[0] if len(variants) == 1 else key

    def model(self, model_id: str) -> ModelRecord:
        key = normalize_id(model_id)
        if key in self.models:
            return self.models[key]
        raise UnknownEntry("model", model_id, self.models)

    def gpu_domain(self, gpu_id: str) -> Gpu:
        """The GPU as the estimators take it (record.to_domain(), from the cache when there is one)."""
        key = self.gpu_id(gpu_id)
        if self.gpu_values is not None and key in self.gpu_values:
            return self.gpu_values[key]
        return self.gpu(gpu_id).to_domain()

    def model_domain(self, model_id: str) -> Architecture:
        """The model as the estimators take it (record.to_domain(), from the cache when there is one)."""
        key = normalize_id(model_id)
        if self.model_values is not None and key in self.model_values:
            return self.model_values[key]
        return self.model(model_id).to_domain()


def normalize_id(text: str) -> str:
    return text.strip().lower().replace("_", "-").replace(" ", "-")


def _format_validation_error(path: Path, err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(record)"
    return f"{path}: {located_message(first, where)} ({err.error_count()} problem(s) in this record)"


def _read_records(folder: Path, schema: type[R]) -> dict[str, R]:
    import yaml
    from pydantic import ValidationError

    safe_loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's when built with it (about 10x)
    records: dict[str, R] = {}
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.y*ml")):
        raw = load_yaml(read_text(path, "catalog record"), str(path), safe_loader)
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


def _validated(overlays: tuple[Path, ...]) -> Catalog:
    from rigplan.catalog.schema import GpuRecord, ModelRecord

    gpus = _read_records(BUILTIN_DIR / "gpus", GpuRecord)
    models = _read_records(BUILTIN_DIR / "models", ModelRecord)
    for folder in overlays:
        if not folder.is_dir():
            raise InvalidSpec(f"catalog overlay '{folder}' is not a folder; pass a folder holding gpus/ and models/")
        gpus.update(_read_records(folder / "gpus", GpuRecord))
        models.update(_read_records(folder / "models", ModelRecord))
    return Catalog(gpus=gpus, models=models, overlay_dirs=overlays)


def _builtin_from_cache() -> Catalog:
    """The built-in catalog with its domain values from the cache, validating and storing them on a miss."""
    key = cache.fingerprint(BUILTIN_DIR)
    cached = cache.load(key) if key else None
    if cached is None:
        catalog = _validated(())
        if key:
            cache.store(key, {k: r.to_domain() for k, r in catalog.gpus.items()},
                        {k: r.to_domain() for k, r in catalog.models.items()})
        return catalog
    gpu_values, model_values = cached
    return Catalog(gpus=LazyRecords(gpu_values, lambda: dict(_builtin_gpus())),
                   models=LazyRecords(model_values, lambda: dict(_builtin_models())),
                   gpu_values=gpu_values, model_values=model_values)


@lru_cache(maxsize=1)
def _builtin_gpus() -> dict[str, GpuRecord]:
    """The built-in GPU records, read and validated the first time a command needs them (a plan prices them and
    never reads the model files, _builtin_models)."""
    from rigplan.catalog.schema import GpuRecord

    return _read_records(BUILTIN_DIR / "gpus", GpuRecord)


@lru_cache(maxsize=1)
def _builtin_models() -> dict[str, ModelRecord]:
    """The built-in model records, read and validated the first time a command needs them."""
    from rigplan.catalog.schema import ModelRecord

    return _read_records(BUILTIN_DIR / "models", ModelRecord)


@lru_cache(maxsize=16)
def _load(overlays: tuple[Path, ...]) -> Catalog:
    if not overlays:
        return _builtin_from_cache()
    return _validated(overlays)


def load_catalog(overlays: Sequence[str | Path] | None = None) -> Catalog:
    """The built-in catalog plus overlays from the environment and then `overlays`."""
    folders: Iterable[Path] = (*overlay_dirs_from_env(), *(user_path(p, "--catalog") for p in overlays or ()))
    return _load(tuple(p.resolve() for p in folders))
