"""The FastAPI app: JSON endpoints over rigplan's facades, and the one-page UI at `/`.

Every route validates its body with rigplan's request models, calls the facade the CLI command
calls, and answers the dict the command prints with `--json` (non-finite numbers, which JSON
cannot hold, become null). Bad input is a 4xx with `{"detail", "field"}`; a request body over the
size cap is a 413; a computation over the time cap is a 504.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigplan.errors import RigplanError, UnknownEntry
from rigplan.files import confined
from rigplan.web import catalog as catalog_views
from rigplan.web.body import CheckJsonBody
from rigplan.web.errors import field_of, validation_payload
from rigplan.web.jobs import SERVER_PATH_FIELDS, ApiError, refuse_server_paths, reject_nul, to_json_bytes
from rigplan.web.language import TranslateAnswers
from rigplan.web.requests import (
    CompareBody,
    ErrorBody,
    EstimateBody,
    LintBody,
    MemoryBody,
    PlanBody,
    TcoBody,
    refuse_inert_peft_fields,
)
from rigplan.web.workers import WORKER_MEMORY_CAP_BYTES, WorkerPool, default_size

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


class RigplanJSON(JSONResponse):
    """`json.dumps(..., default=str)` as `--json` does, with non-finite numbers as null."""

    def render(self, content: Any) -> bytes:
        return to_json_bytes(content)


def _json_bytes(content: bytes) -> Response:
    """A computation's answer, already rendered by the worker (rigplan.web.jobs.to_json_bytes)."""
    return Response(content, media_type="application/json")


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


ALL_FIELDS = set().union(*(set(m.model_fields) for m in (MemoryBody, EstimateBody, PlanBody, CompareBody, TcoBody,
                                                           LintBody)))


