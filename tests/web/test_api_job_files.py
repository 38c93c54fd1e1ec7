"""A framework's job file sent as text (megatron_args, torchtitan_config) gives the answer the CLI gives for the same
file (--megatron-args, --torchtitan-config): the same estimate, the notes naming the body field instead of the path;
fields the body gives win; bad files are a 400 naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rigplan.cli.estimate import estimate_command
from rigplan.cli.memory import memory_command

from .test_api import cli_json

MEGATRON = ("torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --tensor-model-parallel-size 2 "
            "--expert-model-parallel-size 8 --sequence-parallel --micro-batch-size 2 --global-batch-size 256 "
            "--seq-length 4096 --bf16 --use-distributed-optimizer --moe-router-force-load-balancing "
            "--recompute-granularity selective --recompute-modules moe_act layernorm --train-iters 100\n")
TORCHTITAN = """[job]
dump_folder = "./outputs"

[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 1
expert_parallel_degree = 8

[training]
local_batch_size = 4
seq_len = 4096
steps = 100
mixed_precision_param = "bfloat16"

[activation_checkpoint]
mode = "full"
"""


def _renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return value


@pytest.mark.parametrize(("field", "flag", "text", "route", "command"), [
    ("megatron_args", "--megatron-args", MEGATRON, "/api/estimate", estimate_command),
    ("torchtitan_config", "--torchtitan-config", TORCHTITAN, "/api/estimate", estimate_command),
    ("megatron_args", "--megatron-args", MEGATRON, "/api/memory", memory_command),
])
def test_job_file_text_answers_as_the_cli_reads_the_file(client, tmp_path: Path, field: str, flag: str,  # type: ignore[no-untyped-def]
                                                         text: str, route: str, command: Any) -> None:
    path = tmp_path / "job.txt"
    path.write_text(text, encoding="utf-8")
    expected = cli_json(command, ["qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "16", flag, str(path), "--json"])
    response = client.post(route, json={"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 16, field: text})
    assert response.status_code == 200, response.text
    got = response.json()
    assert got == _renamed(_renamed(expected, f"{flag} {path}", field), flag, field)
    assert any(f"from {field}: " in note for note in got["assumptions"])


def test_body_fields_win_over_the_file(client) -> None:  # type: ignore[no-untyped-def]
    got = client.post("/api/memory", json={"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 16, "micro_batch": 1,
                                           "megatron_args": MEGATRON}).json()
    assert (got["job"]["micro_batch"], got["layout"]["tp"], got["layout"]["ep"]) == (1, 2, 8)
    assert got["framework"]["name"] == "megatron"


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"megatron_args": MEGATRON, "torchtitan_config": TORCHTITAN}, "torchtitan_config", "not both"),
    ({"megatron_args": "python train.py --lr 1"}, "megatron_args", "no Megatron-LM flag rigplan reads"),
    ({"torchtitan_config": "[parallelism\n"}, "torchtitan_config", "not TOML"),
])
def test_bad_job_files_are_a_400_naming_the_field(client, body: dict, field: str, message: str) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/api/estimate", json={"model": "qwen3-30b-a3b", "gpus": 16, **body})
    assert response.status_code == 400, response.text
    assert message in response.json()["detail"] and response.json()["field"] == field
