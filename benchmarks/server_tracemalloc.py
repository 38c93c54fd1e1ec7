"""Does the server process keep Python objects per request? The app under uvicorn in this process, traced.

    python benchmarks/server_tracemalloc.py                 # 3 rounds of 16 clients x 60 requests
    python benchmarks/server_tracemalloc.py --rounds 5 --top 3

The server's RSS rises during a load and stays a little above its baseline (benchmarks/load_test.py
prints it). This script tells a leak from the allocator keeping freed memory: it runs `rigplan.web`
under uvicorn in a thread of this process with tracemalloc on, sends the load test's mix (load_test.MIX)
from 16 keep-alive clients per round, and prints the Python memory still allocated after each round and
the allocation sites that grew most between the first and the last round. The computations run in the
worker processes, which are not traced here. Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import sys
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from load_test import MIX, free_port, request


def main() -> None:
    import uvicorn

    from rigplan.web.app import create_app

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=60, help="per client and round")
    parser.add_argument("--top", type=int, default=5, help="allocation sites to print")
    args = parser.parse_args()

    port = free_port()
    app = create_app(workers=2)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.1)
    schedule = [entry for entry in MIX for _ in range(entry[0])]

    def load(count: int) -> None:
        def client(index: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for n in range(count):
                _, method, path, body = schedule[(n * 7 + index) % len(schedule)]
                request(conn, method, path, body)

        clients = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()

    try:
        load(20)  # warm: imports, caches, the thread pools
        gc.collect()
        tracemalloc.start(25)
        snapshots = []
        for number in range(args.rounds):
            load(args.requests)
            gc.collect()
            time.sleep(1)
            snapshots.append(tracemalloc.take_snapshot())
            print(f"round {number + 1}: {16 * args.requests} requests; Python memory still allocated "
                  f"{tracemalloc.get_traced_memory()[0] / 2**20:.2f} MiB", flush=True)
        print(f"largest growth from round 1 to round {args.rounds}:")
        for stat in snapshots[-1].compare_to(snapshots[0], "lineno")[:args.top]:
            print(f"  {stat}")
    finally:
        server.should_exit = True
        thread.join(10)
        app.state.pool.close()


if __name__ == "__main__":
    main()
