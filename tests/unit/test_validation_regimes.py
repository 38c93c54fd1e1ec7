"""The MoE suite by regime (rigplan.validation.regimes): the labels a job gets, the tokens/s error convention and the
table the validation report prints."""

from __future__ import annotations

import pytest

from rigplan.flow import estimate as speed
from rigplan.flow.regime import setup_regime
from rigplan.flow.request import EstimateRequest
from rigplan.validation import regimes
from rigplan.validation.common import CaseResult
from rigplan.validation.report import markdown as report_markdown

QWEN = dict(model="qwen3-30b-a3b", gpus=8, ep=8, seq=4096, global_batch=64, framework="megatron")


def labels(**overrides: object) -> dict[str, str]:
    result = speed.estimate(EstimateRequest(**{**QWEN, **overrides}))
    return setup_regime(result.setup, float(result.step.host_load))


def result(error: float, *, compare: str = "tokens_per_s_per_gpu", regime: dict[str, str] | None = None,
           notes: tuple[str, ...] = ()) -> CaseResult:
    return CaseResult(suite="moe", id=f"case-{error}-{compare}", group="g", kind="k", expect="value", unit="u",
                      measured=1.0, predicted=1.0 + error, error=error, tolerance=0.25, status="pass",
                      compare=compare, reliability="high", notes=notes, regime=regime or {})


def test_a_job_is_labelled_by_its_host_graphs_tokens_stack_routing_dispatcher_host_load_gpu_and_tp_cp() -> None:
    eager = labels(gpu="h100-sxm", micro_batch=1, tp=2, balanced_routing=True)
    assert eager == {"host": "NVIDIA, x86 host", "CUDA graphs": "none (eager)",
                     "tokens per GPU per micro-batch": "<= 2,048",
                     "stack": "Megatron-Core (Megatron-LM, NeMo, Megatron-Bridge)", "routing": "forced balance",
                     "dispatcher": "NCCL all-to-all, dropless", "host load": "host load 0.7 or more",
                     "GPU": "h100-sxm", "tensor x context parallel": "tp x cp 2-4"}
    assert labels(gpu="h100-sxm")["tensor x context parallel"] == "tp x cp = 1"
    assert labels(gpu="h100-sxm", tp=4, cp=2, gpus=8)["tensor x context parallel"] == "tp x cp 8 or more"
    assert labels(gpu="h100-sxm", moe_dispatcher="deepep")["dispatcher"] == "DeepEP or HybridEP"
    assert labels(gpu="h100-sxm", a2a_overlap=True)["dispatcher"] == "DeepEP or HybridEP"
    assert labels(gpu="h100-sxm", gpus=8, ep=1)["dispatcher"].startswith("no dropless all-to-all")
    graphed = labels(gpu="gb200", micro_batch=4, cuda_graphs="full", capacity_factor=1.0, moe_pad_to_capacity=True,
                     precision="fp8", fp8_recipe="mxfp8")
    assert graphed["host"] == "NVIDIA, Grace host" and graphed["CUDA graphs"] == "full iteration"
    assert graphed["tokens per GPU per micro-batch"] == "> 8,192" and graphed["routing"] == "padded to capacity"
    assert graphed["dispatcher"].startswith("no dropless all-to-all")
    assert graphed["host load"] == "host load under 0.3"  # a full-iteration graph: the host issues nothing
    scoped = labels(gpu="b200", micro_batch=2, cuda_graph_scope=("moe_router",), framework="torchtitan")
    assert scoped["CUDA graphs"] == "per module" and scoped["stack"] == "torchtitan"
    assert scoped["tokens per GPU per micro-batch"] == "2,049-8,192"
    assert scoped["routing"] == "natural, dropless or capped"
    assert labels(gpu="mi300x", micro_batch=1, framework=None)["host"] == "other vendors (not NVIDIA)"


def test_step_time_errors_are_read_as_tokens_per_second() -> None:
    assert regimes.tokens_error(result(0.25)) == pytest.approx(0.25)
    # a step predicted 20% short is 25% too many tokens/s
    assert regimes.tokens_error(result(-0.2, compare="step_time_s")) == pytest.approx(0.25)
    assert regimes.tokens_error(CaseResult(suite="moe", id="x", group="g", kind="k", expect="value", unit="u",
                                           measured=1.0, predicted=None, error=None, tolerance=None,
                                           status="error", compare="step_time_s", reliability="high")) is None


