"""A real rigplan web server on a free 127.0.0.1 port, in a thread (browser tests and the screenshot script)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerThread:
    """uvicorn serving `create_app()` bound to 127.0.0.1 (with the loopback Host check), stopped on exit."""

    def __init__(self, **app_options: Any) -> None:
        import uvicorn

        from rigplan.web.app import allowed_hosts_for, create_app

        self.port = free_port()
        app = create_app(allowed_hosts=allowed_hosts_for("127.0.0.1"), **app_options)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the rigplan test server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
