"""The work of the HTTP API's computing routes, as it runs inside a worker process (rigplan.web.workers).

`run_job(kind, body, data_dir)` is the one entry point: it runs the route's computation for a
validated request body inside `files.confined(data_dir)` (no file named in a request is read
unless the server has a data folder, and then only inside it), writes an uploaded config.json or
BUILD.yaml to a temporary file it grants, and answers `("ok", JSON bytes)` or
`("error", status, detail, field)`: plain tuples, so that they cross the process boundary.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rigplan import api
from rigplan.catalog.load import load_catalog
from rigplan.cost.scenarios import SEED_GPU_ID, seed_scenario
from rigplan.cost.tco import TcoRequest, build_scenario, tco
from rigplan.errors import RigplanError
from rigplan.estimate.params import count_params
from rigplan.files import confined, grant
from rigplan.flow.compare import compare
from rigplan.flow.estimate import estimate
from rigplan.flow.plan import plan
from rigplan.lint import Workload, lint_build
from rigplan.servers.load import resolve_build
from rigplan.units import parse_count
from rigplan.web.errors import clean_message, field_of, pydantic_payload
from rigplan.web.requests import LintBody, MemoryBody, TcoBody, WithHfConfig, WithJobFile

B = TypeVar("B", bound=BaseModel)


class ApiError(Exception):
    """An answer other than 200, raised anywhere below a route."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field


def _with_files(body: B, work: Callable[[B], Any], fields: Iterable[str]) -> Any:
    """Run `work(body)`; an uploaded config.json (`hf_config`) or BUILD.yaml (`build_yaml`) is written to a
    temporary file whose path goes where the CLI takes a path (MODEL, BUILD). Runs in a worker thread; the
    file lives until the work is done."""
    reject_nul(body.model_dump(exclude={"hf_config"}))
    if isinstance(body, WithJobFile):
        body = _guard(lambda: _with_job_file(body), fields)
    if isinstance(body, WithHfConfig) and body.hf_config is not None:
        if body.model is not None:  # type: ignore[attr-defined]
            raise ApiError(400, "give model or hf_config, not both", "hf_config")
        # rigplan names a config.json's model after its folder, as for a downloaded checkpoint.
        origin = body.hf_config.get("_name_or_path")
        folder_name = _SAFE_NAME.sub("-", origin.rstrip("/").rsplit("/", 1)[-1]).strip("-.")[:MODEL_NAME_CAP] \
            if isinstance(origin, str) else ""
        name = f"{folder_name or 'uploaded-config'}/config.json"
        field, text, target = "hf_config", json.dumps(body.hf_config), "model"
    elif isinstance(body, LintBody) and body.build_yaml is not None:
        if body.build is not None:
            raise ApiError(400, "give build (an id) or build_yaml, not both", "build_yaml")
        name, field, text, target = "build.yaml", "build_yaml", body.build_yaml, "build"
    elif isinstance(body, TcoBody) and body.offers_yaml is not None:
        if body.offers is not None:
            raise ApiError(400, "give offers (a file in the server's data folder) or offers_yaml, not both",
                           "offers_yaml")
        name, field, text, target = "offers.yaml", "offers_yaml", body.offers_yaml, "offers"
    else:
        return _guard(lambda: work(body), fields)
    with tempfile.TemporaryDirectory(prefix="rigplan-web-") as folder:
        path = Path(folder) / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        with grant(path), grant(path.parent):
            result = _guard(lambda: work(body.model_copy(update={target: str(path)})), fields, str(path), field)
        return _replace_in_strings(result, str(path), path.name)


