"""rigplan's cuDNN attention curves against NVIDIA's cuDNN 9.19 SDPA training benchmark (benchmarks/
cudnn_attention_check.py): the transcribed rows are consistent, the curves reproduce them, Blackwell Ultra gains its
clock and not its doubled exponential rate, and FP8 attention gains what the benchmark measured."""

from __future__ import annotations

import statistics

import pytest
from tests.validation.scripts import load_script

from rigplan.catalog.load import load_catalog
from rigplan.estimate.efficiency import (
    BLACKWELL,
    CUDNN_BLACKWELL_FP8_GAIN,
    HOPPER,
    attention_kernel_efficiency,
    clock_fraction,
)

CHECK = load_script("benchmarks/cudnn_attention_check.py")


def test_every_transcribed_row_has_a_slower_backward_and_bf16_rates_grow_with_the_sequence() -> None:
    for key, rows in CHECK.MEASURED.items():
        assert len(rows) == len(CHECK.SEQS), key
        for forward, backward in (row for row in rows if row):
            assert backward < forward, key
        rates = [CHECK.combined(*row) for row in rows if row]
        if key[2] == "bf16":  # up to 16k (the 32k MLA rows level off)
            assert rates[:4] == sorted(rates[:4]), key


@pytest.mark.parametrize(("part", "tolerance"), [("h200-sxm", 0.03), ("gb200", 0.03), ("gb300", 0.04)])
def test_the_cudnn_curve_reproduces_the_llama_shape_rows(part: str, tolerance: float) -> None:
    peak = load_catalog().gpu_domain(part).peak("bf16") / 1e12
    measured = CHECK.fractions(part, "llama3.1", "bf16", peak)
    for seq, value in zip(CHECK.SEQS, measured, strict=True):
        predicted = CHECK.rigplan_fraction(part, seq, "llama3.1")
        assert abs(predicted / value - 1) < tolerance, (part, seq, predicted, value)


def test_the_mla_shape_is_within_sixteen_percent_where_the_fit_did_not_see_it() -> None:
    for part in ("h200-sxm", "gb200", "gb300"):
        peak = load_catalog().gpu_domain(part).peak("bf16") / 1e12
        for seq, value in zip(CHECK.SEQS[:4], CHECK.fractions(part, "dsv3", "bf16", peak)[:4], strict=True):
            if value is not None:
                assert abs(CHECK.rigplan_fraction(part, seq, "dsv3") / value - 1) < 0.16, (part, seq)


def test_gb300_runs_blackwells_curve_at_its_clock_not_at_its_exponential_rate() -> None:
    catalog = load_catalog()
    measured = [CHECK.combined(*b) / CHECK.combined(*a) for a, b in zip(
        CHECK.MEASURED[("gb200", "llama3.1", "bf16")], CHECK.MEASURED[("gb300", "llama3.1", "bf16")], strict=True)]
    assert 1.07 < statistics.median(measured) < 1.10
    ratio = CHECK.rigplan_fraction("gb300", 8192, "llama3.1") / CHECK.rigplan_fraction("gb200", 8192, "llama3.1")
    assert ratio == pytest.approx(clock_fraction(catalog.gpu_domain("gb300")), rel=1e-9)
    assert abs(ratio / statistics.median(measured) - 1) < 0.02


def test_fp8_attention_gains_the_measured_rate_not_the_exponential_models() -> None:
    gains = []
    for part in ("gb200", "gb300"):
        for shape in ("llama3.1", "dsv3"):
            rows = zip(CHECK.SEQS, CHECK.MEASURED[(part, shape, "bf16")], CHECK.MEASURED[(part, shape, "fp8")],
                       strict=True)
            gains += [CHECK.combined(*f) / CHECK.combined(*b) for s, b, f in rows if 4096 <= s <= 16384]
    assert statistics.median(gains) == pytest.approx(CUDNN_BLACKWELL_FP8_GAIN, abs=0.005)
    gb300 = load_catalog().gpu_domain("gb300")
    curve = BLACKWELL.attention["cudnn"]
    kwargs = dict(peak_flop_per_s=gb300.peak("bf16"), exp_per_s=gb300.exp_per_s, flop_per_exp=896.0)
    bf16 = attention_kernel_efficiency(BLACKWELL, curve, 0.5, **kwargs)
    fp8 = attention_kernel_efficiency(BLACKWELL, curve, 0.5, fp8_speedup=2.0, **kwargs)
    assert fp8 / bf16 == pytest.approx(CUDNN_BLACKWELL_FP8_GAIN)
    # On Hopper cuDNN 9.19's causal fp8 backward is slower than its bf16 one: fp8 attention does not pay there.
    h200_gains = [CHECK.combined(*f) / CHECK.combined(*b) for s, b, f in zip(
        CHECK.SEQS, CHECK.MEASURED[("h200-sxm", "llama3.1", "bf16")], CHECK.MEASURED[("h200-sxm", "llama3.1", "fp8")],
        strict=True) if 4096 <= s <= 16384]
    assert statistics.median(h200_gains) == pytest.approx(HOPPER.attention["cudnn"].fp8_gain, abs=0.005)
