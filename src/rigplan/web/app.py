"""The FastAPI app: JSON endpoints over rigplan's facades, and the one-page UI at `/`.

Every route validates its body with rigplan's request models, calls the facade the CLI command
calls, and answers the dict the command prints with `--json` (non-finite numbers, which JSON
cannot hold, become null). Bad input is a 4xx with `{"detail", "field"}`; a request body over the
size cap is a 413; a computation over the time cap is a 504.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigplan import api
from rigplan.catalog.load import load_catalog
from rigplan.cost.scenarios import SEED_GPU_ID, seed_scenario
from rigplan.cost.tco import TcoRequest, build_scenario, tco
from rigplan.errors import RigplanError, UnknownEntry
from rigplan.estimate.params import count_params
from rigplan.flow.estimate import estimate
from rigplan.flow.plan import compare, plan
from rigplan.lint import Workload, lint_build
from rigplan.servers.load import resolve_build
from rigplan.units import parse_count
from rigplan.web import catalog as catalog_views
from rigplan.web.errors import clean_message, field_of, pydantic_payload, validation_payload
from rigplan.web.requests import (
    CompareBody,
    ErrorBody,
    EstimateBody,
    LintBody,
    MemoryBody,
    PlanBody,
    TcoBody,
    WithHfConfig,
)

STATIC_DIR = Path(__file__).parent / "static"
BODY_CAP_BYTES = 64 * 1024
TIME_CAP_S = 20.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")

B = TypeVar("B", bound=BaseModel)

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Bad input: `detail` says why, `field` names the request field"},
    413: {"model": ErrorBody, "description": "Request body over the size cap"},
    415: {"model": ErrorBody, "description": "The body is not sent as application/json"},
    422: {"model": ErrorBody, "description": "Validation failed: `field` is the first bad field, `errors` all of them"},
    504: {"model": ErrorBody, "description": "Computation over the time cap"},
}
CATALOG_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: ERROR_RESPONSES[400], 404: {"model": ErrorBody, "description": "No such catalog id"},
    422: ERROR_RESPONSES[422],
}


class ApiError(Exception):
    """An answer other than 200, raised anywhere below a route."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field


