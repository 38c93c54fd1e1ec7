"""The Megatron-Core presets' training-loop overhead per step (domain.frameworks.MEGATRON_STEP_OVERHEAD_MS): the
figure is recomputed from the MLPerf Training v6.0 GPT-OSS-20B runs without expert or context parallelism, and the
runs it was not taken from are checked against it."""

from __future__ import annotations

import statistics

from rigplan.domain.frameworks import MEGATRON_STEP_OVERHEAD_MS
from rigplan.flow.estimate import estimate
from rigplan.validation.run import SUITES, load_case_file

MOE_CASES = list(load_case_file(SUITES["moe"].default_file).cases)
MLPERF_GPT_OSS = [c for c in MOE_CASES if c.id.startswith("mlperf60-") and c.id.endswith("-gptoss")]


def _single_domain(case) -> bool:  # type: ignore[no-untyped-def]
    return (case.request.ep or 1) == 1 and (case.request.cp or 1) == 1


def _missing_step_s(case, overhead_ms: float) -> float:  # type: ignore[no-untyped-def]
    """Measured minus predicted step time of a tokens/s case, with the given loop overhead."""
    request = case.request.model_copy(update={"step_overhead_ms": overhead_ms})
    step = estimate(request).step
    predicted_step = float(step.step_time_s)
    tokens_per_s_per_gpu = float(step.tokens_per_step) / predicted_step / case.request.gpus
    measured_step = predicted_step * tokens_per_s_per_gpu / case.measured.value
    return float(measured_step - predicted_step)


CALIBRATION_IDS = frozenset(f"mlperf60-{system}-gptoss" for system in (
    "hpe-gb300-32", "hpe-gb300-16", "hpe-gb300-8", "nvidia-gb300-8", "nebius-b300-8", "dell-b300-8-epyc",
    "asus-b300-8", "dell-b200-8", "lambda-b200-8", "hpe-b300-8", "supermicro-b200-8", "dell-b300-16"))
"""The twelve single-domain runs the figure was taken from (2026-12-05); single-domain runs added since are held out."""


def test_the_overhead_is_the_median_gap_of_the_single_domain_mlperf_runs() -> None:
    calibration = [c for c in MLPERF_GPT_OSS if c.id in CALIBRATION_IDS]
    assert len(calibration) == 12 and all(_single_domain(c) for c in calibration)
    assert all(c.compare == "tokens_per_s_per_gpu" and c.request.framework == "nemo" for c in calibration)
    gaps_ms = sorted(1000.0 * _missing_step_s(c, 0.0) for c in calibration)
    # 3.8 and 62.8 ms (median 42.4) when the figure was set; MXFP8's cast bytes corrected since (4.125 -> 4.0625 B)
    assert round(gaps_ms[0], 1) == 4.0 and round(gaps_ms[-1], 1) == 63.2
    assert all(c.request.grad_bucket_params == 768e6 for c in calibration)
    assert abs(statistics.median(gaps_ms) - MEGATRON_STEP_OVERHEAD_MS) < 1.0


def test_the_held_out_mlperf_runs_with_expert_and_context_parallelism() -> None:
    """The seven GB200/GB300/B300 runs with CP 2 x EP 4 or TP 2 x CP 4 x EP 8 (one sequence a GPU a step) were 26-95%
    fast without the overhead; with it every one is within 9% (the two H100 runs stay 31-35% fast, a known gap)."""
    held_out = [c for c in MLPERF_GPT_OSS if not _single_domain(c) and c.request.gpu != "h100-sxm"]
    assert len(held_out) == 7
    for case in held_out:
        without = _missing_step_s(case, 0.0)
        with_overhead = _missing_step_s(case, MEGATRON_STEP_OVERHEAD_MS)
        assert 0.025 < without < 0.045, case.id  # 32.7-43.1 ms a step
        assert abs(with_overhead) < 0.015, case.id


def test_single_domain_runs_added_after_the_figure_are_held_out_and_hold() -> None:
    """Single-domain runs added since the figure was taken (2026-12-06: Cisco's and Supermicro's two 8-B300 runs and
    Oracle's 8 GB300, each out of sample within 4% in tokens/s) are held out: the figure stays what it was taken as,
    and what each still misses lies inside the spread of the twelve it was taken from (3.8 to 62.8 ms before it)."""
    held_out = [c for c in MLPERF_GPT_OSS if _single_domain(c) and c.id not in CALIBRATION_IDS]
    assert sorted(c.id for c in held_out) == ["mlperf60-cisco-b300-8-gptoss", "mlperf60-oracle-gb300-8-gptoss",
                                              "mlperf60-supermicro-as4126gs-b300-8-gptoss",
                                              "mlperf60-supermicro-sys422gs-b300-8-gptoss"]
    for case in held_out:
        missing_ms = 1000.0 * _missing_step_s(case, MEGATRON_STEP_OVERHEAD_MS)
        assert 3.8 - MEGATRON_STEP_OVERHEAD_MS <= missing_ms <= 62.8 - MEGATRON_STEP_OVERHEAD_MS, case.id
