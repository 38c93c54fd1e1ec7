"""Invariants of the reliability model (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rigplan.reliab.checkpoint import daly_wall_time_s, first_order_wall_time_s, optimal_interval_s
from rigplan.reliab.failures import DAY_S, LLAMA3_405B
from rigplan.reliab.goodput import reliability_for_job
from rigplan.reliab.storage import StorageSpec, nvme_gen4, parallel_fs, storage_requirements

REL = 1e-3
"""Slack for Daly's interval switching to τ = M at δ = 2M (a 0.02 % step in wall time)."""

gpus = st.integers(min_value=1, max_value=65_536)
ckpt_bytes = st.floats(min_value=1e8, max_value=2e13)
bandwidth = st.floats(min_value=1e9, max_value=1e13)
ideal = st.floats(min_value=3600.0, max_value=365 * DAY_S)
restart = st.floats(min_value=1.0, max_value=3600.0)
blocking = st.floats(min_value=0.0, max_value=1.0)


def shared(write: float) -> StorageSpec:
    return parallel_fs(write_bytes_per_s=write, read_bytes_per_s=write)


@settings(max_examples=200, deadline=None)
@given(n=gpus, extra=st.integers(min_value=1, max_value=65_536), c=ckpt_bytes, bw=bandwidth, t=ideal, r=restart)
def test_goodput_falls_with_more_gpus_on_shared_storage(n: int, extra: int, c: float, bw: float, t: float,
                                                       r: float) -> None:
    small = reliability_for_job(num_gpus=n, ideal_time_s=t, checkpoint_bytes=c, storage=shared(bw), restart_s=r)
    large = reliability_for_job(num_gpus=n + extra, ideal_time_s=t, checkpoint_bytes=c, storage=shared(bw),
                                restart_s=r)
    assert large.goodput <= small.goodput * (1 + REL)
    assert large.interruptions_per_day > small.interruptions_per_day


@settings(max_examples=200, deadline=None)
@given(nodes=st.integers(min_value=1, max_value=2048), k=st.integers(min_value=2, max_value=16), c=ckpt_bytes,
       t=ideal, r=restart)
def test_goodput_falls_with_more_nodes_on_node_local_storage(nodes: int, k: int, c: float, t: float,
                                                            r: float) -> None:
    """Whole nodes: δ and M both shrink by k, so only R/M grows."""
    small = reliability_for_job(num_gpus=8 * nodes, ideal_time_s=t, checkpoint_bytes=c, storage=nvme_gen4(),
                                restart_s=r)
    large = reliability_for_job(num_gpus=8 * nodes * k, ideal_time_s=t, checkpoint_bytes=c, storage=nvme_gen4(),
                                restart_s=r)
    assert large.goodput <= small.goodput * (1 + REL)


@settings(max_examples=200, deadline=None)
@given(n=gpus, c=ckpt_bytes, bw=bandwidth, faster=st.floats(min_value=1.01, max_value=100.0), t=ideal, r=restart,
       f=blocking)
def test_faster_storage_never_lowers_goodput(n: int, c: float, bw: float, faster: float, t: float, r: float,
                                             f: float) -> None:
    slow = reliability_for_job(num_gpus=n, ideal_time_s=t, checkpoint_bytes=c, storage=shared(bw), restart_s=r,
                               blocking_fraction=f)
    fast = reliability_for_job(num_gpus=n, ideal_time_s=t, checkpoint_bytes=c, storage=shared(bw * faster),
                               restart_s=r, blocking_fraction=f)
    assert fast.checkpoint_write_s < slow.checkpoint_write_s
    assert fast.goodput >= slow.goodput * (1 - REL)


@settings(max_examples=300, deadline=None)
@given(n=gpus, c=ckpt_bytes, bw=bandwidth, t=ideal, r=restart, f=blocking,
       interval=st.one_of(st.none(), st.floats(min_value=10.0, max_value=30 * DAY_S)),
       scale=st.floats(min_value=0.0, max_value=20.0))
def test_wall_is_at_least_ideal_and_parts_add_up(n: int, c: float, bw: float, t: float, r: float, f: float,
                                                 interval: float | None, scale: float) -> None:
    res = reliability_for_job(num_gpus=n, ideal_time_s=t, checkpoint_bytes=c, storage=shared(bw), restart_s=r,
                              blocking_fraction=f, interval_s=interval, failure_model=LLAMA3_405B.scaled(scale))
    assert res.wall_time_s >= t
    assert 0.0 <= res.goodput <= 1.0
    if math.isfinite(res.wall_time_s):
        if math.isfinite(res.checkpoint_interval_s):
            assert res.wall_time_s >= t * (1 + res.checkpoint_blocking_s / res.checkpoint_interval_s) * (1 - 1e-12)
        parts = res.lost_checkpointing_s + res.lost_restarts_s + res.lost_rework_s
        assert math.isclose(parts, res.expected_lost_s, rel_tol=1e-9, abs_tol=1e-6 * t)
        assert res.expected_interruptions == 0 or res.expected_interruptions > 0


@settings(max_examples=300, deadline=None)
@given(mtbf=st.floats(min_value=60.0, max_value=1e9), delta=st.floats(min_value=0.0, max_value=1e5),
       r=st.floats(min_value=0.0, max_value=1e5), t=ideal)
def test_exact_wall_time_is_never_below_first_order(mtbf: float, delta: float, r: float, t: float) -> None:
    tau = optimal_interval_s(delta, mtbf)
    if tau == 0:
        return
    kw = {"ideal_s": t, "tau_s": tau, "delta_s": delta, "restart_s": r, "mtbf_s": mtbf}
    assert daly_wall_time_s(**kw) >= first_order_wall_time_s(**kw) * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(c=ckpt_bytes, overhead=st.floats(min_value=1e-4, max_value=0.2), interval=st.floats(min_value=60.0,
       max_value=DAY_S), n=gpus)
def test_sized_bandwidth_meets_the_target_overhead(c: float, overhead: float, interval: float, n: int) -> None:
    req = storage_requirements(tokens_per_s=1e6, bytes_per_token=4, checkpoint_bytes=c, target_overhead=overhead,
                               n_checkpoints=2, interval_s=interval)
    res = reliability_for_job(num_gpus=n, ideal_time_s=DAY_S, checkpoint_bytes=c,
                              storage=shared(req.checkpoint_write_bytes_per_s), interval_s=interval,
                              failure_model=LLAMA3_405B.scaled(0.0))
    assert math.isclose(res.wall_time_s, DAY_S * (1 + overhead), rel_tol=1e-9)