def finite(value: Any) -> Any:
    """The same data with inf/nan floats as None (JSON has no Infinity; the CLI prints it anyway)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


class RigplanJSON(JSONResponse):
    """`json.dumps(..., default=str)` as `--json` does, with non-finite numbers as null."""

    def render(self, content: Any) -> bytes:
        return json.dumps(finite(json.loads(json.dumps(content, default=str))), ensure_ascii=False,
                          allow_nan=False, separators=(",", ":")).encode("utf-8")


def error_response(status: int, detail: str, field: str | None = None, **extra: Any) -> RigplanJSON:
    return RigplanJSON({"detail": detail, "field": field, **extra}, status_code=status)


class BodyCap:
    """413 for a request body over `limit` bytes (by Content-Length, or counted as it streams); 415 for a
    POST to the API that is not `application/json` (so that a page elsewhere cannot send one without a
    CORS preflight, which this server never grants)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body over the {self.limit // 1024} KiB cap"
        headers = dict(scope.get("headers", []))
        if scope.get("method") == "POST" and scope.get("path", "").startswith("/api/"):
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if kind != b"application/json" and not kind.endswith(b"+json"):
                await error_response(415, "send the request body as JSON, with Content-Type: application/json")(
                    scope, receive, send)
                return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    size = int(value)
                except ValueError:
                    await error_response(400, "Content-Length is not a number")(scope, receive, send)
                    return
                if size > self.limit:
                    await error_response(413, message)(scope, receive, send)
                    return
        received = 0
        started = answered = False

        async def capped_receive() -> Message:
            nonlocal received, answered
            if answered:
                return {"type": "http.disconnect"}
            msg = await receive()
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > self.limit and not started:
                    # Answer 413 now; the app sees a disconnected client and its own answer is dropped.
                    await error_response(413, message)(scope, receive, send)
                    answered = True
                    return {"type": "http.disconnect"}
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            if answered:
                return
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        await self.app(scope, capped_receive, tracking_send)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                headers = list(msg.get("headers", []))
                headers += [(b"x-content-type-options", b"nosniff"), (b"content-security-policy", CSP.encode()),
                            (b"referrer-policy", b"no-referrer")]
                msg = {**msg, "headers": headers}
            await send(msg)

        await self.app(scope, receive, with_headers)


def allowed_hosts_for(host: str) -> list[str] | None:
    """Host-header allow-list for a server bound to `host`: loopback names only when bound to loopback
    (so a web page elsewhere cannot reach the API by DNS rebinding); no check when bound elsewhere."""
    if host in LOOPBACK_HOSTS or host.startswith("127."):
        return ["127.0.0.1", "localhost", "[::1]", "::1", host]
    return None


def _request_fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


ALL_FIELDS = set().union(*(_request_fields(m) for m in (MemoryBody, EstimateBody, PlanBody, CompareBody, TcoBody,
                                                        LintBody)))


def _with_files(body: B, work: Callable[[B], Any], fields: Iterable[str]) -> Any:
    """Run `work(body)`; an uploaded config.json (`hf_config`) or BUILD.yaml (`build_yaml`) is written to a
    temporary file whose path goes where the CLI takes a path (MODEL, BUILD). Runs in a worker thread; the
    file lives until the work is done."""
    _reject_nul(body.model_dump(exclude={"hf_config"}))
    _refuse_server_paths(body.model_dump(include=set(SERVER_PATH_FIELDS)))
    if isinstance(body, WithHfConfig) and body.hf_config is not None:
        if body.model is not None:  # type: ignore[attr-defined]
            raise ApiError(400, "give model or hf_config, not both", "hf_config")
        # rigplan names a config.json's model after its folder, as for a downloaded checkpoint.
        origin = body.hf_config.get("_name_or_path")
        folder_name = _SAFE_NAME.sub("-", origin.rstrip("/").rsplit("/", 1)[-1]).strip("-.") \
            if isinstance(origin, str) else ""
        name = f"{folder_name or 'uploaded-config'}/config.json"
        field, text, target = "hf_config", json.dumps(body.hf_config), "model"
    elif isinstance(body, LintBody) and body.build_yaml is not None:
        if body.build is not None:
            raise ApiError(400, "give build (an id) or build_yaml, not both", "build_yaml")
        name, field, text, target = "build.yaml", "build_yaml", body.build_yaml, "build"
    else:
        return _guard(lambda: work(body), fields)
    with tempfile.TemporaryDirectory(prefix="rigplan-web-") as folder:
        path = Path(folder) / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        result = _guard(lambda: work(body.model_copy(update={target: str(path)})), fields, str(path), field)
        return _replace_in_strings(result, str(path), path.name)


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _reject_nul(values: dict[str, Any]) -> None:
    """No text field may hold a NUL character: none is valid in an id, a path or a number, and paths with
    one make the OS calls below raise (a command line cannot carry one, so the CLI never meets it)."""
    for name, value in values.items():
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and "\x00" in item for item in items):
            raise ApiError(400, f"{name}: contains a NUL character", name)


SERVER_PATH_FIELDS = ("model", "catalog", "server", "offers", "build", "calibration")
"""Request fields that the CLI reads as file paths. Over HTTP they take ids only: content comes in the
body (hf_config, build_yaml, an inline calibration object), so no request can name a file on the host."""


def _looks_like_path(text: str) -> bool:
    return ("/" in text or "\\" in text or text.startswith((".", "~"))
            or text.lower().endswith((".json", ".yaml", ".yml")))


