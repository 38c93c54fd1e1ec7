"""Bytes live at the loss: the logits' buffers of each cross-entropy implementation and the LM head's inputs."""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate.arrays import Num

HEAD_CHUNKS = 8
"""Sequence chunks of torchtitan's ChunkedLossWrapper (torchtitan/components/loss.py @ 00a388d, Config.num_chunks 8)."""
LOSS_BYTES_PER_LOGIT = {"unfused": 4 + 4 + 4, "fused": 4, "chunked": 2 + (4 + 4) / 8, "bf16": 2 + 2 + 2,
                        "head-chunked": (4 + 4 + 4) / HEAD_CHUNKS, "compiled": 2 + 2}
"""Live bytes per logit at the loss. Unfused (cross_entropy on logits.float(), Hugging Face and
torchtitan): during the log-softmax backward its saved fp32 output, the fp32 upstream gradient and
the fp32 input gradient coexist (12 B); in the forward, bf16 logits + fp32 copy + fp32 log-softmax
output (10 B). Fused (Megatron's vocab-parallel cross-entropy, Liger): one fp32 copy, Korthikanti
2022 Sec. 4.1: 4·s·b·v/t. Chunked (torchtune CEWithChunkedOutputLoss, 8 chunks): bf16 logits plus
one chunk's fp32 working set (what Unsloth's Triton loss and a compiled torchtune loss keep). bf16
(cross_entropy on the bf16 logits, no upcast: NeMo AutoModel's benchmark recipes run MaskedCrossEntropy with
fp32_upcast false, nemo_automodel/components/loss/masked_ce.py): the unfused case at 2 B per element, the saved
log-probabilities, the upstream gradient and the input gradient of the log-softmax backward (6 B). Head-chunked
(torchtitan's ChunkedLossWrapper): the LM head and the loss run on one of HEAD_CHUNKS sequence chunks at a time, each
chunk's backward before the next chunk's forward, so only one chunk's logits live, with the unfused working set
(cross_entropy on logits.float()): 12 B over HEAD_CHUNKS per logit of the whole sequence; logits_bytes adds the
fp32 buffer the chunks' hidden-state gradients gather in (GradAccumulator, dtype float32). Compiled (the unfused
cross_entropy(logits.float()) under torch.compile, as torchtitan's build_cross_entropy_loss compiles it when
compile.enable and 'loss' is in compile.components, their default): AOTAutograd's min-cut partitioner saves the bf16
logits and two fp32 numbers a row (max and log-sum-exp), not the fp32 copy or the log-probabilities, and Inductor's
backward is one kernel that reads them and writes the bf16 input gradient: the saved logits and that gradient, 2 + 2 B
(measured on CPU with torch 2.13, 2,048 x 32,768 logits: 2.0005 B a logit saved, the bf16 logits themselves, against
4.0002 eager, the fp32 log-probabilities; the compiled forward and backward allocate one full-size buffer, the bf16
gradient; python benchmarks/compiled_loss_saved.py)."""
TORCHTUNE_CHUNKED_LOSS_BYTES_PER_LOGIT = 2 + 4 + 4 / 8
"""torchtune's CEWithChunkedOutputLoss run eagerly (torchtune/modules/loss/ce_chunked_output_loss.py @ 10ff7cd):
F.cross_entropy(chunk.float()) saves each chunk's fp32 log-probabilities for backward (log_softmax's output,
which nll_loss reads), so after the last chunk the bf16 logits (held until the recipe's `del logits`), the
log-probabilities of all chunks and the last chunk's fp32 upcast are live. Measured with saved_tensors_hooks:
4.00 B per logit saved (benchmarks/torchtune_saved_tensors.py, tests/validation/test_torchtune_saved_tensors.py).
Only the upcast is chunked; with torch.compile on the loss (torchtune's compile_loss) Inductor saves the bf16
input instead, the 'chunked' entry above."""


def loss_bytes_per_logit(job: Job) -> float:
    """Live bytes per logit at the loss for this job's cross-entropy (the constants above)."""
    if job.loss == "chunked" and job.kernels == "torchtune" and not job.compile:
        return TORCHTUNE_CHUNKED_LOSS_BYTES_PER_LOGIT
    return LOSS_BYTES_PER_LOGIT[job.loss]


def logits_bytes(arch: Architecture, job: Job, layout: Any) -> Num:
    """Live at the loss: the logits' buffers, the LM head's inputs (with a head-chunked loss also their fp32
    gradient, gathered chunk by chunk) and, for QLoRA whose head PEFT cast to fp32 under torch.autocast, the
    head's bf16 cast, which the matmul saves for the input gradient until the head's backward (autocast caches
    only casts of weights that need a gradient)."""
    tokens = job.micro_batch * job.seq_len / layout.cp
    logits = tokens * arch.vocab / layout.tp * loss_bytes_per_logit(job)
    head_inputs = tokens * 2 * arch.hidden * job.compute_dtype_bytes
    if layout.sequence_parallel:
        head_inputs = head_inputs / layout.tp
    if job.loss == "head-chunked":
        head_inputs = head_inputs + tokens * arch.hidden * 4
    head_cast = 0.0
    if job.method == "qlora" and job.kbit_fp32_upcast and job.autocast:
        head_cast = arch.vocab * arch.hidden / layout.tp * job.compute_dtype_bytes
    total: Num = logits + head_inputs + head_cast
    return total
