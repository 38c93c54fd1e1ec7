"""An accelerate config YAML (FSDP2, or DDP) and its `accelerate launch` line.

ZeRO-3 is FSDP2 with fsdp_reshard_after_forward: true, ZeRO-2 the same with false (parameters stay
gathered between forward and backward); ZeRO-0 is plain data parallel (MULTI_GPU). LoRA adapters come
from PEFT in the training script, so LoRA layouts export with a note. accelerate's `bf16` is autocast
over fp32 parameters; bf16-true means loading the model in bf16 with mixed_precision "no".
Not expressible here: ZeRO-1, tensor / pipeline / context / expert parallelism, optimizer-only
offload (FSDP offloads parameters, gradients and optimizer states together), Megatron selective or
per-op recompute.
"""

from __future__ import annotations

from typing import Any

import yaml

from rigplan.export.common import MEGATRON_ONLY_RECIPES, Exported, nodes_of, require, unsupported
from rigplan.flow.resolve import TrainingSetup

NAME = "accelerate"


def accelerate_config(setup: TrainingSetup) -> dict[str, Any]:
    job, lay = setup.job, setup.layout
    require(NAME, setup, tp=False, pp=False, cp=False, ep=False, qlora=True)
    if lay.zero == 1:
        raise unsupported(NAME, "ZeRO-1 (optimizer-state sharding only)", "use --zero 2 or 3 (FSDP), or DeepSpeed")
    if job.precision == "fp8" and job.fp8_recipe in MEGATRON_ONLY_RECIPES:
        raise unsupported(NAME, f"--fp8-recipe {job.fp8_recipe}",
                          f"its fp8 mixed precision has no {job.fp8_recipe} recipe; --framework megatron runs it")
    if job.offload == "optimizer":
        raise unsupported(NAME, "optimizer-only offload", "FSDP offloads parameters too: use --offload all")
    if job.offload == "all" and lay.zero < 2:
        raise unsupported(NAME, "offload without FSDP", "use --zero 3")
    if job.recompute in ("selective", "op"):
        raise unsupported(NAME, f"{job.recompute} recompute", "use --recompute full (activation checkpointing)")
    nodes, _ = nodes_of(setup)
    mixed = {"bf16-mixed": "bf16", "fp16-mixed": "fp16", "fp8": "fp8", "fp32": "no", "bf16-true": "no"}[job.precision]
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE", "debug": False,
        "distributed_type": "FSDP" if lay.zero >= 2 else ("MULTI_GPU" if lay.num_gpus > 1 else "NO"),
        "downcast_bf16": "no", "machine_rank": 0, "main_training_function": "main", "mixed_precision": mixed,
        "num_machines": nodes, "num_processes": lay.num_gpus, "rdzv_backend": "static", "same_network": True,
        "use_cpu": False,
    }
    if nodes > 1:
        config.update({"main_process_ip": "MASTER_ADDR", "main_process_port": 29500})
    if lay.zero >= 2:
        config["fsdp_config"] = {
            "fsdp_version": 2, "fsdp_reshard_after_forward": lay.zero == 3,
            "fsdp_offload_params": job.offload == "all", "fsdp_activation_checkpointing": job.recompute == "full",
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        }
    return config


def export_accelerate(setup: TrainingSetup) -> Exported:
    config = accelerate_config(setup)
    job = setup.job
    command = "accelerate launch --config_file accelerate_config.yaml train.py"
    notes = [f"per-process micro-batch {job.micro_batch}, sequence {job.seq_len}: set them in train.py's DataLoader"]
    if job.optimizer != "adamw":
        notes.append(f"optimizer {job.optimizer}: build it in train.py (accelerate's config does not name one)")
    if job.precision == "bf16-true":
        notes.append("bf16-true: load the model with torch_dtype=torch.bfloat16 (mixed_precision stays 'no')")
    if job.is_peft:
        notes.append(f"LoRA: wrap the model with peft.get_peft_model (r={job.lora_rank}, "
                     f"targets {','.join(job.lora_targets)}) in train.py")
    if job.recompute == "full" and setup.layout.zero < 2:
        notes.append("recompute: call model.gradient_checkpointing_enable() in train.py")
    text = yaml.safe_dump(config, sort_keys=False)
    return Exported(framework="accelerate", files={"accelerate_config.yaml": text}, command=command, notes=notes,
                    values=config)