def _refuse_server_paths(values: dict[str, Any]) -> None:
    """400 for a path in any field of SERVER_PATH_FIELDS, before anything touches the file system."""
    for name in SERVER_PATH_FIELDS:
        value = values.get(name)
        items = value if isinstance(value, list) else [value]
        if name == "catalog" and items and items != [None]:
            raise ApiError(400, "catalog: the HTTP API does not read catalog folders on the server; start "
                                "rigplan serve with RIGPLAN_CATALOG set to use an overlay", name)
        always_a_path = name in ("offers", "calibration")  # as text these fields are only ever paths
        if any(isinstance(item, str) and (always_a_path or _looks_like_path(item)) for item in items):
            raise ApiError(400, f"{name}: the HTTP API reads no files on the server; give a catalog id, or send "
                                "the content (hf_config for a config.json, build_yaml for a build, calibration "
                                "as an object)", name)


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


def create_app(*, time_cap_s: float = TIME_CAP_S, body_cap_bytes: int = BODY_CAP_BYTES,
               allowed_hosts: list[str] | None = None, workers: int = 2) -> FastAPI:
    """The app. `allowed_hosts`: Host-header allow-list (see `allowed_hosts_for`); None checks nothing."""
    pool: list[ThreadPoolExecutor] = []
    """The worker threads of the computations: made on first use, ended with the app's lifespan."""

    def executor() -> ThreadPoolExecutor:
        if not pool:
            pool.append(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rigplan-web"))
        return pool[0]

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        yield
        while pool:
            pool.pop().shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="rigplan", version=_version(), lifespan=lifespan, default_response_class=RigplanJSON,
        docs_url=None, redoc_url=None,  # their pages load scripts from a CDN; the schema is at /openapi.json
        description="Plan GPUs for LLM training: memory, speed, plan, compare, TCO and the catalog. Each endpoint "
                    "answers the `--json` object of the matching `rigplan` command for the same inputs.",
    )

    async def capped(what: str, hint: str, func: Callable[[], Any]) -> Any:
        future = executor().submit(func)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=time_cap_s)
        except TimeoutError:
            future.cancel()
            raise ApiError(504, f"{what} took longer than the {time_cap_s:g} s time cap; {hint}") from None

    def compute(what: str, body: B, work: Callable[[B], Any], hint: str = "try a smaller job") \
            -> Awaitable[Any]:
        fields = _request_fields(type(body))
        return capped(what, hint, lambda: _with_files(body, work, fields))

    narrow = ("narrow the search: choose GPUs (gpu), lower gpus_max, or give exact gpu_counts")

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, err: ApiError) -> Response:
        return error_response(err.status, err.detail, err.field)

    @app.exception_handler(RigplanError)
    async def _rigplan_error(_: Request, err: RigplanError) -> Response:
        return error_response(400, str(err), field_of(err, ALL_FIELDS))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, err: RequestValidationError) -> Response:
        return RigplanJSON(validation_payload(list(err.errors())), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, err: StarletteHTTPException) -> Response:
        return error_response(err.status_code, str(err.detail), None)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, err: Exception) -> Response:
        return error_response(500, f"internal error ({type(err).__name__}): {err}; please report it")

    @app.get("/api/health", tags=["meta"])
    def health() -> dict[str, Any]:
        """Liveness, version and the caps."""
        return {"status": "ok", "version": _version(), "time_cap_s": time_cap_s, "body_cap_bytes": body_cap_bytes}

    @app.post("/api/memory", tags=["jobs"], responses=ERROR_RESPONSES)
    async def memory_route(body: MemoryBody) -> Any:
        """`rigplan memory --json`: per-GPU peak memory by part, whether it fits, the largest batch/sequence."""
        return RigplanJSON(await compute("memory", body, lambda b: api.memory(b).to_dict()))

    @app.post("/api/estimate", tags=["jobs"], responses=ERROR_RESPONSES)
    async def estimate_route(body: EstimateBody) -> Any:
        """`rigplan estimate --json`: step time, tokens/s, MFU, time-to-train, GPU-hours, energy."""
        return RigplanJSON(await compute("estimate", body, lambda b: estimate(b).to_dict()))

    @app.post("/api/plan", tags=["search"], responses=ERROR_RESPONSES)
    async def plan_route(body: PlanBody) -> Any:
        """`rigplan plan --json`: ranked options, the time-vs-cost Pareto front and every priced candidate."""
        return RigplanJSON(await compute("the plan search", body, lambda b: plan(b).to_dict(), narrow))

    @app.post("/api/compare", tags=["search"], responses=ERROR_RESPONSES)
    async def compare_route(body: CompareBody) -> Any:
        """`rigplan compare MODEL OPTION... --json`: concrete COUNTxGPU options side by side."""
        return RigplanJSON(await compute("compare", body, lambda b: compare(b, list(b.options)).to_dict(),
                                         "compare fewer options"))

    @app.post("/api/tco", tags=["cost"], responses=ERROR_RESPONSES)
    async def tco_route(body: TcoBody) -> Any:
        """`rigplan tco --json`: cloud rental vs owning, break-even, cost per useful GPU-hour."""
        return RigplanJSON(await compute("tco", body, _tco))

    @app.post("/api/lint", tags=["servers"], responses=ERROR_RESPONSES)
    async def lint_route(body: LintBody) -> Any:
        """`rigplan lint BUILD --json`: findings about a server build (and a workload on it). A build with
        errors is still a 200 whose `ok` is false (the CLI exits 1)."""
        return RigplanJSON(await compute("lint", body, _lint))

    @app.get("/api/servers", tags=["servers"], responses=CATALOG_RESPONSES)
    def servers(catalog: Annotated[list[str], Query()] = [],  # noqa: B006
                category: Literal["article", "corrected", "standard", "user"] | None = None) -> Any:
        """`rigplan servers --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.servers_list(catalog, category), catalog=catalog))

    @app.get("/api/servers/{server_id}", tags=["servers"], responses=CATALOG_RESPONSES)
    def server_show(server_id: str, catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan servers show ID --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.server_show(server_id, catalog), "server_id",
                                         catalog=catalog, server_id=server_id))

    @app.post("/api/models/from-config", tags=["catalog"], responses=ERROR_RESPONSES)
    async def from_config(config: Annotated[dict[str, Any], Body(description="A Hugging Face config.json")]) -> Any:
        """Read a config.json as `rigplan memory ./config.json` would: the architecture and its parameters."""
        body = MemoryBody(hf_config=config)
        return RigplanJSON(await compute("reading config.json", body, _architecture))

    @app.get("/api/models", tags=["catalog"], responses=CATALOG_RESPONSES)
    def models(catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006 (FastAPI reads the default)
        """`rigplan models --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.models_list(catalog), catalog=catalog))

    @app.get("/api/models/{model_id}", tags=["catalog"], responses=CATALOG_RESPONSES)
    def model_show(model_id: str, catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan models show ID --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.model_show(model_id, catalog), "model_id",
                                         catalog=catalog, model_id=model_id))

    @app.get("/api/gpus", tags=["catalog"], responses=CATALOG_RESPONSES)
    def gpus(catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan gpus --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.gpus_list(catalog), catalog=catalog))

    @app.get("/api/gpus/{gpu_id}", tags=["catalog"], responses=CATALOG_RESPONSES)
    def gpu_show(gpu_id: str, catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan gpus show ID --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.gpu_show(gpu_id, catalog), "gpu_id",
                                         catalog=catalog, gpu_id=gpu_id))

    @app.get("/", include_in_schema=False)
    def index() -> Any:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyCap, limit=body_cap_bytes)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    return app


def _catalog_call(call: Callable[[], Any], id_field: str | None = None, **values: Any) -> Any:
    _reject_nul(values)
    _refuse_server_paths(values)
    try:
        return call()
    except UnknownEntry as err:
        raise ApiError(404 if id_field else 400, str(err), id_field or "catalog") from err
    except RigplanError as err:
        raise ApiError(400, str(err), "catalog") from err


def _tco(body: TcoBody) -> dict[str, Any]:
    """What `rigplan tco --json` prints (its seed scenario included)."""
    gpu_id = body.gpu or (SEED_GPU_ID if body.scenario == "seed" else "h100-sxm")
    request = TcoRequest.model_validate({**body.model_dump(exclude={"scenario", "gpu"}), "gpu": gpu_id})
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rigplan")
    except PackageNotFoundError:
        return "0"
