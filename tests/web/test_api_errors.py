"""Bad requests get a 4xx naming the field; oversized bodies 413; searches over the time cap 504; never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rigplan.web.app import allowed_hosts_for, create_app


def check(response: Any, status: int, field: str | None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    data = response.json()
    assert isinstance(data["detail"], str) and data["detail"]
    assert data["field"] == field, data
    return data


@pytest.mark.parametrize(("path", "body", "field", "says"), [
    ("/api/memory", {"model": "llama-3.1-8b", "gpu": "h10"}, "gpu", "did you mean"),
    ("/api/memory", {"model": "llama-3.1-8x"}, "model", "unknown model"),
    ("/api/memory", {"model": "llama-3.1-8b", "gpus": 8, "tp": 3}, "gpus", "tp*pp*cp"),
    ("/api/memory", {"model": "llama-3.1-8b", "gpus": 8, "global_batch": 3}, "global_batch", "multiple"),
    ("/api/memory", {"heads": 8}, "layers", "without MODEL"),
    ("/api/plan", {"model": "llama-3.1-8b", "tokens": "10B", "gpus_min": 64, "gpus_max": 8}, "gpus_min", "exceeds"),
    ("/api/compare", {"model": "llama-3.1-8b", "tokens": "1B", "options": ["8xh100-sxm"]}, "options", "two options"),
    ("/api/compare", {"model": "llama-3.1-8b", "tokens": "1B", "options": ["8xh100-sxm", "eight"]}, "options",
     "COUNTxGPU"),
    ("/api/tco", {"hours": 100, "months": 2}, "hours", "not both"),
    ("/api/tco", {"gpu": "h100-sxm", "tou": "peak"}, "tou", ""),
    ("/api/lint", {"build": "dgx-h10"}, "build", "did you mean"),
    ("/api/lint", {"build": "dgx-h100", "tokens": "1T"}, "for_model", "for_model"),
    ("/api/lint", {"build": "dgx-h100", "for_model": "llama-9"}, "for_model", "unknown model"),
    ("/api/lint", {}, "build", "build"),
    ("/api/lint", {"build_yaml": "id: [unclosed"}, "build_yaml", "build.yaml: not valid YAML"),
    ("/api/memory", {"hf_config": {"model_type": "llama"}}, "hf_config", "config.json: missing key"),
    ("/api/memory", {"hf_config": {"model_type": "llama"}, "model": "llama-3.1-8b"}, "hf_config", "not both"),
    ("/api/models/from-config", {"model_type": "no-such-arch"}, "hf_config", "not supported"),
    ("/api/memory", {"model": "llama-3.1-8b", "lora_rank": 64}, "lora_rank", "only with --method lora/qlora"),
    ("/api/estimate", {"model": "llama-3.1-8b", "gpus": 8, "lora_targets": "all"}, "lora_targets", "--method is full"),
    ("/api/estimate", {"model": "llama-3.1-8b", "method": "lora", "qlora_double_quant": False},
     "qlora_double_quant", "only with --method qlora"),
    ("/api/plan", {"model": "llama-3.1-8b", "tokens": "1B", "lora_targets": "q,k,v"}, "lora_targets",
     "--method is full"),
    ("/api/compare", {"model": "llama-3.1-8b", "tokens": "1B", "options": ["8xh100-sxm", "8xh200-sxm"],
                      "lora_rank": 8}, "lora_rank", "add --method lora"),
])
def test_rigplan_errors_are_400_with_the_field(client, path, body, field, says) -> None:  # type: ignore[no-untyped-def]
    data = check(client.post(path, json=body), 400, field)
    assert says in data["detail"]
    assert "rigplan-web-" not in data["detail"]  # temporary files are named as the user gave them


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/api/memory", {"model": "llama-3.1-8b", "tp": "abc"}, "tp"),
    ("/api/memory", {"model": "llama-3.1-8b", "tp": 0}, "tp"),
    ("/api/memory", {"model": "llama-3.1-8b", "recompute": "sometimes"}, "recompute"),
    ("/api/memory", {"model": "llama-3.1-8b", "no_such_option": 1}, "no_such_option"),
    ("/api/estimate", {"model": "llama-3.1-8b", "nic_gbit": -5}, "nic_gbit"),
    ("/api/plan", {"model": "llama-3.1-8b"}, "tokens"),
    ("/api/plan", {"model": "llama-3.1-8b", "tokens": "1B", "gpu_counts": [8, 0]}, "gpu_counts"),
    ("/api/compare", {"model": "llama-3.1-8b", "tokens": "1B"}, "options"),
    ("/api/tco", {"utilisation": 1.5}, "utilisation"),
    ("/api/tco", {"scenario": "other"}, "scenario"),
    ("/api/lint", {"build": "dgx-h100", "seq": 0}, "seq"),
    ("/api/estimate", {"model": "llama-3.1-8b", "tokens": "lots"}, "tokens"),
    ("/api/estimate", {"model": "llama-3.1-8b", "tokens": 0}, "tokens"),
    ("/api/plan", {"model": "llama-3.1-8b", "tokens": "10B", "deadline": "soon", "gpu": ["l4"]}, "deadline"),
    ("/api/memory", {"model": "llama-3.1-8b", "global_batch": 0}, "global_batch"),
])
def test_validation_errors_are_422_with_the_field(client, path, body, field) -> None:  # type: ignore[no-untyped-def]
    data = check(client.post(path, json=body), 422, field)
    assert data["detail"].startswith(field)
    assert data["errors"] and data["errors"][0]["loc"][:2] == ["body", field]


def test_every_problem_is_listed(client) -> None:  # type: ignore[no-untyped-def]
    data = check(client.post("/api/memory", json={"tp": "x", "pp": "y", "zero": 7}), 422, "zero")
    assert {e["loc"][1] for e in data["errors"]} == {"tp", "pp", "zero"}


def test_malformed_json_and_wrong_body_type_are_422(client) -> None:  # type: ignore[no-untyped-def]
    check(client.post("/api/memory", content=b'{"model": ', headers={"content-type": "application/json"}), 422, None)
    check(client.post("/api/memory", json=[1, 2]), 422, None)


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_posts_that_are_not_json_are_415(client, content_type) -> None:  # type: ignore[no-untyped-def]
    # What a page elsewhere can send without a CORS preflight never runs a computation.
    request = client.build_request("POST", "/api/memory", content=b'{"model": "llama-3.1-8b"}')
    request.headers.pop("content-type", None)
    if content_type:
        request.headers["content-type"] = content_type
    check(client.send(request), 415, None)


def test_unknown_catalog_ids_are_404(client) -> None:  # type: ignore[no-untyped-def]
    assert "did you mean" in check(client.get("/api/models/llama-3.1-8x"), 404, "model_id")["detail"]
    check(client.get("/api/gpus/h10"), 404, "gpu_id")
    check(client.get("/api/servers/dgx-h10"), 404, "server_id")
    check(client.get("/api/gpus", params={"catalog": "/no/such/folder"}), 400, "catalog")
    check(client.get("/api/nowhere"), 404, None)
    check(client.get("/api/memory"), 405, None)


def test_body_over_the_cap_is_413(client) -> None:  # type: ignore[no-untyped-def]
    big = json.dumps({"model": "llama-3.1-8b", "catalog": ["x" * 70_000]}).encode()
    data = check(client.post("/api/memory", content=big, headers={"content-type": "application/json"}), 413, None)
    assert "64 KiB" in data["detail"]

    def chunks():  # type: ignore[no-untyped-def]
        yield b'{"model": "llama-3.1-8b", "catalog": ["'
        for _ in range(80):
            yield b"x" * 1024
        yield b'"]}'

    # Without a Content-Length the body is counted as it arrives.
    streamed = client.post("/api/memory", content=chunks(), headers={"content-type": "application/json"})
    check(streamed, 413, None)


def test_search_over_the_time_cap_is_504_and_says_how_to_narrow_it() -> None:
    slow = TestClient(create_app(time_cap_s=0.001), raise_server_exceptions=False)
    data = check(slow.post("/api/plan", json={"model": "llama-3.1-70b", "tokens": "1T"}), 504, None)
    assert "0.001 s time cap" in data["detail"] and "gpus_max" in data["detail"]


def test_host_header_is_checked_when_bound_to_loopback() -> None:
    app = create_app(allowed_hosts=allowed_hosts_for("127.0.0.1"))
    assert TestClient(app, base_url="http://127.0.0.1:8000").get("/api/health").status_code == 200
    assert TestClient(app, base_url="http://localhost:8000").get("/api/health").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/api/health").status_code == 400
    assert allowed_hosts_for("0.0.0.0") is None


def test_a_body_that_repeats_the_lora_defaults_under_full_is_answered(client) -> None:  # type: ignore[no-untyped-def]
    """A client that sends a whole dumped request (defaults included) is not refused for the LoRA fields' defaults;
    only a LoRA setting that would change something, and would not, is."""
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "method": "full", "lora_rank": 16, "lora_targets": ["q", "v"],
            "qlora_double_quant": True}
    assert client.post("/api/memory", json=body).status_code == 200
    assert client.post("/api/memory", json={**body, "method": "lora", "lora_rank": 64}).status_code == 200
