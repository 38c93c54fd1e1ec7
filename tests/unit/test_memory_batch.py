"""The batched memory path (numpy arrays of layouts) agrees with the scalar path, layout by layout."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.estimate.memory import peak_memory, peak_total_bytes_batch

LAYOUTS = [
    dict(tp=1, pp=1, vpp=1, dp=8, cp=1, ep=1, zero=3),
    dict(tp=8, pp=4, vpp=1, dp=2, cp=1, ep=1, zero=1),
    dict(tp=4, pp=8, vpp=2, dp=4, cp=2, ep=1, zero=0),
    dict(tp=2, pp=2, vpp=1, dp=16, cp=1, ep=1, zero=2),
    dict(tp=8, pp=16, vpp=1, dp=1, cp=1, ep=1, zero=0),
]


@pytest.mark.parametrize("model_id", ["llama-3.1-70b", "gpt-3-175b", "mixtral-8x7b", "qwen3-30b-a3b"])
@pytest.mark.parametrize("job", [
    Job(seq_len=4096, micro_batch=1, recompute="selective", global_batch=256),
    Job(seq_len=8192, micro_batch=2, recompute="full", kernels="eager"),
    Job(seq_len=2048, micro_batch=4, recompute="none", method="lora", precision="bf16-true"),
])
def test_batch_equals_scalar(model_id: str, job: Job) -> None:
    arch = load_catalog().model(model_id).to_domain()
    chosen = [lay for lay in LAYOUTS if arch.num_layers % (lay["pp"] * lay["vpp"]) == 0
              and arch.num_heads % lay["tp"] == 0 and arch.kv_heads % lay["tp"] == 0]
    arrays = SimpleNamespace(**{k: np.array([lay[k] for lay in chosen]) for k in LAYOUTS[0]},
                             sequence_parallel=False)
    batch = peak_total_bytes_batch(arch, job, arrays)
    scalar = [peak_memory(arch, job, Layout(**lay)).total_bytes for lay in chosen]  # type: ignore[arg-type]
    assert batch == pytest.approx(np.array(scalar), rel=1e-9)


@pytest.mark.parametrize(("pp", "vpp"), [(32, 1), (16, 1), (8, 2), (4, 1)])
def test_batch_finds_the_first_rank_of_expert_layers_behind_dense_first_layers(pp: int, vpp: int) -> None:
    """DeepSeek-V3's 3 dense layers can fill ranks 0 and 1 (pp 32: 1 | 2 | 2 ... layers), so the heaviest rank is
    the first that holds expert layers; the batched path evaluates it as the scalar path (every rank) does."""
    arch = load_catalog().model("deepseek-v3").to_domain()
    job = Job(seq_len=4096, micro_batch=1, recompute="none", global_batch=1024, moe_imbalance=1.0)
    lay = dict(tp=1, pp=pp, vpp=vpp, dp=256 // pp, cp=1, ep=8, zero=1)
    arrays = SimpleNamespace(**{k: np.array([v]) for k, v in lay.items()}, sequence_parallel=False)
    batch = peak_total_bytes_batch(arch, job, arrays)
    scalar = peak_memory(arch, job, Layout(**lay)).total_bytes  # type: ignore[arg-type]
    assert batch[0] == pytest.approx(scalar, rel=1e-9)
