"""`--torchtitan-config`: a torchtitan job TOML read as the request (flow.torchtitan_config). What `rigplan export
--framework torchtitan` writes reads back as the same job; a hand-written file's keys map as torchtitan's
job_config.py defines them; typed options win; bad input is one line and exit status 2; the notes read in Chinese."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from lang_check import english_words

from rigplan.cli.main import cli
from rigplan.flow.torchtitan_config import read_torchtitan_config


def run(*args: str, stdin: str | None = None) -> dict:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


EXPORTED = ("--compile", "--loss", "unfused")
"""What the export writes that the torchtitan preset does not set: it exports rigplan's own defaults, whose fused
kernels it runs as compile.enable over the model alone (the preset: compile off, the loss compiled with it)."""

ROUND_TRIPS = [
    ("llama-3.1-8b", "h100-sxm", ("--gpus", "64", "--zero", "3", "--global-batch", "256", "--micro-batch", "2",
                                  "--seq", "8192", "--recompute", "op", "--precision", "fp8", "--fp8-recipe",
                                  "current"), EXPORTED),
    ("qwen3-30b-a3b", "b200", ("--gpus", "64", "--ep", "8", "--zero", "3", "--precision", "fp8", "--fp8-recipe",
                               "mxfp8", "--global-batch", "256", "--micro-batch", "2", "--balanced-routing",
                               "--recompute", "full"), EXPORTED),
    ("llama-3.1-70b", "h100-sxm", ("--gpus", "256", "--tp", "4", "--pp", "4", "--vpp", "2", "--global-batch", "512"),
     (*EXPORTED, "--recompute", "none", "--zero", "0", "--sequence-parallel")),
    ("deepseek-v3", "h800-sxm", ("--gpus", "512", "--pp", "8", "--vpp", "2", "--ep", "32", "--zero", "3",
                                  "--stage-layers", "3,4x14,2", "--global-batch", "1024", "--precision", "fp8",
                                  "--fp8-recipe", "current"), (*EXPORTED, "--recompute", "none")),
]


@pytest.mark.parametrize(("model", "gpu", "flags", "written"), ROUND_TRIPS, ids=[m for m, _, _, _ in ROUND_TRIPS])
def test_an_exported_job_reads_back_as_the_same_estimate(tmp_path: Path, model: str, gpu: str,
                                                         flags: tuple[str, ...], written: tuple[str, ...]) -> None:
    """The export runs without a preset, so the direct estimate is asked what the file says beyond the preset
    (`written`: the compile it writes, and where no flag set them, AC mode none and DDP replicas); torchtitan's
    tensor parallelism is sequence-parallel. The read-back takes the torchtitan preset for the rest."""
    out = tmp_path / "job"
    result = CliRunner().invoke(cli, ["export", model, "--gpu", gpu, *flags, "--framework", "torchtitan",
                                      "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    direct = run("estimate", model, "--gpu", gpu, *flags, "--framework", "torchtitan", *written, "--json")
    read_back = run("estimate", model, "--gpu", gpu, "--torchtitan-config", str(out / "torchtitan_job.toml"), "--json")
    assert read_back["step_time_s"] == pytest.approx(direct["step_time_s"], rel=1e-12)
    assert read_back["memory"]["layout"] == direct["memory"]["layout"]
    assert read_back["memory"]["job"] == direct["memory"]["job"]
    assert read_back["framework"]["name"] == "torchtitan"
    assert any("from --torchtitan-config" in note for note in read_back["assumptions"])


DEEPSEEK = """\
[job]
dump_folder = "./outputs"
description = "DeepSeek-V3 671B model training"

[model]
name = "deepseek_v3"
flavor = "671B"
hf_assets_path = "./assets/hf/DeepSeek-V3.1-Base"
converters = ["quantize.linear.float8", "quantize.grouped_mm.float8"]

[optimizer]
name = "AdamW"
lr = 2.2e-4
eps = 1e-8
implementation = "foreach"

[lr_scheduler]
warmup_steps = 2_000  # lr scheduler warm up, normally 20% of the train steps
decay_ratio = 0.8

[training]
local_batch_size = 16
seq_len = 4096
max_norm = 1.0  # grad norm clipping
steps = 10_000
dataset = "c4"

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
fsdp_reshard_after_forward = "default" # default / never / always
tensor_parallel_degree = 2
enable_async_tensor_parallel = true
pipeline_parallel_degree = 4
pipeline_parallel_schedule = "Interleaved1F1B"
pipeline_parallel_microbatch_size = 2
expert_parallel_degree = 32
expert_parallel_comm_backend = "deepep"

[checkpoint]
enable = true
interval = 500