def _with_job_file(body: Any) -> Any:
    """The body with the fields of its megatron_args or torchtitan_config text where the body gives none (the
    merge of the CLI's --megatron-args and --torchtitan-config), revalidated so that the file's framework preset
    applies; the reading's notes go into source_notes."""
    from rigplan.flow.megatron_args import read_megatron_args
    from rigplan.flow.torchtitan_config import read_torchtitan_config

    if body.megatron_args is None and body.torchtitan_config is None:
        return body
    if body.megatron_args is not None and body.torchtitan_config is not None:
        raise ApiError(400, "give megatron_args or torchtitan_config, not both", "torchtitan_config")
    if body.megatron_args is not None:
        flag, imported = "megatron_args", read_megatron_args(body.megatron_args, "megatron_args")
    else:
        flag, imported = "torchtitan_config", read_torchtitan_config(
            body.torchtitan_config, "torchtitan_config", gpus=body.gpus, dp=body.dp, model=body.model)
    given = body.model_dump(exclude_unset=True, exclude={"megatron_args", "torchtitan_config"})
    fields, notes = imported.merged_into(set(given), set(type(body).model_fields) - {"source_notes"}, flag)
    return type(body).model_validate({**given, **fields, "source_notes": [*body.source_notes, *notes]})


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
MODEL_NAME_CAP = 100
"""Longest model name taken from a config.json's _name_or_path (a folder name; file systems allow 255 bytes,
and a 300-character name was an OSError). Hugging Face repository names are at most 96 characters."""


def reject_nul(values: dict[str, Any]) -> None:
    """No text field may hold a NUL character: none is valid in an id, a path or a number, and paths with
    one make the OS calls below raise (a command line cannot carry one, so the CLI never meets it)."""
    for name, value in values.items():
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and "\x00" in item for item in items):
            raise ApiError(400, f"{name}: contains a NUL character", name)


SERVER_PATH_FIELDS = ("model", "catalog", "server", "offers", "build", "calibration")
"""Request fields that the CLI reads as file paths. Without `rigplan serve --data-dir` they take ids only over
HTTP: content comes in the body (hf_config, build_yaml, offers_yaml, an inline calibration object)."""


def _looks_like_path(text: str) -> bool:
    return ("/" in text or "\\" in text or text.startswith((".", "~"))
            or text.lower().endswith((".json", ".yaml", ".yml")))


def refuse_server_paths(values: dict[str, Any]) -> None:
    """400 for a path in any field of SERVER_PATH_FIELDS, decided on the text alone (no file call). Used when
    the server has no data folder; with one, `files.confined` checks each path against it instead."""
    for name in SERVER_PATH_FIELDS:
        value = values.get(name)
        items = value if isinstance(value, list) else [value]
        if name == "catalog" and items and items != [None]:
            raise ApiError(400, "catalog: the HTTP API does not read catalog folders on the server; start "
                                "rigplan serve with RIGPLAN_CATALOG set to use an overlay, or with --data-dir DIR "
                                "to allow folders inside DIR", name)
        always_a_path = name in ("offers", "calibration")  # as text these fields are only ever paths
        if any(isinstance(item, str) and (always_a_path or _looks_like_path(item)) for item in items):
            raise ApiError(400, f"{name}: the HTTP API reads no files on the server; give a catalog id, or send "
                                "the content (hf_config for a config.json, build_yaml for a build, offers_yaml for "
                                "offers, calibration as an object)", name)


