"""A torchtitan job TOML (the job-file format of torchtitan 0.1-0.2; `--job.config_file FILE`).

torchtitan takes model shapes from its own registry (a model name and a flavor), so only models that
registry holds can be exported; the flavors below are the ones torchtitan 0.2.2 defines
(torchtitan/models/{llama3,deepseek_v3,qwen3}/__init__.py). Parallel degrees map one to one:
data_parallel_shard_degree is the FSDP (ZeRO-3) group, data_parallel_replicate_degree the DDP group
(HSDP when both exceed 1); torchtitan always shards the FSDP group fully, so ZeRO-1/2 have no place.
Not expressible: LoRA/QLoRA, ZeRO-1/2, Megatron selective (attention-core) recompute, optimizer offload
without parameter offload, 8-bit optimizers, fp16.
"""

from __future__ import annotations

from typing import Any

from rigplan.domain.job import Job
from rigplan.domain.stages import virtual_stage_layers
from rigplan.domain.torchtitan_models import FLAVORS
from rigplan.estimate.moe import dispatcher, flex_dispatched
from rigplan.export.common import (
    FORCED_BALANCE_NOTE,
    MEGATRON_ONLY_RECIPES,
    Exported,
    batch_of,
    require,
    torchrun_prefix,
    unsupported,
)
from rigplan.flow.resolve import TrainingSetup

NAME = "torchtitan"

UNPIPELINED = frozenset({"qwen3", "gpt_oss"})
"""torchtitan models whose train spec has no pipelining function (0.2.2: models/qwen3 and gpt_oss __init__.py,
pipelining_fn=None; torchtitan/train.py refuses pipeline parallelism for them)."""


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _table_lines(name: str, table: dict[str, Any]) -> list[str]:
    """One TOML table and, after it, its nested tables under dotted names ([quantize.linear.float8])."""
    lines = [f"[{name}]"]
    lines.extend(f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None and not isinstance(v, dict))
    for sub, values in table.items():
        if isinstance(values, dict):
            lines.extend(["", *_table_lines(f"{name}.{sub}", values)])
    return lines


def to_toml(sections: dict[str, dict[str, Any]]) -> str:
    """TOML text of a torchtitan job file's tables, nested ones included; None values are left out."""
    lines: list[str] = []
    for name, table in sections.items():
        lines.extend([*_table_lines(name, table), ""])
    return "\n".join(lines)


