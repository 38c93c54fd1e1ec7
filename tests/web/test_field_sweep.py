"""Every field of every computing route, one at a time, set to values of the wrong kind or past any range: each
answer is a 200 or a one-line 4xx, never a 5xx. The schema fuzz (test_fuzz.py) draws values at random; this
sweep tries the same few hostile values on every field, so that a field added later is covered at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel

from rigplan.web.app import create_app
from rigplan.web.requests import CompareBody, EstimateBody, LintBody, MemoryBody, PlanBody, TcoBody

LLAMA = {"model": "llama-3.1-8b", "gpu": "h100-sxm"}
ROUTES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "/api/memory": (MemoryBody, LLAMA),
    "/api/estimate": (EstimateBody, {**LLAMA, "gpus": 16, "tokens": "1B"}),
    "/api/plan": (PlanBody, {"model": "llama-3.1-8b", "gpu": ["h100-sxm"], "tokens": "1B", "gpus_max": 16}),
    "/api/compare": (CompareBody, {"model": "llama-3.1-8b", "tokens": "1B",
                                   "options": ["8xh100-sxm", "8xa100-80gb-sxm"]}),
    "/api/tco": (TcoBody, {"gpu": "h100-sxm"}),
    "/api/lint": (LintBody, {"build": "dgx-h100"}),
}
VALUES: list[Any] = ["x", -1, 5e-324, 1e308, float("nan"), [], {"a": 1}, True, "\x00"]
"""A word where a number goes, a negative, the smallest and largest floats, NaN (JSON's NaN token, which Python's
parser reads), a list, an object, a boolean, a NUL character."""


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(workers=2), raise_server_exceptions=False)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_every_field_takes_hostile_values_without_a_5xx(client: TestClient, route: str) -> None:
    model, base = ROUTES[route]
    assert client.post(route, json=base).status_code == 200
    failures = []
    for field in model.model_fields:
        for value in VALUES:
            body = json.dumps({**base, field: value})
            response = client.post(route, content=body, headers={"content-type": "application/json"})
            detail = response.json().get("detail") if response.status_code != 200 else None
            if response.status_code >= 500 or (detail is not None and "\n" in str(detail)):
                failures.append((field, value, response.status_code, response.text[:200]))
    assert not failures, failures
