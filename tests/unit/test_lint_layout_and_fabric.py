"""lint: storage NICs are not compute fabric; the fit and the time of one report name one layout."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rigplan.cli.main import cli


def _findings(*args: str) -> dict[str, dict]:
    out = CliRunner().invoke(cli, ["lint", *args, "--json"])
    assert out.exit_code in (0, 1), out.output
    return {f["code"]: f for f in json.loads(out.output)["findings"]}


def test_dgx_h100_storage_nics_are_not_fabric() -> None:
    # 8 x 400 Gb/s ConnectX-7 for compute, 2 more for storage: 400 Gb/s per GPU, not (8 + 2) x 400 / 8 = 500.
    net = _findings("dgx-h100")["network.scale_out"]
    assert net["values"]["bits_per_s_per_gpu"] == 400e9
    assert "400 Gb/s per GPU" in net["message"] and "not counted" in net["message"]


def test_fit_and_time_use_the_same_layout() -> None:
    found = _findings("dgx-h100", "--for", "llama-3.1-8b", "--tokens", "100B")
    fit, timed = found["workload.fit"], found["workload.time"]
    assert "fits" in fit["message"]
    assert fit["values"]["layout"] == timed["values"]["layout"]
    assert timed["values"]["layout"] in fit["message"]