[activation_checkpoint]
mode = "selective"  # ["none", "selective", "full"]
selective_ac_option = 'op'  # 'int' = ac every positive int layer or 'op', ac based on ops policy

[compile]
enable = true
components = ["model", "loss"]

[quantize.linear.float8]
recipe_name = "rowwise"
filter_fqns = ["output", "router.gate"]

[quantize.grouped_mm.float8]
fqns = ["experts"]
"""


def test_a_hand_written_job_file_maps_as_torchtitan_defines_its_keys() -> None:
    """512 GPUs over tp 2 x pp 4 leave 64 to the shard degree -1 (FSDP), whose global batch is the local batch of
    16 per data-parallel rank x 64; Interleaved1F1B runs two stages a rank, split as torchtitan's
    generate_llm_fqn_per_model_part (embedding and output one layer each)."""
    imported = read_torchtitan_config(DEEPSEEK, "671b.toml", gpus=512, model="deepseek-v3",
                                      flavor=("deepseek_v3", "671B"))
    assert imported.fields == {
        "framework": "torchtitan", "tp": 2, "pp": 4, "ep": 32, "etp": 1, "sequence_parallel": True, "zero": 3,
        "vpp": 2, "embedding_layer_weight": 1, "head_layer_weight": 1, "micro_batch": 2, "global_batch": 1024,
        "seq": 4096, "tokens": 10_000.0 * 1024 * 4096, "precision": "fp8", "fp8_recipe": "current", "recompute": "op",
        "compile": True, "tp_comm_overlap": True, "optimizer": "adamw", "optimizer_foreach": True,
        "moe_dispatcher": "deepep",
    }
    notes = " | ".join(imported.notes)
    assert "float8 recipe_name 'rowwise': row-wise scaling not modelled" in notes
    assert "checkpoint.interval 500 steps" in notes
    assert "read but not used by the estimate: job.*, model.hf_assets_path, optimizer.lr, optimizer.eps, " \
           "lr_scheduler.*, training.max_norm, training.dataset, parallelism.fsdp_reshard_after_forward, " \
           "quantize.linear.float8.filter_fqns" in notes
    assert "model.name" not in notes
    assert all(note.startswith("from 671b.toml: ") for note in imported.notes)


@pytest.mark.parametrize(("text", "expected"), [
    ("[parallelism]\ndata_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1", {"dp": 8, "zero": 0}),
    ("[parallelism]\ndata_parallel_replicate_degree = 4\ndata_parallel_shard_degree = 8", {"dp": 32, "zero": 3}),
    ("[training]\nlocal_batch_size = 2\nglobal_batch_size = 64\nseq_len = 8192\nsteps = 100",
     {"micro_batch": 2, "global_batch": 64, "seq": 8192, "tokens": 100.0 * 64 * 8192}),
    ("[activation_checkpoint]\nmode = 'selective'\nselective_ac_option = '4'", {"recompute": "full",
                                                                                "recompute_every": 4}),
    ("[activation_checkpoint]\nselective_ac_option = 3", {"recompute": "full", "recompute_every": 3}),
    ("[activation_checkpoint]\nmode = 'full'", {"recompute": "full"}),
    ("[activation_checkpoint]\nmode = 'none'", {"recompute": "none"}),
    ("[compile]\nenable = true\ncomponents = ['loss']", {"compile": False, "loss": "compiled"}),
    ("[compile]\nenable = true\ncomponents = ['model']", {"compile": True, "loss": "unfused"}),
    ("[compile]\nenable = true", {"compile": True}),
    ("[model]\nconverters = ['quantize.linear.mx']\n[parallelism]\nexpert_parallel_degree = 8",
     {"ep": 8, "precision": "fp8", "fp8_recipe": "mxfp8", "bf16_experts": True}),
    ("[model]\nconverters = ['quantize.grouped_mm.mx']\n[quantize.grouped_mm.mx]\nfqns = ['experts']\n"
     "[training]\nmixed_precision_param = 'bfloat16'",
     {"fp8_experts": True, "fp8_recipe": "mxfp8", "precision": "bf16-mixed"}),
    ("[model]\nconverters = ['quantize.dense.float8', 'quantize.moe.float8']\n[quantize.moe.float8]\n"
     "fqns = ['experts']", {"precision": "fp8", "fp8_recipe": "current"}),
    ("[model]\nconverters = ['float8']\n[float8]\nmoe_fqns_prototype = 'experts'",
     {"precision": "fp8", "fp8_recipe": "current"}),
    ("[training]\nbatch_size = 4\ntensor_parallel_degree = 2\ncompile = true\n[float8]\nenable_float8_linear = true",
     {"micro_batch": 4, "global_batch": 4, "tp": 2, "sequence_parallel": True, "compile": True, "loss": "unfused",
      "precision": "fp8", "fp8_recipe": "current"}),
    ("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_first_stage_less_layers = 2\n"
     "pipeline_parallel_last_stage_less_layers = 3\npipeline_parallel_microbatch_size = 2\n"
     "[training]\nlocal_batch_size = 32",
     {"pp": 4, "embedding_layer_weight": 2, "head_layer_weight": 3, "micro_batch": 2, "global_batch": 32}),
    ("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = 'Interleaved1F1B'\n"
     "module_fqns_per_model_part = [['tok_embeddings', 'layers.0'], ['layers.1', 'layers.2'], "
     "['layers.3', 'layers.4'], ['layers.5', 'norm', 'output']]", {"pp": 2, "vpp": 2, "stage_layers": [1, 2, 2, 1],
                                                               "micro_batch": 1}),
    ("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = 'Interleaved1F1B'\n"
     "module_fqns_per_model_part = [['tok_embeddings', 'layers.0', 'layers.1'], ['layers.2', 'layers.3'], "
     "['layers.4', 'layers.5'], ['layers.6', 'layers.7', 'norm', 'output']]", {"pp": 2, "vpp": 2, "micro_batch": 1}),
    ("[parallelism]\npipeline_parallel_degree = 4\nexpert_parallel_degree = 8\npipeline_parallel_schedule = "
     "'DualPipeV'", {"pp": 4, "ep": 8, "vpp": 2, "embedding_layer_weight": 1, "head_layer_weight": 1,
                     "a2a_overlap": True, "a2a_overlap_schedule": "dualpipe", "moe_dispatcher": "alltoall",
                     "micro_batch": 1}),
    ("[optimizer]\nname = 'Adam'\nimplementation = 'foreach'\nearly_step_in_backward = true\n[training]\n"
     "enable_cpu_offload = true\nmixed_precision_param = 'float32'\n[debug]\nmoe_force_load_balance = true\n"
     "[parallelism]\ncontext_parallel_degree = 2",
     {"optimizer": "adamw", "optimizer_foreach": True, "optimizer_in_backward": True, "offload": "all",
      "precision": "fp32", "balanced_routing": True, "cp": 2, "cp_comm_type": "p2p"}),
    ("[training]\ndtype = 'bfloat16'\nmixed_precision_param = 'bfloat16'", {"precision": "bf16-true"}),
    ("[parallelism]\ntensor_parallel_degree = 2\nenable_async_tensor_parallel = true",
     {"tp": 2, "sequence_parallel": True}),
])
def test_keys_map_to_fields(text: str, expected: dict) -> None:
    fields = read_torchtitan_config(text).fields
    assert {k: v for k, v in fields.items() if k != "framework"} == expected


@pytest.mark.parametrize(("text", "note"), [
    ("[parallelism]\ndata_parallel_replicate_degree = 4\ndata_parallel_shard_degree = 8",
     "HSDP (data_parallel_replicate_degree 4 x data_parallel_shard_degree 8): estimated as ZeRO-3 over all 32"),
    ("[parallelism]\ntensor_parallel_degree = 2\nenable_async_tensor_parallel = true",
     "enable_async_tensor_parallel works only under compile"),
    ("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = 'ZBVZeroBubble'",
     "'ZBVZeroBubble': not modelled, estimated as interleaved 1F1B with vpp 2"),
    ("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = 'Interleaved1F1B'\n"
     "pipeline_parallel_layers_per_stage = 4", "the stage count needs the model's layers, vpp not set"),
    ("[parallelism]\ntensor_parallel_degree = 'two'", "parallelism.tensor_parallel_degree 'two': not a value"),
    ("[activation_checkpoint]\nmode = 'memory_budget'", "activation_checkpoint.mode 'memory_budget'"),
    ("[model]\nconverters = ['float8']", "on a mixture-of-experts model pass --bf16-experts"),
    ("[model]\nname = 'llama3'\nflavor = '8B'\n[training]\nseq_len = 8192", "not compared with MODEL"),
    ("[optimizer]\nname = 'Muon'", "optimizer.name 'Muon': not an optimizer rigplan reads"),
])
def test_what_is_not_applied_is_a_note(text: str, note: str) -> None:
    assert note in " | ".join(read_torchtitan_config(text).notes)


def test_the_shard_degree_minus_one_takes_the_ranks_the_command_line_leaves() -> None:
    """-1 shards over what --dp (or --gpus over tp*pp*cp) leaves after the replicas: HSDP of 2 x 4 here."""
    text = "[training]\nlocal_batch_size = 2\n[parallelism]\ndata_parallel_replicate_degree = 2"
    imported = read_torchtitan_config(text, dp=8)
    assert imported.fields == {"framework": "torchtitan", "zero": 3, "micro_batch": 2, "global_batch": 16}
    assert "HSDP (data_parallel_replicate_degree 2 x data_parallel_shard_degree 4)" in imported.notes[0]
    assert read_torchtitan_config(text, gpus=12).fields["global_batch"] == 24
    assert "global batch left to --global-batch" in read_torchtitan_config(text, gpus=7).notes[0]


def test_a_model_other_than_model_is_a_note_and_not_applied() -> None:
    imported = read_torchtitan_config("[model]\nname = 'llama3'\nflavor = '70B'\n[training]\nseq_len = 8192",
                                      model="llama-3.1-8b", flavor=("llama3", "8B"))
    assert imported.fields == {"framework": "torchtitan", "seq": 8192}
    assert "model.name 'llama3', model.flavor '70B' is not llama-3.1-8b (torchtitan's 'llama3' '8B')" in \
        imported.notes[0]


TYPED = """\
[training]
local_batch_size = 2
seq_len = 2048

