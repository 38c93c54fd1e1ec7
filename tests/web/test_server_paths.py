"""Over HTTP a request never names a file on the server: a path in any path-taking field is a 400, and
the file system is not touched to answer it."""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient

from rigplan.web.app import create_app

HOSTILE = [
    ("/api/memory", {"model": "/etc/shadow"}, "model"),
    ("/api/memory", {"model": "../../etc/passwd/config.json"}, "model"),
    ("/api/memory", {"model": "llama-3.1-8b", "calibration": "/dev/zero"}, "calibration"),
    ("/api/memory", {"model": "llama-3.1-8b", "calibration": "cal"}, "calibration"),
    ("/api/estimate", {"model": "~/.ssh/id_rsa"}, "model"),
    ("/api/memory", {"model": "llama-3.1-8b", "catalog": ["/tmp"]}, "catalog"),
    ("/api/plan", {"model": "llama-3.1-8b", "tokens": "1B", "server": "/etc/hosts"}, "server"),
    ("/api/tco", {"gpu": "h100-sxm", "offers": "/dev/zero"}, "offers"),
    ("/api/tco", {"gpu": "h100-sxm", "offers": "offers"}, "offers"),
    ("/api/lint", {"build": "/etc/passwd"}, "build"),
    ("/api/lint", {"build": "build.yaml"}, "build"),
]


@pytest.fixture()
def client() -> TestClient:
    return TestClient(create_app())


@pytest.mark.parametrize(("route", "body", "field"), HOSTILE)
def test_a_server_path_is_refused_without_touching_it(client: TestClient, monkeypatch: pytest.MonkeyPatch,
                                                      route: str, body: dict[str, object], field: str) -> None:
    touched: list[str] = []
    real_stat = os.stat

    def watching_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        text = os.fspath(path) if isinstance(path, str | os.PathLike) else str(path)
        if any(str(value) in text for value in body.values() if isinstance(value, str) and "/" in value):
            touched.append(text)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", watching_stat)
    response = client.post(route, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert "no files on the server" in response.json()["detail"] or "catalog folders" in response.json()["detail"]
    assert touched == []


def test_catalog_listings_refuse_a_server_folder(client: TestClient) -> None:
    response = client.get("/api/gpus", params={"catalog": "/etc"})
    assert response.status_code == 400 and response.json()["field"] == "catalog"


def test_ids_and_uploaded_content_still_work(client: TestClient) -> None:
    assert client.post("/api/memory", json={"model": "llama-3.1-8b", "gpu": "h100-sxm"}).status_code == 200
    assert client.post("/api/memory", json={"model": "70b", "gpu": "h100-sxm"}).status_code == 200
