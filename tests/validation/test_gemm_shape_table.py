"""The GEMM shape check's data (benchmarks/gemm_shape_check.py): OpenXLA's cuBLAS times as transcribed, and the
limit of rigplan's smallest-dimension curve that they show."""

from __future__ import annotations

from tests.validation.scripts import load_script

CHECK = load_script("benchmarks/gemm_shape_check.py")


def test_the_transcribed_table_is_whole_and_each_rate_is_a_whole_number_of_nanoseconds() -> None:
    for part, rows in CHECK.MEASURED.items():
        shapes = {(m, n, k) for m, n, k, _ in rows}
        assert len(rows) == len(shapes) == 64, part  # every dimension in 512, 1,024, 2,048, 4,096
        for m, n, k, flop_per_s in rows:
            ns = 2 * m * n * k * 1e9 / flop_per_s  # the table stores 2mnk / t with t a whole number of ns
            assert abs(ns - round(ns)) < 0.05 * max(1.0, ns / 1e4), (part, m, n, k)


def test_thin_but_long_gemms_run_above_the_smallest_dimension_curve_and_all_small_ones_below() -> None:
    for part, rows in CHECK.MEASURED.items():
        eff, peak = CHECK.FAMILY[part], CHECK.PEAK_FLOP_PER_S[part]
        measured = {(m, n, k): f / peak for m, n, k, f in rows}
        for thin in (512, 1024):
            assert measured[(4096, thin, 4096)] > 1.3 * CHECK.curve(eff, 4096, thin, 4096), part
        assert measured[(512, 512, 512)] < 0.5 * CHECK.curve(eff, 512, 512, 512), part
