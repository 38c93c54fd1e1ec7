"""The MoE suite by regime: which configurations rigplan's MoE step time holds for, and which it does not.

Each MoE case is labelled by nine things (CaseResult.regime, flow.regime.regime_of): eight a user can read off their
own job (the host the GPUs hang off, CUDA graphs, tokens per GPU per micro-batch, the training stack, the routing, the
token dispatcher, the GPU and tp x cp) and the host load rigplan's estimate gives it. The report's table groups the
suite's tokens/s errors by each label, with the out-of-sample rows (those estimated before they were added, with
nothing changed for them) apart, and a cross table gives the host load by tp x cp (cross_table); the figures each MoE
estimate quotes for its own regime (flow.regime.MOE_REGIME_FIGURES) are computed here (regime_figures; `python
tools/moe_regimes.py` writes them).

Errors here are in tokens/s, rigplan's over the measured minus one (positive: rigplan too fast): a step-time error e
reads as 1 / (1 + e) - 1.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from rigplan.flow.regime import (
    ACCURACY_AXES,
    ALL_RUNS,
    DISPATCHER_AXIS,
    HOST_LOAD_AXIS,
    HOST_LOAD_LABELS,
    NARROWINGS,
    REGIME_AXES,
    SHARDING_AXIS,
    SHARDING_LABELS,
    cell_key,
    quoted_figures,
)
from rigplan.validation.common import CaseResult

OUTSIDE_CHECK = 0.35
"""The MoE acceptance bound: every published MoE run within 35% of its tokens/s."""


def tokens_error(result: CaseResult) -> float | None:
    """rigplan's tokens/s over the measured, minus one (step-time cases inverted)."""
    if result.error is None:
        return None
    return 1.0 / (1.0 + result.error) - 1.0 if result.compare == "step_time_s" else result.error


def out_of_sample(result: CaseResult) -> bool:
    """Whether the case's notes say it was estimated before it was added, with nothing changed for it."""
    return any("out of sample" in note for note in result.notes)


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    rows: int
    median_abs: float
    median_signed: float
    within_25: int
    beyond_35_fast: int
    beyond_35_slow: int


def summarize_errors(errors: list[float]) -> ErrorSummary:
    """Median |error|, median error and counts within 25% and beyond OUTSIDE_CHECK either way."""
    return ErrorSummary(rows=len(errors), median_abs=statistics.median(abs(e) for e in errors),
                        median_signed=statistics.median(errors), within_25=sum(abs(e) <= 0.25 for e in errors),
                        beyond_35_fast=sum(e > OUTSIDE_CHECK for e in errors),
                        beyond_35_slow=sum(e < -OUTSIDE_CHECK for e in errors))


def regime_table(results: list[CaseResult]) -> list[tuple[str, str, ErrorSummary]]:
    """(axis, regime, summary) for every regime present among the MoE results, axis by axis, larger first."""
    table = []
    for axis in REGIME_AXES:
        groups: dict[str, list[float]] = {}
        for r in results:
            error = tokens_error(r)
            if error is not None and axis in r.regime:
                groups.setdefault(r.regime[axis], []).append(error)
        for regime, errors in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            table.append((axis, regime, summarize_errors(errors)))
    return table


def cross_table(results: list[CaseResult]) -> list[tuple[str, str, ErrorSummary]]:
    """(host load, tp x cp, summary) for every pair of those labels present among the MoE results, in the bands'
    order."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in results:
        error = tokens_error(r)
        if error is not None and HOST_LOAD_AXIS in r.regime and SHARDING_AXIS in r.regime:
            groups.setdefault((r.regime[HOST_LOAD_AXIS], r.regime[SHARDING_AXIS]), []).append(error)
    order = {label: k for k, label in enumerate((*HOST_LOAD_LABELS, *SHARDING_LABELS))}
    return [(row, column, summarize_errors(errors))
            for (row, column), errors in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]]))]


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}%"


def markdown(results: list[CaseResult]) -> list[str]:
    """The MoE suite's out-of-sample summary and its regime table, as Markdown lines."""
    moe = [r for r in results if r.suite == "moe" and tokens_error(r) is not None]
    if not moe:
        return []
    lines = ["", "## MoE by regime", "",
             "Errors in tokens/s (rigplan over measured, minus one: positive is rigplan too fast). Each row groups the "
             "suite's cases by one label a user can read off their own job; the labels come from "
             "`rigplan.flow.regime`.", "",
             "| cases | rows | median abs error | median error | within 25% | beyond 35% (fast / slow) |",
             "|---|---|---|---|---|---|"]
    for name, chosen in (("all", moe), ("out of sample", [r for r in moe if out_of_sample(r)])):
        if not chosen:
            continue
        s = summarize_errors([e for r in chosen if (e := tokens_error(r)) is not None])
        lines.append(f"| {name} | {s.rows} | {100 * s.median_abs:.1f}% | {_pct(s.median_signed)} | {s.within_25} | "
                     f"{s.beyond_35_fast} / {s.beyond_35_slow} |")
    check = leave_one_out(moe)
    if check is not None:
        lines += ["", f"Leave one out: with each run's accuracy line quoted from the other runs alone, "
                      f"{check.inside_band} of the {check.runs} runs ({check.inside_band / check.runs:.0%}) fall "
                      "inside the 10th-90th percentile band quoted for them (80% if the band were as wide as it says), "
                      f"and the quoted median misses a run's own error by {check.median_miss:.1%} at the median"
                      + (": the band each MoE estimate prints is narrower than its errors on runs it has not seen."
                         if check.inside_band < 0.8 * check.runs else ".")]
    lines += ["", "| by | regime | rows | median abs error | median error | within 25% | beyond 35% (fast / slow) |",
              "|---|---|---|---|---|---|---|"]
    for axis, regime, s in regime_table(moe):
        lines.append(f"| {axis} | {regime} | {s.rows} | {100 * s.median_abs:.1f}% | {_pct(s.median_signed)} | "
                     f"{s.within_25} | {s.beyond_35_fast} / {s.beyond_35_slow} |")
    lines += ["", f"The {HOST_LOAD_AXIS} by {SHARDING_AXIS}:", "",
              f"| {HOST_LOAD_AXIS} | {SHARDING_AXIS} | rows | median abs error | median error | within 25% | "
              "beyond 35% (fast / slow) |", "|---|---|---|---|---|---|---|"]
    for row, column, s in cross_table(moe):
        lines.append(f"| {row} | {column} | {s.rows} | {100 * s.median_abs:.1f}% | {_pct(s.median_signed)} | "
                     f"{s.within_25} | {s.beyond_35_fast} / {s.beyond_35_slow} |")
    return lines


