"""Host cost a group of torch._grouped_mm's per-expert loop against a Python loop of torch.mm, on this machine's CPU.

PyTorch's _grouped_mm_fallback (GroupedMMUtils.h) issues one at::mm per group from C++; estimate.hf_experts times
each of them at TORCH_LINEAR_CPU_S, a torch linear call's CPU time on a GPU host, which includes Python's share.
This measures, with groups too small for their arithmetic to count (2 rows of 16 x 16, bf16, one thread), how much
of a per-group Python mm call the C++ loop saves: the ratio bounds the difference, not a GPU launch's cost.

Usage: python benchmarks/grouped_mm_fallback_cpu.py [--groups 8 128 512] [--repeats 200]
Needs torch (pip install -e '.[frameworks]').
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[8, 128, 512])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"{'groups':>7} {'grouped_mm us/group':>20} {'python mm loop us/group':>24}")
    for groups in args.groups:
        a = torch.randn(2 * groups, 16, dtype=torch.bfloat16)
        b = torch.randn(groups, 16, 16, dtype=torch.bfloat16)
        offs = torch.arange(2, 2 * groups + 1, 2, dtype=torch.int32)
        for _ in range(20):
            torch._grouped_mm(a, b, offs=offs)
        start = time.perf_counter()
        for _ in range(args.repeats):
            torch._grouped_mm(a, b, offs=offs)
        fused_loop = (time.perf_counter() - start) / args.repeats / groups
        start = time.perf_counter()
        loops = max(args.repeats // 10, 1)
        for _ in range(loops):
            begin = 0
            for group, end in enumerate(offs.tolist()):
                torch.mm(a[begin:end], b[group])
                begin = end
        python_loop = (time.perf_counter() - start) / loops / groups
        print(f"{groups:>7} {fused_loop * 1e6:>20.2f} {python_loop * 1e6:>24.2f}")


if __name__ == "__main__":
    main()
