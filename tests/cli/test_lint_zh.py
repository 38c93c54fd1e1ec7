"""`rigplan --lang zh lint`: every finding of every rule in Chinese, in each of its branches. Each case edits a
built-in build (a YAML copy in a temporary folder) so that one branch fires, and checks that branch's code is
reported and that no English is left (lang_check.py: names, record text and option values may stay)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from lang_check import english_words

from rigplan.cli.main import cli

DATA = Path(__file__).resolve().parents[2] / "src" / "rigplan" / "servers" / "data"


def _build(base: str, **changes: Any) -> dict[str, Any]:
    record = yaml.safe_load((DATA / f"{base}.yaml").read_text(encoding="utf-8"))
    record = copy.deepcopy(record)
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = record
        for key in path:
            node = node[key]
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    record["id"] = f"{base}-variant"
    return record


H100_NODE = "article-cluster-fixed"
MID = "article-mid-fixed"
TOWER = "workstation-4x-rtx5090"
VARIANTS: dict[str, tuple[dict[str, Any], str, str, list[str]]] = {
    # name: (build, the code, a piece of its English finding, extra CLI args)
    "psu below the load": (
        _build(MID, psu={"count": 2, "watts_each": 1500, "redundancy": "1+1"}),
        "psu.capacity",
        "just to run",
        [],
    ),
    "psu without headroom": (
        _build(MID, psu={"count": 2, "watts_each": 2600, "redundancy": "1+1"}),
        "psu.capacity",
        "headroom",
        [],
    ),
    "no spare psu": (
        _build(MID, psu={"count": 2, "watts_each": 3000, "redundancy": "2+0"}),
        "psu.redundancy",
        "No spare supply",
        [],
    ),
    "no psu": (_build(MID, psu=None), "psu.capacity", "PSUs not stated", []),
    "liquid cluster": (_build(H100_NODE, cooling="liquid"), "cooling.airflow", "Liquid-cooled", []),
    "rack over the air limit": (_build(H100_NODE, nodes_per_rack=3), "power.rack", "air-cooling limit", []),
    "rack over the plan": (
        _build(H100_NODE, nodes_per_rack=1, max_power_w=26_000),
        "power.rack",
        "planning figure",
        [],
    ),
    "rack within": (_build(H100_NODE, nodes_per_rack=2), "power.rack", "per rack (", []),
    "tower on one circuit": (
        _build(TOWER, max_power_w=1200, psu={"count": 2, "watts_each": 2000, "redundancy": "1+1"}),
        "power.rack",
        "fits one 120 V",
        [],
    ),
    "tower over 230 V": (
        _build(TOWER, max_power_w=4000, psu={"count": 3, "watts_each": 2000, "redundancy": "2+1"}),
        "power.rack",
        "separate circuits",
        [],
    ),
    "budget below the build": (
        _build(MID, budget={"min": 1000, "max": 60000, "currency": "USD", "source": "s"}),
        "budget.price",
        "the build is priced",
        [],
    ),
    "budget, no build price": (_build(MID, price=None), "budget.price", "no whole-build price", []),
    "no budget": (_build(MID, budget=None), "budget.price", "No budget stated", []),
    "budget in yuan below the GPUs": (
        _build(MID, budget={"max": 100000, "currency": "CNY", "source": "s"}),
        "budget.price",
        "before chassis",
        [],
    ),
    "little host RAM": (
        _build(MID, memory={"ram_gib": 128, "kind": "DDR4"}),
        "memory.host_ram",
        "less RAM than GPU memory",
        [],
    ),
    "no host RAM": (_build(MID, memory=None), "memory.host_ram", "Host RAM not stated", []),
    "thin scale-out": (
        _build(
            H100_NODE,
            nics=[
                {
                    "model": "ConnectX-6",
                    "count": 1,
                    "ports": 1,
                    "gbit_per_s": 200,
                    "kind": "infiniband",
                    "role": "scale-out",
                }
            ],
        ),
        "network.scale_out",
        "under a quarter",
        [],
    ),
    "half the scale-out": (
        _build(
            H100_NODE,
            nics=[
                {
                    "model": "ConnectX-7",
                    "count": 4,
                    "ports": 1,
                    "gbit_per_s": 400,
                    "kind": "infiniband",
                    "role": "scale-out",
                }
            ],
        ),
        "network.scale_out",
        "reference design.",
        [],
    ),
    "slow checkpoint drive": (
        _build(MID, storage=[{"kind": "hdd", "count": 1, "capacity_tb": 20}]),
        "storage.checkpoint",
        "over the 10 min target",
        ["--for", "llama-3.1-70b"],
    ),
    "small data drives": (
        _build(MID, storage=[{"kind": "nvme", "count": 1, "capacity_tb": 0.5}]),
        "storage.checkpoint",
        "Data drives hold",
        [],
    ),
    "no storage": (_build(MID, storage=[]), "storage.checkpoint", "No storage recorded", []),
    "lanes over the board": (
        _build(TOWER, cpu__pcie_lanes=48, cpu__pcie_gen=4),
        "pcie.lanes",
        "on this board give",
        [],
    ),
    "sxm stated as bridges": (_build(MID, gpus__link="nvlink-bridge"), "gpu.link", "not through bridges", []),
    "pcie card on nvlink": (
        _build(TOWER, gpus={"id": "a100-80gb-pcie", "count": 4, "link": "nvlink"}),
        "gpu.link",
        "2-way bridges",
        [],
    ),
    "bridged pairs": (
        _build(TOWER, gpus={"id": "a100-80gb-pcie", "count": 4, "link": "nvlink-bridge"}),
        "gpu.link",
        "NVLink pairs",
        [],
    ),
    "odd bridge": (
        _build(TOWER, gpus={"id": "a100-80gb-pcie", "count": 3, "link": "nvlink-bridge"}),
        "gpu.link",
        "no bridge partner",
        [],
    ),
    "infinity fabric on nvidia": (_build(TOWER, gpus__link="infinity-fabric"), "gpu.link", "no Infinity Fabric", []),
    "offload fits": (_build(TOWER), "workload.fit", "It fits only with", ["--for", "llama-2-13b", "--tokens", "20B"]),
    "offload needs more RAM": (
        _build(TOWER, memory={"ram_gib": 32, "kind": "DDR5"}),
        "workload.fit",
        "Even ZeRO-3",
        ["--for", "llama-2-13b"],
    ),
    "nothing fits": (
        _build(TOWER),
        "workload.fit",
        "CPU offload does not",
        ["--for", "llama-3.1-405b", "--tokens", "1T"],
    ),
    "lora on a small card": (
        _build(TOWER),
        "workload.fit",
        "lora training",
        ["--for", "llama-3.1-70b", "--method", "lora"],
    ),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_lint_finding_is_chinese(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build, code, english, extra = VARIANTS[name]
    path = tmp_path / "build.yaml"
    path.write_text(yaml.safe_dump(build, allow_unicode=True), encoding="utf-8")
    data = json.loads(CliRunner().invoke(cli, ["lint", str(path), *extra, "--json"]).output)
    assert any(f["code"] == code and english in f["message"] for f in data["findings"]), name  # the branch fired
    monkeypatch.setenv("COLUMNS", "400")
    result = CliRunner().invoke(cli, ["--lang", "zh", "lint", str(path), *extra], catch_exceptions=False)
    assert result.exit_code == (1 if any(f["severity"] == "error" for f in data["findings"]) else 0)
    left = [(line, english_words(line)) for line in result.output.splitlines() if english_words(line)]
    assert not left, left[:4]
    assert english not in result.output


@pytest.mark.parametrize("build", sorted(p.stem for p in DATA.glob("*.yaml")))
def test_every_builtin_build_lints_in_chinese(build: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    result = CliRunner().invoke(cli, ["--lang", "zh", "lint", build], catch_exceptions=False)
    assert result.exit_code in (0, 1)
    left = [(line, english_words(line)) for line in result.output.splitlines() if english_words(line)]
    assert not left, left[:4]
