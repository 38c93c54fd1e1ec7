"""Checkpoint size, the optimal checkpoint interval, and expected wall time under failures.

Notation (Daly 2006): T_s ideal solve time (no failures, no checkpoints), τ compute time between
checkpoints, δ time to write one checkpoint (the part that blocks training), R restart time after
an interruption (detect, reschedule, re-initialise, read the checkpoint), M mean time between
interruptions of the job, exponential (Poisson) failures.

Sources: J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9),
1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
Future Generation Computer Systems 22(3), 2006 (doi:10.1016/j.future.2004.11.016).
"""

from __future__ import annotations

import math
from typing import Literal

from rigplan.errors import InvalidSpec

IntervalRule = Literal["daly", "daly-first-order", "young"]

BF16_WEIGHT_BYTES = 2.0
FP32_MASTER_BYTES = 4.0
ADAM_STATE_BYTES = 8.0
"""Two fp32 moments (m, v) per parameter."""
MIXED_ADAM_CHECKPOINT_BYTES_PER_PARAM = BF16_WEIGHT_BYTES + FP32_MASTER_BYTES + ADAM_STATE_BYTES
"""14 B/param: what a bf16 mixed-precision AdamW job must save to resume exactly."""

_MAX_EXPONENT = 700.0
"""exp() overflows a float past ~709; beyond this the expected wall time is reported as infinite."""


def training_checkpoint_bytes(num_params: float, *,
                              bytes_per_param: float = MIXED_ADAM_CHECKPOINT_BYTES_PER_PARAM) -> float:
    """Bytes of a resumable checkpoint: num_params × bytes_per_param.

    Default 14 B/param = bf16 weights (2) + fp32 master weights (4) + fp32 Adam m and v (8); the
    16 B/param of ZeRO's mixed-precision Adam (Rajbhandari et al. 2020, Sec. 3.1: 2 + 2 + K=12)
    also counts bf16 gradients, which are recomputed and not saved. Left out: data-loader and RNG
    state (kilobytes), fp32 gradient-accumulation buffers, format overheads, saving only weights for
    evaluation (2 B/param).
    """
    if not math.isfinite(num_params) or num_params < 0 or not bytes_per_param >= 0:
        raise InvalidSpec(f"num_params and bytes_per_param must be >= 0, got {num_params}, {bytes_per_param}")
    return num_params * bytes_per_param


def optimal_interval_s(delta_s: float, mtbf_s: float, rule: IntervalRule = "daly") -> float:
    """Compute time between checkpoints that minimises expected wall time.

    - 'young' (Young 1974): τ = √(2δM).
    - 'daly-first-order': τ = √(2δM) − δ for δ < 2M, else M (the leading terms of Daly 2006).
    - 'daly' (Daly 2006, higher-order perturbation solution, default):
          τ = √(2δM)·[1 + ⅓·√(δ/(2M)) + (1/9)·(δ/(2M))] − δ   for δ < 2M,   τ = M for δ ≥ 2M.
      It reproduces the paper's worked cases (δ = 5 min, R = 10 min): M = 24 h → 117 min,
      M = 6 h → 57 min, M = 15 min → 9.1 min (Figs. 3-5). It is chosen over the first-order rule
      because that one falls to τ → 0 as δ → 2M and jumps to M at 2M, while this one stays near M.

    M = inf (no failures) gives τ = inf: write no periodic checkpoints. δ = 0 gives τ = 0.
    Left out: non-exponential failure distributions (Weibull with decreasing hazard favours
    lengthening intervals), failures during the checkpoint itself (Daly's exact model includes them).
    """
    if not delta_s >= 0 or not mtbf_s > 0:
        raise InvalidSpec(f"need checkpoint time >= 0 and MTBF > 0, got δ={delta_s}, M={mtbf_s}")
    if math.isinf(mtbf_s):
        return math.inf
    if rule == "young":
        return math.sqrt(2 * delta_s * mtbf_s)
    if delta_s >= 2 * mtbf_s:
        return mtbf_s
    root = math.sqrt(2 * delta_s * mtbf_s)
    if rule == "daly-first-order":
        return root - delta_s
    if rule == "daly":
        x = delta_s / (2 * mtbf_s)
        return root * (1 + math.sqrt(x) / 3 + x / 9) - delta_s
    raise InvalidSpec(f"unknown interval rule '{rule}'; use daly, daly-first-order or young")