def test_the_summary_counts_rows_within_25_and_beyond_35_percent_either_way() -> None:
    s = regimes.summarize_errors([-0.5, -0.1, 0.0, 0.2, 0.3, 0.4, 0.9])
    assert (s.rows, s.within_25, s.beyond_35_fast, s.beyond_35_slow) == (7, 3, 2, 1)
    assert s.median_signed == pytest.approx(0.2) and s.median_abs == pytest.approx(0.3)


def test_the_table_groups_each_axis_larger_regime_first_and_the_report_prints_it() -> None:
    x86 = {"host": "NVIDIA, x86 host"}
    grace = {"host": "NVIDIA, Grace host"}
    results = [result(0.5, regime=x86, notes=("out of sample: estimated before it was added",)),
               result(0.1, regime=x86), result(-0.1, regime=grace)]
    table = regimes.regime_table(results)
    assert [(axis, regime, s.rows) for axis, regime, s in table] == [("host", "NVIDIA, x86 host", 2),
                                                                      ("host", "NVIDIA, Grace host", 1)]
    assert table[0][2].median_signed == pytest.approx(0.3) and table[0][2].beyond_35_fast == 1
    lines = regimes.markdown(results)
    assert "| out of sample | 1 | 50.0% | +50.0% | 0 | 1 / 0 |" in lines
    assert "| host | NVIDIA, Grace host | 1 | 10.0% | -10.0% | 1 | 0 / 0 |" in lines
    assert regimes.markdown([]) == []


def test_the_cross_table_gives_the_host_load_by_tp_x_cp_in_the_bands_order() -> None:
    def labelled(load: str, sharding: str) -> dict[str, str]:
        return {"host load": load, "tensor x context parallel": sharding}

    results = [result(0.6, regime=labelled("host load 0.7 or more", "tp x cp 2-4")),
               result(0.2, regime=labelled("host load 0.7 or more", "tp x cp = 1")),
               result(0.4, regime=labelled("host load 0.7 or more", "tp x cp 2-4")),
               result(-0.1, regime=labelled("host load under 0.3", "tp x cp 8 or more"))]
    table = regimes.cross_table(results)
    assert [(row, column, s.rows) for row, column, s in table] == [
        ("host load under 0.3", "tp x cp 8 or more", 1), ("host load 0.7 or more", "tp x cp = 1", 1),
        ("host load 0.7 or more", "tp x cp 2-4", 2)]
    assert table[-1][2].median_signed == pytest.approx(0.5)
    assert "| host load 0.7 or more | tp x cp 2-4 | 2 | 50.0% | +50.0% | 0 | 2 / 0 |" in regimes.markdown(results)


def test_leave_one_out_quotes_each_run_from_the_others() -> None:
    """In one cell every run's line is quoted from the other five: inside the band where the others' 10th-90th
    percentiles hold it."""
    import statistics

    cell = {"host": "NVIDIA, x86 host", "CUDA graphs": "none (eager)", "tokens per GPU per micro-batch": "<= 2,048",
            "dispatcher": "DeepEP or HybridEP", "host load": "host load under 0.3"}
    errors = [0.0, 0.1, 0.2, 0.3, 0.4, 1.0]
    check = regimes.leave_one_out([result(e, regime=cell) for e in errors])
    assert check is not None and check.runs == 6
    inside, misses = 0, []
    for k, error in enumerate(errors):
        others = errors[:k] + errors[k + 1:]
        deciles = statistics.quantiles(others, n=10, method="inclusive")
        inside += round(deciles[0], 3) <= error <= round(deciles[-1], 3)
        misses.append(abs((1 + error) / (1 + statistics.median(others)) - 1))
    assert check.inside_band == inside < 6
    assert check.median_miss == pytest.approx(statistics.median(misses), abs=1e-3)
    assert regimes.leave_one_out([result(0.1, regime=cell)]) is None


def test_the_validation_report_lists_every_suite_and_the_moe_regimes() -> None:
    text = report_markdown()
    for heading in ("## MoE by regime", "## memory cases", "## throughput cases", "## moe cases",
                    "## dense_oos cases", "## frontier cases"):
        assert heading in text
