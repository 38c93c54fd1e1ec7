"""`--megatron-args`: a Megatron-LM launch command read as the request (flow.megatron_args). What `rigplan export
--framework megatron` writes reads back as the same job; a hand-written script's flags map as Megatron defines them;
typed options win; bad input is one line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rigplan.cli.main import cli
from rigplan.flow.megatron_args import read_megatron_args


def run(*args: str, stdin: str | None = None) -> dict:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


ROUND_TRIPS = [
    ("qwen3-30b-a3b", "b200", ("--gpus", "64", "--ep", "8", "--pp", "2", "--zero", "1", "--recompute", "selective",
                               "--balanced-routing", "--global-batch", "512", "--micro-batch", "2", "--seq", "4096",
                               "--precision", "fp8", "--fp8-recipe", "mxfp8")),
    ("deepseek-v3", "h800-sxm", ("--gpus", "2048", "--pp", "16", "--vpp", "2", "--ep", "64", "--zero", "1",
                                  "--stage-layers", "1,2x30,0", "--global-batch", "15360", "--precision", "fp8",
                                  "--fp8-recipe", "blockwise", "--moe-dispatcher", "deepep", "--a2a-overlap")),
    ("llama-3.1-70b", "h100-sxm", ("--gpus", "256", "--tp", "8", "--pp", "4", "--vpp", "5", "--zero", "1",
                                    "--sequence-parallel", "--recompute", "full", "--global-batch", "512",
                                    "--seq", "8192")),
    ("mixtral-8x7b", "h100-sxm", ("--gpus", "64", "--tp", "2", "--ep", "8", "--cp", "2", "--sequence-parallel",
                                   "--zero", "1", "--global-batch", "256", "--seq", "16384", "--cuda-graphs", "full")),
    ("qwen3-next-80b-a3b", "h100-sxm", ("--gpus", "128", "--pp", "4", "--vpp", "3", "--ep", "32", "--zero", "1",
                                         "--global-batch", "256", "--moe-dispatcher", "deepep")),
    ("nemotron-h-56b", "h100-sxm", ("--gpus", "32", "--tp", "8", "--sequence-parallel", "--zero", "1",
                                     "--global-batch", "96", "--seq", "8192", "--precision", "fp8")),
]


@pytest.mark.parametrize(("model", "gpu", "flags"), ROUND_TRIPS, ids=[m for m, _, _ in ROUND_TRIPS])
def test_an_exported_job_reads_back_as_the_same_estimate(tmp_path: Path, model: str, gpu: str,
                                                         flags: tuple[str, ...]) -> None:
    """The export turns dropout off and overlaps the data-parallel reduction (its launch line), so the direct
    estimate is asked the same; the read-back takes the megatron preset for everything the flags leave out."""
    out = tmp_path / "job"
    result = CliRunner().invoke(cli, ["export", model, "--gpu", gpu, *flags, "--framework", "megatron",
                                      "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    direct = run("estimate", model, "--gpu", gpu, *flags, "--framework", "megatron", "--no-dropout",
                 "--overlap-grad-reduce", "--overlap-param-gather", "--json")
    read_back = run("estimate", model, "--gpu", gpu, "--megatron-args", str(out / "megatron_args.sh"), "--json")
    assert read_back["step_time_s"] == pytest.approx(direct["step_time_s"], rel=1e-12)
    assert read_back["memory"]["layout"] == direct["memory"]["layout"]
    assert read_back["memory"]["job"] == direct["memory"]["job"]
    assert any("from --megatron-args" in note for note in read_back["assumptions"])


SCRIPT = r"""#!/bin/bash
# Qwen3-235B-A22B, as a tuning guide launches it
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 --nnodes 32 pretrain_gpt.py \
    --num-layers 94 --hidden-size 4096 --num-experts 128 \
    --tensor-model-parallel-size=2 --pipeline-model-parallel-size 8 \
    --num-layers-per-virtual-pipeline-stage 3 \
    --decoder-first-pipeline-num-layers 10 --decoder-last-pipeline-num-layers 12 \
    --expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --sequence-parallel \
    --micro-batch-size 1 --global-batch-size 2048 --seq-length 4096 --train-iters 1000 \
    --bf16 --use-distributed-optimizer --overlap-grad-reduce \
    --recompute-granularity selective --recompute-modules moe_act layernorm shared_experts \
    --moe-token-dispatcher-type alltoall --moe-expert-capacity-factor 1.5 --moe-pad-expert-input-to-capacity \
    --attention-dropout 0.0 --hidden-dropout 0.0 \
    --cuda-graph-impl local --cuda-graph-scope full_iteration \
    --tensorboard-dir $OUT --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16
