"""Hostile requests: server paths, devices, FIFOs, absurd numbers, deep JSON. Each is a clean 4xx, never a
5xx, and a path named in a request is refused without the file being opened (rigplan.files)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from rigplan.errors import InvalidSpec
from rigplan.files import confined
from rigplan.web.app import create_app

LLAMA = {"model": "llama-3.1-8b"}
DATA = Path(__file__).resolve().parents[1] / "data"
SRC = Path(__file__).resolve().parents[2] / "src" / "rigplan"
DEEPSEEK = json.loads((DATA / "hf" / "deepseek-v3" / "config.json").read_text())
SMALL = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10,
         "intermediate_size": 8}
BUILD = yaml.safe_load((SRC / "servers" / "data" / "dgx-h100.yaml").read_text())
OFFER = "- provider: X\n  pricing: on-demand\n  usd_per_gpu_hour: {price}\n  as_of: {date}\n  source: a quote\n"


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


PATHS = ["/etc/shadow", "/dev/zero", "/proc/self/environ", "../../etc/passwd", "./config.json", "~/x.json"]

HOSTILE: list[tuple[str, dict[str, Any]]] = [
    *[("/api/memory", {"model": p}) for p in PATHS],
    *[("/api/tco", {"offers": p}) for p in PATHS],
    *[("/api/lint", {"build": p}) for p in PATHS if p.endswith((".json",)) or "/" in p],
    *[("/api/memory", {**LLAMA, "catalog": [p]}) for p in ("/etc", "/dev", "/tmp")],
    ("/api/tco", {"server": "/etc/shadow.yaml"}),
    ("/api/estimate", {**LLAMA, "calibration": "/etc/shadow"}),
    ("/api/memory", {"hf_config": {"model_type": "llama", "hidden_size": 1e30, "num_hidden_layers": 2,
                                   "num_attention_heads": 2, "vocab_size": 10}}),
    ("/api/memory", {"hf_config": {"model_type": "llama", "hidden_size": -4096, "num_hidden_layers": 2,
                                   "num_attention_heads": 2, "vocab_size": 10}}),
    ("/api/memory", {"hidden": 10**6, "vocab": 10**7, "layers": 10, "heads": 10}),
    ("/api/memory", {"hidden": 65536, "vocab": 4_000_000, "layers": 10_000, "heads": 64}),
    ("/api/memory", {**LLAMA, "global_batch": 0}),
    ("/api/memory", {**LLAMA, "tp": 0}),
    ("/api/memory", {**LLAMA, "gpus": 99_999_999}),
    ("/api/memory", {**LLAMA, "seq": -1}),
    ("/api/estimate", {**LLAMA, "tokens": 0}),
    ("/api/estimate", {**LLAMA, "tokens": "1e30"}),
    ("/api/estimate", {**LLAMA, "tokens": "-5"}),
    ("/api/estimate", {**LLAMA, "tokens": "NaN"}),
    ("/api/estimate", {**LLAMA, "nic_gbit": -1}),
    ("/api/plan", {**LLAMA, "tokens": "1T", "deadline": "-3d"}),
    ("/api/plan", {**LLAMA, "tokens": "1T", "budget": "-5"}),
    ("/api/plan", {**LLAMA, "tokens": "1T", "budget": "1e300"}),
    ("/api/plan", {**LLAMA, "tokens": "1T", "gpu_counts": [0]}),
    ("/api/compare", {**LLAMA, "tokens": "1B", "options": ["0xh100-sxm", "8xh100-sxm"]}),
    ("/api/compare", {**LLAMA, "tokens": "1B", "options": ["99999999xh100-sxm", "8xh100-sxm"]}),
    ("/api/tco", {"hours": -5}),
    ("/api/tco", {"gpu_price": 1e300}),
    ("/api/tco", {"offers_yaml": "not yaml: ["}),
    ("/api/tco", {"offers_yaml": "- provider: x\n  usd_per_gpu_hour: .nan\n"}),
    ("/api/tco", {"offers_yaml": "[" * 20000 + "]" * 20000}),
    ("/api/lint", {"build_yaml": "a:\n" + "  " * 2000 + "b: 1"}),
    ("/api/lint", {"build_yaml": "[" * 30000}),
    # beyond the list: the smallest float, keys and prices past any real value, lists and nesting
    ("/api/tco", {"years": 5e-324}),
    ("/api/tco", {"utilisation": 5e-324}),
    ("/api/tco", {"hours": 5e-324}),
    ("/api/estimate", {**LLAMA, "gpus": 16, "tokens": "1T", "nic_gbit": 5e-324}),
    ("/api/estimate", {**LLAMA, "tokens": "1T", "preemptions_per_node_month": -1}),
    ("/api/memory", {**LLAMA, "fsdp_prefetch": 65}),
    ("/api/memory", {**LLAMA, "recompute": "full", "recompute_every": 0}),
    ("/api/plan", {**LLAMA, "tokens": "1T", "budget": "0.5"}),
    ("/api/plan", {**LLAMA, "tokens": "1T", "gpus_per_node": 0}),
    ("/api/compare", {**LLAMA, "tokens": "1B", "options": ["8xh100-sxm"] * 40}),
    ("/api/memory", {"hf_config": {**DEEPSEEK, "num_nextn_predict_layers": 2**31}}),
    ("/api/memory", {"hf_config": {**SMALL, "vocab_size": float("nan")}}),
    ("/api/memory", {"hf_config": {**SMALL, "num_hidden_layers": "12"}}),
    ("/api/memory", {"hf_config": {**SMALL, "intermediate_size": True}}),
    ("/api/memory", {"hf_config": {**SMALL, "sliding_window": 1e30, "model_type": "mistral"}}),
    ("/api/memory", {"hf_config": {**SMALL, "head_dim": [64]}}),
    ("/api/memory", {"hf_config": {**SMALL, "model_type": {"a": 1}}}),
    ("/api/estimate", {**LLAMA, "calibration": {"a": 1}}),
    ("/api/estimate", {**LLAMA, "calibration": _nested(40)}),
    ("/api/models/from-config", _nested(40)),
    ("/api/tco", {"offers_yaml": OFFER.format(price="2", date="2026-13-45")}),
    ("/api/tco", {"offers_yaml": OFFER.format(price="1e308", date="2026-01-01")}),
    ("/api/tco", {"offers_yaml": OFFER.format(price=".inf", date="2026-01-01")}),
    ("/api/lint", {"build_yaml": yaml.safe_dump({**BUILD, "max_power_w": 5e-324})}),
    ("/api/lint", {"build_yaml": yaml.safe_dump({**BUILD, "nodes": 10**30})}),
    ("/api/lint", {"build": "dgx-h100", "for_model": "llama-3.1-8b", "tokens": "1e30"}),
    ("/api/lint", {"build": "dgx-h100", "for_model": "llama-3.1-8b", "seq": 10**9}),
]


@pytest.fixture(scope="module")
def hostile_client() -> TestClient:
    return TestClient(create_app(workers=2), raise_server_exceptions=False)


@pytest.mark.parametrize(("path", "body"), HOSTILE)
def test_hostile_request_is_a_clean_4xx(hostile_client, path, body) -> None:  # type: ignore[no-untyped-def]
    # json.dumps writes NaN as the token NaN, which Python's parser (the server's) reads back
    response = hostile_client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    detail = response.json()["detail"]
    assert "\n" not in detail and "Traceback" not in detail
    assert "root:" not in detail  # nothing of the host's files comes back


MALFORMED = [
    "[" * 30000 + "]" * 30000, '{"model": "' + "[" * 100 + '"', b'{"model": "\xff\xfe"}',
    '{"model": "\\ud800"}', '{"model": "llama-3.1-8b", "tp": "\\udcff"}', '{"model": "llama-3.1-8b", "\\ud800": 1}',
    '{"hf_config": {"model_type": "\\udfff"}}', '{"model": "llama-3.1-8b", "tokens": "\\ud83d"}',
    '{"model": "llama-3.1-8b", "tp": ' + "9" * 5000 + "}", '{"a":' * 1000 + "1" + "}" * 1000,
    '{"model": "llama-3.1-8b", "catalog": [' + ", ".join(['"x"'] * 3000) + "]}",
]
"""Bodies that are not one clean JSON object: deep, truncated, not UTF-8, lone surrogates (JSON's escapes for half
a character, which no answer quoting them could encode), a 5,000-digit number."""


@pytest.mark.parametrize("body", MALFORMED)
def test_malformed_bodies_are_a_4xx(hostile_client, body) -> None:  # type: ignore[no-untyped-def]
    for route in ("/api/memory", "/api/estimate?lang=zh"):
        response = hostile_client.post(route, content=body, headers={"content-type": "application/json"})
        assert 400 <= response.status_code < 500, (response.status_code, response.text)
        assert "\n" not in response.json()["detail"]


def test_a_lone_surrogate_is_named_with_its_field(hostile_client) -> None:  # type: ignore[no-untyped-def]
    response = hostile_client.post("/api/estimate", content='{"model": "llama-3.1-8b", "tokens": "1\\udcffT"}',
                                   headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["field"] == "tokens"
    assert response.json()["detail"] == ("tokens: text holds a lone surrogate (\\udcff), which is not a Unicode "
                                         "character")
    deep = hostile_client.post("/api/estimate", json={**LLAMA, "calibration": _nested(40)})
    assert deep.status_code == 400 and deep.json() == {"detail": "the request body is nested more than 32 levels deep",
                                                         "field": "calibration"}
    zh = hostile_client.post("/api/estimate?lang=zh", json={**LLAMA, "calibration": _nested(40)})
    assert zh.json()["detail"] == "请求体嵌套超过 32 层"


def test_a_long_model_name_in_a_config_is_shortened_not_an_error(hostile_client) -> None:  # type: ignore[no-untyped-def]
    # _name_or_path names the temporary folder of an uploaded config.json: 300 characters was an OSError (a 500).
    response = hostile_client.post("/api/memory", json={"hf_config": {**SMALL, "_name_or_path": "a" * 300}})
    assert response.status_code == 200 and response.json()["model"]["id"] == "a" * 100


def test_repeated_gpus_are_searched_once(hostile_client) -> None:  # type: ignore[no-untyped-def]
    # 5,000 copies of one GPU id made the search 5,000 times longer (a 504 at the time cap).
    response = hostile_client.post("/api/plan", json={**LLAMA, "tokens": "1T", "gpu": ["h100-sxm"] * 5000,
                                                      "gpus_max": 16})
    assert response.status_code == 200
    assert response.json()["stats"]["gpu_types"] == 1


def test_server_paths_are_refused_before_any_file_call(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from rigplan.catalog.load import load_catalog
    from rigplan.flow.model_source import resolve_model

    catalog = load_catalog()

    def touched(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the file system was touched: {args}")

    for name in ("stat", "lstat", "open", "scandir"):
        monkeypatch.setattr(os, name, touched)
    with confined(None):
        for path in ("/etc/shadow", "/dev/zero", "../x.json", "cfg/config.json"):
            with pytest.raises(InvalidSpec, match="reads no files named in a request"):
                resolve_model(path, catalog)


def test_data_dir_allows_files_inside_it_only(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "tiny"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, '
                                        '"num_attention_heads": 4, "vocab_size": 1000, "intermediate_size": 512}')
    os.mkfifo(tmp_path / "data" / "fifo.json")
    client = TestClient(create_app(workers=1, data_dir=tmp_path / "data"), raise_server_exceptions=False)
    assert client.post("/api/memory", json={"model": "tiny/config.json"}).status_code == 200
    outside = client.post("/api/memory", json={"model": "../../etc/passwd.json"})
    assert outside.status_code == 400 and "outside the server's data folder" in outside.json()["detail"]
    fifo = client.post("/api/memory", json={"model": "fifo.json"})
    assert fifo.status_code == 400 and "not a regular file" in fifo.json()["detail"]
    (tmp_path / "secret.json").write_text("{}")
    (tmp_path / "data" / "link.json").symlink_to(tmp_path / "secret.json")
    link = client.post("/api/memory", json={"model": "link.json"})
    assert link.status_code == 400 and "outside the server's data folder" in link.json()["detail"]
    (tmp_path / "data" / "big.json").write_bytes(b" " * (5 * 2**20))
    big = client.post("/api/memory", json={"model": "big.json"})
    assert big.status_code == 400 and "cap" in big.json()["detail"]


def test_health_answers_head_and_reports_the_pool(hostile_client) -> None:  # type: ignore[no-untyped-def]
    assert hostile_client.head("/api/health").status_code == 200
    data = hostile_client.get("/api/health").json()
    assert data["status"] == "ok" and data["pool"]["workers"] == 2


def test_a_bare_model_name_is_never_a_file_over_http(tmp_path: Path) -> None:
    # Over HTTP only the spelling makes MODEL a file: a catalog id or an unknown bare name is never looked up
    # as a folder, not even inside the server's data folder.
    (tmp_path / "llama-3.1-8b").mkdir()
    (tmp_path / "llama-3.1-8b" / "config.json").write_text('{"model_type": "llama", "hidden_size": 256, '
                                                           '"num_hidden_layers": 2, "num_attention_heads": 4, '
                                                           '"vocab_size": 1000, "intermediate_size": 512}')
    (tmp_path / "src").mkdir()
    for data_dir in (None, tmp_path):
        client = TestClient(create_app(workers=1, data_dir=data_dir), raise_server_exceptions=False)
        catalog = client.post("/api/memory", json={"model": "llama-3.1-8b"})
        assert catalog.status_code == 200 and catalog.json()["model"]["source"] == "catalog"
        src = client.post("/api/memory", json={"model": "src"})
        assert src.status_code == 400 and src.json()["detail"].startswith("unknown model 'src'")
        assert "folder" not in src.json()["detail"]
    folder = client.post("/api/memory", json={"model": "./llama-3.1-8b"})  # spelled as a path, inside the data dir
    assert folder.status_code == 200 and folder.json()["model"]["source"] == "hf-config"
