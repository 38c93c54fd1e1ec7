"""Load test of `rigplan serve`: real HTTP on 127.0.0.1, mixed endpoints including plan, many clients.

    python benchmarks/load_test.py                      # 32 clients, 20 s or 4000 requests
    python benchmarks/load_test.py --clients 64 --seconds 30 --hostile 100

Starts `rigplan serve` on a free loopback port as a child process, runs `--clients` concurrent
clients (threads, one keep-alive connection each) for at most `--seconds` or `--requests`, and
prints throughput, p50/p99 latency per endpoint and overall, error counts, the health answer's
latency while plans run, and the server's RSS (server process plus its workers) before, after the
load and after `--hostile` hostile requests. Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

MIX = [  # (weight, method, path, body)
    (6, "POST", "/api/memory", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 8, "zero": 3}),
    (3, "POST", "/api/estimate", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": 64, "tp": 8, "tokens": "1T"}),
    (1, "POST", "/api/plan", {"model": "llama-3.1-8b", "tokens": "100B", "gpu": ["h100-sxm"], "gpus_max": 64}),
    (1, "POST", "/api/tco", {"gpu": "h100-sxm", "gpus": 64}),
    (4, "GET", "/api/gpus", None),
    (2, "GET", "/api/models/llama-3.1-8b", None),
    (2, "GET", "/api/health", None),
]
HOSTILE = [
    ("POST", "/api/memory", {"model": "/etc/shadow"}),
    ("POST", "/api/tco", {"offers": "/dev/zero"}),
    ("POST", "/api/memory", {"model": "/dev/zero"}),
    ("POST", "/api/memory", {"hidden": 10**6, "vocab": 10**7, "layers": 10, "heads": 10}),
    ("POST", "/api/plan", {"model": "llama-3.1-405b", "tokens": "1e30"}),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes(pid: int) -> int:
    """RSS of `pid` and its children (the worker processes), from /proc."""
    total = 0
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        for child in list(pids[1:]):
            children = Path(f"/proc/{child}/task/{child}/children")
            if children.exists():
                pids += [int(p) for p in children.read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def request(conn: http.client.HTTPConnection, method: str, path: str, body: object) -> tuple[int, float]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"content-type": "application/json"} if data is not None else {}
    start = time.perf_counter()
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    response.read()
    return response.status, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--hostile", type=int, default=100)
    parser.add_argument("--workers", type=int, help="rigplan serve --workers (default: one per CPU)")
    args = parser.parse_args()

    port = free_port()
    command = [sys.executable, "-c", "from rigplan.cli.main import main; main()", "serve", "--port", str(port)]
    if args.workers:
        command += ["--workers", str(args.workers)]
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL, env={**os.environ})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                if request(conn, "POST", "/api/memory", MIX[0][3])[0] == 200:  # starts the workers
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("rigplan serve did not start") from None
                time.sleep(0.2)
        for _ in range(20):  # warm every endpoint once
            for _, method, path, body in MIX:
                request(conn, method, path, body)
        time.sleep(1)
        rss_before = rss_bytes(server.pid)

        schedule = [entry for entry in MIX for _ in range(entry[0])]
        results: list[tuple[str, int, float]] = []
        lock = threading.Lock()
        counter = iter(range(10**9))
        stop_at = time.monotonic() + args.seconds

        def client(index: int) -> None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            while time.monotonic() < stop_at:
                n = next(counter)
                if n >= args.requests:
                    return
                _, method, path, body = schedule[(n + index) % len(schedule)]
                try:
                    status, seconds = request(c, method, path, body)
                except (OSError, http.client.HTTPException):
                    status, seconds = 0, 0.0
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                with lock:
                    results.append((path, status, seconds))

        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        time.sleep(2)
        rss_after = rss_bytes(server.pid)

        hostile_status: dict[int, int] = {}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # the first one idled out
        for n in range(args.hostile):
            method, path, body = HOSTILE[n % len(HOSTILE)]
            status, _ = request(conn, method, path, body)
            hostile_status[status] = hostile_status.get(status, 0) + 1
        time.sleep(1)
        rss_hostile = rss_bytes(server.pid)

        print(f"rigplan serve load test: {args.clients} clients, {len(results)} requests in {elapsed:.1f} s "
              f"on {os.cpu_count()} CPUs")
        print(f"throughput {len(results) / elapsed:.1f} req/s")
        by_path: dict[str, list[float]] = {}
        errors = 0
        for path, status, seconds in results:
            by_path.setdefault(path, []).append(seconds)
            errors += status != 200
        every = [s for _, _, s in results]
        print(f"latency all: p50 {percentile(every, 0.5) * 1e3:.0f} ms, p99 {percentile(every, 0.99) * 1e3:.0f} ms")
        for path, values in sorted(by_path.items()):
            print(f"  {path:28s} n={len(values):5d} p50 {percentile(values, 0.5) * 1e3:7.1f} ms "
                  f"p99 {percentile(values, 0.99) * 1e3:7.1f} ms")
        print(f"errors (not 200): {errors}")
        print(f"server RSS (with workers): before {rss_before / 2**20:.0f} MiB, after load {rss_after / 2**20:.0f} "
              f"MiB, after {args.hostile} hostile requests {rss_hostile / 2**20:.0f} MiB "
              f"(answers: {dict(sorted(hostile_status.items()))})")
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
