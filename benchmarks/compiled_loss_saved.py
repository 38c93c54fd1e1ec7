"""What the unfused cross-entropy keeps at the loss, eager and under torch.compile (rigplan's --loss compiled).

torchtitan's loss is F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
(torchtitan/components/loss.py cross_entropy_loss), and build_cross_entropy_loss wraps it in torch.compile when
compile.enable and 'loss' is in compile.components (their default). This script runs that function on bf16 logits
that need a gradient and reports, per logit:
- the bytes autograd saves for backward (saved_tensors_hooks, by storage), eager and compiled;
- the full-size buffers the compiled backward allocates (from Inductor's generated code: their dtypes).

Eager saves the fp32 copy and the fp32 log-probabilities (8 B a logit); compiled saves the bf16 logits and two fp32
numbers a row, and its backward is one kernel that writes the bf16 input gradient (estimate.logits,
LOSS_BYTES_PER_LOGIT['compiled'] = 2 + 2). Inductor compiles for the device it runs on; the partitioner that
picks what to save (AOTAutograd's min-cut) does not depend on it.

Usage: python benchmarks/compiled_loss_saved.py [--rows 2048] [--vocab 32768] [--device cpu|cuda] [--json]
(needs torch; on CPU, Inductor needs a C++ compiler. tests/unit/test_compiled_loss.py checks the saved set
with AOTAutograd's min-cut partitioner and no compiler.)
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import torch
import torch.nn.functional as F


def cross_entropy_loss(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def saved_bytes_per_logit(fn: Any, rows: int, vocab: int, device: str) -> float:
    pred = torch.randn(1, rows, vocab, dtype=torch.bfloat16, device=device, requires_grad=True)
    labels = torch.randint(0, vocab, (1, rows), device=device)
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn(pred, labels)
    loss.backward()
    return sum(storages.values()) / (rows * vocab)


def backward_buffers(rows: int, vocab: int, device: str) -> list[str]:
    """Dtypes of the (rows, vocab) buffers Inductor's generated code allocates, forward and backward."""
    from torch._inductor.utils import run_and_get_code

    compiled = torch.compile(cross_entropy_loss)
    pred = torch.randn(1, rows, vocab, dtype=torch.bfloat16, device=device, requires_grad=True)
    labels = torch.randint(0, vocab, (1, rows), device=device)

    def step() -> None:
        compiled(pred, labels).backward()

    _, codes = run_and_get_code(step)
    pattern = re.compile(rf"empty_strided_\w+\(\({rows}, {vocab}\), \([^)]*\), (torch\.\w+)\)")
    return [m.group(1) for code in codes for m in pattern.finditer(code)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {
        "torch": torch.__version__,
        "rows": args.rows, "vocab": args.vocab, "device": args.device,
        "eager_saved_bytes_per_logit": saved_bytes_per_logit(cross_entropy_loss, args.rows, args.vocab, args.device),
        "compiled_saved_bytes_per_logit": saved_bytes_per_logit(torch.compile(cross_entropy_loss), args.rows,
                                                                args.vocab, args.device),
        "compiled_full_size_buffers": backward_buffers(args.rows, args.vocab, args.device),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:34s} {value}")


if __name__ == "__main__":
    main()