def regime_figures(results: list[CaseResult]) -> dict[str, tuple[int, float, float, float, int]]:
    """flow.regime.MOE_REGIME_FIGURES from the MoE results: per ACCURACY_AXES cell, per such cell narrowed as
    flow.regime.NARROWINGS narrow it (by the dispatcher and the host load, by either) and for all runs, (runs, median
    tokens/s error, 10th and 90th percentile, runs beyond OUTSIDE_CHECK either way), rounded to 0.001."""
    cells: dict[str, list[float]] = {ALL_RUNS: []}
    for r in results:
        error = tokens_error(r)
        if r.suite != "moe" or error is None or not r.regime:
            continue
        cells[ALL_RUNS].append(error)
        cells.setdefault(cell_key(r.regime), []).append(error)
        for _, by_dispatcher, by_host_load in NARROWINGS:  # a suite run's labels always carry its host load
            cells.setdefault(cell_key(r.regime, by_dispatcher=by_dispatcher, by_host_load=by_host_load),
                             []).append(error)
    figures = {}
    for key, errors in sorted(cells.items()):
        ordered = sorted(errors)
        deciles = statistics.quantiles(ordered, n=10, method="inclusive") if len(ordered) > 1 else ordered * 9
        beyond = sum(abs(e) > OUTSIDE_CHECK for e in ordered)
        figures[key] = (len(ordered), round(statistics.median(ordered), 3), round(deciles[0], 3),
                        round(deciles[-1], 3), beyond)
    return figures


@dataclass(frozen=True, slots=True)
class LeaveOneOut:
    """Each MoE run against the accuracy line its labels would quote from the other runs alone (quoted_figures over
    regime_figures of the rest): how many fall inside the quoted 10th-90th percentile band (80% if the band is as
    wide as it says) and how far the quoted median is from the run's own tokens/s error."""

    runs: int
    inside_band: int
    median_miss: float
    """Median over the runs of |(1 + own error) / (1 + quoted median) - 1|."""


def leave_one_out(results: list[CaseResult]) -> LeaveOneOut | None:
    """The accuracy line's figures checked run by run on the runs left out of them (LeaveOneOut); None below two
    runs."""
    needed = {*ACCURACY_AXES, DISPATCHER_AXIS, HOST_LOAD_AXIS}  # what regime_figures' cells read
    runs = [r for r in results if r.suite == "moe" and needed <= r.regime.keys() and tokens_error(r) is not None]
    if len(runs) < 2:
        return None
    inside, misses = 0, []
    for k, run in enumerate(runs):
        _, (_, median, low, high, _), _ = quoted_figures(run.regime, regime_figures(runs[:k] + runs[k + 1:]))
        error = tokens_error(run)
        assert error is not None
        inside += low <= error <= high
        misses.append(abs((1.0 + error) / (1.0 + median) - 1.0))
    return LeaveOneOut(runs=len(runs), inside_band=inside, median_miss=statistics.median(misses))


def figures_source(figures: dict[str, tuple[int, float, float, float, int]]) -> str:
    """The body of the MOE_REGIME_FIGURES literal."""
    lines = []
    for key, value in figures.items():
        line = f"    {json.dumps(key)}: {value!r},\n"
        lines.append(line if len(line) <= 121 else f"    {json.dumps(key)}:\n        {value!r},\n")
    return "".join(lines)
