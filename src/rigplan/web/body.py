"""A JSON request body is checked before FastAPI parses it: what pydantic and the worker pool cannot take
is a one-line 400 here instead of a 500 further in.

- nesting deeper than BODY_NESTING_CAP levels (a 900-deep `calibration` object parsed, but could not be
  pickled for a worker: RecursionError);
- a string holding a lone UTF-16 surrogate (JSON's `"\\ud800"`): it is no Unicode character, so no
  message or answer that quotes it can be encoded as UTF-8 (pydantic's own error messages failed on it);
- a body that is not UTF-8 (or UTF-16/32) text, nested too deeply for Python's parser, or holding an
  integer of more than 4,300 digits (Python's limit for converting one).

A body that is simply not JSON is left to FastAPI (a 422 naming the position), as before.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

BODY_NESTING_CAP = 32
"""Deepest nesting of objects and lists a request body may have. The deepest real body is a config.json
in `hf_config` (body > hf_config > text_config > rope_scaling > a list: 5 levels)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def body_problem(data: Any) -> tuple[str, str | None] | None:
    """(message, field) for the first thing in a parsed body that no route can take, or None."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > BODY_NESTING_CAP:
            return (f"the request body is nested more than {BODY_NESTING_CAP} levels deep", path[0])
        if isinstance(value, str):
            bad = _SURROGATE.search(value)
            if bad:
                where = ".".join(path) or "body"
                return (f"{where}: text holds a lone surrogate ({ascii(bad.group())[1:-1]}), which is not a "
                        "Unicode character", path[0] if path else None)
        elif isinstance(value, dict):
            for key, item in value.items():
                if _SURROGATE.search(key):
                    return (f"{'.'.join(path) or 'body'}: a key holds a lone surrogate ({key!a}), which is "
                            "not a Unicode character", path[0] if path else None)
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, str(index))) for index, item in enumerate(value))
    return None


def parse_problem(raw: bytes) -> tuple[str, str | None] | None:
    """What is wrong with a raw JSON body, or None when it is fine (or plain malformed JSON, left to FastAPI)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    except UnicodeDecodeError:
        return ("the request body is not UTF-8 text", None)
    except RecursionError:
        return (f"the request body is nested more than {BODY_NESTING_CAP} levels deep", None)
    except ValueError:  # sys.get_int_max_str_digits(): 4,300 by default
        return (f"the request body holds a number of more than {sys.get_int_max_str_digits():,} digits", None)
    return body_problem(data)


class CheckJsonBody:
    """400 for a POST body under /api/ that `parse_problem` refuses; other requests pass untouched. The body
    (already capped by BodyCap, outside this middleware) is read once and handed on unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not scope.get("path", "").startswith("/api/"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left, or BodyCap answered 413
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        problem = parse_problem(raw)
        if problem is not None:
            detail, field = problem
            # ensure_ascii (the default): a surrogate quoted in the detail is sent as a JSON escape
            body = json.dumps({"detail": detail, "field": field}, separators=(",", ":")).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, _replay([{"type": "http.request", "body": raw, "more_body": False}], receive), send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
