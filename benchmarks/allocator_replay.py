"""Reserved vs allocated memory of training steps, replayed through PyTorch's caching-allocator rules.

rigplan's allocator model (rigplan/estimate/allocator.py) takes its fractions from this script.

Method:
1. Record the allocation trace of real training steps: transformers' LlamaForCausalLM (Llama 3 8B and
   Llama 3.2 1B layer widths, 8 layers, 128k vocabulary, SDPA attention) runs forward, backward and
   AdamW under FakeTensorMode, so shapes are real and no memory is used; a TorchDispatchMode records
   each new storage (bytes) and a weakref callback its release, in program order. Variants: full
   training (fused AdamW, and the foreach path), LoRA r=8 on q,v (frozen bf16 base), QLoRA (an NF4
   stand-in: packed 4-bit weight, a bf16 dequantized copy allocated per matmul in forward and
   backward), with and without gradient checkpointing; fixed shapes (mb 1 x 2048, mb 4 x 1024 tokens,
   3 steps) and padded variable-length batches (24 batches of 2, lengths drawn from a log-normal
   around 35% of 2048, as instruction data padded to each batch's longest sample).
2. Replay the trace through a port of c10/cuda/CUDACachingAllocator.cpp's block rules: sizes rounded
   to 512 B; requests <= 1 MiB from the small pool (2 MiB segments), larger from the large pool
   (20 MiB segments below 10 MiB, else the request rounded up to 2 MiB); best fit (smallest free
   block >= request); a block is split when the remainder is >= 512 B (small pool) or > 1 MiB (large
   pool); freed blocks merge with free neighbours of the same segment; cached segments are released
   only when cudaMalloc fails. With expandable_segments one segment per pool grows in 2 MiB (small)
   or 20 MiB (large) pages. Constants: c10/core/AllocatorConfig.h (kMinBlockSize, kSmallSize,
   kSmallBuffer, kMinLargeAlloc, kRoundLarge) of the torch this runs with.
3. Report, per scenario, the peak allocated bytes, the peak reserved bytes (what
   torch.cuda.max_memory_reserved() shows), and the peak of what cannot be given back when the
   device runs out (segments, or expandable-segment pages, that hold a live block): the memory the
   job needs to run. Overheads are given as a fraction of the step's churn (peak allocated minus the
   weights and optimizer states held between steps).

A check against a published pair: torchtune issue #1185 (llama3/8B_qlora_single_device on an A100
80GB, alpaca, batch 2) measured 16.39 GiB reserved with the default allocator and 10.83 GiB with
expandable_segments:True (ratio 1.51). `--check` replays that configuration (32 layers, 64 padded
batches) and prints the ratio this port gives.

Run: python benchmarks/allocator_replay.py [--layers 8] [--check] [--json OUT]
Needs torch and transformers (pip install -e '.[frameworks]'); about 20 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics

from rigplan.measure.allocator_replay import padded_lengths, record, scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--check", action="store_true", help="replay torchtune issue #1185's configuration only")
    parser.add_argument("--json", help="write every scenario's figures to this file")
    args = parser.parse_args()
    rng = random.Random(0)
    rows = []
    if args.check:
        lengths = padded_lengths(64, rng, longest=1024)
        row = scenario("8B QLoRA, checkpointing, batch 2, 64 padded batches, 32 layers",
                       record("qlora", 32, lengths, 2, True, "8b", False))
        print(json.dumps(row, indent=1))
        print(f"default / expandable reserved: {row['caching_reserved_gib'] / row['expandable_reserved_gib']:.2f} "
              "(torchtune #1185 measured 16.39 / 10.83 = 1.51)")
        return
    for dims in ("8b", "1b"):
        for method, foreach in (("full", False), ("full", True), ("lora", False), ("qlora", False)):
            for checkpointing in (False, True):
                kinds = [("fixed", (2048,) * 3, 1), ("fixed", (1024,) * 3, 4),
                         ("varying", padded_lengths(24, rng), 2)]
                for shapes, lengths, mb in kinds:
                    label = (f"{dims} {method}{'-foreach' if foreach else ''} ckpt={checkpointing} {shapes} mb{mb} "
                             f"max {max(lengths)}")
                    row = scenario(label, record(method, args.layers, lengths, mb, checkpointing, dims, foreach))
                    row.update(dims=dims, method=method, foreach=foreach, checkpointing=checkpointing, shapes=shapes)
                    rows.append(row)
                    print(f"{label:44s} alloc {row['allocated_gib']:6.2f} churn {row['churn_gib']:6.2f}  "
                          f"over churn: caching reserved {row['caching_reserved_over_churn']:5.2f} "
                          f"needed {row['caching_needed_over_churn']:5.2f} | expandable reserved "
                          f"{row['expandable_reserved_over_churn']:5.2f} needed "
                          f"{row['expandable_needed_over_churn']:5.2f}", flush=True)
    print("\nmedian [quartiles] over churn, by training kind and shapes:")
    for trainable in ("full", "peft"):
        for shapes in ("fixed", "varying"):
            group = [r for r in rows if (r["method"] == "full") == (trainable == "full") and r["shapes"] == shapes]
            cells = []
            for key in ("caching_reserved", "caching_needed", "expandable_reserved", "expandable_needed"):
                values = sorted(r[key + "_over_churn"] for r in group)
                q = statistics.quantiles(values, n=4)
                cells.append(f"{key} {statistics.median(values):.3f} [{q[0]:.3f}, {q[2]:.3f}]")
            print(f"  {trainable:4s} {shapes:7s} n={len(group):2d}  " + "  ".join(cells))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
