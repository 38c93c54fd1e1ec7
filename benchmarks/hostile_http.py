"""Hostile requests against a real `rigplan serve` (127.0.0.1 only), and one request past its time cap.

    python benchmarks/hostile_http.py                   # 100 hostile requests, then a plan past a 5 s cap
    python benchmarks/hostile_http.py --strace          # also trace the server's file calls (needs strace)

Phase 1 sends `--count` requests cycling through a corpus of hostile inputs (server paths in every
path field, a device, a FIFO-like /proc file, absurd numbers, 100,000-deep JSON, non-UTF-8 bytes) and
prints the answers by status, the 5xx count, the tracebacks in the server's log, and the server's and
its workers' RSS before and after. With `--strace` the server runs under `strace -f -e trace=%file`
and the script counts the file calls, by the server or any worker, that name one of the hostile paths.

Phase 2 sends one plan search that takes far longer than the server's `--time-cap` and checks that
it is stopped: the answer is a 504, the worker that ran it is gone (killed) and replaced, health
answers during the search, and the workers' memory is back at its baseline afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from load_test import Server, _children, _title, mib, percentile, request

PATHS = ["/etc/shadow", "/dev/zero", "/proc/self/environ", "/etc/passwd", "../../../../etc/passwd",
         "/dev/zero/config.json", "~root/.ssh/id_rsa"]
LLAMA = {"model": "llama-3.1-8b"}
CORPUS: list[tuple[str, str, Any]] = [
    *[("POST", "/api/memory", {"model": p}) for p in PATHS],
    *[("POST", "/api/estimate", {**LLAMA, "calibration": p}) for p in PATHS],
    *[("POST", "/api/tco", {"offers": p}) for p in PATHS],
    *[("POST", "/api/lint", {"build": p}) for p in PATHS],
    *[("POST", "/api/plan", {**LLAMA, "tokens": "1B", "server": p}) for p in PATHS],
    *[("POST", "/api/memory", {**LLAMA, "catalog": [p]}) for p in ("/etc", "/dev", "/proc/self")],
    *[("GET", f"/api/gpus?catalog={p}", None) for p in ("/etc", "/dev")],
    ("POST", "/api/memory", {"hidden": 10**6, "vocab": 10**7, "layers": 10, "heads": 10}),
    ("POST", "/api/memory", {"hf_config": {"model_type": "llama", "hidden_size": 1e30, "num_hidden_layers": 2,
                                           "num_attention_heads": 2, "vocab_size": 10}}),
    ("POST", "/api/estimate", {**LLAMA, "tokens": "1e30"}),
    ("POST", "/api/plan", {"model": "llama-3.1-405b", "tokens": "1e30"}),
    ("POST", "/api/memory", {**LLAMA, "gpus": 99_999_999}),
    ("POST", "/api/tco", {"offers_yaml": "[" * 20000 + "]" * 20000}),
    ("POST", "/api/memory", b"[" * 30000 + b"]" * 30000),
    ("POST", "/api/memory", b'{"model": "\xff\xfe"}'),
    ("POST", "/api/memory", b'{"model": "\\ud800"}'),
    ("POST", "/api/estimate", b'{"model": "llama-3.1-8b", "tokens": "1\\udcffT"}'),
    ("POST", "/api/memory", b'{"model": "llama-3.1-8b", "tp": ' + b"9" * 5000 + b"}"),
    ("POST", "/api/estimate", {**LLAMA, "calibration": json.loads('{"a": ' * 900 + "1" + "}" * 900)}),
    ("POST", "/api/tco", {"years": 5e-324}),
    ("POST", "/api/estimate", {**LLAMA, "gpus": 16, "tokens": "1T", "nic_gbit": 5e-324}),
    ("POST", "/api/memory", {"hf_config": {"model_type": "deepseek_v3", "num_nextn_predict_layers": 2**31}}),
    ("POST", "/api/memory", {"hf_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                           "num_attention_heads": 2, "vocab_size": 10, "intermediate_size": 8,
                                           "_name_or_path": "a" * 300}}),
    ("POST", "/api/tco", {"offers_yaml": "- provider: X\n  pricing: on-demand\n  usd_per_gpu_hour: 1e308\n"
                                         "  as_of: 2026-13-45\n  source: q\n"}),
    ("POST", "/api/compare", {**LLAMA, "tokens": "1B", "options": ["8xh100-sxm"] * 40}),
    ("POST", "/api/plan", {**LLAMA, "tokens": "1T", "gpu": ["h100-sxm"] * 3000, "gpus_max": 16}),
]
"""(method, path, body); a bytes body is sent as it is."""

NEEDLES = (*[f'"{p}' for p in PATHS], '"/etc"', '"/dev"', '"/proc/self"', "shadow", "id_rsa", "/etc/passwd")
"""What a file call naming a hostile path looks like in strace's output (a `~root` expanded reads /etc/passwd)."""

