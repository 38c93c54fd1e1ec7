"""--json has one shape rule for every command: one object; "not set" is null, never a sentinel like 0."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli

COMMANDS = [
    ["memory", "llama-3.1-8b", "--gpu", "h100-sxm"],
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8"],
    ["plan", "llama-3.2-1b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "8"],
    ["compare", "llama-2-7b", "8xa100-80gb-sxm", "4xh100-sxm", "--tokens", "2B", "--method", "lora"],
    ["tco", "--gpu", "h100-sxm", "--gpus", "8"],
    ["lint", "dgx-h100"],
    ["servers"], ["servers", "show", "dgx-h100"],
    ["models"], ["models", "show", "llama-3.1-8b"],
    ["gpus"], ["gpus", "show", "h100-sxm"],
    ["tco", "--scenario", "seed"],
    ["validate", "--case", "torchtitan-h100-202412-t1-fsdp"],
    ["export", "llama-3.1-8b", "--gpus", "8", "--fsdp", "--framework", "torchtitan"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_json_is_one_object(args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code in (0, 1), result.output
    assert isinstance(json.loads(result.output), dict)


@pytest.mark.parametrize(("args", "key"), [(["models"], "models"), (["gpus"], "gpus"), (["servers"], "servers")])
def test_listings_are_an_object_holding_the_list(args: list[str], key: str) -> None:
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert list(data) == [key] and len(data[key]) > 5


def test_unset_global_batch_is_null_not_zero() -> None:
    data = json.loads(CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"]).output)
    assert data["job"]["global_batch"] is None
    data = json.loads(CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                               "--global-batch", "64", "--json"]).output)
    assert data["job"]["global_batch"] == 64


SENTINELS = {"global_batch": 0, "seq_len": 0, "gpus": 0, "tokens": 0, "budget_usd": 0, "deadline_s": 0}
"""Keys whose 0 would mean "not set": never printed as 0 (null instead)."""


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_no_sentinel_for_not_set(args: list[str]) -> None:
    found: list[str] = []

    def walk(value: object, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in SENTINELS and v == SENTINELS[k] and not isinstance(v, bool):
                    found.append(f"{path}.{k}")
                walk(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(json.loads(CliRunner().invoke(cli, [*args, "--json"]).output), "")
    assert found == []
