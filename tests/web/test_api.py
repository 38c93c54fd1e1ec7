"""The HTTP API answers exactly the `--json` object of the matching CLI command for the same inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from rigplan.catalog.load import ENV_VAR
from rigplan.cli.catalog import gpus_group, models_group
from rigplan.cli.compare import compare_command
from rigplan.cli.estimate import estimate_command
from rigplan.cli.lint import lint_command
from rigplan.cli.memory import memory_command
from rigplan.cli.plan import plan_command
from rigplan.cli.servers import servers_group
from rigplan.cli.tco import tco_command
from rigplan.web.jobs import finite

HF_DIR = Path(__file__).parents[1] / "data" / "hf"


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("RIGPLAN_GPU", raising=False)


def cli_json(command: click.Command, args: list[str], exit_codes: tuple[int, ...] = (0,)) -> Any:
    out = CliRunner().invoke(command, args, terminal_width=200)
    assert out.exit_code in exit_codes, out.output
    # The CLI prints Infinity where JSON has no such number; the API sends null (see docs/web.md).
    return finite(json.loads(out.stdout))


def without_timing(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["stats"] = {k: v for k, v in data["stats"].items() if k != "elapsed_s"}
    return data


CASES: list[tuple[str, click.Command, list[str], str, str, dict[str, Any] | None]] = [
    ("memory-fsdp", memory_command,
     ["llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--fsdp", "--recompute", "selective", "--seq", "8192"],
     "POST", "/api/memory",
     {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 8, "zero": 3, "recompute": "selective", "seq": 8192}),
    ("memory-qlora-find-max", memory_command,
     ["llama-3.1-8b", "--gpu", "rtx-4090", "--method", "qlora", "--seq", "2048", "--find-max", "--lora-targets", "all"],
     "POST", "/api/memory",
     {"model": "llama-3.1-8b", "gpu": "rtx-4090", "method": "qlora", "seq": 2048, "find_max": True,
      "lora_targets": "all"}),
    ("memory-shape-flags", memory_command,
     ["--layers", "24", "--hidden", "2048", "--heads", "16", "--vocab", "50000", "--gpu", "a100-80gb-sxm"],
     "POST", "/api/memory", {"layers": 24, "hidden": 2048, "heads": 16, "vocab": 50000, "gpu": "a100-80gb-sxm"}),
    ("estimate-gpt3", estimate_command,
     ["gpt-3-175b", "--gpu", "a100-80gb-sxm", "--gpus", "1024", "--tp", "8", "--pp", "8", "--global-batch", "1536",
      "--recompute", "full", "--attention", "eager", "--tokens", "300B"],
     "POST", "/api/estimate",
     {"model": "gpt-3-175b", "gpu": "a100-80gb-sxm", "gpus": 1024, "tp": 8, "pp": 8, "global_batch": 1536,
      "recompute": "full", "attention": "eager", "tokens": "300B"}),
    ("estimate-network", estimate_command,
     ["llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "8", "--zero", "1", "--nic", "400",
      "--tokens", "1T", "--precision", "fp8"],
     "POST", "/api/estimate",
     {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": 64, "tp": 8, "zero": 1, "nic_gbit": 400, "tokens": "1T",
      "precision": "fp8"}),
    ("estimate-moe-routing", estimate_command,
     ["qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "16", "--tp", "2", "--ep", "16", "--etp", "1",
      "--sequence-parallel", "--moe-imbalance", "1.2", "--a2a-overlap", "--capacity-factor", "1.5"],
     "POST", "/api/estimate",
     {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 16, "tp": 2, "ep": 16, "etp": 1, "sequence_parallel": True,
      "moe_imbalance": 1.2, "a2a_overlap": True, "capacity_factor": 1.5}),
    ("memory-framework", memory_command,
     ["llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--framework", "torchtitan", "--loss", "fused"],
     "POST", "/api/memory",
     {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 8, "framework": "torchtitan", "loss": "fused"}),
    ("estimate-framework", estimate_command,
     ["llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "4", "--framework", "nemo", "--zero", "0"],
     "POST", "/api/estimate",
     {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": 64, "tp": 4, "framework": "nemo", "zero": 0}),
    ("compare", compare_command,
     ["llama-2-7b", "8xa100-80gb-sxm", "4xh100-sxm", "--tokens", "2B", "--method", "lora"],
     "POST", "/api/compare",
     {"model": "llama-2-7b", "options": ["8xa100-80gb-sxm", "4xh100-sxm"], "tokens": "2B", "method": "lora"}),
    ("models", models_group, ["--json"], "GET", "/api/models", None),
    ("models-show", models_group, ["show", "deepseek-v3", "--json"], "GET", "/api/models/deepseek-v3", None),
    ("gpus", gpus_group, ["--json"], "GET", "/api/gpus", None),
    ("gpus-show", gpus_group, ["show", "h100-sxm", "--json"], "GET", "/api/gpus/h100-sxm", None),
    ("tco", tco_command, ["--gpu", "h100-sxm", "--gpus", "64", "--licence", "nvaie"], "POST", "/api/tco",
     {"gpu": "h100-sxm", "gpus": 64, "licence": "nvaie"}),
    ("tco-cny-never", tco_command,
     ["--gpu", "a100-80gb-sxm", "--cloud-price", "2", "--currency", "cny", "--months", "6", "--utilisation", "0.5"],
     "POST", "/api/tco",
     {"gpu": "a100-80gb-sxm", "cloud_price": 2, "currency": "cny", "months": 6, "utilisation": 0.5}),
    ("tco-seed", tco_command, ["--scenario", "seed"], "POST", "/api/tco", {"scenario": "seed"}),
    ("lint-claims", lint_command, ["article-mid"], "POST", "/api/lint", {"build": "article-mid"}),
    ("lint-workload", lint_command, ["dgx-h100", "--for", "llama-3.1-70b", "--tokens", "1T"], "POST", "/api/lint",
     {"build": "dgx-h100", "for_model": "llama-3.1-70b", "tokens": "1T"}),
    ("servers", servers_group, ["--json"], "GET", "/api/servers", None),
    ("servers-show", servers_group, ["show", "dgx-h100", "--json"], "GET", "/api/servers/dgx-h100", None),
]


@pytest.mark.parametrize(("command", "args", "method", "path", "body"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_api_equals_cli_json(client, command, args, method, path, body) -> None:  # type: ignore[no-untyped-def]
    if "--json" not in args:
        args = [*args, "--json"]
    expected = cli_json(command, args, exit_codes=(0, 1) if command is lint_command else (0,))
    response = client.post(path, json=body) if method == "POST" else client.get(path)
    assert response.status_code == 200, response.text
    assert response.json() == expected


def test_plan_equals_cli_json(client) -> None:  # type: ignore[no-untyped-def]
    expected = cli_json(plan_command, ["llama-3.1-8b", "--tokens", "10B", "--gpu", "a100-80gb-sxm", "--gpus-max", "16",
                                       "--budget", "50k", "--json"])
    response = client.post("/api/plan", json={"model": "llama-3.1-8b", "tokens": "10B", "gpu": ["a100-80gb-sxm"],
                                              "gpus_max": 16, "budget": "50k"})
    assert response.status_code == 200, response.text
    got = response.json()
    assert got["ranked"] and got["pareto"] and got["candidates"]
    assert without_timing(got) == without_timing(expected)


def test_hf_config_content_is_read_like_a_config_file(client) -> None:  # type: ignore[no-untyped-def]
    path = HF_DIR / "llama-3.1-8b" / "config.json"
    expected = cli_json(memory_command, [str(path), "--gpu", "h100-sxm", "--json"])
    response = client.post("/api/memory", json={"hf_config": json.loads(path.read_text()), "gpu": "h100-sxm"})
    assert response.status_code == 200, response.text
    got = response.json()
    assert got["per_gpu"] == expected["per_gpu"] and got["fits"] == expected["fits"]
    assert got["model"]["source"] == "hf-config" and got["model"]["params_total"] == expected["model"]["params_total"]
    assert "model read from config.json" in got["assumptions"]
    assert "rigplan-web-" not in response.text  # the temporary path never shows


def test_from_config_returns_the_architecture(client) -> None:  # type: ignore[no-untyped-def]
    config = json.loads((HF_DIR / "mixtral-8x7b" / "config.json").read_text())
    response = client.post("/api/models/from-config", json=config)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["architecture"]["moe"]["num_experts"] == 8
    assert data["params_active"] < data["params_total"]


def test_lint_build_yaml_text(client) -> None:  # type: ignore[no-untyped-def]
    from rigplan.servers.load import BUILTIN_DIR

    text = (BUILTIN_DIR / "dgx-h100.yaml").read_text(encoding="utf-8")
    by_text = client.post("/api/lint", json={"build_yaml": text})
    by_id = client.post("/api/lint", json={"build": "dgx-h100"})
    assert by_text.status_code == by_id.status_code == 200, by_text.text
    assert by_text.json() == by_id.json()


def test_answers_are_strict_json(client) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/api/tco", json={"gpu": "h100-sxm", "cloud_price": 0.3})
    assert response.status_code == 200

    def reject(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads(response.text, parse_constant=reject)
    assert data["breakeven"][0]["breakeven_utilisation"] is None  # inf in Python: owning never wins


def test_openapi_schema_lists_every_endpoint(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/openapi.json").json()
    for path in ("/api/memory", "/api/estimate", "/api/plan", "/api/compare", "/api/tco", "/api/lint", "/api/models",
                 "/api/models/{model_id}", "/api/gpus", "/api/gpus/{gpu_id}", "/api/servers",
                 "/api/servers/{server_id}", "/api/models/from-config", "/api/health"):
        assert path in schema["paths"], path
    memory = schema["components"]["schemas"]["MemoryBody"]["properties"]
    assert {"model", "gpu", "tp", "zero", "recompute", "find_max", "hf_config"} <= set(memory)


def test_page_and_assets_are_served_with_a_strict_policy(client) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http://" not in page.text and "https://" not in page.text  # nothing from a CDN
    for asset in ("/static/app.js", "/static/style.css"):
        response = client.get(asset)
        assert response.status_code == 200
        assert "https://" not in response.text
    assert client.get("/api/health").json()["status"] == "ok"
