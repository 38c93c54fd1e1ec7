"""The x86 op price of the host model swept over the MoE suite (docs/methodology/moe.md, 'What the host model was
tried against', the sixth try, and 'Validation': the calibration it led to).

rigplan issues each host op in estimate.moe_host.HOST_OP_S seconds: 27 us on x86 (calibrated between the suite's
host-paced and GPU-paced Megatron-Core runs), 37.08 us on Grace (a torch Linear's forward, TransformerEngine issue
#2053, where the x86 figure is 13.48 us). The variant sets the x86 price to each of the given microseconds and prints,
for the model as it is and for each price, the MoE suite's out-of-sample rows beyond 35% in tokens/s (positive:
rigplan too fast), their median absolute and signed error, and the NVIDIA x86-host rows' median absolute error;
then, for the last price, the rows whose |error| grew by more than 2 points and a few named rows (MoE ModelZoo's
H100 pair among them).

Run: python benchmarks/moe_x86_op_variant.py [US ...]   (default 13.48 18 24 30 36 40)
"""

from __future__ import annotations

import sys

import rigplan.estimate.moe_host as moe_host
from rigplan.validation.regimes import out_of_sample, summarize_errors, tokens_error
from rigplan.validation.run import run_suite

NAMED = ("modelzoo-h100-qwen3-235b-tp4-ep8-pp8", "modelzoo-h100-qwen3-235b-ep32-pp8", "bridge2509-b200-qwen3-30b",
         "bridge2602-b200-qwen3-30b-mx", "recipes2607-h100-qwen3-30b-fp8", "recipes2607-h100-qwen3-30b-bf16")
AS_IS = moe_host.HOST_OP_S["x86"]


def errors_at(op_s: float) -> dict[str, tuple[float, bool, bool]]:
    """Case id -> (tokens/s error, out of sample, on an NVIDIA x86 host) with the x86 op at op_s."""
    moe_host.HOST_OP_S["x86"] = op_s
    try:
        return {r.id: (e, out_of_sample(r), r.regime.get("host") == "NVIDIA, x86 host") for r in run_suite("moe")
                if (e := tokens_error(r)) is not None}
    finally:
        moe_host.HOST_OP_S["x86"] = AS_IS


def line(label: str, errors: dict[str, tuple[float, bool, bool]]) -> str:
    oos = summarize_errors([e for e, flagged, _ in errors.values() if flagged])
    x86 = summarize_errors([e for e, _, on_x86 in errors.values() if on_x86])
    return (f"{label:>10s}: out of sample {oos.rows} rows, median |error| {oos.median_abs:.1%}, signed "
            f"{oos.median_signed:+.1%}, beyond 35% {oos.beyond_35_fast} fast / {oos.beyond_35_slow} slow; "
            f"x86 hosts {x86.rows} rows, median |error| {x86.median_abs:.1%}")


def main() -> None:
    prices = [float(x) for x in sys.argv[1:]] or [13.48, 18.0, 24.0, 30.0, 36.0, 40.0]
    base = errors_at(AS_IS)
    print(line(f"{AS_IS * 1e6:.2f} us", base))
    variant = base
    for us in prices:
        variant = errors_at(us * 1e-6)
        print(line(f"{us:g} us", variant))
    worse = sorted((abs(variant[k][0]) - abs(e), k) for k, (e, *_) in base.items()
                   if abs(variant[k][0]) > abs(e) + 0.02)
    print(f"at {prices[-1]:g} us, {len(worse)} rows worse by more than 2 points:")
    for _, k in reversed(worse):
        print(f"  {base[k][0]:+.1%} -> {variant[k][0]:+.1%}  {k}")
    print("named rows:")
    for k in NAMED:
        if k in base:
            print(f"  {base[k][0]:+.1%} -> {variant[k][0]:+.1%}  {k}")


if __name__ == "__main__":
    main()