def create_app(*, time_cap_s: float = TIME_CAP_S, body_cap_bytes: int = BODY_CAP_BYTES,
               allowed_hosts: list[str] | None = None, workers: int | None = None,
               data_dir: str | Path | None = None, worker_memory_bytes: int = WORKER_MEMORY_CAP_BYTES) -> FastAPI:
    """The app. `allowed_hosts`: Host-header allow-list (see `allowed_hosts_for`); None checks nothing.
    `workers`: computing processes (default one per CPU). `data_dir`: the one folder whose files requests
    may name (model, catalog, offers, build, calibration); None: requests name no server file at all."""
    root = str(Path(data_dir).resolve()) if data_dir is not None else None
    pool = WorkerPool(workers or default_size(), time_cap_s=time_cap_s, memory_cap_bytes=worker_memory_bytes)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        await asyncio.to_thread(pool.start)  # the workers are ready before the first request
        yield
        await asyncio.to_thread(pool.close)

    app = FastAPI(
        title="rigplan", version=_version(), lifespan=lifespan, default_response_class=RigplanJSON,
        docs_url=None, redoc_url=None,  # their pages load scripts from a CDN; the schema is at /openapi.json
        description="Plan GPUs for LLM training: memory, speed, plan, compare, TCO and the catalog. Each endpoint "
                    "answers the `--json` object of the matching `rigplan` command for the same inputs.",
    )
    app.state.pool = pool

    async def compute(what: str, body: BaseModel, kind: str, hint: str = "try a smaller job") -> Any:
        refuse_inert_peft_fields(body)
        if root is None:  # answered here, before any worker or file call
            reject_nul(body.model_dump(exclude={"hf_config"}))
            refuse_server_paths(body.model_dump(include=set(SERVER_PATH_FIELDS)))
        answer = await pool.run(kind, body, root)
        if answer[0] == "ok":
            return answer[1]
        _, status, detail, field = answer
        if status == 504:
            detail = f"{what} {detail}; {hint}"
        raise ApiError(status, detail, field)

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

    @app.head("/api/health", include_in_schema=False)
    def health_head() -> Any:
        return health()

    @app.get("/api/health", tags=["meta"])
    def health() -> Any:
        """Whether the server can compute (503 when a worker is stuck past the time cap or lost and not yet
        replaced), its workers, version and caps."""
        workers = pool.health()
        ok = workers.pop("ok")
        return RigplanJSON({"status": "ok" if ok else "degraded", "version": _version(), "time_cap_s": time_cap_s,
                            "body_cap_bytes": body_cap_bytes, "data_dir": root is not None, "pool": workers},
                           status_code=200 if ok else 503)

    @app.post("/api/memory", tags=["jobs"], responses=ERROR_RESPONSES)
    async def memory_route(body: MemoryBody) -> Any:
        """`rigplan memory --json`: per-GPU peak memory by part, whether it fits, the largest batch/sequence."""
        return _json_bytes(await compute("memory", body, "memory"))

    @app.post("/api/estimate", tags=["jobs"], responses=ERROR_RESPONSES)
    async def estimate_route(body: EstimateBody) -> Any:
        """`rigplan estimate --json`: step time, tokens/s, MFU, time-to-train, GPU-hours, energy."""
        return _json_bytes(await compute("estimate", body, "estimate"))

    @app.post("/api/plan", tags=["search"], responses=ERROR_RESPONSES)
    async def plan_route(body: PlanBody) -> Any:
        """`rigplan plan --json`: ranked options, the time-vs-cost Pareto front and every priced candidate."""
        return _json_bytes(await compute("the plan search", body, "plan", narrow))

    @app.post("/api/compare", tags=["search"], responses=ERROR_RESPONSES)
    async def compare_route(body: CompareBody) -> Any:
        """`rigplan compare MODEL OPTION... --json`: concrete COUNTxGPU options side by side."""
        return _json_bytes(await compute("compare", body, "compare",
                                         "compare fewer options"))

    @app.post("/api/tco", tags=["cost"], responses=ERROR_RESPONSES)
    async def tco_route(body: TcoBody) -> Any:
        """`rigplan tco --json`: cloud rental vs owning, break-even, cost per useful GPU-hour."""
        return _json_bytes(await compute("tco", body, "tco"))

    @app.post("/api/lint", tags=["servers"], responses=ERROR_RESPONSES)
    async def lint_route(body: LintBody) -> Any:
        """`rigplan lint BUILD --json`: findings about a server build (and a workload on it). A build with
        errors is still a 200 whose `ok` is false (the CLI exits 1)."""
        return _json_bytes(await compute("lint", body, "lint"))

    @app.get("/api/servers", tags=["servers"], responses=CATALOG_RESPONSES)
    def servers(catalog: Annotated[list[str], Query()] = [],  # noqa: B006
                category: Literal["article", "corrected", "standard", "user"] | None = None) -> Any:
        """`rigplan servers --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.servers_list(catalog, category), catalog=catalog,
                                         root=root))

    @app.get("/api/servers/{server_id}", tags=["servers"], responses=CATALOG_RESPONSES)
    def server_show(server_id: str, catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan servers show ID --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.server_show(server_id, catalog), "server_id",
                                         catalog=catalog, server_id=server_id, root=root))

    @app.post("/api/models/from-config", tags=["catalog"], responses=ERROR_RESPONSES)
    async def from_config(config: Annotated[dict[str, Any], Body(description="A Hugging Face config.json")]) -> Any:
        """Read a config.json as `rigplan memory ./config.json` would: the architecture and its parameters."""
        body = MemoryBody(hf_config=config)
        return _json_bytes(await compute("reading config.json", body, "architecture"))

    @app.get("/api/models", tags=["catalog"], responses=CATALOG_RESPONSES)
    def models(catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006 (FastAPI reads the default)
        """`rigplan models --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.models_list(catalog), catalog=catalog, root=root))

    @app.get("/api/models/{model_id}", tags=["catalog"], responses=CATALOG_RESPONSES)
    def model_show(model_id: str, catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan models show ID --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.model_show(model_id, catalog), "model_id",
                                         catalog=catalog, model_id=model_id, root=root))

    @app.get("/api/gpus", tags=["catalog"], responses=CATALOG_RESPONSES)
    def gpus(catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan gpus --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.gpus_list(catalog), catalog=catalog, root=root))

    @app.get("/api/gpus/{gpu_id}", tags=["catalog"], responses=CATALOG_RESPONSES)
    def gpu_show(gpu_id: str, catalog: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006
        """`rigplan gpus show ID --json`."""
        return RigplanJSON(_catalog_call(lambda: catalog_views.gpu_show(gpu_id, catalog), "gpu_id",
                                         catalog=catalog, gpu_id=gpu_id, root=root))

    @app.get("/", include_in_schema=False)
    def index() -> Any:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(CheckJsonBody)
    app.add_middleware(TranslateAnswers)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyCap, limit=body_cap_bytes)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    return app


def _catalog_call(call: Callable[[], Any], id_field: str | None = None, *, root: str | None = None,
                  **values: Any) -> Any:
    reject_nul(values)
    if root is None:
        refuse_server_paths(values)
    try:
        with confined(root):
            return call()
    except UnknownEntry as err:
        raise ApiError(404 if id_field else 400, str(err), id_field or "catalog") from err
    except RigplanError as err:
        raise ApiError(400, str(err), "catalog") from err


@functools.cache
def _version() -> str:
    """The installed version, read once (importlib.metadata reads the METADATA file on every call: health did)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rigplan")
    except PackageNotFoundError:
        return "0"
