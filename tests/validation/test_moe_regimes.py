"""The figures each MoE estimate quotes for its regime (flow.regime.MOE_REGIME_FIGURES) are the MoE suite's own, as it
stands: regenerate them with `python tools/moe_regimes.py` when MoE estimates or cases move."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from rigplan.flow import estimate as speed
from rigplan.flow.regime import (
    ALL_RUNS,
    BAND_HELD_LEAVE_ONE_OUT,
    HOST_LOAD_BANDS,
    HOST_LOAD_LABELS,
    MIN_RUNS,
    MOE_REGIME_FIGURES,
    host_load_band,
    host_load_note,
    moe_accuracy_note,
    quoted_figures,
    setup_regime,
)
from rigplan.flow.request import EstimateRequest
from rigplan.validation.regimes import leave_one_out, regime_figures, tokens_error
from rigplan.validation.run import run_suite

X86_EAGER_SMALL = {"host": "NVIDIA, x86 host", "CUDA graphs": "none (eager)",
                   "tokens per GPU per micro-batch": "<= 2,048", "dispatcher": "DeepEP or HybridEP"}
X86_EAGER_SMALL_NCCL = {**X86_EAGER_SMALL, "dispatcher": "NCCL all-to-all, dropless"}
NCCL_CELL = "NVIDIA, x86 host | none (eager) | <= 2,048 | NCCL all-to-all, dropless"


def test_the_quoted_figures_are_the_suites_own() -> None:
    assert regime_figures(run_suite("moe")) == MOE_REGIME_FIGURES, "stale: run python tools/moe_regimes.py"


def test_the_band_says_how_much_it_held_of_the_runs_left_out_of_it() -> None:
    check = leave_one_out(run_suite("moe"))
    assert check is not None
    assert round(check.inside_band / check.runs, 3) == BAND_HELD_LEAVE_ONE_OUT, "stale: run python tools/moe_regimes.py"
    assert (f"a band that held {BAND_HELD_LEAVE_ONE_OUT:.0%} of the suite's runs each left out of it"
            in moe_accuracy_note(X86_EAGER_SMALL_NCCL))


X86_EAGER_SMALL_CELL = "NVIDIA, x86 host; CUDA graphs: none (eager); <= 2,048 tokens per GPU per micro-batch"


def assert_quotes(labels: dict[str, str], key: str, cell: str) -> tuple[int, float]:
    """The accuracy line of `labels` quotes MOE_REGIME_FIGURES[key], a populated cell described as `cell`; (runs,
    median) of it."""
    runs, median, low, high, beyond = MOE_REGIME_FIGURES[key]
    assert runs >= MIN_RUNS
    note = moe_accuracy_note(labels)
    assert note.startswith(f"validation: on the {runs} published MoE runs in this regime ({cell})")
    assert f"came out {100 * median:+.0f}% against the measured" in note and f"{beyond} of them beyond 35%" in note
    assert f"({100 * low:+.0f}% to {100 * high:+.0f}% from the 10th to the 90th percentile" in note
    return runs, median


def test_a_populated_dispatcher_cell_is_quoted_first_and_the_cell_without_it_otherwise() -> None:
    runs, median = assert_quotes(X86_EAGER_SMALL_NCCL, NCCL_CELL,
                                 f"{X86_EAGER_SMALL_CELL}; dispatcher: NCCL all-to-all, dropless")
    wide_runs, wide_median = assert_quotes({**X86_EAGER_SMALL, "dispatcher": "a dispatcher no published run used"},
                                           "NVIDIA, x86 host | none (eager) | <= 2,048", X86_EAGER_SMALL_CELL)
    assert wide_runs > runs and median > wide_median  # the NCCL runs sit above the rest of their cell


def test_a_populated_regime_is_quoted_and_a_thin_one_falls_back_to_the_whole_suite() -> None:
    assert_quotes(X86_EAGER_SMALL, "NVIDIA, x86 host | none (eager) | <= 2,048 | DeepEP or HybridEP",
                  f"{X86_EAGER_SMALL_CELL}; dispatcher: DeepEP or HybridEP")
    thin = {**X86_EAGER_SMALL, "CUDA graphs": "full iteration", "tokens per GPU per micro-batch": "<= 2,048"}
    seen = MOE_REGIME_FIGURES.get("NVIDIA, x86 host | full iteration | <= 2,048", (0,))[0]
    assert seen < MIN_RUNS
    fallback = moe_accuracy_note(thin)
    assert fallback.startswith("validation: too few published MoE runs in this regime to quote (")
    assert f"micro-batch: {seen}, fewer than {MIN_RUNS})" in fallback
    assert f"on all {MOE_REGIME_FIGURES[ALL_RUNS][0]}," in fallback


def test_the_host_load_narrows_the_cell_first_and_the_suites_error_rises_with_it() -> None:
    loads = {label: {**X86_EAGER_SMALL_NCCL, "host load": label} for label in HOST_LOAD_LABELS}
    medians = []
    for label, labels in loads.items():
        key = f"{NCCL_CELL} | {label}"
        if MOE_REGIME_FIGURES.get(key, (0,))[0] >= MIN_RUNS:
            assert_quotes(labels, key, f"{X86_EAGER_SMALL_CELL}; dispatcher: NCCL all-to-all, dropless; {label}")
            assert quoted_figures(labels)[0] == "dispatcher and host load"
    for label in HOST_LOAD_LABELS:  # the whole suite by host load: the eager runs drift as the host nears the GPU
        eager = [e for r in run_suite("moe") if r.regime.get("host load") == label
                 and r.regime.get("CUDA graphs") == "none (eager)" and (e := tokens_error(r)) is not None]
        medians.append(statistics.median(eager))
    assert medians == sorted(medians) and medians[-1] - medians[0] > 0.2
    thin = {**X86_EAGER_SMALL, "dispatcher": "a dispatcher no published run used", "host load": HOST_LOAD_LABELS[2]}
    key = f"NVIDIA, x86 host | none (eager) | <= 2,048 | {HOST_LOAD_LABELS[2]}"
    assert quoted_figures(thin)[0] == "host load"
    assert_quotes(thin, key, f"{X86_EAGER_SMALL_CELL}; {HOST_LOAD_LABELS[2]}")


def test_a_job_in_the_top_host_load_band_is_pointed_at_cuda_graphs_unless_its_host_already_paces_it() -> None:
    request = dict(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=16, precision="fp8", fp8_recipe="current", seq=4096,
                   micro_batch=1, global_batch=1024, ep=16, framework="nemo", grad_reduce_dtype="bf16",
                   balanced_routing=True, moe_dispatcher="deepep")
    loaded = speed.estimate(EstimateRequest(**request))
    load = float(loaded.step.host_load)
    assert load >= HOST_LOAD_BANDS[1] and not [a for a in loaded.setup.assumptions if a.startswith("host-paced")]
    notes = [a for a in loaded.setup.assumptions if a.startswith("host load ")]
    assert notes == [host_load_note(load)] and f"host load {load:.2f}: the host needs {load:.0%}" in notes[0]
    graphed = speed.estimate(EstimateRequest(**{**request, "cuda_graphs": "full"}))
    assert float(graphed.step.host_load) == 0.0 and host_load_note(0.0) is None
    assert not [a for a in graphed.setup.assumptions if a.startswith(("host load ", "host-paced"))]
    paced = speed.estimate(EstimateRequest(**{**request, "gpu": "b200"}))  # the host-paced line says it instead
    assert float(paced.step.host_load) > load and [a for a in paced.setup.assumptions if a.startswith("host-paced")]
    assert not [a for a in paced.setup.assumptions if a.startswith("host load ")]


def test_every_moe_estimate_says_how_its_regime_has_fared_and_a_dense_one_does_not() -> None:
    moe = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8, micro_batch=1, seq=2048,
                                         global_batch=64, framework="megatron"))
    quoted = [a for a in moe.setup.assumptions if a.startswith("validation: ")]
    labels = setup_regime(moe.setup, float(moe.step.host_load))
    assert labels["host load"] == host_load_band(float(moe.step.host_load)) and float(moe.step.host_load) > 0.0
    assert quoted == [moe_accuracy_note(labels)]
    assert moe.to_dict()["breakdown"]["host_load"] == float(moe.step.host_load)
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
                              env={"COLUMNS": "1000"}).output
    assert f"the first, {first['note']}" in text


def test_time_to_train_is_also_given_under_the_quoted_runs_spread() -> None:
    from click.testing import CliRunner

    from rigplan.cli.main import cli

    data = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8, micro_batch=1, seq=2048,
                                          global_batch=64, framework="megatron", tokens="10B")).to_dict()
    accuracy = data["moe_accuracy"]
    _, _, low, high, _ = MOE_REGIME_FIGURES[f"{NCCL_CELL} | {accuracy['regime']['host load']}"]
    assert accuracy["quoted"] == "dispatcher and host load" and low < high
    time_s, gpu_hours = data["time_to_train_s"], data["gpu_hours"]
    assert accuracy["time_to_train_s_spread"] == (time_s * (1 + low), time_s * (1 + high))
    assert accuracy["gpu_hours_spread"] == (gpu_hours * (1 + low), gpu_hours * (1 + high))
    no_tokens = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, ep=8,
                                               global_batch=64)).to_dict()["moe_accuracy"]
    assert no_tokens["time_to_train_s_spread"] is None and no_tokens["gpu_hours_spread"] is None
    args = ["estimate", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "8", "--ep", "8", "--seq", "2048",
            "--global-batch", "64", "--framework", "megatron", "--tokens", "10B"]
    text = CliRunner().invoke(cli, args, env={"COLUMNS": "400"}).output
    assert "with the error of published MoE runs like it (10th-90th percentile)" in text
    dense = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "10B"],
                               env={"COLUMNS": "400"}).output
    assert "time to train" in dense and "published MoE runs" not in dense


def test_plan_gives_its_first_options_wall_time_under_the_spread_and_says_when_it_would_miss_the_deadline(
        tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from rigplan.cli.main import cli

    args = ["plan", "qwen3-30b-a3b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus-max", "8"]
    first = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)["ranked"][0]
    accuracy = first["moe_accuracy"]
    low, high = accuracy["wall_time_s_spread"]
    assert (low, high) == pytest.approx((first["wall_time_s"] * (1 + accuracy["p10_tokens_error"]),
                                         first["wall_time_s"] * (1 + accuracy["p90_tokens_error"])))
    assert low < high and first["wall_time_s"] < high
    text = CliRunner().invoke(cli, args, env={"COLUMNS": "400"}).output
    assert "the first, with that error (10th-90th percentile): wall time " in text and "would miss" not in text
    days = math.floor(high / 86400 * 0.99 * 100) / 100  # rounded down: the 90th percentile must miss it
    assert days * 86400 > first["wall_time_s"]  # ... while the first option itself still meets it
    tight = f"{days:.2f}d"
    report = tmp_path / "plan.md"
    deadline = [*args, "--deadline", tight, "--markdown", str(report)]
    text = CliRunner().invoke(cli, deadline, env={"COLUMNS": "400"}).output
    assert "deadline at the 90th percentile of that error" in text
    markdown = report.read_text()
    assert f"- the first, {accuracy['note']}" in markdown  # the purchase request carries the same lines
    assert "- **the first would miss the " in markdown
