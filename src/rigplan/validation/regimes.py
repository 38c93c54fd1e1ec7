"""The MoE suite by regime: which configurations rigplan's MoE step time holds for, and which it does not.

Each MoE case is labelled by five things a user can read off their own job (CaseResult.regime): the host the GPUs
hang off, CUDA graphs, tokens per GPU per micro-batch, the training stack and the routing. The table groups the
suite's tokens/s errors by each label, so an estimate can be read against the published runs most like it; the
out-of-sample rows (those estimated before they were added, with nothing changed for them) are summarised apart.

Errors here are in tokens/s, rigplan's over the measured minus one (positive: rigplan too fast): a step-time error e
reads as 1 / (1 + e) - 1.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rigplan.flow.resolve import TrainingSetup
from rigplan.validation.common import CaseResult

REGIME_AXES = ("host", "CUDA graphs", "tokens per GPU per micro-batch", "stack", "routing")
SMALL_TOKENS, LARGE_TOKENS = 2048, 8192
"""Bounds of the tokens-per-GPU-per-micro-batch bands (micro-batch x sequence / (tp x cp))."""
MEGATRON_STACKS = ("megatron", "nemo")
OUTSIDE_CHECK = 0.35
"""The MoE acceptance bound: every published MoE run within 35% of its tokens/s."""


def regime_of(setup: TrainingSetup) -> dict[str, str]:
    """The regime labels of one resolved job, by REGIME_AXES."""
    gpu, job, layout = setup.gpu, setup.job, setup.layout
    if gpu.vendor != "nvidia":
        host = "other vendors (AMD, Google, Huawei)"
    else:
        host = "NVIDIA, Grace host" if gpu.host_cpu == "grace" else "NVIDIA, x86 host"
    graphs = ("full iteration" if job.cuda_graphs == "full"
              else "per module" if job.cuda_graph_scope else "none (eager)")
    tokens = job.micro_batch * job.seq_len / (layout.tp * layout.cp)
    band = (f"<= {SMALL_TOKENS:,}" if tokens <= SMALL_TOKENS
            else f"{SMALL_TOKENS + 1:,}-{LARGE_TOKENS:,}" if tokens <= LARGE_TOKENS else f"> {LARGE_TOKENS:,}")
    name = getattr(setup.framework, "name", None)
    stack = ("Megatron-Core (Megatron-LM, NeMo, Megatron-Bridge)" if name in MEGATRON_STACKS
             else "torchtitan" if name == "torchtitan" else "NeMo AutoModel" if name == "automodel"
             else "other (MaxText, Primus, ms-swift, MindSpore, ...)")
    routing = ("forced balance" if job.forced_balance else "padded to capacity" if job.experts_padded
               else "natural, dropless or capped")
    return dict(zip(REGIME_AXES, (host, graphs, band, stack, routing), strict=True))


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
             "`rigplan.validation.regimes`.", "",
             "| cases | rows | median abs error | median error | within 25% | beyond 35% (fast / slow) |",
             "|---|---|---|---|---|---|"]
    for name, chosen in (("all", moe), ("out of sample", [r for r in moe if out_of_sample(r)])):
        s = summarize_errors([e for r in chosen if (e := tokens_error(r)) is not None])
        lines.append(f"| {name} | {s.rows} | {100 * s.median_abs:.1f}% | {_pct(s.median_signed)} | {s.within_25} | "
                     f"{s.beyond_35_fast} / {s.beyond_35_slow} |")
    lines += ["", "| by | regime | rows | median abs error | median error | within 25% | beyond 35% (fast / slow) |",
              "|---|---|---|---|---|---|---|"]
    for axis, regime, s in regime_table(moe):
        lines.append(f"| {axis} | {regime} | {s.rows} | {100 * s.median_abs:.1f}% | {_pct(s.median_signed)} | "
                     f"{s.within_25} | {s.beyond_35_fast} / {s.beyond_35_slow} |")
    return lines
