"""What bitsandbytes before 0.43.2 saves in a QLoRA layer beyond a frozen base, measured exactly on CPU.

A tiny random-weight Hugging Face Llama (bf16, frozen) has every linear of its decoder layers replaced by a
4-bit matmul stand-in in two versions: bitsandbytes' MatMul4Bit since 0.43.2 (saves the packed weight only)
and before it (saves (A, B): the input too; bitsandbytes PR #1270). The difference of the bytes autograd saves
per layer, per token, must equal rigplan's `bnb_saved_inputs` for the architecture within 3%.

Needs torch and transformers (pip install -e '.[frameworks]'); skipped with the reason otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

from rigplan.domain.job import Job
from rigplan.domain.model import Architecture
from rigplan.estimate.activations import bnb_saved_inputs

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[frameworks]')")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -e '.[frameworks]')")

from test_hf_saved_tensors import measure_saved_bytes_per_layer  # noqa: E402

TOKENS = 64
SHAPE = {"hidden_size": 384, "intermediate_size": 1024, "num_attention_heads": 6, "num_key_value_heads": 6}


class FourBit(torch.autograd.Function):
    """bitsandbytes' MatMul4Bit: F.linear on the dequantized weight; `legacy` also saves the input."""

    @staticmethod
    def forward(ctx: Any, x: Any, weight: Any, legacy: bool) -> Any:
        ctx.save_for_backward(x, weight) if legacy else ctx.save_for_backward(weight)
        return torch.nn.functional.linear(x, weight)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        weight = ctx.saved_tensors[-1]
        return grad @ weight, None, None


class Quantized(torch.nn.Module):
    def __init__(self, linear: Any, legacy: bool) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(linear.weight.detach(), requires_grad=False)
        self.legacy = legacy

    def forward(self, x: Any) -> Any:
        return FourBit.apply(x, self.weight, self.legacy)


def saved_per_layer(legacy: bool) -> float:
    config = transformers.LlamaConfig(num_hidden_layers=2, vocab_size=512, max_position_embeddings=1024,
                                      attn_implementation="sdpa", **SHAPE)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    for p in model.parameters():
        p.requires_grad_(False)
    model.get_input_embeddings().weight.requires_grad_(True)  # gradients flow through the layers, as to adapters
    for layer in model.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name, child in list(parent.named_children()):
                if isinstance(child, torch.nn.Linear):
                    setattr(parent, name, Quantized(child, legacy))
    model.train()
    per_layer = measure_saved_bytes_per_layer(model, torch.randint(0, 512, (1, TOKENS)))
    return sum(per_layer) / len(per_layer)


def test_legacy_bitsandbytes_adds_what_rigplan_counts() -> None:
    measured = (saved_per_layer(legacy=True) - saved_per_layer(legacy=False)) / TOKENS
    arch = Architecture(id="tiny-llama", num_layers=2, hidden=SHAPE["hidden_size"], num_heads=6, num_kv_heads=6,
                        ffn=SHAPE["intermediate_size"], vocab=512)
    job = Job(method="qlora", precision="bf16-true", nf4_quantizer="bitsandbytes-legacy")
    rigplan = bnb_saved_inputs(arch, job, moe_layer=False).per_gpu(1, False)
    assert measured > 0
    assert rigplan == pytest.approx(measured, rel=0.03), (rigplan, measured)
    h, f = SHAPE["hidden_size"], SHAPE["intermediate_size"]
    assert rigplan == 2 * (2 * h + f)  # attention input, MLP input, down_proj input (o_proj's is SDPA's output)
    current = Job(method="qlora", precision="bf16-true", nf4_quantizer="bitsandbytes")
    assert bnb_saved_inputs(arch, current, moe_layer=False).per_gpu(1, False) == 0.0
