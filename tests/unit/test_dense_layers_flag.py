"""--dense-layers: the leading dense layers of an MoE given by shape flags (DeepSeek-V3's first three), or changed on a
catalog or config.json model."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.errors import InvalidSpec
from rigplan.estimate.params import count_params
from rigplan.flow.model_source import resolve_model

SHAPE = {"layers": 30, "hidden": 2048, "heads": 16, "vocab": 32000, "ffn": 8192, "experts": 64, "top_k": 6,
         "expert_ffn": 1024}


def test_dense_layers_trade_experts_for_a_dense_mlp_of_ffn() -> None:
    catalog = load_catalog()
    all_moe = resolve_model(None, catalog, SHAPE).arch
    two_dense = resolve_model(None, catalog, {**SHAPE, "dense_layers": 2}).arch
    assert two_dense.moe is not None and two_dense.moe.first_dense_layers == 2
    per_expert = 3 * 2048 * 1024  # gated MLP
    dense_mlp = 3 * 2048 * 8192
    router = 2048 * 64
    difference = count_params(all_moe).total - count_params(two_dense).total
    assert difference == 2 * (64 * per_expert + router - dense_mlp)
    active_difference = count_params(all_moe).active - count_params(two_dense).active
    assert active_difference == 2 * (6 * per_expert + router - dense_mlp)


def test_dense_layers_change_a_catalog_model_and_keep_the_rest() -> None:
    arch = resolve_model("deepseek-v3", load_catalog(), {"dense_layers": 5}).arch
    assert arch.moe is not None
    assert (arch.moe.first_dense_layers, arch.moe.router, arch.moe.num_shared_experts) == (5, "sigmoid", 1)


@pytest.mark.parametrize(("flags", "message"), [
    ({**SHAPE, "dense_layers": 30}, "--dense-layers 30 leaves no MoE layer among 30"),
    ({k: v for k, v in SHAPE.items() if k not in ("experts", "top_k", "expert_ffn")} | {"dense_layers": 1},
     "need --experts"),
])
def test_what_it_cannot_describe_is_one_line(flags: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSpec, match=message) as info:
        resolve_model(None, load_catalog(), flags)
    assert "\n" not in str(info.value)


def test_the_cli_flag_and_its_bound() -> None:
    runner = CliRunner()
    base = ["memory", "--layers", "30", "--hidden", "2048", "--heads", "16", "--vocab", "32000", "--experts", "64",
            "--top-k", "6", "--expert-ffn", "1024", "--gpu", "h100-sxm"]
    ok = runner.invoke(cli, [*base, "--dense-layers", "2"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(cli, [*base, "--dense-layers", "-1"])
    assert bad.exit_code == 2 and "--dense-layers" in bad.output and "Traceback" not in bad.output
