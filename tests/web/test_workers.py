"""The worker pool behind the computing routes: reused across requests and ASGI lifespans, a job past its
time cap is stopped (its process killed and replaced), and health tells the truth about it."""

from __future__ import annotations

import os
import time

from fastapi.testclient import TestClient

from rigplan.web.app import create_app

LLAMA = {"model": "llama-3.1-8b", "gpu": "h100-sxm"}


def _worker_pids(app) -> set[int]:  # type: ignore[no-untyped-def]
    generation = app.state.pool._generation
    return set(generation.workers) if generation else set()


def test_the_pool_survives_its_lifespan_being_stopped_and_started_again() -> None:
    # An ASGI server (or a test client, or the fuzzing tool) may run the lifespan more than once.
    app = create_app(workers=2)
    for _ in range(2):
        with TestClient(app) as client:
            assert len(_worker_pids(app)) == 2  # started with the lifespan, before any request
            for _ in range(3):
                assert client.post("/api/memory", json=LLAMA).status_code == 200
            assert client.get("/api/health").json()["pool"]["alive"] == 2
        assert _worker_pids(app) == set()  # stopped with it


def test_workers_are_reused_not_started_per_request() -> None:
    app = create_app(workers=1)
    with TestClient(app) as client:
        pids = _worker_pids(app)
        for _ in range(5):
            assert client.post("/api/memory", json=LLAMA).status_code == 200
        assert _worker_pids(app) == pids
        assert client.get("/api/health").json()["pool"]["jobs"] == 5


def test_a_job_past_its_time_cap_is_stopped_and_its_worker_replaced() -> None:
    app = create_app(workers=1, time_cap_s=1.0)
    with TestClient(app) as client:
        assert client.post("/api/memory", json=LLAMA).status_code == 200
        (old,) = _worker_pids(app)
        # a whole-catalog MoE plan up to 4,096 GPUs: about 2 s of search (benchmarks/plan_speed_moe.py)
        slow = client.post("/api/plan", json={"model": "qwen3-235b-a22b", "tokens": "1T", "gpus_max": 4096})
        assert slow.status_code == 504 and "was stopped" in slow.json()["detail"]
        deadline = time.monotonic() + 10
        while _reaped(old) is False and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _reaped(old), "the worker past its time cap is still running"
        (fresh,) = _worker_pids(app)
        assert fresh != old
        health = client.get("/api/health")
        assert health.status_code == 200 and health.json()["pool"]["stopped_at_time_cap_or_lost"] == 1
        assert client.post("/api/memory", json=LLAMA).status_code == 200


def test_health_is_503_while_a_worker_is_gone_and_not_replaced() -> None:
    app = create_app(workers=1)
    with TestClient(app) as client:
        (pid,) = _worker_pids(app)
        worker = app.state.pool._generation.workers[pid]
        worker.process.kill()
        worker.process.join(5)
        assert client.get("/api/health").status_code == 503
        assert client.head("/api/health").status_code == 503
        assert client.post("/api/memory", json=LLAMA).status_code == 503  # the dead worker's job
        assert client.get("/api/health").status_code == 200  # replaced
        assert client.post("/api/memory", json=LLAMA).status_code == 200


def _reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_job_that_cannot_be_sent_costs_no_worker() -> None:
    # A body nested deeper than pickle can go (the HTTP layer refuses it first; the pool must hold anyway): it was
    # a 500, and the worker taken for it never came back, so every later job waited for a worker that never came
    # while health said "ok".
    import asyncio

    from rigplan.web.requests import MemoryBody
    from rigplan.web.workers import WorkerPool

    pool = WorkerPool(1, time_cap_s=10)
    pool.start()
    try:
        deep: object = 1
        for _ in range(100_000):
            deep = [deep]
        status = asyncio.run(pool.run("memory", deep, None))[:2]
        assert status == ("error", 400)
        started = time.monotonic()
        answer = asyncio.run(pool.run("memory", MemoryBody(model="llama-3.1-8b"), None))
        assert answer[0] == "ok" and time.monotonic() - started < 5
        assert pool.health()["ok"] and pool.killed == 0
    finally:
        pool.close()