[parallelism]
tensor_parallel_degree = 1
pipeline_parallel_degree = 2
"""


def test_typed_options_win_and_a_typed_framework_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text(TYPED, encoding="utf-8")
    data = run("memory", "llama-3.1-8b", "--gpus", "8", "--torchtitan-config", str(path), "--tp", "2",
               "--stage-layers", "15,17", "--framework", "fsdp", "--json")
    assert (data["layout"]["tp"], data["layout"]["pp"], data["layout"]["stage_layers"]) == (2, 2, [15, 17])
    assert data["framework"]["name"] == "fsdp"
    from_stdin = run("estimate", "llama-3.1-8b", "--gpus", "16", "--torchtitan-config", "-", "--json",
                     stdin=path.read_text(encoding="utf-8"))
    assert (from_stdin["memory"]["layout"]["tp"], from_stdin["memory"]["layout"]["pp"]) == (1, 2)
    assert from_stdin["memory"]["layout"]["zero"] == 3  # the shard degree -1 takes the 8 data-parallel ranks
    assert from_stdin["global_batch"] == 2 * 8  # local_batch_size per data-parallel rank x 8
    assert from_stdin["framework"]["name"] == "torchtitan"


def fails_in_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, args)
    lines = result.output.strip().splitlines()
    assert (result.exit_code, len(lines)) == (2, 1), result.output
    assert message in lines[0] and "Traceback" not in result.output


@pytest.mark.parametrize(("content", "extra", "message"), [
    ("[training\nseq_len = 2048\n", [], "not TOML"),
    ("[job]\ndescription = 'a job'\n[metrics]\nlog_freq = 10\n", [], "no table rigplan reads"),
    ("[training]\nseq_len = 2048\n", ["--megatron-args", "args.sh"],
     "--megatron-args and --torchtitan-config both describe the job"),
])
def test_bad_files_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, extra: list[str],
                                message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("args.sh").write_text("--tensor-model-parallel-size 2\n", encoding="utf-8")
    Path("job.toml").write_text(content, encoding="utf-8")
    fails_in_one_line(["estimate", "llama-3.1-8b", "--gpus", "8", "--torchtitan-config", "job.toml", *extra], message)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    fails_in_one_line(["memory", "llama-3.1-8b", "--torchtitan-config", str(tmp_path / "none.toml")], "none.toml")


def test_the_notes_read_in_chinese(tmp_path: Path) -> None:
    path = tmp_path / "671b.toml"
    path.write_text(DEEPSEEK.replace("'op'", "'memory'").replace('"deepseek_v3"', '"llama3"'), encoding="utf-8")
    result = CliRunner().invoke(cli, ["--lang", "zh", "estimate", "deepseek-v3", "--gpu", "h800-sxm", "--gpus", "512",
                                      "--torchtitan-config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    notes = [n for n in json.loads(result.output)["assumptions"] if "--torchtitan-config" in n]
    assert len(notes) >= 5
    assert not [(n, english_words(n)) for n in notes if english_words(n)]


def test_a_non_ascii_digit_checkpoint_option_is_a_note_not_a_crash() -> None:
    """'²' passes str.isdigit but not int(): the option reads as one rigplan does not model (found by fuzzing)."""
    imported = read_torchtitan_config('[activation_checkpoint]\nmode = "selective"\nselective_ac_option = "²"\n')
    assert "recompute" not in imported.fields
    assert "selective_ac_option '²'): not modelled" in " | ".join(imported.notes)
