"""The CLI's pydantic-free request path (flow/fields.py) accepts only what the pydantic models accept, as the
same values; everything else goes to pydantic, whose message the user sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import rigplan.cli.common as cli_common
from rigplan.catalog import cache
from rigplan.cli.main import cli
from rigplan.flow import fields
from rigplan.flow import request as models

TABLES = fields.describe_models()


def assert_same(fast: fields.PlainRequest, slow: Any) -> None:
    """Every field, the preset record and the methods the flow calls agree."""
    for name in type(slow).model_fields:
        mine, theirs = getattr(fast, name), getattr(slow, name)
        assert mine == theirs and type(mine) is type(theirs), (name, mine, theirs)
    assert (fast.framework_applied is None) == (slow.framework_applied is None)
    if slow.framework_applied is not None:
        assert fast.framework_applied.to_dict() == slow.framework_applied.to_dict()
    assert fast.shape_flags() == slow.shape_flags()
    assert fast.overlap_values() == slow.overlap_values()
    try:
        routing = slow.routing_values()
    except ValueError as err:
        with pytest.raises(ValueError, match=str(err)[:20]):
            fast.routing_values()
    else:
        assert fast.routing_values() == routing


def both(model: str, values: dict[str, Any]) -> tuple[fields.PlainRequest | None, Any]:
    """The table's answer and pydantic's (None where pydantic refuses)."""
    fast = fields.validate_fast(TABLES[model], values)
    try:
        slow = getattr(models, model).model_validate(values)
    except ValidationError:
        slow = None
    return fast, slow


def test_every_fast_model_is_described_and_supported() -> None:
    assert set(TABLES) == set(fields.FAST_MODELS)
    for table in TABLES.values():
        assert table["supported"] and table["preset"]
        unchecked = {n for n, f in table["fields"].items() if not f["checked"]}
        assert not unchecked
        assert json.loads(json.dumps(table)) == table  # the cache holds it as JSON


CLI_CORPUS = [
    "memory llama-3.1-8b --gpu h100-sxm",
    "memory llama-3.1-8b --gpu h100-sxm --gpus 8 --fsdp --recompute selective --seq 8192",
    "memory 70b --gpus 64 --tp 8 --pp 2 --zero 1 --recompute selective --json",
    "memory llama-3.1-70b --gpus 64 --tp 8 --pp 4 --stage-layers 18,21,21,20 --recompute full "
    "--recompute-method block --recompute-num-layers 8",
    "memory llama-3.1-8b --gpus 8 --framework torchtitan --recompute op",
    "memory deepseek-v3 --gpus 2048 --pp 16 --vpp 2 --ep 64 --zero 1 --stage-layers 1,2x30,0",
    "memory llama-3.1-8b --gpus 8 --framework megatron --tp 2 --precision bf16",
    "memory llama-3.1-8b --gpu rtx-4090 --method qlora --seq 2048 --lora-targets all --find-max",
    "memory llama-3.1-8b --method qlora --lora-targets q,k,v,o --lora-rank 64 --no-double-quant",
    "memory mixtral-8x7b --gpus 8 --ep 8 --moe-imbalance 1.3 --capacity-factor 1.25 --a2a-overlap",
    "memory qwen3-30b-a3b --gpus 8 --ep 8 --etp 1 --balanced-routing",
    "memory --layers 4 --hidden 256 --heads 4 --vocab 1000 --ffn 1024 --mlp plain --positions learned",
    "memory llama-3.1-8b --gpus 16 --tp 2 --sequence-parallel --tp-comm-overlap --no-overlap-grad-reduce "
    "--grad-reduce-dtype fp32",
    "memory llama-3.1-8b --compile --autocast --attention-kernel fa2 --precision fp8 --fp8-recipe current",
    "memory llama-3.1-8b --offload optimizer --activation-offload --loss chunked --kernels hf --dropout",
    "memory llama-3.1-8b --checkpoint-load full --main-grads-fp32 --ddp-grad-copy --fsdp-prefetch 2 "
    "--fused-swiglu --nvls-buffers --fp8-transpose-cache --optimizer-foreach --optimizer adamw-8bit",
    "memory llama-3.1-8b --gpus 8 --framework nemo --precision fp8",
    "memory llama-3.1-8b --recompute full --recompute-every 4 --ecc --gpu a100-80gb-sxm",
    "estimate gpt-3-175b --gpu a100-80gb-sxm --gpus 1024 --tp 8 --pp 8 --global-batch 1536 --recompute full "
    "--attention eager --tokens 300B",
    "estimate llama-3.1-70b --gpu h100-sxm --gpus 512 --tp 8 --pp 4 --vpp 5 --precision fp8 --tokens 1T",
    "estimate llama-3.1-8b --gpus 16 --gpus-per-node 8 --nic 400 --nics-per-node 8 --storage raid0-4 "
    "--restart-s 600 --checkpoint-interval-s 3600 --tokens 2500000",
    "estimate llama-3.1-70b --gpus 64 --tp 4 --framework nemo --precision fp8",
    # refused: each goes to pydantic, whose message is printed
    "memory llama-3.1-8b --tp 0", "memory llama-3.1-8b --gpus 99999999", "memory llama-3.1-8b --seq 0",
    "memory llama-3.1-8b --global-batch 0", "memory llama-3.1-8b --moe-imbalance 0.5",
    "memory llama-3.1-8b --recompute-num-layers 0 --recompute full", "memory llama-3.1-8b --stage-layers 7,x",
    "memory llama-3.1-8b --pp 2 --stage-layers 16x2x1", "memory llama-3.1-8b --pp 2 --stage-layers 16x0,32",
    "memory llama-3.1-8b --hidden 1000000000", "memory llama-3.1-8b --vpp 0",
    "estimate llama-3.1-8b --tokens 0", "estimate llama-3.1-8b --tokens 1e30", "estimate llama-3.1-8b --tokens nan",
    "estimate llama-3.1-8b --tokens -5", "estimate llama-3.1-8b --nic 0",
]


def test_the_cli_gets_the_same_request_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command of the corpus: where the table accepts the values, pydantic accepts them too, as the
    same request; where it does not, pydantic decides. Most valid commands take the fast path."""
    seen: list[tuple[str, bool, bool]] = []

    def checking(model: str, values: dict[str, Any]) -> Any:
        fast, slow = both(model, values)
        seen.append((model, fast is not None, slow is not None))
        if fast is not None:
            assert slow is not None, values
            assert_same(fast, slow)
            return fast
        return getattr(models, model).model_validate(values)

    monkeypatch.setattr(cli_common, "validated", checking)
    runner = CliRunner()
    for line in CLI_CORPUS:
        result = runner.invoke(cli, line.split())
        assert result.exit_code in (0, 2), (line, result.output)
    valid = [s for s in seen if s[2]]
    assert len(seen) == len(CLI_CORPUS)
    assert sum(s[1] for s in valid) == len(valid)  # every valid command of the corpus is checked by the table
    assert not any(s[1] for s in seen if not s[2])


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(-10**9, 10**9), st.sampled_from([1, 2, 4, 8, 64]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, 1.0, 1.6, 2.0]),
    st.sampled_from(["", "q,v", "all", "ALL", "q,x", "7,8,8,7", "7,,8", "x", "bf16", "fp16", "fp8", "full",
                     "selective", "megatron", "torchtitan", "nemo", "eager", "300B", "2T", "-5", "nan", "1e30",
                     "h100-sxm", "fp32", "op", "uniform", "block", "hf"]),
    st.lists(st.integers(-2, 40), max_size=5), st.lists(st.sampled_from(["q", "v", "o", "all", "x"]), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2),
)


