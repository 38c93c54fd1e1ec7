"""`rigplan serve` (the click command object; cli/main.py registers it): starts uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

from click.testing import CliRunner

from rigplan.cli.serve import serve_command

from .server import free_port


def test_help_shows_the_loopback_default() -> None:
    out = CliRunner().invoke(serve_command, ["--help"], terminal_width=200)
    assert out.exit_code == 0
    assert "127.0.0.1" in out.output and "--port" in out.output and "--time-cap" in out.output


def test_serves_the_api_on_loopback_only() -> None:
    port = free_port()
    code = "import sys; from rigplan.cli.serve import serve_command; serve_command(sys.argv[1:])"
    proc = subprocess.Popen([sys.executable, "-c", code, "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/api/health"
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    assert json.loads(response.read())["status"] == "ok"
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "rigplan serve did not answer"
                time.sleep(0.2)
        # Bound to loopback: a request naming another host (DNS rebinding) is refused.
        request = urllib.request.Request(url, headers={"Host": "rebind.example"})
        try:
            urllib.request.urlopen(request, timeout=5)
            raise AssertionError("a foreign Host header was served")
        except urllib.error.HTTPError as err:
            assert err.code == 400
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert f"serving http://127.0.0.1:{port}/" in err


def test_port_0_prints_the_port_it_got() -> None:
    # rigplan binds the socket itself (a failure is one line and exit 2, not uvicorn's log), so it knows the port.
    code = "import sys; from rigplan.cli.serve import serve_command; serve_command(sys.argv[1:])"
    proc = subprocess.Popen([sys.executable, "-c", code, "--port", "0", "--workers", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("rigplan: serving http://127.0.0.1:") and ":0/" not in line, line
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
                    assert response.status == 200
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.communicate(timeout=15)
