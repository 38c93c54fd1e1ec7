"""Which gradients FSDP1 keeps for a LoRA model wrapped per block, counted by element on CPU (gloo).

lit-gpt's 2023 finetune scripts ran LoRA under Lightning Fabric's FSDPStrategy: FSDP1
(torch.distributed.fsdp.FullyShardedDataParallel) with use_orig_params=True (Fabric's default),
auto_wrap_policy={Block}, and gradient accumulation under fabric.no_backward_sync, which is FSDP1's no_sync().
This script builds a small Llama-style model the same way (frozen base, LoRA on q and v, every Block its own
unit, the root unit holding the embedding, final norm and head), runs it on 2 CPU processes with the gloo
backend and reports, per unit:

- after a backward under no_sync(): the elements of flat_param.grad (the whole unsharded unit: frozen
  elements get a gradient too) and how many frozen parameters show a .grad;
- after a synchronised backward: the elements of the reduce-scattered gradient each rank keeps (1/world);
- after optimizer.step() and zero_grad() (the optimizer holds only the adapters): what is still held;
- after the next forward: whether it was released;
- after a forward: whether the root unit's gathered parameters are still allocated (FSDP1 does not reshard
  the root after forward) and a block's are not.

rigplan's --fsdp-flat-params (src/rigplan/estimate/framework_buffers.py) counts these; the test
tests/validation/test_fsdp_flat_grads.py runs this script and compares it with rigplan's element counts.

Usage: python benchmarks/fsdp1_flat_grads.py [--json]   (needs torch; about 10 s on 2 CPU cores)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import warnings
from typing import Any

SHAPE = dict(layers=2, hidden=16, heads=2, ffn=40, vocab=64, rank=2)
"""The model measured (rigplan's tests build the same Architecture from these numbers)."""
WORLD = 2


def _build(torch: Any) -> Any:
    nn = torch.nn
    h, f, r, v = SHAPE["hidden"], SHAPE["ffn"], SHAPE["rank"], SHAPE["vocab"]

    class LoRALinear(nn.Module):
        def __init__(self, d_in: int, d_out: int, adapted: bool) -> None:
            super().__init__()
            self.linear = nn.Linear(d_in, d_out, bias=False)
            self.lora_a = nn.Parameter(torch.randn(r, d_in) * 0.1) if adapted else None
            self.lora_b = nn.Parameter(torch.zeros(d_out, r)) if adapted else None

        def forward(self, x: Any) -> Any:
            out = self.linear(x)
            if self.lora_a is not None:
                out = out + (x @ self.lora_a.t()) @ self.lora_b.t()
            return out

    class RMSNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x: Any) -> Any:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm_1, self.norm_2 = RMSNorm(), RMSNorm()
            self.q, self.k = LoRALinear(h, h, True), LoRALinear(h, h, False)
            self.v, self.o = LoRALinear(h, h, True), LoRALinear(h, h, False)
            self.gate, self.up, self.down = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False), \
                nn.Linear(f, h, bias=False)

        def forward(self, x: Any) -> Any:
            n = self.norm_1(x)
            q, k, val = self.q(n), self.k(n), self.v(n)
            att = torch.softmax(q @ k.transpose(-1, -2) / h ** 0.5, dim=-1) @ val
            x = x + self.o(att)
            n = self.norm_2(x)
            return x + self.down(torch.nn.functional.silu(self.gate(n)) * self.up(n))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(v, h)
            self.blocks = nn.ModuleList([Block() for _ in range(SHAPE["layers"])])
            self.norm = RMSNorm()
            self.head = nn.Linear(h, v, bias=False)

        def forward(self, idx: Any) -> Any:
            x = self.wte(idx)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    return Model, Block


def _units(model: Any, fsdp: Any) -> list[tuple[str, Any]]:
    return [("root" if m is model else "block", m._handle.flat_param) for m in fsdp.fsdp_modules(model)
            if m._handle is not None]


def _grads(model: Any, fsdp: Any) -> list[dict[str, Any]]:
    rows = []
    for kind, flat in _units(model, fsdp):
        frozen = [p for p in flat._params if not p.requires_grad]
        rows.append({"unit": kind, "unsharded_elements": int(flat._unpadded_unsharded_size.numel()),
                     "sharded_elements": int(flat.numel()), "requires_grad": bool(flat.requires_grad),
                     "grad_elements": None if flat.grad is None else int(flat.grad.numel()),
                     "frozen_params": len(frozen), "frozen_with_grad": sum(p.grad is not None for p in frozen)})
    return rows


def _rank(rank: int, port: int, out_dir: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    warnings.filterwarnings("ignore")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model_cls, block_cls = _build(torch)
    model = model_cls()
    for name, param in model.named_parameters():
        param.requires_grad = "lora_" in name
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({block_cls}), use_orig_params=True,
                 sharding_strategy=ShardingStrategy.FULL_SHARD, device_id=torch.device("cpu"), limit_all_gathers=True)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    idx = torch.randint(0, SHAPE["vocab"], (2, 8))
    report: dict[str, Any] = {}
    out = model(idx)
    report["after_forward_gathered"] = [
        {"unit": kind, "unsharded_storage_elements": int(flat._full_param_padded.untyped_storage().size()
                                                         // flat._full_param_padded.element_size())}
        for kind, flat in _units(model, FSDP)]
    with model.no_sync():
        out.sum().backward()
    report["no_sync_backward"] = _grads(model, FSDP)
    model(idx).sum().backward()
    report["sync_backward"] = _grads(model, FSDP)
    optimizer.step()
    optimizer.zero_grad()
    report["after_step_zero_grad"] = _grads(model, FSDP)
    model(idx)
    report["after_next_forward"] = _grads(model, FSDP)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as handle:
        json.dump(report, handle)
    dist.destroy_process_group()


def measure() -> dict[str, Any]:
    """Run the 2-process measurement; rank 0's report (both ranks hold equal shards here)."""
    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as out_dir:
        mp.start_processes(_rank, args=(port, out_dir), nprocs=WORLD, start_method="spawn")
        with open(os.path.join(out_dir, "rank0.json")) as handle:
            report: dict[str, Any] = json.load(handle)
    return {"shape": SHAPE, "world": WORLD, **report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    report = measure()
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for phase in ("no_sync_backward", "sync_backward", "after_step_zero_grad", "after_next_forward"):
        for row in report[phase]:
            print(f"{phase:22s} {row['unit']:5s} unit {row['unsharded_elements']:5d} elements "
                  f"(shard {row['sharded_elements']}): grad {row['grad_elements']}, frozen params with a grad "
                  f"{row['frozen_with_grad']}/{row['frozen_params']}")
    for row in report["after_forward_gathered"]:
        print(f"after forward          {row['unit']:5s} gathered storage {row['unsharded_storage_elements']} elements")


if __name__ == "__main__":
    sys.exit(main())