"""


def test_a_hand_written_launch_script_maps_as_megatron_defines_its_flags() -> None:
    imported = read_megatron_args(SCRIPT, "script.sh")
    assert imported.fields == {
        "framework": "megatron", "layers": 94, "tp": 2, "pp": 8, "first_stage_layers": 10,
        "last_stage_layers": 12, "ep": 8, "etp": 1, "sequence_parallel": True, "micro_batch": 1,
        "global_batch": 2048, "seq": 4096, "precision": "bf16-mixed", "zero": 1, "overlap_grad_reduce": True,
        "recompute": "none", "recompute_moe_act": True, "recompute_layernorm": True, "moe_dispatcher": "alltoall",
        "capacity_factor": 1.5, "moe_pad_to_capacity": True, "dropout": False, "cuda_graphs": "full",
        "bf16_moments": True, "gpus": 256, "tokens": 1000.0 * 2048 * 4096,
    }
    notes = " | ".join(imported.notes)
    assert "--recompute-modules shared_experts: not modelled" in notes
    assert "gpus 256 from torchrun's --nnodes 32 x --nproc-per-node 8" in notes
    assert "(--hidden-size, --num-experts) not applied" in notes
    assert "--num-layers-per-virtual-pipeline-stage 3 without --num-layers that 8 x 3 divides" in notes
    assert all(note.startswith("from script.sh: ") for note in imported.notes)


@pytest.mark.parametrize(("flags", "expected"), [
    ("--bf16 --fp8-format hybrid --fp8-recipe tensorwise", {"precision": "fp8", "fp8_recipe": "current"}),
    ("--bf16 --fp4-format e2m1 --fp4-recipe nvfp4", {"precision": "fp8", "fp8_recipe": "nvfp4"}),
    ("--bf16 --fp8-recipe mxfp8", {"precision": "bf16-mixed"}),
    ("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", {"moe_dispatcher": "hybridep"}),
    ("--moe-token-dispatcher-type allgather", {"moe_dispatcher": "allgather"}),
    ("--moe-enable-deepep", {"moe_dispatcher": "deepep"}),
    ("--recompute-granularity selective", {"recompute": "selective"}),
    ("--recompute-granularity selective --recompute-modules core_attn,mlp", {"recompute": "selective",
                                                                             "recompute_mlp": True}),
    ("--recompute-activations", {"recompute": "selective"}),
    ("--cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router",
     {"cuda_graph_scope": ["attn", "moe_router"]}),
    ("--external-cuda-graph --cuda-graph-scope attn", {"cuda_graph_scope": ["attn"]}),
    ("--attention-backend fused --attention-dropout 0.1", {"attention_kernel": "cudnn", "dropout": True}),
    ("--use-torch-fsdp2 --optimizer-cpu-offload --optimizer dist_muon", {"zero": 3, "offload": "optimizer",
                                                                         "optimizer": "muon"}),
    ("--pipeline-model-parallel-layout 'Et|(tt|)*30mL' --cp-comm-type a2a",
     {"pipeline_layout": "Et|(tt|)*30mL", "cp_comm_type": "a2a"}),
    ("--train-samples 1000 --seq-length 2048", {"seq": 2048, "tokens": 2048000.0}),
    ("--num-layers 48 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 3",
     {"layers": 48, "pp": 4, "vpp": 4}),
])
def test_flags_map_to_fields(flags: str, expected: dict) -> None:
    fields = read_megatron_args(flags).fields
    assert {k: v for k, v in fields.items() if k != "framework"} == expected


@pytest.mark.parametrize(("flags", "noted"), [
    ("--num-experts 128 --expert-model-parallel-size 8", True),
    ("--num-experts 8 --tensor-model-parallel-size 2 --sequence-parallel", True),
    ("--num-experts 8 --tensor-model-parallel-size 1", False),  # one rank: the allgather dispatcher gathers nothing
    ("--num-experts 128 --expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall", False),
    ("--num-experts 128 --expert-model-parallel-size 8 --moe-enable-deepep", False),
    ("--tensor-model-parallel-size 2", False),  # a dense launch
])
def test_a_moe_launch_without_a_dispatcher_runs_megatrons_default(flags: str, noted: bool) -> None:
    """Megatron-LM's --moe-token-dispatcher-type defaults to allgather: a MoE launch that leaves it out is timed with
    the allgather dispatcher, and says so where it gathers anything (tp or ep above 1)."""
    imported = read_megatron_args(flags)
    assert any("Megatron-LM's default, allgather" in note for note in imported.notes) == noted
    moe_without_flag = "--num-experts" in flags and "dispatcher" not in flags and "deepep" not in flags
    assert (imported.fields.get("moe_dispatcher") == "allgather") == moe_without_flag


def test_typed_options_win_and_a_typed_framework_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "args.txt"
    path.write_text("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 --micro-batch-size 1 --bf16\n",
                    encoding="utf-8")
    data = run("memory", "llama-3.1-8b", "--gpus", "8", "--megatron-args", str(path), "--tp", "2",
               "--framework", "nemo", "--json")
    assert (data["layout"]["tp"], data["layout"]["pp"]) == (2, 2)
    assert data["framework"]["name"] == "nemo"
    from_stdin = run("memory", "llama-3.1-8b", "--gpus", "8", "--megatron-args", "-", "--json",
                     stdin=path.read_text(encoding="utf-8"))
    assert (from_stdin["layout"]["tp"], from_stdin["layout"]["pp"]) == (1, 2)
    assert from_stdin["framework"]["name"] == "megatron"


@pytest.mark.parametrize(("content", "message"), [
    ("python train.py --lr 3e-4\n", "no Megatron-LM flag rigplan reads"),
    ("--tensor-model-parallel-size 2 --pipeline-model-parallel-layout 'Et|tL\n", "cannot split it into shell words"),
    ("--bf16 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et|xL'\n", "'x' is not a layer letter"),
])
def test_bad_arguments_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "args.sh"
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--gpus", "8", "--megatron-args", str(path)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["memory", "llama-3.1-8b", "--megatron-args", str(tmp_path / "none.sh")])
    assert result.exit_code == 2 and "none.sh" in result.output and "Traceback" not in result.output