def torchtitan_sections(setup: TrainingSetup) -> dict[str, dict[str, Any]]:
    arch, job, lay = setup.arch, setup.job, setup.layout
    require(NAME, setup)
    if job.method == "lora":
        raise unsupported(NAME, "LoRA", "torchtune or Hugging Face PEFT fine-tune with adapters")
    if arch.id not in FLAVORS:
        raise unsupported(NAME, f"the model {arch.id!r} (its shapes come from torchtitan's model registry)",
                          f"registered: {', '.join(sorted(FLAVORS))}")
    if lay.zero in (1, 2):
        raise unsupported(NAME, f"ZeRO-{lay.zero} (torchtitan's FSDP2 shards parameters, gradients and optimizer "
                                "states together)", "use --zero 3 (FSDP) or --zero 0 (DDP replicas)")
    if job.recompute == "selective":
        raise unsupported(NAME, "Megatron's selective (attention-core) recompute",
                          "use --recompute op (torchtitan's per-op selective AC) or full")
    if job.recompute == "op" and job.op_save_grouped_mm and arch.moe is not None:
        raise unsupported(NAME, "aten._grouped_mm in the per-op save list (--op-save-grouped-mm)",
                          "its save list is code (_op_sac_save_list), not configuration: add the op there, or "
                          "export without --op-save-grouped-mm")
    if job.precision in ("fp16-mixed", "bf16-true"):
        raise unsupported(NAME, f"--precision {job.precision}", "torchtitan trains fp32 parameters with bf16 compute "
                                                                 "(bf16-mixed), fp32 or fp8")
    if job.precision == "fp8" and job.fp8_recipe in MEGATRON_ONLY_RECIPES:
        raise unsupported(NAME, f"--fp8-recipe {job.fp8_recipe}", "its float8 and MX converters train in fp8 "
                                                                  "(--fp8-recipe current or mxfp8); --framework "
                                                                  f"megatron runs {job.fp8_recipe}")
    if job.offload == "optimizer":
        raise unsupported(NAME, "optimizer-only offload", "--offload all (enable_cpu_offload) moves parameters too")
    if job.optimizer != "adamw":
        raise unsupported(NAME, f"the {job.optimizer} optimizer", "torchtitan ships AdamW and Adam")
    if lay.cp > 1 and job.cp_comm_type == "a2a":
        raise unsupported(NAME, "all-to-all context parallelism (--cp-comm-type a2a)",
                          "torchtitan's context parallelism is ring attention: --cp-comm-type p2p")
    if arch.moe is not None and lay.expert_tp not in (1, lay.tp):
        raise unsupported(NAME, f"expert tensor parallelism etp={lay.expert_tp} other than 1 or tp={lay.tp}")
    model_name, flavor = FLAVORS[arch.id]
    if lay.pp > 1 and model_name in UNPIPELINED:
        raise unsupported(NAME, f"pipeline parallelism for its {model_name} models (the train spec has no pipelining "
                                "function, torchtitan 0.2.2)", "use --pp 1, or --framework megatron")
    b = batch_of(setup)
    fsdp = lay.zero == 3
    ac_mode = {"none": "none", "op": "selective", "full": "full"}[job.recompute]
    parallelism: dict[str, Any] = {
        "data_parallel_replicate_degree": 1 if fsdp else lay.dp,
        "data_parallel_shard_degree": lay.dp if fsdp else 1,
        "tensor_parallel_degree": lay.tp, "pipeline_parallel_degree": lay.pp,
        "context_parallel_degree": lay.cp, "expert_parallel_degree": lay.ep,
        "expert_tensor_parallel_degree": lay.expert_tp if arch.moe is not None else None,
    }
    if arch.moe is not None and lay.ep > 1 and flex_dispatched(job):
        # torchtitan's expert-parallel communication backend: "deepep", or "hybridep" (pytorch/torchtitan PR #2207)
        parallelism["expert_parallel_comm_backend"] = dispatcher(job)
    if lay.pp > 1:
        parallelism["pipeline_parallel_schedule"] = "Interleaved1F1B" if lay.vpp > 1 else "1F1B"
        parallelism["module_fqns_per_model_part"] = model_parts(
            virtual_stage_layers(lay.split, arch.num_layers, lay.pp, lay.vpp))
        parallelism["pipeline_parallel_microbatch_size"] = b.micro_batch
    training: dict[str, Any] = {
        "local_batch_size": b.micro_batch * b.accumulation if lay.pp > 1 else b.micro_batch,
        "global_batch_size": b.global_batch, "seq_len": job.seq_len,
        "mixed_precision_param": "float32" if job.precision == "fp32" else "bfloat16",
        "enable_cpu_offload": job.offload == "all", "steps": 1000,
    }
    sections: dict[str, dict[str, Any]] = {
        "job": {"description": f"rigplan export: {arch.name or arch.id} on {lay.num_gpus} GPUs"},
        "model": {"name": model_name, "flavor": flavor},
        "optimizer": {"name": "AdamW", "lr": 3e-4, "implementation": "fused",
                      "early_step_in_backward": job.optimizer_in_backward},
        "training": training, "parallelism": parallelism,
        "activation_checkpoint": {"mode": ac_mode, "selective_ac_option": "op" if ac_mode == "selective" else None},
        "compile": _compile_section(job),
    }
    if arch.moe is not None and job.forced_balance:  # round-robin experts, as the estimate's balanced routing
        sections["debug"] = {"moe_force_load_balance": True}
    converters, quantize = _quantize(setup, fsdp)
    if converters:
        sections["model"]["converters"] = converters
        sections["quantize"] = quantize
    return sections


