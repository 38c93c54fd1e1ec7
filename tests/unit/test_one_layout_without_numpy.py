"""One layout is estimated in plain Python (estimate/arrays.py), so that `rigplan memory` never imports numpy;
its numbers are those of the numpy evaluation, to the last bit."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import fields
from typing import Any

import numpy as np
import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.stages import PipelineSplit
from rigplan.estimate import arrays as xp
from rigplan.estimate.memory import MemoryBreakdown, peak_memory, rank_memory

NUMBERS: list[Any] = [0, 1, 2, 3, -1, 7, 0.0, 0.5, 1.0, 2.5, -0.0, -3.25, 1e300, True, False, math.inf, -math.inf,
                      math.nan, 2**40 + 1]


def _same(python: Any, numpy_value: Any) -> bool:
    """Same value and kind (float where numpy gives a float, integral where it keeps integers)."""
    expected = np.asarray(numpy_value)
    assert expected.ndim == 0
    if isinstance(python, float) != (expected.dtype.kind == "f"):
        return False
    value = expected.item()
    if isinstance(value, float) and math.isnan(value):
        return isinstance(python, float) and math.isnan(python)
    return python == value and math.copysign(1.0, python) == math.copysign(1.0, value)


@pytest.mark.parametrize("a", NUMBERS)
@pytest.mark.parametrize("b", NUMBERS)
def test_python_numbers_get_numpys_answers(a: Any, b: Any) -> None:
    assert _same(xp.maximum(a, b), np.maximum(a, b))
    assert _same(xp.minimum(a, b), np.minimum(a, b))
    for condition in (True, False, a):
        assert _same(xp.where(condition, a, b), np.where(condition, a, b))
    if not isinstance(a, bool) and not isinstance(b, bool) and not (a != a or b != b) and a <= b:
        for x in NUMBERS:
            if not isinstance(x, bool):
                assert _same(xp.clip(x, a, b), np.clip(x, a, b))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        assert _same(xp.divide(float(a), float(b)), np.divide(float(a), float(b)))


@pytest.mark.parametrize("x", [v for v in NUMBERS if not isinstance(v, bool)])
def test_python_numbers_round_as_numpy_does(x: Any) -> None:
    assert _same(xp.floor(x), np.floor(x))
    assert _same(xp.ceil(x), np.ceil(x))
    assert _same(xp.scalar_or_array(x), float(np.asarray(x, dtype=np.float64)))


def test_first_argmax_and_select_take_the_first_largest() -> None:
    values = [3.0, 7, 7.0, -1.0]
    assert xp.first_argmax(values) == int(np.argmax(values)) == 1
    assert xp.select(2, values) == 7.0
    assert xp.select(xp.first_argmax(values), values) == float(np.choose(np.argmax(values), values))


SETTINGS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("llama-3.1-8b", {}, {}),
    ("llama-3.1-8b", {"pp": 4, "vpp": 2, "dp": 2}, {"global_batch": 64, "recompute": "full"}),
    ("llama-3.1-8b", {"pp": 3, "split": PipelineSplit(first_stage_layers=8)}, {"global_batch": 24}),
    ("llama-3.1-8b", {"dp": 8, "zero": 3}, {"offload": "all", "activation_offload": True, "recompute": "full"}),
    ("llama-3.1-8b", {"tp": 2, "cp": 2, "dp": 2, "sequence_parallel": True}, {"seq_len": 32768, "micro_batch": 2}),
    ("llama-3.1-8b", {}, {"method": "qlora", "precision": "bf16-true", "optimizer": "paged-adamw"}),
    ("llama-3.1-70b", {"tp": 8, "pp": 4, "vpp": 5, "dp": 2, "zero": 1},
     {"global_batch": 512, "recompute": "full", "recompute_method": "every", "recompute_layers": 4}),
    ("mixtral-8x7b", {"ep": 8, "dp": 8, "zero": 1}, {"recompute": "selective"}),
    ("deepseek-v3", {"pp": 16, "ep": 64, "dp": 64, "zero": 1}, {"global_batch": 4096, "recompute": "full"}),
]


@pytest.mark.parametrize(("model", "layout_fields", "job_fields"), SETTINGS)
def test_each_rank_in_plain_python_equals_the_array_evaluation(model: str, layout_fields: dict[str, Any],
                                                               job_fields: dict[str, Any]) -> None:
    """rank_memory of one rank (Python numbers) and of all ranks as one numpy array: every field equal."""
    arch = load_catalog().model(model).to_domain()
    layout = Layout(**layout_fields)
    job = Job(**job_fields)
    batch = rank_memory(arch, job, layout, np.arange(layout.pp))
    for rank in range(layout.pp):
        one = rank_memory(arch, job, layout, rank)
        for field in fields(MemoryBreakdown):
            value = getattr(one, field.name)
            if field.name == "phase":
                continue
            assert not type(value).__module__.startswith("numpy"), field.name
            expected = np.broadcast_to(getattr(batch, field.name), (layout.pp,))[rank]
            assert value == expected, (field.name, rank)
        assert one.total_bytes == batch.total_bytes[rank]
    heaviest = int(np.argmax(batch.total_bytes))
    assert peak_memory(arch, job, layout).total_bytes == batch.total_bytes[heaviest]
    assert peak_memory(arch, job, layout).stage == heaviest


COMMANDS = [
    ["memory", "llama-3.1-8b", "--gpu", "h100-sxm"],
    ["memory", "llama-3.1-70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--vpp", "2", "--zero", "1",
     "--recompute", "full"],
    ["memory", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "16", "--ep", "8", "--zero", "1"],
    ["memory", "llama-3.1-8b", "--gpu", "rtx-4090", "--method", "qlora", "--seq", "2048", "--find-max"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args[:2] + args[-2:]))
def test_rigplan_memory_never_imports_numpy(args: list[str]) -> None:
    """numpy's import is about half of `rigplan memory`'s start-up (benchmarks/cli_startup.py measures it)."""
    code = ("import sys; from rigplan.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('numpy' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *args], env=dict(os.environ), capture_output=True, text=True,
                          check=True)
    assert "GiB" in proc.stdout
    assert proc.stderr.splitlines()[-1] == "False"
