"""`rigplan serve`: the local web app and HTTP API (needs the `web` extra)."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import click

from rigplan.bounds import check
from rigplan.cli.common import fail
from rigplan.errors import InvalidSpec


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. The default serves this machine only; 0.0.0.0 serves the network.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port (0: any free port, printed at start).")
@click.option("--time-cap", type=float, default=20.0, show_default=True,
              help="Seconds a plan search (or any computation) may take before the request gets a 504 "
                   "(0.1 to 3600).")
@click.option("--workers", type=int, help="Computing processes, 1 to 256 (default: one per CPU).")
@click.option("--data-dir", type=click.Path(),
              help="The one folder whose files requests may name (model, catalog, offers, build, calibration). "
                   "Default: none; requests send content (hf_config, build_yaml, offers_yaml) instead.")
def serve_command(host: str, port: int, time_cap: float, workers: int | None, data_dir: str | None) -> None:
    """Serve the rigplan page and JSON API (memory, estimate, plan, compare, tco, catalog).

    Open http://127.0.0.1:8000/ in a browser; the API's OpenAPI schema is at /openapi.json
    (docs/web.md describes the endpoints). Nothing is fetched from the network.

    \b
    Examples:
      rigplan serve
      rigplan serve --port 8080
      rigplan serve --data-dir ./configs     # requests may name files inside ./configs
    """
    try:
        import uvicorn

        from rigplan.web.app import allowed_hosts_for, create_app
    except ImportError as err:
        fail(f"rigplan serve needs the web extra ({err.name} is missing): pip install 'rigplan[web]'")
        return
    try:
        check("time_cap_s", time_cap)
        if workers is not None:
            check("workers", workers)
    except InvalidSpec as err:
        fail(str(err))
    if data_dir is not None and not Path(data_dir).is_dir():
        fail(f"--data-dir {data_dir}: not a folder; give the folder whose files requests may name")
    sock = _listen(host, port)
    hosts = allowed_hosts_for(host)
    if hosts is None:
        click.echo(f"rigplan: warning: serving on {host}: anyone who can reach this machine can use the API", err=True)
    app = create_app(time_cap_s=time_cap, allowed_hosts=hosts, workers=workers, data_dir=data_dir)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"rigplan: serving http://{shown}:{sock.getsockname()[1]}/ (Ctrl+C to stop)", err=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])


_BIND_REASONS = {errno.EADDRINUSE: "the port is already in use",
                 errno.EADDRNOTAVAIL: "that address is not this machine's",
                 errno.EACCES: "permission denied (ports below 1024 need root)"}


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, or one line and exit status 2 (the address is not this machine's, the port
    is taken or privileged). Bound here, not by uvicorn, whose failure is a logged error and exit status 3."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except socket.gaierror as err:
        fail(f"cannot serve on {host}:{port}: {host} is not a known host name or address")
        raise AssertionError("unreachable") from err
    except (OSError, UnicodeError) as err:
        reason = _BIND_REASONS.get(getattr(err, "errno", None) or 0, getattr(err, "strerror", None) or str(err))
        fail(f"cannot serve on {host}:{port}: {reason}")
        raise AssertionError("unreachable") from err
    sock.set_inheritable(True)
    return sock
