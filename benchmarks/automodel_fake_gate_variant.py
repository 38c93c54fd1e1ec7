"""What NeMo AutoModel's fake balanced gate would do to rigplan's AutoModel rows, were rigplan to time it.

AutoModel's MoE benchmarks force balance with FakeBalancedGate (nemo_automodel/components/moe/layers.py): token t goes
to the k consecutive experts t*k ... t*k+k-1 (mod E), so a token's copies land on one or two EP ranks of one node,
where rigplan times the score-based routing of Megatron-Core's forced balance (k experts drawn by random scores, the
model's group limits applied: estimate.moe.expected_destinations). This variant swaps in the consecutive pattern for
the DeepEP deduplication of every row run with --framework automodel and prints both errors (rigplan's tokens/s
over the measured, minus one). rigplan does not apply it: the variant brings the DeepSeek-V3 and Qwen3-30B-A3B rows
near zero but puts the gpt-oss-120b and Kimi K2 rows near +40%, which points at a cost of DeepEP's internode
dispatch that its traffic does not carry (measured 2026-12-07; docs/methodology/moe.md, 'Left out').

Usage: python benchmarks/automodel_fake_gate_variant.py
"""

from __future__ import annotations

import functools
import statistics
from typing import Any

import numpy as np

import rigplan.estimate.moe as moe_estimate
from rigplan.domain.model import Architecture
from rigplan.validation.regimes import tokens_error
from rigplan.validation.run import run_suite

SCORE_BASED = moe_estimate.deduplicated_copy_share


@functools.cache
def consecutive_destinations(experts: int, top_k: int, destinations: float) -> float:
    """Destinations reached by k consecutive experts starting at t*k (mod E), averaged over t, experts laid out in
    order over `destinations` equal shares."""
    share = experts / destinations
    starts = np.arange(0, experts, top_k, dtype=float)
    reached = np.floor((starts + top_k - 1) / share) - np.floor(starts / share) + 1
    return float(min(reached.mean(), top_k))


def consecutive_copy_share(arch: Architecture, destinations: Any, dedup: bool) -> Any:
    if arch.moe is None or not dedup:
        return SCORE_BASED(arch, destinations, dedup)
    moe = arch.moe
    one = np.vectorize(lambda n: consecutive_destinations(moe.num_experts, moe.top_k, max(float(n), 1.0)) / moe.top_k)
    return one(np.asarray(destinations, dtype=float))


def automodel_errors() -> dict[str, float]:
    return {r.id: e for r in run_suite("moe") if r.error is not None and "automodel" in r.id
            if (e := tokens_error(r)) is not None}


def main() -> None:
    scores = automodel_errors()
    moe_estimate.deduplicated_copy_share = consecutive_copy_share
    try:
        consecutive = automodel_errors()
    finally:
        moe_estimate.deduplicated_copy_share = SCORE_BASED
    print(f"{'row':50s} {'score-based':>12s} {'consecutive':>12s}")
    for case_id in scores:
        print(f"{case_id:50s} {scores[case_id]:+12.1%} {consecutive[case_id]:+12.1%}")
    for name, errors in (("score-based", scores), ("consecutive", consecutive)):
        values = list(errors.values())
        middle, spread = statistics.median(values), statistics.median(map(abs, values))
        print(f"{name}: median |error| {spread:.1%}, median {middle:+.1%}, "
              f"beyond 35%: {sum(abs(v) > 0.35 for v in values)} of {len(values)}")


if __name__ == "__main__":
    main()