@pytest.mark.parametrize("model", fields.FAST_MODELS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_generated_values_the_table_accepts_pydantic_accepts_alike(model: str, data: st.DataObject) -> None:
    names = [*sorted(TABLES[model]["fields"]), "not_a_field"]
    chosen = data.draw(st.lists(st.sampled_from(names), max_size=6, unique=True))
    values = {name: data.draw(VALUES) for name in chosen}
    fast, slow = both(model, values)
    if fast is not None:
        assert slow is not None, values
        assert_same(fast, slow)


def typed(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the field's own type, often in range and sometimes not."""
    kind = spec["t"]
    if kind == "union":
        return st.one_of([typed(arm) for arm in spec["of"]])
    if kind == "list":
        return st.lists(typed(spec["item"]), max_size=4)
    return {
        "int": st.one_of(st.integers(-1, 9), st.integers(0, 200_000)), "bool": st.booleans(), "none": st.none(),
        "float": st.one_of(st.floats(-1, 5), st.floats(allow_nan=True), st.integers(0, 3)),
        "str": st.sampled_from(["q,v", "all", "7,8", "bf16", "300B", "2T", "0", "h100-sxm", "llama-3.1-8b", "x"]),
        "literal": st.sampled_from(spec.get("values", [None])),
    }.get(kind, st.dictionaries(st.sampled_from(["a"]), st.integers(0, 1), max_size=1))


@pytest.mark.parametrize("model", fields.FAST_MODELS)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_typed_values_the_table_accepts_pydantic_accepts_alike(model: str, data: st.DataObject) -> None:
    table = TABLES[model]["fields"]
    chosen = data.draw(st.lists(st.sampled_from(sorted(table)), max_size=10, unique=True))
    values = {name: data.draw(typed(table[name]["type"])) for name in chosen}
    fast, slow = both(model, values)
    if fast is not None:
        assert slow is not None, values
        assert_same(fast, slow)
    elif slow is not None:  # pydantic accepted what the table did not: a conversion or a type it leaves to pydantic
        assert any(type(v) is not type(getattr(slow, k)) or "unsupported" in json.dumps(table[k]["type"])
                   for k, v in values.items()), values


def test_the_table_is_kept_under_a_key_of_its_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV_VAR, str(tmp_path))
    values = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 2, "gpus": 8}
    first = fields.validated("MemoryRequest", values)
    assert isinstance(first, models.MemoryRequest)  # no table yet: pydantic, which writes it
    assert len(list(tmp_path.glob("requests-*.json"))) == 1
    second = fields.validated("MemoryRequest", values)
    assert isinstance(second, fields.PlainRequest)
    assert_same(second, first)
    with pytest.raises(ValidationError, match="--tp must be >= 1"):
        fields.validated("MemoryRequest", {**values, "tp": 0})
    # another version of the code that decides the table is another key: its table is never read
    package = tmp_path / "copy"
    for name in fields.CODE:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_bytes((fields._PACKAGE / name).read_bytes())
    monkeypatch.setattr(fields, "_PACKAGE", package)
    key = fields.table_key()
    (package / "bounds.py").write_text((package / "bounds.py").read_text() + "\n# edited\n")
    assert fields.table_key() != key
    assert isinstance(fields.validated("MemoryRequest", values), models.MemoryRequest)


def test_rigplan_memory_imports_neither_pydantic_nor_yaml_from_a_warm_cache(tmp_path: Path) -> None:
    """What keeps `rigplan memory` fast (benchmarks/cli_startup.py measures how fast)."""
    env = {**os.environ, cache.CACHE_ENV_VAR: str(tmp_path)}
    code = ("import sys; from rigplan.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pydantic', 'yaml', 'pydantic_core') if m in sys.modules), file=sys.stderr)")
    args = [sys.executable, "-c", code, "memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--fsdp"]
    cold = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    assert "pydantic" in cold.stderr.splitlines()[-1]  # the first run validates the records and writes the tables
    warm = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    assert warm.stderr.splitlines()[-1] == "[]"
    assert warm.stdout == cold.stdout