def model_parts(stages: tuple[int, ...]) -> list[list[str]]:
    """torchtitan's module_fqns_per_model_part for rigplan's split: one list of module names per virtual stage in
    stage order (torchtitan places stage k on rank k mod pp for looped schedules, as domain.stages orders them), the
    token embedding on the first, the final norm and output projection on the last
    (torchtitan/distributed/pipeline_parallel.py, pipeline_module_split). It replaces
    pipeline_parallel_layers_per_stage, whose split counts the embedding and output as a layer each."""
    parts: list[list[str]] = []
    first = 0
    for k, count in enumerate(stages):
        names = [f"layers.{i}" for i in range(first, first + count)]
        first += count
        parts.append((["tok_embeddings"] if k == 0 else []) + names + (["norm", "output"] if k == len(stages) - 1
                                                                       else []))
    return parts


def _compile_section(job: Job) -> dict[str, Any]:
    """torch.compile as the estimate ran it: on with --compile (or the fused kernels it stands for), over the model
    blocks and, with --loss compiled, the loss (compile.components; torchtitan's default is both)."""
    enable = bool(job.compile) or job.kernels == "fused"
    if not enable:
        return {"enable": False}
    return {"enable": True, "components": ["model", "loss"] if job.loss == "compiled" else ["model"]}


def _quantize(setup: TrainingSetup, fsdp: bool) -> tuple[list[str], dict[str, Any]]:
    """torchtitan's model converters for the job's fp8: the linear converter (quantize.linear.mx / float8) under
    --precision fp8, and for an MoE model the grouped-GEMM converter on its experts (quantize.grouped_mm.mx / float8,
    fqns "experts") unless --bf16-experts keeps them bf16, or alone with --fp8-experts."""
    arch, job = setup.arch, setup.job
    mx = job.fp8_recipe == "mxfp8"
    converters: list[str] = []
    quantize: dict[str, Any] = {}
    if job.precision == "fp8":
        converters.append("quantize.linear.mx" if mx else "quantize.linear.float8")
        quantize["linear"] = ({"mx": {"recipe_name": "mxfp8_cublas"}} if mx else
                              {"float8": {"enable_fsdp_float8_all_gather": fsdp,
                                          "precompute_float8_dynamic_scale_for_fsdp": fsdp}})
    if arch.moe is not None and ((job.precision == "fp8" and not job.bf16_experts) or job.fp8_experts):
        converters.append("quantize.grouped_mm.mx" if mx else "quantize.grouped_mm.float8")
        quantize["grouped_mm"] = ({"mx": {"recipe_name": "mxfp8", "fqns": ["experts"]}} if mx else
                                  {"float8": {"fqns": ["experts"]}})
    return converters, quantize


def export_torchtitan(setup: TrainingSetup) -> Exported:
    sections = torchtitan_sections(setup)
    text = to_toml(sections)
    command = f"{torchrun_prefix(setup)} -m torchtitan.train --job.config_file torchtitan_job.toml"
    notes = ["set [training] dataset and [model] hf_assets_path (tokenizer) for your data"]
    if sections["parallelism"].get("expert_parallel_comm_backend") == "hybridep":
        notes.append("expert_parallel_comm_backend hybridep needs a torchtitan with HybridEP (pytorch/torchtitan PR "
                     "#2207, 2026-02) and DeepEP's HybridEP build; earlier versions take standard or deepep")
    if setup.arch.moe is not None and setup.arch.moe.mtp_layers:
        notes.append(f"torchtitan's {sections['model']['name']} has no multi-token-prediction module: the run trains "
                     f"without the {setup.arch.moe.mtp_layers} MTP module(s) rigplan's estimate counts on the last "
                     "stage (its time and memory there are a little lower)")
    if sections.get("debug", {}).get("moe_force_load_balance"):
        notes.append(FORCED_BALANCE_NOTE.format(flag="[debug] moe_force_load_balance"))
    if setup.layout.pp > 1:
        notes.append("with pipeline parallelism local_batch_size is the whole step's batch per data-parallel rank, "
                     "split into pipeline_parallel_microbatch_size micro-batches")
    return Exported(framework="torchtitan", files={"torchtitan_job.toml": text}, command=command, notes=notes,
                    values=sections)
