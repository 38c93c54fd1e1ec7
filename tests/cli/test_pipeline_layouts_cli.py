"""Published layouts whose layers do not divide the pipeline: memory and estimate now answer, and say how
they split (issue: Llama 3.1 405B TP8 x PP16, DeepSeek-V3 PP16, Qwen3-235B PP8 x VPP2, BLOOM-176B PP12)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli

FAMOUS = [
    (("llama-3.1-405b", "--tp", "8", "--pp", "16", "--gpus", "16384", "--global-batch", "2048", "--seq", "8192"),
     [7] + [8] * 14 + [7]),
    (("deepseek-v3", "--tp", "2", "--pp", "16", "--ep", "64", "--gpus", "2048", "--global-batch", "4096"),
     [3] + [4] * 14 + [2]),
    (("qwen3-235b-a22b", "--tp", "4", "--pp", "8", "--vpp", "2", "--ep", "8", "--gpus", "1024",
      "--global-batch", "1024"), [11] + [12] * 6 + [11]),
    (("bloom-176b", "--tp", "4", "--pp", "12", "--gpus", "384", "--gpu", "a100-80gb-sxm", "--global-batch", "2048",
      "--seq", "2048"), [5] + [6] * 10 + [5]),
]
COMMON = ("--zero", "1", "--recompute", "full", "--json")


def run(*args: str) -> dict:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(("args", "per_rank"), FAMOUS)
def test_famous_uneven_layouts_estimate_and_say_their_split(args: tuple[str, ...], per_rank: list[int]) -> None:
    memory = run("memory", *args, *COMMON)
    assert memory["layout"]["stage_layers"] == per_rank
    assert any("pipeline split" in note for note in memory["assumptions"])
    estimate = run("estimate", *args, *COMMON)
    pipe = estimate["pipeline"]
    assert pipe["stage_layers"] == per_rank
    # The pace is set by a rank with the most layers (first and last carry embedding / head instead).
    assert pipe["pace_stage_layers"] == max(per_rank)
    assert 0 <= pipe["memory_peak_stage"] < len(per_rank)
    assert 0 < estimate["mfu"] < 1


def test_explicit_split_moves_the_pace_and_the_peak() -> None:
    base = ("llama-3.1-405b", "--tp", "8", "--pp", "16", "--gpus", "16384", "--global-batch", "2048",
            "--seq", "8192", *COMMON)
    heavy_last = ",".join(["7"] * 15 + ["21"])
    data = run("estimate", *base, "--stage-layers", heavy_last)
    assert data["pipeline"]["pace_stage"] == 15 and data["pipeline"]["pace_stage_layers"] == 21
    even = run("estimate", *base)
    assert data["step_time_s"] > even["step_time_s"]
    first = run("memory", *base, "--first-stage-layers", "16")
    assert first["layout"]["stage_layers"][0] == 16 and first["per_gpu"]["stage"] == 0


def test_recompute_granularity_flags() -> None:
    base = ("llama-3.1-70b", "--tp", "8", "--pp", "4", "--gpus", "64", "--global-batch", "64", "--seq", "4096",
            "--zero", "1", "--json")
    full = run("estimate", *base, "--recompute", "full")
    block = run("estimate", *base, "--recompute", "full", "--recompute-method", "block", "--recompute-num-layers", "4")
    every = run("estimate", *base, "--recompute", "full", "--recompute-every", "2")
    none = run("estimate", *base, "--recompute", "none")
    act = [d["memory"]["per_gpu"]["activations_bytes"] for d in (full, block, every, none)]
    assert act[0] < act[1] < act[3] and act[0] < act[2] < act[3]
    steps = [d["step_time_s"] for d in (full, block, every, none)]
    assert steps[0] > steps[1] > steps[3] and steps[0] > steps[2] > steps[3]
    assert block["memory"]["job"]["recompute_method"] == "block"
    bad = CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--recompute-num-layers", "2"])
    assert bad.exit_code == 2 and "add --recompute full" in bad.output
    both = CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--recompute", "full", "--recompute-every", "2",
                                    "--recompute-num-layers", "2"])
    assert both.exit_code == 2 and "give one" in both.output


def test_stage_layers_take_repeated_counts_as_printed() -> None:
    """DeepSeek-V3's PP16 x VPP2 split, one layer on the first virtual stage, two on each of the next thirty, none on
    the last (its MTP module and the loss there): --stage-layers 1,2x30,0 is the same request as the 32 counts."""
    base = ("estimate", "deepseek-v3", "--gpu", "h800-sxm", "--gpus", "2048", "--pp", "16", "--vpp", "2", "--ep", "64",
            "--zero", "1", "--global-batch", "15360", "--json")
    short = run(*base, "--stage-layers", "1,2x30,0")
    longhand = run(*base, "--stage-layers", ",".join(["1"] + ["2"] * 30 + ["0"]))
    assert short == longhand
    assert short["pipeline"]["stage_layers"] == [3] + [4] * 14 + [2]  # per rank: chunks k and k + 16
    for bad in ("2x0", "2x", "2x1000000000"):  # the last would spell out a billion stages: refused before building it
        result = CliRunner().invoke(cli, [*base[:-1], "--stage-layers", bad])
        assert result.exit_code == 2 and "1,2x30,0" in result.output and "Traceback" not in result.output


def test_megatron_layout_string_is_the_same_request_as_its_counts() -> None:
    """Megatron-Core's --pipeline-model-parallel-layout as a recipe writes it: DeepSeek-V3 at PP16 with the MTP
    module alone on virtual stage 30 and the loss alone on stage 31 gives vpp 2 and the split of --stage-layers, and
    says where rigplan times the MTP module."""
    base = ("estimate", "deepseek-v3", "--gpu", "h800-sxm", "--gpus", "2048", "--pp", "16", "--ep", "64",
            "--zero", "1", "--global-batch", "15360", "--json")
    by_layout = run(*base, "--pipeline-layout", "Et*3|(tt|)*29,m|L")
    by_counts = run(*base, "--vpp", "2", "--stage-layers", "3,2x29,0,0")
    assert by_layout["step_time_s"] == by_counts["step_time_s"]
    assert by_layout["memory"]["layout"]["vpp"] == 2
    assert by_layout["pipeline"]["stage_layers"] == by_counts["pipeline"]["stage_layers"] == [5] + [4] * 13 + [2, 2]
    notes = " ".join(by_layout["assumptions"])
    assert "vpp 2: --pipeline-layout lists 32 stages" in notes
    assert "MTP modules on virtual stage 30 (pipeline rank 14)" in notes and "(as given by --pipeline-layout)" in notes


@pytest.mark.parametrize(("extra", "message"), [
    (("--pipeline-layout", "Et*3|(tt|)*28,t|m|L"), "holds 60 decoder layers ('t'); deepseek-v3 has 61"),
    (("--pipeline-layout", "Et*3|(tt|)*29,|L"), "places 0 MTP modules ('m'); deepseek-v3 has 1 (set --mtp-layers 0"),
    (("--pipeline-layout", "Et*3|(tt|)*29,m|L", "--vpp", "4"), "drop --vpp 4 or give a layout of 64 stages"),
    (("--pipeline-layout", "Et*3|(tt|)*29,m|L", "--stage-layers", "3,2x29,0,0"), "both split the pipeline"),
    (("--pipeline-layout", "Et*3|(tt|)*29,q|L"), "'q' is not a layer letter"),
])
def test_megatron_layout_errors_are_one_line(extra: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(cli, ["estimate", "deepseek-v3", "--gpu", "h800-sxm", "--gpus", "2048", "--pp", "16",
                                      "--ep", "64", "--zero", "1", *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_megatron_layout_with_mtp_on_a_dense_model() -> None:
    result = CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--pp", "2", "--pipeline-layout", "Et*16|t*16mL"])
    assert result.exit_code == 2 and "MTP modules on MoE models only" in result.output