def _replace_in_strings(value: Any, old: str, new: str) -> Any:
    """The result with a temporary file's path shown as the name the user gave (config.json, build.yaml)."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replace_in_strings(v, old, new) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace_in_strings(v, old, new) for v in value]
    return value


def _guard(call: Callable[[], Any], fields: Iterable[str], path: str | None = None, path_field: str = "") -> Any:
    try:
        return call()
    except RigplanError as err:
        field = path_field if path and path in str(err) else field_of(err, fields)
        raise ApiError(400, clean_message(str(err), path), field) from err
    except ValidationError as err:
        payload = pydantic_payload(err)
        raise ApiError(400, clean_message(payload["detail"], path), payload["field"]) from err


def _tco(body: TcoBody) -> dict[str, Any]:
    """What `rigplan tco --json` prints (its seed scenario included)."""
    gpu_id = body.gpu or (SEED_GPU_ID if body.scenario == "seed" else "h100-sxm")
    request = TcoRequest.model_validate({**body.model_dump(exclude={"scenario", "gpu", "offers_yaml"}), "gpu": gpu_id})
    if body.scenario == "seed":
        record = load_catalog(request.catalog).gpu(request.gpu)
        seed = seed_scenario(record, build_scenario(request, record), request.gpus)
        return {"scenario": "seed", "currency": str(request.currency), "cny_per_usd": request.fx,
                **seed.to_dict(), "verdict": seed.verdict(request.money)}
    return tco(request).to_dict()


def _lint(body: LintBody) -> dict[str, Any]:
    """What `rigplan lint BUILD --json` prints."""
    if body.build is None:
        raise ApiError(400, "give build (a build id, see /api/servers) or build_yaml", "build")
    if body.for_model is None and (body.method or body.tokens or body.seq):
        raise ApiError(400, "method, tokens and seq describe the for_model workload; give for_model", "for_model")
    workload = None
    if body.for_model is not None:
        if body.tokens is not None:
            parse_count(body.tokens, "--tokens")
        method = body.method or "full"
        workload = Workload(text=f"--for {body.for_model} --method {method}"
                                 + (f" --tokens {body.tokens}" if body.tokens else ""),
                            model=body.for_model, method=method, tokens=body.tokens, seq=body.seq, origin="--for")
    overlays = tuple(body.catalog)
    record = resolve_build(body.build, overlays)
    return lint_build(record, workload=workload, overlays=overlays).to_dict()


def _architecture(body: MemoryBody) -> dict[str, Any]:
    from dataclasses import asdict

    from rigplan.catalog.hf_config import architecture_from_hf_config

    assert body.model is not None
    arch = architecture_from_hf_config(body.model)
    counts = count_params(arch)
    return {"architecture": asdict(arch), "params_total": counts.total, "params_active": counts.active_published,
            "params_active_matmul": counts.active_matmul}


def _request_fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


JOBS: dict[str, Callable[[Any], Any]] = {
    "memory": lambda b: api.memory(b).to_dict(),
    "estimate": lambda b: estimate(b).to_dict(),
    "plan": lambda b: plan(b).to_dict(),
    "compare": lambda b: compare(b, list(b.options)).to_dict(),
    "tco": _tco,
    "lint": _lint,
    "architecture": _architecture,
}
"""Route kind -> the computation on its validated body (what the CLI command runs with the same inputs)."""


def finite(value: Any) -> Any:
    """The same data with inf/nan floats as None (JSON has no Infinity; the CLI prints it anyway)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def to_json_bytes(content: Any) -> bytes:
    """The HTTP answer's body: `json.dumps(..., default=str)` as `--json` does, non-finite numbers as null.
    Text that UTF-8 cannot encode (a lone surrogate read from a file) is sent as JSON escapes instead."""
    data = finite(json.loads(json.dumps(content, default=str)))
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def run_job(kind: str, body: BaseModel, data_dir: str | None) -> tuple[Any, ...]:
    """Run one request's computation; never raises for bad input (see the module docstring). A result comes
    back rendered (`to_json_bytes`), so the server's event loop only forwards bytes."""
    try:
        with confined(data_dir):
            return ("ok", to_json_bytes(_with_files(body, JOBS[kind], _request_fields(type(body)))))
    except ApiError as err:
        return ("error", err.status, err.detail, err.field)
    except RigplanError as err:
        return ("error", 400, str(err), field_of(err, _request_fields(type(body))))
    except MemoryError:
        return ("error", 413, "the computation needs more memory than this server allows one request; "
                              "try a smaller job (fewer GPUs or options, a narrower search)", None)
    except RecursionError:
        return ("error", 400, "the request is nested too deeply", None)
    except OSError as err:  # the server's own temporary files (a full disk); a user's file is an InvalidSpec
        return ("error", 503, f"the server could not write its temporary files ({err.strerror or err}); "
                              "try again later", None)
