"""--loss compiled: torchtitan's cross_entropy(logits.float()) under torch.compile keeps the bf16 logits, not the fp32
log-probabilities (estimate.logits, benchmarks/compiled_loss_saved.py)."""

from __future__ import annotations

import functools
import importlib.util

import pytest

from rigplan.estimate.logits import LOSS_BYTES_PER_LOGIT
from rigplan.flow.memory import memory
from rigplan.flow.request import MemoryRequest

SCOUT_2L = {"model": "llama-4-scout", "layers": 2, "gpu": "b200", "gpus": 4, "seq": 8192, "micro_batch": 8,
            "ep": 4, "zero": 3, "recompute": "none", "framework": "torchtitan"}


def test_torchtitan_compiles_its_loss_with_compile_and_not_without() -> None:
    eager = memory(MemoryRequest(**SCOUT_2L))
    compiled = memory(MemoryRequest(**SCOUT_2L, compile=True))
    kept = memory(MemoryRequest(**SCOUT_2L, compile=True, loss="unfused"))
    assert (eager.setup.job.loss, compiled.setup.job.loss, kept.setup.job.loss) == ("unfused", "compiled", "unfused")
    assert LOSS_BYTES_PER_LOGIT["compiled"] == 4.0
    logits = 65_536 * 202_048  # TorchAO's 2-layer Scout: 8 x 8,192 tokens a GPU, Llama 4's vocabulary
    dropped = eager.breakdown.logits_bytes - compiled.breakdown.logits_bytes
    assert dropped == pytest.approx(logits * (LOSS_BYTES_PER_LOGIT["unfused"] - 4.0))
    assert kept.breakdown.logits_bytes == eager.breakdown.logits_bytes


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed (pip install torch)")
def test_the_inductor_partitioner_saves_the_bf16_logits_only() -> None:
    import torch
    import torch.nn.functional as F
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    def cross_entropy_loss(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))

    # Inductor's own decompositions and partitioner, with graphs run as they are (no C++ compiler needed)
    backend = aot_autograd(fw_compiler=lambda gm, _: make_boxed_func(gm), bw_compiler=lambda gm, _: make_boxed_func(gm),
                           partition_fn=functools.partial(min_cut_rematerialization_partition, compiler="inductor"),
                           decompositions=select_decomp_table())
    rows, vocab = 256, 4096

    def saved_per_logit(fn: object) -> float:
        pred = torch.randn(1, rows, vocab, dtype=torch.bfloat16, requires_grad=True)
        labels = torch.randint(0, vocab, (1, rows))
        storages: dict[int, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = fn(pred, labels)  # type: ignore[operator]
        loss.backward()
        assert pred.grad is not None and pred.grad.dtype == torch.bfloat16
        return sum(storages.values()) / (rows * vocab)

    torch._dynamo.reset()
    assert saved_per_logit(cross_entropy_loss) == pytest.approx(4.0, abs=0.01)  # eager: fp32 log-probabilities
    assert saved_per_logit(torch.compile(cross_entropy_loss, backend=backend)) == pytest.approx(2.0, abs=0.01)
