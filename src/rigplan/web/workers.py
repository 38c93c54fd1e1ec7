"""The processes that run the HTTP API's computations, each with a memory cap and a deadline.

A request's computation (memory, estimate, plan, compare, tco, lint, reading a config.json) runs
in one of `size` worker processes, never in the server's own process, so that

- work past its time cap is stopped: the worker is killed and a fresh one takes its place (a thread
  cannot be stopped; a process can), and the answer is a 504;
- memory is bounded: each worker runs under RLIMIT_AS (`memory_cap_bytes`); a computation that
  needs more gets MemoryError (a 413) or dies (a 503), and the server's own memory stays flat;
- no request blocks the others beyond the queue: the catalog GETs and health never wait here.

The workers are started once and reused, one job at a time each: a request costs a round trip
through a pipe (about 4 ms for a memory answer, measured), not a process start. Each worker is driven by one thread
of a private executor of `size` threads, so a job is a `concurrent.futures` future that any event
loop can await (uvicorn's, or the short-lived ones of test clients).

Workers are forked from a forkserver that has imported rigplan and parsed the catalogs once
(rigplan.web.preload), so a fresh or replacement worker costs a fork (tens of ms) and answers its
first request warm. The server itself is never forked: its other threads may hold locks. A
script that builds the app must start under `if __name__ == "__main__":`, as multiprocessing
requires.

`close()` ends every worker; the next `start()` (or job) starts a fresh set, so the pool follows
the ASGI lifespan however often it is started and stopped (schemathesis, for one, stops it after
every test). A job that waits more than `queue_wait_s` (default: the time cap, at least 1 s) for
a free worker is answered 503 ("busy") without running.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import resource
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import Any

WORKER_MEMORY_CAP_BYTES = 3 * 1024**3
"""Address space of one worker (3 GiB). A plan search over the whole catalog up to 4,096 GPUs peaks
at about 0.4 GiB of resident memory (benchmarks/load_test.py prints it); the rest is headroom for
numpy's and the allocator's reserved but unused address space."""

Answer = tuple[Any, ...]


def default_size() -> int:
    """One worker per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _worker_main(conn: multiprocessing.connection.Connection, memory_cap_bytes: int) -> None:
    """Loop of one worker process: receive (kind, body, data_dir), answer run_job's tuple."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    if memory_cap_bytes:
        with contextlib.suppress(ValueError, OSError):  # a hard limit below ours already binds instead
            resource.setrlimit(resource.RLIMIT_AS, (memory_cap_bytes, memory_cap_bytes))
    from rigplan.web.jobs import run_job

    while True:
        try:
            kind, body, data_dir = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = run_job(kind, body, data_dir)
        except Exception as err:
            answer = ("error", 500, f"internal error ({type(err).__name__}): {err}; please report it", None)
        try:
            payload = ForkingPickler.dumps(answer)
        except Exception as err:  # an answer that cannot be pickled is reported, not lost with the worker
            payload = ForkingPickler.dumps(("error", 500, f"internal error ({type(err).__name__}) while sending the "
                                                          "answer; please report it", None))
        try:
            conn.send_bytes(payload)
        except (OSError, ValueError):
            return


@dataclass
class _Worker:
    process: Any
    conn: multiprocessing.connection.Connection
    started_job_at: float | None = None


@dataclass
class _Generation:
    """The workers and threads between one start() and the close() after it."""

    executor: ThreadPoolExecutor
    idle: queue.Queue[_Worker] = field(default_factory=queue.Queue)
    workers: dict[int, _Worker] = field(default_factory=dict)
    starting: int = 0
    queued: int = 0
    closed: bool = False


class WorkerPool:
    """`size` worker processes; `await pool.run(kind, body, data_dir)` answers run_job's tuple:
    ("ok", result) or ("error", status, detail, field)."""

    def __init__(self, size: int, *, time_cap_s: float, memory_cap_bytes: int = WORKER_MEMORY_CAP_BYTES,
                 queue_wait_s: float | None = None) -> None:
        self.size = size
        self.time_cap_s = time_cap_s
        self.memory_cap_bytes = memory_cap_bytes
        self.queue_wait_s = max(time_cap_s, 1.0) if queue_wait_s is None else queue_wait_s
        self._context = self._make_context()
        self._lock = threading.Lock()
        self._generation: _Generation | None = None
        self.killed = 0
        """Workers stopped at the time cap or lost (killed by the OS), since the pool was made."""
        self.jobs = 0
        """Jobs answered since the pool was made."""

    @staticmethod
    def _make_context() -> Any:
        if "forkserver" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["__main__", "rigplan.web.preload", __name__])  # each once, not per worker
            return context
        return multiprocessing.get_context("spawn")

    def _spawn(self, generation: _Generation) -> _Worker:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(target=_worker_main, args=(child, self.memory_cap_bytes),
                                        name="rigplan-worker", daemon=True)
        process.start()
        child.close()
        worker = _Worker(process=process, conn=parent)
        with self._lock:
            generation.workers[process.pid] = worker
        return worker

    def start(self) -> _Generation:
        """Start the workers (no-op when running); answers the running generation."""
        with self._lock:
            if self._generation is not None:
                return self._generation
            generation = _Generation(ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="rigplan-compute"),
                                     starting=self.size)
            self._generation = generation
        try:
            for _ in range(self.size):
                generation.idle.put(self._spawn(generation))
                with self._lock:
                    generation.starting -= 1
        finally:
            with self._lock:
                generation.starting = 0
        return generation

    def close(self) -> None:
        """End every worker; queued jobs are cancelled. A later start() or run() starts afresh."""
        with self._lock:
            generation, self._generation = self._generation, None
            if generation is None:
                return
            generation.closed = True
            workers = list(generation.workers.values())
        generation.executor.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            self._retire(generation, worker)

    def _retire(self, generation: _Generation, worker: _Worker) -> None:
        with self._lock:
            generation.workers.pop(worker.process.pid, None)
        try:
            worker.process.kill()
            worker.process.join(timeout=5)
        except (OSError, ValueError, AssertionError):
            pass
        worker.conn.close()

    def _replace(self, generation: _Generation, worker: _Worker) -> None:
        """Kill `worker` and put a fresh one in its place (in the thread that drove it)."""
        with self._lock:
            self.killed += 1
            generation.starting += 1
        try:
            self._retire(generation, worker)
            if not generation.closed:
                generation.idle.put(self._spawn(generation))
        finally:
            with self._lock:
                generation.starting -= 1

    def _job(self, generation: _Generation, job: tuple[Any, ...], submitted_at: float) -> Answer:
        """Runs in one of the executor's threads: hand `job` to a worker, wait for it at most the time cap.
        Whatever happens, the worker taken goes back to the idle queue or is replaced: a pool never loses one."""
        with self._lock:
            generation.queued -= 1
        waited_s = time.monotonic() - submitted_at
        if waited_s > self.queue_wait_s:
            return ("error", 503, f"the server is busy: no worker was free within {self.queue_wait_s:g} s; "
                                  "try again shortly", None)
        try:  # pickled here, before a worker is taken: a body that cannot be sent costs no worker
            payload = ForkingPickler.dumps(job)
        except RecursionError:
            return ("error", 400, "the request is nested too deeply", None)
        try:  # as many threads as workers, so one is idle; the timeout only guards a pool being closed
            worker = generation.idle.get(timeout=self.time_cap_s + 5)
        except queue.Empty:
            return ("error", 503, "no worker is available (the server is restarting its workers); try again", None)
        worker.started_job_at = time.monotonic()
        answer: Answer | None = None
        try:
            worker.conn.send_bytes(payload)
            if worker.conn.poll(self.time_cap_s):
                answer = tuple(worker.conn.recv())
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):
            self._replace(generation, worker)
            return ("error", 503, "the computation was ended by the operating system (most likely it needed more "
                                  "memory than this server allows one request); try a smaller job", None)
        except BaseException:
            self._replace(generation, worker)  # a worker in an unknown state is never reused
            raise
        if answer is None:
            self._replace(generation, worker)
            return ("error", 504, f"took longer than the {self.time_cap_s:g} s time cap and was stopped", None)
        worker.started_job_at = None
        generation.idle.put(worker)
        with self._lock:
            self.jobs += 1
        return answer

    async def run(self, kind: str, body: Any, data_dir: str | None) -> Answer:
        """Run one job in a worker. 504 past the time cap (the worker is killed and replaced), 503 when no worker
        was free within the queue wait or the worker died."""
        generation = self._generation
        if generation is None:
            generation = await asyncio.to_thread(self.start)
        with self._lock:
            generation.queued += 1
        try:
            future: Future[Answer] = generation.executor.submit(self._job, generation, (kind, body, data_dir),
                                                                time.monotonic())
        except RuntimeError:  # closed between the two lines above
            with self._lock:
                generation.queued -= 1
            return ("error", 503, "the server is shutting down", None)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # The client went away. A queued job is dropped; a running one ends within the time cap.
            if future.cancel():
                with self._lock:
                    generation.queued -= 1
            raise

    def health(self) -> dict[str, Any]:
        """The pool's state, and whether it is ok: every worker alive (or being replaced) and none busy past
        the time cap (plus 5 s to be killed and replaced)."""
        now = time.monotonic()
        with self._lock:
            generation = self._generation
            workers = list(generation.workers.values()) if generation else []
            starting = generation.starting if generation else 0
            queued = generation.queued if generation else 0
        alive = sum(1 for w in workers if w.process.is_alive())
        busy = [now - w.started_job_at for w in workers if w.started_job_at is not None]
        oldest = max(busy, default=0.0)
        stuck = oldest > self.time_cap_s + 5
        missing = generation is not None and alive + starting < self.size
        return {"ok": not (stuck or missing), "workers": self.size, "alive": alive if generation else None,
                "busy": len(busy), "waiting": queued, "longest_busy_s": round(oldest, 3),
                "jobs": self.jobs, "stopped_at_time_cap_or_lost": self.killed,
                "memory_cap_bytes": self.memory_cap_bytes}