SLOW_PLAN = {"model": "deepseek-v3", "tokens": "15T", "gpus_max": 16384}
"""About 14 CPU-seconds uncapped (rigplan plan deepseek-v3 --tokens 15T --gpus-max 16384 on the 2-CPU development
machine); llama-3.1-405b up to 4,096 GPUs, used before, now finishes inside 5 s."""


def _workers(server: Server) -> list[int]:
    forkservers = [p for p in _children(server.pid) if "forkserver" in _title(p)]
    return [w for f in forkservers for w in _children(f)]


def hostile_phase(server: Server, count: int, trace: Path | None) -> None:
    conn = server.connect()
    for _ in range(4):
        request(conn, "POST", "/api/memory", {**LLAMA, "gpu": "h100-sxm"})
    time.sleep(1)
    before = server.memory()
    trace_start = len(trace.read_text(errors="replace").splitlines()) if trace else 0
    statuses: dict[int, int] = {}
    for n in range(count):
        method, path, body = CORPUS[n % len(CORPUS)]
        raw = body if isinstance(body, bytes) else None
        status, seconds = request(conn, method, path, None if raw else body, raw=raw)
        statuses[status] = statuses.get(status, 0) + 1
        if status >= 500:
            print(f"  {status} after {seconds:.1f} s: {method} {path} {str(body)[:100]}")
    time.sleep(1)
    after = server.memory()
    server_errors = sum(v for k, v in statuses.items() if k >= 500)
    print(f"hostile requests: {count} (corpus of {len(CORPUS)} cycled); answers by status "
          f"{dict(sorted(statuses.items()))}; 5xx: {server_errors}; tracebacks in the server log: "
          f"{server.tracebacks()}")
    print(f"  memory before: server {mib(before['server'])}, {before['worker_count']} workers "
          f"{mib(before['workers'])}; after: server {mib(after['server'])}, {after['worker_count']} workers "
          f"{mib(after['workers'])}")
    if trace:
        time.sleep(0.5)
        lines = trace.read_text(errors="replace").splitlines()[trace_start:]
        named = [ln for ln in lines if any(needle in ln for needle in NEEDLES)]
        print(f"  file calls traced during the phase: {len(lines)}; naming a hostile path: {len(named)}")
        for line in named[:5]:
            print(f"    {line}")


def time_cap_phase(server: Server, cap_s: float) -> None:
    conn = server.connect(timeout=cap_s + 60)
    request(conn, "POST", "/api/memory", {**LLAMA, "gpu": "h100-sxm"})
    time.sleep(1)
    baseline = server.memory()
    workers_before = set(_workers(server))
    result: dict[str, Any] = {}

    def slow() -> None:
        started = time.perf_counter()
        result["status"], _ = request(conn, "POST", "/api/plan", SLOW_PLAN)
        result["seconds"] = time.perf_counter() - started

    thread = threading.Thread(target=slow)
    thread.start()
    health = server.connect()
    latencies: list[float] = []
    peak = 0
    while thread.is_alive():
        _, seconds = request(health, "GET", "/api/health", None)
        latencies.append(seconds)
        peak = max(peak, server.memory()["workers"])
        time.sleep(0.25)
    thread.join()
    time.sleep(1.5)
    after = server.memory()
    workers_after = set(_workers(server))
    killed = workers_before - workers_after
    answer = json.loads(_get(server, "/api/health"))
    print(f"time cap {cap_s:g} s: a plan search ({json.dumps(SLOW_PLAN)}) answered {result.get('status')} after "
          f"{result.get('seconds', 0):.1f} s; workers killed {len(killed)}, replaced "
          f"{len(workers_after - workers_before)} ({len(workers_after)} alive); health during the search: "
          f"{len(latencies)} answers, p50 "
          f"{percentile(latencies, 0.5) * 1e3:.0f} ms, max {max(latencies, default=0) * 1e3:.0f} ms; health after: "
          f"{answer['status']}, stopped_at_time_cap_or_lost {answer['pool']['stopped_at_time_cap_or_lost']}")
    print(f"  workers' memory: baseline {mib(baseline['workers'])}, peak during the search {mib(peak)}, after "
          f"{mib(after['workers'])}; server {mib(baseline['server'])} -> {mib(after['server'])}")


def _get(server: Server, path: str) -> str:
    conn = server.connect()
    conn.request("GET", path)
    return conn.getresponse().read().decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--time-cap", type=float, default=5.0)
    parser.add_argument("--strace", action="store_true", help="trace the server's file calls (phase 1)")
    args = parser.parse_args()
    trace = None
    prefix: tuple[str, ...] = ()
    if args.strace:
        if shutil.which("strace") is None:
            raise SystemExit("--strace needs strace on PATH")
        trace = Path(tempfile.mkdtemp(prefix="rigplan-trace-")) / "files.trace"
        prefix = ("strace", "-f", "-qq", "-e", "trace=%file", "-o", str(trace))
    server = Server("--time-cap", str(args.time_cap), prefix=prefix)
    try:
        hostile_phase(server, args.count, trace)
    finally:
        server.stop()
    server = Server("--time-cap", str(args.time_cap))
    try:
        time_cap_phase(server, args.time_cap)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