def _segment_factor(tau_s: float, delta_s: float, mtbf_s: float) -> float:
    """M·(e^{(τ+δ)/M} − 1)/τ, with its limits: 1 + δ/τ when M = inf, 1 when τ = δ = 0."""
    if math.isinf(tau_s):
        return 1.0
    if math.isinf(mtbf_s):
        return (tau_s + delta_s) / tau_s if tau_s > 0 else 1.0
    if tau_s == 0:
        return 1.0 if delta_s == 0 else math.inf
    exponent = (tau_s + delta_s) / mtbf_s
    if exponent > _MAX_EXPONENT:
        return math.inf
    # ≥ (τ + δ)/τ exactly; max() keeps rounding from putting it below when (τ + δ)/M is tiny
    return max(mtbf_s * math.expm1(exponent) / tau_s, (tau_s + delta_s) / tau_s)


def daly_wall_time_s(*, ideal_s: float, tau_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """Expected wall time with periodic checkpoints under exponential failures (Daly 2006, exact form):

        T_w = M · e^{R/M} · (e^{(τ+δ)/M} − 1) · T_s / τ

    Failures may strike during compute, checkpoint writes and restarts alike; each one loses the
    work since the last completed checkpoint and costs a restart R. This is the model rigplan uses:
    it is exact for Poisson failures, never below the failure-free time T_s·(1 + δ/τ), and stays
    sensible when δ, τ or R are not small against M (very large jobs, slow storage), where the
    first-order form below under-estimates. The last partial segment (T_s not a multiple of τ) is
    treated as whole segments. Left out: non-exponential failures, failures correlated in time.
    """
    _check_times(ideal_s=ideal_s, tau_s=tau_s, delta_s=delta_s, restart_s=restart_s, mtbf_s=mtbf_s)
    if ideal_s == 0:
        return 0.0
    factor = _segment_factor(tau_s, delta_s, mtbf_s)
    if math.isinf(mtbf_s):
        return ideal_s * factor
    if restart_s / mtbf_s > _MAX_EXPONENT:
        return math.inf
    return ideal_s * math.exp(restart_s / mtbf_s) * factor


def first_order_wall_time_s(*, ideal_s: float, tau_s: float, delta_s: float, restart_s: float,
                            mtbf_s: float) -> float:
    """First-order expected wall time: T_w = T_s · (1 + δ/τ) · (1 + (τ/2 + R)/M).

    Each of the W/M failures loses on average half a segment plus a restart (Young 1974's
    argument). Agrees with `daly_wall_time_s` to first order in δ/M, τ/M, R/M; kept for comparison.
    """
    _check_times(ideal_s=ideal_s, tau_s=tau_s, delta_s=delta_s, restart_s=restart_s, mtbf_s=mtbf_s)
    if math.isinf(tau_s):
        return ideal_s if math.isinf(mtbf_s) else math.inf
    checkpointing = 1 + delta_s / tau_s if tau_s > 0 else 1.0
    return ideal_s * checkpointing * (1 + (tau_s / 2 + restart_s) / mtbf_s)


def _check_times(*, ideal_s: float, tau_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> None:
    for what, value in (("ideal time", ideal_s), ("checkpoint write time", delta_s), ("restart time", restart_s)):
        if not math.isfinite(value) or value < 0:
            raise InvalidSpec(f"{what} must be finite and >= 0 s, got {value}")
    if not tau_s >= 0:
        raise InvalidSpec(f"checkpoint interval must be >= 0 s, got {tau_s}")
    if not mtbf_s > 0:
        raise InvalidSpec(f"MTBF must be > 0 s, got {mtbf_s}")
