"""Load test of `rigplan serve`: real HTTP on 127.0.0.1, mixed endpoints including plan, many clients.

    python benchmarks/load_test.py                      # 32 clients, 20 s
    python benchmarks/load_test.py --clients 64 --seconds 30 --workers 4
    python benchmarks/load_test.py --rounds 5           # the server's memory after each of 5 rounds

Starts `rigplan serve` on a free loopback port as a child process, runs `--clients` concurrent
clients (threads, one keep-alive connection each) for at most `--seconds` or `--requests` (per round), and
prints throughput, p50/p99 latency per endpoint and overall, the answers by status, the health
answer's latency while plans run, and memory before and after the load: the server process's
RSS, and the workers' (each worker's RSS counts the pages it shares with the forkserver, so their
sum overstates what they use together). Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MIX = [  # (weight, method, path, body)
    (6, "POST", "/api/memory", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 8, "zero": 3}),
    (3, "POST", "/api/estimate", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": 64, "tp": 8, "tokens": "1T"}),
    (1, "POST", "/api/plan", {"model": "llama-3.1-8b", "tokens": "100B", "gpu": ["h100-sxm"], "gpus_max": 64}),
    (1, "POST", "/api/tco", {"gpu": "h100-sxm", "gpus": 64}),
    (4, "GET", "/api/gpus", None),
    (2, "GET", "/api/models/llama-3.1-8b", None),
    (2, "GET", "/api/health", None),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`rigplan serve` on a free loopback port, its stderr kept in a temporary file (to count tracebacks)."""

    def __init__(self, *options: str, prefix: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile("w+", prefix="rigplan-serve-", suffix=".log")  # noqa: SIM115
        command = [*prefix, sys.executable, "-c", "from rigplan.cli.main import main; main()", "serve",
                   "--port", str(self.port), *options]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.log, env={**os.environ})
        deadline = time.monotonic() + 90
        while True:
            try:
                if request(self.connect(), "GET", "/api/health", None)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("rigplan serve did not start")
            time.sleep(0.2)

    def connect(self, timeout: float = 60) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    @property
    def pid(self) -> int:
        """The server process (under `prefix`, e.g. strace, the traced child)."""
        children = _children(self.process.pid)
        return children[0] if children and _cmdline(self.process.pid)[:1] != [sys.executable] else self.process.pid

    def workers(self) -> list[int]:
        forkservers = [p for p in _children(self.pid) if "forkserver" in _title(p)]
        return [w for f in forkservers for w in _children(f)]

    def memory(self) -> dict[str, int]:
        """RSS in bytes of the server process, and the sum over its workers."""
        workers = self.workers()
        return {"server": _rss(self.pid), "workers": sum(_rss(p) for p in workers), "worker_count": len(workers)}

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds used so far by the server process and by its live workers."""
        return {"server": _cpu_s(self.pid), "workers": sum(_cpu_s(p) for p in self.workers())}

    def tracebacks(self) -> int:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace").count("Traceback")

    def stop(self) -> None:
        if self.pid != self.process.pid:  # under strace, which would detach and leave the server running
            os.kill(self.pid, signal.SIGTERM)
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _children(pid: int) -> list[int]:
    """Child processes of `pid`, whichever of its threads started them."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def _title(pid: int) -> str:
    return " ".join(_cmdline(pid))


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def mib(value: int) -> str:
    return f"{value / 2**20:.0f} MiB"


def request(conn: http.client.HTTPConnection, method: str, path: str, body: Any,
            raw: bytes | None = None) -> tuple[int, float]:
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    headers = {"content-type": "application/json"} if data is not None else {}
    start = time.perf_counter()
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    response.read()
    return response.status, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run_round(server: Server, clients: int, seconds: float, limit: int) -> tuple[list[tuple[str, int, float]], float]:
    """`clients` threads, one keep-alive connection each, for `seconds` or `limit` requests: (path, status,
    seconds) per request, and the round's wall time."""
    schedule = [entry for entry in MIX for _ in range(entry[0])]
    results: list[tuple[str, int, float]] = []
    lock = threading.Lock()
    counter = iter(range(10**9))
    stop_at = time.monotonic() + seconds

    def client(index: int) -> None:
        c = server.connect()
        while time.monotonic() < stop_at:
            n = next(counter)
            if n >= limit:
                return
            _, method, path, body = schedule[(n * 7 + index) % len(schedule)]
            try:
                status, took = request(c, method, path, body)
            except (OSError, http.client.HTTPException):
                status, took = 0, 0.0
                c = server.connect()
            with lock:
                results.append((path, status, took))

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=100_000, help="stop a round after this many requests")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat the load; the server's memory is printed after each round (a leak grows)")
    parser.add_argument("--workers", type=int, help="rigplan serve --workers (default: one per CPU)")
    args = parser.parse_args()

    server = Server(*(["--workers", str(args.workers)] if args.workers else []))
    try:
        conn = server.connect()
        for _ in range(5):  # warm every endpoint once per worker or so
            for _, method, path, body in MIX:
                request(conn, method, path, body)
        time.sleep(1)
        before, cpu_before = server.memory(), server.cpu_s()
        results: list[tuple[str, int, float]] = []
        elapsed = 0.0
        after_rounds = []
        for _ in range(args.rounds):
            answers, seconds = run_round(server, args.clients, args.seconds, args.requests)
            results += answers
            elapsed += seconds
            time.sleep(2)
            after_rounds.append(server.memory())
        cpu_after = server.cpu_s()
        after = after_rounds[-1]

        print(f"rigplan serve load test: {args.clients} clients, {len(results)} requests in {elapsed:.1f} s "
              f"({args.rounds} round(s)) on {os.cpu_count()} CPUs, workers {args.workers or 'default (one per CPU)'}")
        print(f"throughput {len(results) / elapsed:.1f} req/s")
        by_path: dict[str, list[float]] = {}
        statuses: dict[int, int] = {}
        for path, status, took in results:
            by_path.setdefault(path, []).append(took)
            statuses[status] = statuses.get(status, 0) + 1
        every = [s for _, _, s in results]
        print(f"latency all: p50 {percentile(every, 0.5) * 1e3:.0f} ms, p99 {percentile(every, 0.99) * 1e3:.0f} ms")
        for path, values in sorted(by_path.items()):
            print(f"  {path:28s} n={len(values):5d} p50 {percentile(values, 0.5) * 1e3:7.1f} ms "
                  f"p99 {percentile(values, 0.99) * 1e3:7.1f} ms")
        print(f"answers by status: {dict(sorted(statuses.items()))}; errors (not 200): "
              f"{sum(n for s, n in statuses.items() if s != 200)}; tracebacks in the server log: {server.tracebacks()}")
        print(f"memory before the load: server {mib(before['server'])}, {before['worker_count']} workers "
              f"{mib(before['workers'])}; after: server {mib(after['server'])}, {after['worker_count']} workers "
              f"{mib(after['workers'])}")
        if args.rounds > 1:
            print("  server after each round: " + ", ".join(mib(m["server"]) for m in after_rounds)
                  + "; workers: " + ", ".join(mib(m["workers"]) for m in after_rounds))
        print(f"CPU during the load: server process {cpu_after['server'] - cpu_before['server']:.1f} s, workers "
              f"{cpu_after['workers'] - cpu_before['workers']:.1f} s (of {elapsed * (os.cpu_count() or 1):.0f} "
              "CPU-seconds on the machine)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
