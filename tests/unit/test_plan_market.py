"""Plan against what a buyer can really get: node counts, cloud capacity, reclaims, limits, a stated cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rigplan.flow.estimate import estimate
from rigplan.flow.plan import plan
from rigplan.flow.request import EstimateRequest, PlanRequest
from rigplan.search.space import gpu_counts


def test_every_small_node_count_is_a_candidate() -> None:
    counts = gpu_counts(8, 4096)
    assert {24, 40, 48} <= set(counts)  # 3, 5 and 6 nodes
    assert counts == sorted(set(counts)) and counts[-1] == 4096
    assert counts[:3] == [1, 2, 4]


def test_rack_scale_nodes_are_tried_below_one_node() -> None:
    """An NVL72 rack or a TPU slice is one 'node' of 72 or 256 chips; jobs on part of one are candidates too."""
    assert gpu_counts(72, 4096)[:8] == [1, 2, 4, 8, 16, 32, 64, 72]
    assert gpu_counts(256, 4096)[:9] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert gpu_counts(6144, 4096)[-1] == 4096  # a node larger than the search still yields counts
    assert gpu_counts(1, 4) == [1, 2, 3, 4]


@pytest.fixture(scope="module")
def b200_plan():  # type: ignore[no-untyped-def]
    return plan(PlanRequest(model="llama-3.2-1b", tokens="2T", gpu=["b200"], gpus_max=4096))


def test_no_offer_rents_more_gpus_than_it_has(b200_plan) -> None:  # type: ignore[no-untyped-def]
    for c in b200_plan.candidates:
        if c.offer.kind == "cloud":
            assert c.offer.capacity_gpus is not None and c.gpus <= c.offer.capacity_gpus, (c.gpus, c.offer)
    assert not any(c.gpus == 4096 and c.offer.pricing == "spot" for c in b200_plan.candidates)
    assert b200_plan.stats["infeasible_by_reason"].get("cloud.capacity", 0) > 0


def test_spot_reclaims_lengthen_the_wall_time() -> None:
    result = plan(PlanRequest(model="llama-3.2-1b", tokens="10B", gpu=["a100-80gb-sxm"], gpus_max=64))
    spot = {c.gpus: c for c in result.candidates if c.offer.pricing == "spot"}
    on_demand = {c.gpus: c for c in result.candidates if c.offer.pricing == "on-demand"}
    shared = sorted(set(spot) & set(on_demand))
    assert shared
    n = shared[-1]
    assert spot[n].wall_time_s > on_demand[n].wall_time_s


def test_pareto_front_keeps_to_the_limits() -> None:
    result = plan(PlanRequest(model="llama-3.2-1b", tokens="200B", gpu=["h100-sxm"], deadline="30d", budget="200k"))
    assert result.pareto
    assert all(c.meets_deadline and c.meets_budget for c in result.pareto)


def test_a_stated_cluster_gets_its_best_plan() -> None:
    out = subprocess.run([sys.executable, "-c", "from rigplan.cli.main import main; main()", "plan", "llama-3.1-8b",
                          "--tokens", "100B", "--cluster", "6x8:h100-sxm", "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    import json

    data = json.loads(out.stdout)
    assert data["ranked"] and {c["gpus"] for c in data["candidates"]} == {48}
    assert {c["gpu"] for c in data["candidates"]} == {"h100-sxm"}
    # The cluster is had, not bought for this job: owning is priced as the job's share unless asked otherwise.
    owned = {c["mode"]["pricing"] for c in data["candidates"] if c["mode"]["kind"] == "onprem"}
    assert owned == {"amortized"}
    # on the cluster one has: renting is left out unless asked (--both or --cloud)
    assert {c["mode"]["kind"] for c in data["candidates"]} == {"onprem"}
    bought = subprocess.run([sys.executable, "-c", "from rigplan.cli.main import main; main()", "plan", "llama-3.1-8b",
                             "--tokens", "100B", "--cluster", "6x8:h100-sxm", "--onprem-basis", "purchase", "--json"],
                            capture_output=True, text=True, timeout=600)
    assert {c["mode"]["pricing"] for c in json.loads(bought.stdout)["candidates"]
            if c["mode"]["kind"] == "onprem"} == {"purchase"}
    bad = subprocess.run([sys.executable, "-c", "from rigplan.cli.main import main; main()", "plan", "llama-3.1-8b",
                          "--tokens", "100B", "--cluster", "six nodes"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("rigplan: error: --cluster")
    other = subprocess.run([sys.executable, "-c", "from rigplan.cli.main import main; main()", "plan", "llama-3.1-8b",
                            "--tokens", "100B", "--cluster", "6x8:h100-sxm", "--gpu", "a100-80gb-sxm"],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and "names its GPU and --gpu a100-80gb-sxm another" in other.stderr


def test_multi_host_geforce_zero3_exposes_its_communication() -> None:
    # 64 nodes of 4 RTX 4090 on 25 Gb/s per GPU, ZeRO-3: the gathers cannot hide entirely
    result = estimate(EstimateRequest(model="llama-3.1-8b", gpu="rtx-4090", gpus=256, zero=3, micro_batch=2,
                                      recompute="full", global_batch=1024))
    # what the overlap costs is the exposed part plus the compute slowed by NCCL's SMs (estimate.overlap)
    cost = float(result.step.exposed_comm_s) + float(result.step.overlap_tax_s)
    assert float(result.step.exposed_comm_s) > 0.02 * float(result.step.step_time_s)
    assert cost > 0.05 * float(result.step.step_time_s)


def test_a_budget_in_wan_or_with_a_yuan_sign_is_in_yuan_whatever_the_currency() -> None:
    from rigplan.flow.plan import parse_money

    assert parse_money("20万", "usd", 7.1) == pytest.approx(200_000 / 7.1)
    assert parse_money("¥5M", "usd", 7.1) == pytest.approx(5e6 / 7.1)
    assert parse_money("$3M", "cny", 7.1) == pytest.approx(3e6)
    assert parse_money("3M", "cny", 7.1) == pytest.approx(3e6 / 7.1)
    assert parse_money("3M", "usd", 7.1) == pytest.approx(3e6)


def test_more_than_one_server_is_a_large_job_whatever_the_server_size() -> None:
    from rigplan.cost.cloud import interruptible_pricing_unsuitable

    weeks = 3 * 7 * 24.0
    assert not interruptible_pricing_unsuitable(8, weeks)  # one 8-GPU server
    assert interruptible_pricing_unsuitable(8, weeks, gpus_per_node=4)  # two 4-GPU workstations
    assert not interruptible_pricing_unsuitable(64, 24.0)  # a day is not multi-week


def test_layouts_that_fit_but_cannot_be_rented_are_not_called_unfit() -> None:
    """2,048 H800 hold DeepSeek-V3 in some layouts, but the catalog's H800 offers rent one 8-GPU machine and it has
    no purchase price: the plan says the offers are too small, not that nothing fits in memory (the layouts that do
    not fit outnumber the one candidate the offers turn away)."""
    result = plan(PlanRequest(model="deepseek-v3", tokens="14.8T", gpu=["h800-sxm"], gpus_min=2048, gpus_max=2048))
    reasons = result.stats["infeasible_by_reason"]
    assert result.stats["feasible"] > 0 and reasons["memory.exceeds_capacity"] > reasons["cloud.capacity"] > 0
    assert result.infeasible == "no cloud offer rents this many GPUs"


def test_nothing_that_fits_is_still_said_first() -> None:
    from rigplan.flow.plan import why_nothing_runs

    reasons = {"memory.exceeds_capacity": 14081, "batch.smaller_than_dp": 4788, "cloud.capacity": 1}
    assert why_nothing_runs(reasons) == ("no layout fits this job in GPU memory; the global batch is smaller than "
                                         "every data-parallel degree that would fit")
    assert why_nothing_runs(reasons, fitted=6475) == "no cloud offer rents this many GPUs"
    assert why_nothing_runs({"memory.exceeds_capacity": 5}, fitted=3) == "no layout fits this job in GPU memory"
