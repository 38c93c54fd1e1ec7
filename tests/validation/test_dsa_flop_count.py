"""DeepSeek Sparse Attention's FLOP count against NVIDIA's own: Megatron-Bridge's GLM-5.2 verification card prints each
run's model TFLOP/s per GPU beside its tokens/s per GPU, so their ratio is Megatron-Bridge's model FLOPs per token.
rigplan's count for the same four requests (the MoE suite's GLM-5.2 rows) must agree within 2%, at 2K, 4K, 8K and
128K tokens; with dense MLA in place of DSA the 128K count would be far off."""

from __future__ import annotations

import pytest

from rigplan.estimate.flops import micro_batch_flops
from rigplan.flow.estimate import estimate
from rigplan.flow.resolve import build_setup
from rigplan.validation.run import SUITES, load_case_file

CARD_TFLOPS_AND_TOKENS = {  # examples/model_verification_cards/glm5-2/card.yaml @ 17548237, last_10_steps averages
    "card-gb200-glm52-pretrain-warm-start": (194.130, 637.590),
    "card-gb200-glm52-sft-128k-cp32": (88.848, 266.874),
    "card-h100-glm52-pretrain-random-init-deterministic": (54.595, 190.926),
    "card-gb200-glm52-sft-8k-one-micro-batch": (12.446, 39.718),
}
CASES = {case.id: case for case in load_case_file(SUITES["moe"].default_file).cases
         if case.id in CARD_TFLOPS_AND_TOKENS}


@pytest.mark.parametrize("case_id", sorted(CARD_TFLOPS_AND_TOKENS))
def test_model_flops_per_token_match_megatron_bridges_count(case_id: str) -> None:
    tflops, tokens_per_s = CARD_TFLOPS_AND_TOKENS[case_id]
    result = estimate(CASES[case_id].request).to_dict()
    ours = result["model_tflops_per_gpu"] / result["tokens_per_s_per_gpu"]
    assert ours == pytest.approx(tflops / tokens_per_s, rel=0.02)


def test_dense_mla_would_miss_the_128k_count() -> None:
    """The same 131,072-token sequence counted as dense MLA: its attention alone is more than the card's whole count."""
    setup = build_setup(CASES["card-gb200-glm52-sft-128k-cp32"].request)
    tflops, tokens_per_s = CARD_TFLOPS_AND_TOKENS["card-gb200-glm52-sft-128k-cp32"]
    sparse = micro_batch_flops(setup.arch, setup.job)
    dense = micro_batch_flops(setup.arch.with_overrides(sparse_attention=None), setup.job)
    assert float(sparse.model_flop / sparse.tokens) < 1.1 * tflops / tokens_per_s * 1e12
    assert float(dense.model_flop / dense.tokens) > 2.0 * tflops / tokens_per_s * 1e12
