"""Bytes a layer saves per token for backward, as tensor parallelism divides them (TokenActivation), and the residual
stream's element size: the shared vocabulary of estimate.activations and estimate.lora_activations."""

from __future__ import annotations

from dataclasses import dataclass

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture

MASK_BYTES = 1
"""Dropout masks are stored as uint8/bool (Korthikanti et al. 2022, Sec. 4.1)."""
LSE_BYTES = 4
"""Flash attention saves one fp32 log-sum-exp per query and head (Dao 2022, Alg. 2)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenActivation:
    """Bytes saved per token for one layer, split by how tensor parallelism treats them."""

    replicated_under_tp: float
    """Norm inputs, column-parallel linear inputs and masks after row-parallel linears."""
    split_by_tp: float
    """Everything between a column-parallel and a row-parallel linear."""
    attention_core: float
    """Quadratic (eager) or per-head (flash) attention-core terms; split by tp (heads)."""

    def per_gpu(self, tp: int, sequence_parallel: bool) -> float:
        replicated = self.replicated_under_tp / tp if sequence_parallel else self.replicated_under_tp
        return replicated + (self.split_by_tp + self.attention_core) / tp


def residual_bytes(job: Job) -> int:
    """Bytes per element of the residual stream (each layer's input, which its norm saves).

    fp32 when the weights the stream passes through are fp32: torch.autocast over fp32 weights (the
    embedding output and every residual add stay fp32; only matmul inputs are cast), and QLoRA through
    PEFT's prepare_model_for_kbit_training (embeddings, norms and LM head cast to fp32, peft/utils/other.py);
    else the compute dtype.
    """
    if (job.method == "qlora" and job.kbit_fp32_upcast) or (
            job.autocast and job.precision in ("bf16-mixed", "fp16-mixed")):
        return 4
    return job.compute_dtype_bytes


HF_FP32_ROUTER_FAMILIES = frozenset({"deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1", "ernie4_5_moe", "glm4_moe",
                                     "glm4v_moe_text", "glm_moe_dsa", "kimi_linear", "nemotron_h"})
"""Model types whose transformers 5.25 router runs its gate in fp32, F.linear(hidden_states.type(torch.float32),
self.weight.type(torch.float32)) (modeling_deepseek_v3.py DeepseekV3TopkRouter and its copies), so a router weight
that needs a gradient keeps that fp32 copy of the layer's input."""


def hf_fp32_router_input_bytes(arch: Architecture, job: Job) -> float:
    """Per token, the fp32 router input an MoE layer of transformers' modules keeps in training
    (HF_FP32_ROUTER_FAMILIES): 4·h; none on the other stacks or when LoRA freezes the router
    (lora_activations.peft_lora_token_bytes takes it off)."""
    return 4.0 * arch.hidden if job.kernels == "hf" and arch.family in HF_FP32_ROUTER_FAMILIES else 0.0
