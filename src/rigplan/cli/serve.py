"""`rigplan serve`: the local web app and HTTP API (needs the `web` extra)."""

from __future__ import annotations

import click

from rigplan.cli.common import fail


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. The default serves this machine only; 0.0.0.0 serves the network.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port (0: any free port, printed at start).")
@click.option("--time-cap", type=click.FloatRange(min=0.1), default=20.0, show_default=True,
              help="Seconds a plan search (or any computation) may take before the request gets a 504.")
@click.option("--workers", type=click.IntRange(1, 256), help="Computing processes (default: one per CPU).")
@click.option("--data-dir", type=click.Path(exists=True, file_okay=False),
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
    hosts = allowed_hosts_for(host)
    if hosts is None:
        click.echo(f"rigplan: warning: serving on {host}: anyone who can reach this machine can use the API", err=True)
    app = create_app(time_cap_s=time_cap, allowed_hosts=hosts, workers=workers, data_dir=data_dir)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"rigplan: serving http://{shown}:{port}/ (Ctrl+C to stop)" if port else
               "rigplan: serving on a free port (uvicorn prints it below)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="info" if port == 0 else "warning", access_log=False)
