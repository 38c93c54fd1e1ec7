"""The Muon optimizer (estimate.muon): one momentum per hidden matrix, Newton-Schulz GEMMs on each rank's share."""

from __future__ import annotations

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.errors import InvalidSpec
from rigplan.estimate import muon
from rigplan.flow.estimate import estimate
from rigplan.flow.request import EstimateRequest


def test_newton_schulz_flops_of_one_matrix() -> None:
    # 5 x (4 m^2 n + 2 m^3) with m the smaller dimension, whichever way round the matrix is stored
    m, n = 2048, 7168
    assert muon.newton_schulz_flop(m, n) == muon.newton_schulz_flop(n, m) == 5 * (4 * m * m * n + 2 * m**3)


def test_muon_covers_the_hidden_matrices_and_leaves_embeddings_to_adamw() -> None:
    catalog = load_catalog()
    llama = catalog.model("llama-3.1-8b").to_domain()
    vocab_share = 2 * llama.vocab * llama.hidden / 8.03e9  # input embedding and untied head, ~13%
    assert muon.matrix_share(llama) == pytest.approx(1 - vocab_share, abs=0.01)
    dsv3 = catalog.model("deepseek-v3").to_domain()  # MLA's low-rank factors, not a full q projection
    assert 0.99 < muon.matrix_share(dsv3) < 1.0


def test_muon_halves_the_optimizer_states_and_costs_a_few_percent_of_the_step() -> None:
    base = dict(model="llama-3.1-70b", gpu="h100-sxm", gpus=64, tp=4, pp=4, zero=1, seq=8192, micro_batch=1,
                global_batch=256, tokens="1B")
    adam = estimate(EstimateRequest(**base))
    mu = estimate(EstimateRequest(**base, optimizer="muon"))
    # 4 B momentum + 4 B master against AdamW's 12 B
    assert mu.memory.breakdown.optimizer_bytes < 0.7 * adam.memory.breakdown.optimizer_bytes
    extra = mu.step.optimizer_s - adam.step.optimizer_s
    assert 0.0 < extra < 0.05 * adam.step.step_time_s  # Liu et al. 2025: 1-3% end to end


def test_muon_with_a_host_optimizer_is_refused() -> None:
    with pytest.raises(InvalidSpec, match="Newton-Schulz iterations run on the GPU"):
        estimate(EstimateRequest(model="llama-3.1-8b", gpus=8, zero=1, optimizer="muon", offload="optimizer"))


def test_memory_advice_for_a_muon_job_does_not_offer_a_host_optimizer() -> None:
    result = estimate(EstimateRequest(model="llama-3.1-70b", gpu="h100-sxm", gpus=8, optimizer="muon", tokens="1B"))
    assert not result.memory.fits
    remedies = [str(a) for a in result.memory.advice()]
    assert remedies and not any("--offload optimizer" in r for r in remedies)
