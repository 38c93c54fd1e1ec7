"""The planner: its best layout is never beaten by brute force through `estimate`, its candidates are
reproduced exactly by `rigplan estimate`, and it never recommends what does not fit."""

from __future__ import annotations

import itertools

import pytest

from rigplan.errors import InvalidSpec
from rigplan.flow.estimate import estimate
from rigplan.flow.plan import OVER_LIMIT_REASON, candidate_request, parse_money, plan
from rigplan.flow.request import EstimateRequest, PlanRequest
from rigplan.search.pareto import pareto_front

SMALL = dict(model="llama-3.2-1b", tokens="20B", gpu=["a100-80gb-sxm"], gpus_max=8, gpus_min=8, mode="cloud",
             global_batch=64, seq=2048)


@pytest.fixture(scope="module")
def small_plan():  # type: ignore[no-untyped-def]
    return plan(PlanRequest(**SMALL))


def test_best_is_not_beaten_by_brute_force(small_plan) -> None:  # type: ignore[no-untyped-def]
    best = min(small_plan.candidates, key=lambda c: c.time_to_train_s)
    fastest = float("inf")
    for tp, pp, zero, mb, rc in itertools.product((1, 2, 4, 8), (1, 2, 4, 8), (0, 1, 2, 3), (1, 2, 4, 8),
                                                  ("none", "selective", "full")):
        if tp * pp > 8:
            continue
        dp = 8 // (tp * pp)
        if mb * dp > 64 or (dp == 1 and zero):
            continue
        gb = (64 // (mb * dp)) * mb * dp
        req = EstimateRequest(model="llama-3.2-1b", gpu="a100-80gb-sxm", gpus=8, tp=tp, pp=pp, zero=zero,
                              micro_batch=mb, recompute=rc, global_batch=gb, seq=2048, tokens="20B",
                              sequence_parallel=tp > 1)
        result = estimate(req).to_dict()
        if result["fits"]:
            fastest = min(fastest, result["time_to_train_s"])
    assert best.time_to_train_s <= fastest * (1 + 1e-9)


def test_candidates_are_reproduced_by_estimate(small_plan) -> None:  # type: ignore[no-untyped-def]
    shown = small_plan.ranked + small_plan.pareto
    assert shown
    for cand in shown:
        result = estimate(candidate_request(small_plan.request, cand))
        again = result.to_dict(with_advice=False)
        assert again["time_to_train_s"] == cand.time_to_train_s
        assert again == cand.estimate
        # the plan leaves the memory remedies to `rigplan memory` (null), everything else is the estimate's
        assert cand.estimate["memory"]["advice"] is None
        assert {k: v for k, v in result.to_dict()["memory"].items() if k != "advice"} == {
            k: v for k, v in cand.estimate["memory"].items() if k != "advice"}


def test_never_recommends_what_does_not_fit() -> None:
    """Options over the GPU's memory are kept only within rigplan's uncertainty, marked, and ranked after every
    option that fits."""
    result = plan(PlanRequest(model="llama-3.1-70b", tokens="100B", gpus_max=64, top=20))
    for cand in result.ranked + result.pareto:
        memory = cand.estimate["memory"]
        if cand.over_limit:
            assert not memory["fits"] and memory["fit"]["verdict"] == "over-borderline"
            assert OVER_LIMIT_REASON in cand.reasons
        else:
            assert memory["fits"] and memory["headroom_bytes"] >= 0
    flags = [c.over_limit for c in result.ranked]
    assert flags == sorted(flags)


def test_limits_are_respected_and_reasons_counted() -> None:
    result = plan(PlanRequest(model="llama-3.1-8b", tokens="1T", deadline="30d", budget="200k", gpus_max=512))
    data = result.to_dict()
    for cand in data["ranked"]:
        assert cand["time_to_train_s"] <= 30 * 86400 * 1.0001
        assert cand["cost_usd"] <= 200_000 * 1.0001
    assert data["stats"]["infeasible_by_reason"]
    assert data["stats"]["evaluated"] >= data["stats"]["feasible"] > 0


def test_pareto_front_is_not_dominated() -> None:
    points = [(1, 9), (2, 5), (3, 6), (4, 2), (5, 2), (2, 5)]
    front = pareto_front(points, time_of=lambda p: p[0], cost_of=lambda p: p[1])
    assert front == [(1, 9), (2, 5), (4, 2)]


@pytest.mark.parametrize("text,currency,expected", [
    ("3M", "usd", 3e6), ("500k", "usd", 5e5), ("2000万", "cny", 2e7 / 7.1), ("1.5亿", "cny", 1.5e8 / 7.1),
])
def test_budget_parsing(text: str, currency: str, expected: float) -> None:
    assert parse_money(text, currency, 7.1) == pytest.approx(expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("$$5", "one currency"), ("1$000", "one currency"), ("$¥5M", "one currency"), ("$5万", "one currency"),
    ("1,50", "groups of three digits"),
])
def test_a_budget_with_stray_signs_or_commas_is_refused(text: str, expected: str) -> None:
    """Found by fuzzing: every $, ¥ and comma used to be deleted wherever it stood ('1$000' read as $1,000, '$5万' as
    USD 50,000 where 万 means yuan)."""
    with pytest.raises(InvalidSpec, match=expected):
        parse_money(text, "usd", 7.1)
    assert parse_money("$1,234.5k", "cny", 7.1) == pytest.approx(1_234_500)


def test_the_loss_reaches_the_search_and_its_candidates() -> None:
    """--loss on plan: the search counts its logit buffers (a chunked loss holds less, so at least as many layouts
    fit), each candidate's estimate carries it, and the estimate command names it."""
    base = dict(model="llama-3.1-8b", tokens="10B", gpu=["h100-sxm"], gpus_max=8, gpus_min=8, mode="cloud",
                seq=8192, global_batch=64)
    plain = plan(PlanRequest(**base))
    chunked = plan(PlanRequest(**base, loss="chunked"))
    assert chunked.stats["feasible"] >= plain.stats["feasible"]
    best = chunked.ranked[0]
    request = candidate_request(chunked.request, best)
    assert request.loss == "chunked"
    assert estimate(request).to_dict(with_advice=False) == best.estimate
    same_layout = candidate_request(plain.request, best)
    assert same_layout.loss == "unfused"
    logits = estimate(same_layout).to_dict(with_advice=False)["memory"]["per_gpu"]["logits_bytes"]
    assert best.estimate["memory"]["per_gpu"]["logits_bytes"] < logits
    assert "--loss chunked" in chunked.to_dict()["ranked"][0]["estimate_command"]
    assert "--loss" not in plain.to_dict()["ranked"][0]["estimate_command"]


def test_the_reproduce_line_carries_the_shape_flags() -> None:
    """A model given by shape flags (or a catalog model changed by them) is reproduced by the printed line itself:
    run through the CLI, it gives the candidate's step time."""
    import json
    import shlex

    from click.testing import CliRunner

    from rigplan.cli.main import cli

    shape = dict(layers=4, hidden=1024, heads=8, ffn=4096, vocab=32000, tied_embeddings=False)
    result = plan(PlanRequest(**{**SMALL, "model": None, **shape}))
    first = result.to_dict()["ranked"][0]
    line = first["estimate_command"]
    assert line.startswith("rigplan estimate --layers 4 --hidden 1024") and "--untied-embeddings" in line
    out = CliRunner().invoke(cli, [*shlex.split(line)[1:], "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["step_time_s"] == pytest.approx(first["step_time_s"])
