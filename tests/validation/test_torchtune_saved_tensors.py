"""rigplan's 'torchtune' kernel stack against what torchtune's modules save for backward, measured on CPU.

benchmarks/torchtune_saved_tensors.py rebuilds torchtune's RMSNorm, RoPE, MultiHeadAttention, FeedForward,
LoRALinear and TransformerSelfAttentionLayer from its sources (files and commits named there) and counts, with
saved_tensors_hooks, the bytes one layer keeps per token (by storage, parameters and the RoPE cache excluded),
and what CEWithChunkedOutputLoss keeps per logit. rigplan's count must agree within 3% (it is exact).

Needs torch; skipped with the reason otherwise.
"""

from __future__ import annotations

from types import ModuleType

import pytest
from scripts import load_script

from rigplan.domain.job import Job
from rigplan.domain.layout import Layout
from rigplan.domain.model import Architecture
from rigplan.estimate.activations import layer_activation_bytes
from rigplan.estimate.logits import TORCHTUNE_CHUNKED_LOSS_BYTES_PER_LOGIT, loss_bytes_per_logit

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")

TOLERANCE = 0.03
SEQ = 128


def replica() -> ModuleType:
    return load_script("benchmarks/torchtune_saved_tensors.py")


def architecture(shape: dict[str, int]) -> Architecture:
    return Architecture(id="t", num_layers=2, hidden=shape["hidden"], num_heads=shape["heads"],
                        num_kv_heads=shape["kv_heads"], ffn=shape["ffn"], vocab=shape["vocab"])


def job(method: str, targets: tuple[str, ...], recompute: str = "none", kernels: str = "torchtune") -> Job:
    return Job(method=method, precision="bf16-true", seq_len=SEQ, micro_batch=1, kernels=kernels,  # type: ignore[arg-type]
               lora_rank=8, lora_targets=targets, recompute=recompute)  # type: ignore[arg-type]


TARGETS = [("q", "v"), ("q", "k", "v", "o", "gate", "up", "down")]


@pytest.mark.parametrize("targets", TARGETS, ids=["qv", "all"])
@pytest.mark.parametrize("method", ["lora", "full"])
@pytest.mark.parametrize("shape", ["llama2-mha", "llama3-gqa"])
def test_torchtune_stack_matches_saved_tensors(shape: str, method: str, targets: tuple[str, ...]) -> None:
    tt = replica()
    counted = tt.saved_bytes_per_token(tt.build_layer(shape, method, targets), SEQ)
    measured = counted["saved"] - counted["attention_output_copy"]
    arch = architecture(tt.SHAPES[shape])
    predicted = layer_activation_bytes(arch, job(method, targets), Layout(), moe_layer=False).saved_bytes / SEQ
    assert predicted == pytest.approx(measured, rel=TOLERANCE)


def test_full_recompute_keeps_the_input_and_rebuilds_the_measured_layer() -> None:
    tt = replica()
    arch = architecture(tt.SHAPES["llama3-gqa"])
    measured = tt.saved_bytes_per_token(tt.build_layer("llama3-gqa", "full"), SEQ)["saved"]
    layer = layer_activation_bytes(arch, job("full", ("q", "v"), recompute="full"), Layout(), moe_layer=False)
    assert layer.saved_bytes / SEQ == 2 * arch.hidden  # checkpoint_wrapper keeps the bf16 layer input
    assert layer.full_bytes / SEQ == pytest.approx(measured, rel=TOLERANCE)


def test_torchtune_modules_save_more_than_the_eager_set_in_full_training() -> None:
    """fp32 norm copies and GQA's expanded k and v: above the eager count; a frozen base saves less."""
    arch = Architecture(id="llama-3.2-3b", num_layers=28, hidden=3072, num_heads=24, num_kv_heads=8, ffn=8192,
                        vocab=128256)
    per_h = {}
    for kernels in ("torchtune", "eager"):
        for method in ("full", "lora"):
            saved = layer_activation_bytes(arch, job(method, ("q", "v"), kernels=kernels), Layout(), moe_layer=False)
            per_h[kernels, method] = saved.saved_bytes / SEQ / arch.hidden
    assert per_h["torchtune", "full"] > 1.3 * per_h["eager", "full"]
    assert per_h["torchtune", "lora"] < per_h["eager", "lora"]


def test_chunked_loss_keeps_every_chunks_fp32_log_probabilities() -> None:
    saved = replica().chunked_loss_bytes_per_logit()
    assert saved == pytest.approx(4.0, rel=0.01)
    # live after the last chunk: the bf16 logits, every chunk's log-probabilities, the last chunk's upcast
    assert pytest.approx(2 + saved + 4 / 8, rel=0.01) == TORCHTUNE_CHUNKED_LOSS_BYTES_PER_LOGIT
    assert loss_bytes_per_logit(Job(loss="chunked", kernels="torchtune")) == TORCHTUNE_CHUNKED_LOSS_BYTES_PER_LOGIT
    assert loss_bytes_per_logit(Job(loss="chunked", kernels="torchtune", compile=True)) < 3.5
