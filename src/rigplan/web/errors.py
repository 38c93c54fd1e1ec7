"""Errors as HTTP answers: `{"detail": message, "field": name}`, never a 500 for bad input.

rigplan raises `RigplanError` subclasses with one-line messages written for the CLI ("--tp 3 ...",
"unknown gpu 'h10'"). The field is found from the error itself: an `UnknownEntry` says its kind,
and an `InvalidSpec` message names its flag (`--global-batch` is the field `global_batch`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from rigplan.bounds import BOUND_ERROR_TYPE
from rigplan.errors import RigplanError, UnknownEntry

_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")
_FIELD_PREFIX = re.compile(r"([a-z][a-z0-9_]*):")
_DEGREE = re.compile(r"\b(tp|pp|vpp|dp|cp|ep|zero)\s*=\s*\d")
_KIND_FIELDS = {"gpu": ("gpu",), "model": ("model", "for_model"), "server build": ("build",)}


def field_of(err: RigplanError, fields: Iterable[str]) -> str | None:
    """The request field an error is about, or None when the message names none."""
    known = set(fields)
    message = str(err)
    if isinstance(err, UnknownEntry):
        names = _KIND_FIELDS.get(err.kind, (err.kind,))
        return next((n for n in names if n in known), None) if known else names[0]
    head = _FIELD_PREFIX.match(message)
    if head and head.group(1) in known:  # "calibration: device: Field required"
        return head.group(1)
    for flag in _FLAG.findall(message):
        name = flag.replace("-", "_")
        aliases = {"nic": "nic_gbit", "for": "for_model", "fx": "fx_cny_per_usd" if "fx_cny_per_usd" in known else "fx",
                   "fsdp": "zero", "no_double_quant": "qlora_double_quant"}
        name = aliases.get(name, name)
        if name in known:
            return name
    match = _DEGREE.search(message)
    if match and match.group(1) in known:
        return match.group(1)
    lowered = message.lower()
    if "option" in lowered and "options" in known:
        return "options"
    if "model" in lowered or "config.json" in lowered:
        return next((n for n in ("model", "for_model") if n in known), None)
    return None


def clean_message(message: str, path: str | None) -> str:
    """Messages about an uploaded file name it (`config.json`, `build.yaml`), not its temporary path."""
    if path:
        message = message.replace(path, path.replace("\\", "/").rsplit("/", 1)[-1])
    return message


def _loc_field(loc: tuple[Any, ...] | list[Any]) -> str | None:
    """('body', 'tp') -> 'tp'; ('body', 'gpu_counts', 0) -> 'gpu_counts'; ('body', 12) (bad JSON) -> None."""
    parts = [p for p in loc if p not in ("body", "query", "path")]
    return parts[0] if parts and isinstance(parts[0], str) else None


def validation_payload(errors: list[Any]) -> dict[str, Any]:
    """422 body from pydantic/FastAPI errors: the first problem as detail, its field, and all of them."""
    clean = []
    for e in errors:
        loc = list(e.get("loc", ()))
        clean.append({"loc": [str(p) for p in loc], "msg": str(e.get("msg", "invalid")),
                      "type": str(e.get("type", ""))})
    if not clean:
        return {"detail": "invalid request", "field": None, "errors": []}
    first = errors[0]
    field = _loc_field(tuple(first.get("loc", ())))
    where = ".".join(p for p in clean[0]["loc"] if p not in ("body", "query", "path")) or "body"
    detail = f"{where}: {clean[0]['msg']}"
    flag = (first.get("ctx") or {}).get("flag") if clean[0]["type"] == BOUND_ERROR_TYPE else None
    if isinstance(flag, str) and clean[0]["msg"].startswith(flag):
        detail = where + clean[0]["msg"][len(flag):]  # "--tp must be >= 1 ..." -> "tp must be >= 1 ..."
    return {"detail": detail, "field": field, "errors": clean}


def pydantic_payload(err: ValidationError) -> dict[str, Any]:
    return validation_payload(list(err.errors(include_url=False)))
