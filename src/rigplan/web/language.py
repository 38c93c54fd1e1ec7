"""The language of the API's answers: `?lang=zh` (or `en`), else the request's Accept-Language, else English.

The routes answer in English, as the CLI's `--json` does; this middleware translates the sentences of a JSON
answer (rigplan.i18n.PROSE_KEYS: verdicts, lint findings and hints, assumptions, labels, error details) on the
way out. Keys, codes, ids and numbers are never changed, so the page's logic reads the same fields in
either language. Answers say `Content-Language` and `Vary: Accept-Language`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rigplan import i18n


def request_language(scope: Scope) -> str:
    """`lang` in the query string wins over the Accept-Language header."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("lang"):
        return i18n.normalize(query["lang"][-1])
    headers = dict(scope.get("headers") or [])
    return i18n.from_accept_language(headers.get(b"accept-language", b"").decode("latin-1"))


class TranslateAnswers:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/api/"):
            await self.app(scope, receive, send)
            return
        lang = request_language(scope)
        if lang == "en":
            await self.app(scope, receive, _with_language_headers(send, "en"))
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def translating_send(msg: Message) -> None:
            nonlocal start
            if msg["type"] == "http.response.start":
                start = msg
                return
            if msg["type"] != "http.response.body" or start is None:
                await send(msg)
                return
            chunks.append(msg.get("body", b""))
            if msg.get("more_body"):
                return
            body = _translated(b"".join(chunks), dict(start.get("headers", [])), lang)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await _with_language_headers(send, lang)({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, translating_send)


def _translated(body: bytes, headers: dict[bytes, bytes], lang: str) -> bytes:
    if not headers.get(b"content-type", b"").startswith(b"application/json"):
        return body
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body
    translated = i18n.translate_data(data, lang)
    try:
        return json.dumps(translated, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: sent as a JSON escape
        return json.dumps(translated, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _with_language_headers(send: Send, lang: str) -> Send:
    async def wrapped(msg: Message) -> None:
        if msg["type"] == "http.response.start":
            headers = [*msg.get("headers", []), (b"content-language", b"zh-CN" if lang == "zh" else b"en"),
                       (b"vary", b"Accept-Language")]
            msg = {**msg, "headers": headers}
        await send(msg)

    return wrapped
