"""The figures each MoE estimate quotes for its regime (flow.regime.MOE_REGIME_FIGURES) are the MoE suite's own, as it
stands: regenerate them with `python tools/moe_regimes.py` when MoE estimates or cases move."""

from __future__ import annotations

import json

from rigplan.flow import estimate as speed
from rigplan.flow.regime import ALL_RUNS, MIN_RUNS, MOE_REGIME_FIGURES, moe_accuracy_note
from rigplan.flow.request import EstimateRequest
from rigplan.validation.regimes import regime_figures
from rigplan.validation.run import run_suite

X86_EAGER_SMALL = {"host": "NVIDIA, x86 host", "CUDA graphs": "none (eager)",
                   "tokens per GPU per micro-batch": "<= 2,048"}


def test_the_quoted_figures_are_the_suites_own() -> None:
    assert regime_figures(run_suite("moe")) == MOE_REGIME_FIGURES, "stale: run python tools/moe_regimes.py"


def test_a_populated_regime_is_quoted_and_a_thin_one_falls_back_to_the_whole_suite() -> None:
    runs, median, low, high, beyond = MOE_REGIME_FIGURES["NVIDIA, x86 host | none (eager) | <= 2,048"]
    assert runs >= MIN_RUNS
    note = moe_accuracy_note(X86_EAGER_SMALL)
    assert note.startswith(f"validation: on the {runs} published MoE runs in this regime (NVIDIA, x86 host; CUDA "
                           "graphs: none (eager); <= 2,048 tokens per GPU per micro-batch)")
    assert f"came out {100 * median:+.0f}% against the measured" in note and f"{beyond} of them beyond 35%" in note
    assert f"({100 * low:+.0f}% to {100 * high:+.0f}% from the 10th to the 90th percentile" in note
    thin = {**X86_EAGER_SMALL, "CUDA graphs": "full iteration", "tokens per GPU per micro-batch": "<= 2,048"}
    seen = MOE_REGIME_FIGURES.get("NVIDIA, x86 host | full iteration | <= 2,048", (0,))[0]
    assert seen < MIN_RUNS
    fallback = moe_accuracy_note(thin)
    assert f"{seen} published MoE runs in this regime" in fallback and "too few to quote" in fallback
    assert f"on all {MOE_REGIME_FIGURES[ALL_RUNS][0]}," in fallback


def test_every_moe_estimate_says_how_its_regime_has_fared_and_a_dense_one_does_not() -> None:
    moe = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8, micro_batch=1, seq=2048,
                                         global_batch=64, framework="megatron"))
    quoted = [a for a in moe.setup.assumptions if a.startswith("validation: ")]
    assert quoted == [moe_accuracy_note(X86_EAGER_SMALL)]
    dense = speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, global_batch=64))
    assert not [a for a in dense.setup.assumptions if a.startswith("validation: ")]


def test_the_json_carries_the_figures_and_plan_names_its_first_options() -> None:
    data = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="gb200", gpus=8, ep=8, micro_batch=4,
                                          global_batch=64, cuda_graphs="full", capacity_factor=1.0,
                                          moe_pad_to_capacity=True, framework="megatron")).to_dict()
    accuracy = data["moe_accuracy"]
    cell = MOE_REGIME_FIGURES["NVIDIA, Grace host | full iteration | > 8,192"]
    assert accuracy["quoted"] == "regime" and accuracy["regime"]["routing"] == "padded to capacity"
    assert (accuracy["runs"], accuracy["median_tokens_error"], accuracy["p10_tokens_error"],
            accuracy["p90_tokens_error"], accuracy["beyond_35"]) == cell
    assert accuracy["note"] in data["assumptions"]
    dense = speed.estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", gpus=8, global_batch=64)).to_dict()
    assert dense["moe_accuracy"] is None


def test_plan_prints_its_first_options_accuracy_line() -> None:
    from click.testing import CliRunner

    from rigplan.cli.main import cli

    out = CliRunner().invoke(cli, ["plan", "qwen3-30b-a3b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "8",
                                   "--json"])
    first = json.loads(out.output)["ranked"][0]["moe_accuracy"]
    assert first["note"].startswith("validation: ")
    text = CliRunner().invoke(cli, ["plan", "qwen3-30b-a3b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "8"],
                              env={"COLUMNS": "400"}).output
    assert f"the first, {first['note']}" in text
