"""A DeepSpeed JSON config and its launcher line.

The JSON holds the batch (train_batch_size = micro-batch x accumulation x data-parallel size), the
precision, the ZeRO stage with offload and bucket sizes, and gradient clipping. DeepSpeed sets
pipeline stages and expert parallelism in the model code (PipelineModule(num_stages=pp),
deepspeed.moe.layer.MoE(ep_size=ep)); those layouts export with a note saying so. DeepSpeed's pipeline
engine supports ZeRO stage 0 and 1 only. Not expressible: tensor parallelism (Megatron-DeepSpeed does
it in model code), context parallelism (DeepSpeed-Ulysses is a different sequence split), QLoRA,
bf16-true below ZeRO-1 (bf16_master_weights_and_grads needs ZeRO), torchtitan per-op recompute.
Bucket sizes: reduce/allgather 5e8 elements, DeepSpeed's defaults (deepspeed/runtime/zero/config.py), or
--grad-bucket-params; stage-3 prefetch 5e7 and persistence threshold 1e5, also its defaults, written out so users
see them.
"""

from __future__ import annotations

import json
from typing import Any

from rigplan.export.common import Exported, batch_of, nodes_of, require, unsupported
from rigplan.flow.resolve import TrainingSetup

NAME = "DeepSpeed"
BUCKET_ELEMENTS = 500_000_000
PREFETCH_ELEMENTS = 50_000_000
PERSISTENCE_THRESHOLD = 100_000


def deepspeed_config(setup: TrainingSetup) -> dict[str, Any]:
    job, lay = setup.job, setup.layout
    require(NAME, setup, tp=False, cp=False, einsum=True)
    if job.precision == "bf16-true" and lay.zero == 0:
        raise unsupported(NAME, "bf16 weights without fp32 master weights (bf16-true) below ZeRO-1",
                          "bf16_master_weights_and_grads needs ZeRO stage 1-3")
    if job.precision == "fp8":
        raise unsupported(NAME, "fp8 training in its JSON config", "fp8 comes from TransformerEngine in model code")
    if job.recompute == "op":
        raise unsupported(NAME, "per-op selective recompute (--recompute op)")
    if lay.pp > 1 and lay.zero >= 2:
        raise unsupported(NAME, f"ZeRO-{lay.zero} with pipeline parallelism", "its pipeline engine takes ZeRO 0 or 1")
    if job.offload == "all" and lay.zero != 3:
        raise unsupported(NAME, "parameter offload below ZeRO-3", "use --zero 3 with --offload all")
    if job.offload == "optimizer" and lay.zero == 0:
        raise unsupported(NAME, "optimizer offload without ZeRO", "use --zero 1, 2 or 3")
    b = batch_of(setup)
    bucket = int(job.grad_bucket_params) if job.grad_bucket_params else BUCKET_ELEMENTS
    zero: dict[str, Any] = {"stage": lay.zero}
    if lay.zero in (1, 2):
        zero.update({"overlap_comm": True, "contiguous_gradients": True, "reduce_scatter": True,
                     "reduce_bucket_size": bucket, "allgather_bucket_size": bucket})
    if lay.zero == 3:
        zero.update({"overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": bucket,
                     "stage3_prefetch_bucket_size": PREFETCH_ELEMENTS,
                     "stage3_param_persistence_threshold": PERSISTENCE_THRESHOLD})
    if job.offload in ("optimizer", "all"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if job.offload == "all":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    optimizer = {"adamw": ("AdamW", {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}),
                 "sgd": ("SGD", {"lr": 1e-2}), "sgd-momentum": ("SGD", {"lr": 1e-2, "momentum": 0.9}),
                 "adamw-8bit": None, "paged-adamw": None, "paged-adamw-8bit": None, "adafactor": None,
                 "muon": None}[job.optimizer]
    if optimizer is None:
        raise unsupported(NAME, f"the {job.optimizer} optimizer in its config",
                          "pass it as a client optimizer in code, or use adamw/sgd")
    config: dict[str, Any] = {
        "train_batch_size": b.global_batch, "train_micro_batch_size_per_gpu": b.micro_batch,
        "gradient_accumulation_steps": b.accumulation, "gradient_clipping": 1.0,
        "bf16": {"enabled": job.precision in ("bf16-mixed", "bf16-true")},
        "fp16": {"enabled": job.precision == "fp16-mixed", "loss_scale": 0, "initial_scale_power": 16},
        "zero_optimization": zero,
        "optimizer": {"type": optimizer[0], "params": optimizer[1]},
        "wall_clock_breakdown": False,
    }
    if job.precision == "bf16-true":
        config["bf16"].update({"bf16_master_weights_and_grads": True, "bf16_optimizer_states": True})
    if job.recompute != "none":
        config["activation_checkpointing"] = {"partition_activations": False, "contiguous_memory_optimization": False,
                                              "cpu_checkpointing": job.activation_offload}
    return config


def export_deepspeed(setup: TrainingSetup) -> Exported:
    config = deepspeed_config(setup)
    nodes, per_node = nodes_of(setup)
    hosts = " --hostfile hostfile" if nodes > 1 else ""
    command = (f"deepspeed --num_nodes {nodes} --num_gpus {per_node}{hosts} train.py "
               "--deepspeed --deepspeed_config ds_config.json")
    lay, job = setup.layout, setup.job
    notes = []
    if lay.pp > 1:
        notes.append(f"pipeline: build the model as deepspeed.pipe.PipelineModule(layers, num_stages={lay.pp}); "
                     f"data-parallel size is then {lay.dp}")
    if setup.arch.moe is not None:
        notes.append(deepspeed_moe_note(setup))
    if job.method == "lora":
        notes.append(f"LoRA adapters come from PEFT in the model code (r={job.lora_rank}, "
                     f"targets {','.join(job.lora_targets)}); DeepSpeed trains the parameters left trainable")
    if job.recompute != "none":
        notes.append("recompute: wrap layers with deepspeed.checkpointing.checkpoint (or the model's "
                     "gradient_checkpointing_enable()) - the JSON section only configures it")
    return Exported(framework="deepspeed", files={"ds_config.json": json.dumps(config, indent=2) + "\n"},
                    command=command, notes=notes, values=config)


def deepspeed_moe_note(setup: TrainingSetup) -> str:
    """Where the experts go: deepspeed.moe.layer.MoE in the model code, whose top-k gate dispatches and combines by
    one-hot einsums into capacity slots (deepspeed/moe/sharded_moe.py: einsum('sec,sm->ecm') and 'sec,ecm->sm';
    capacity ceil(S/E·cf), times 2 for top-2): rigplan's --moe-dispatcher einsum."""
    moe, job = setup.arch.moe, setup.job
    assert moe is not None
    layer = (f"experts: deepspeed.moe.layer.MoE(..., num_experts={moe.num_experts}, ep_size={setup.layout.ep}, "
             f"k={moe.top_k}" + (f", capacity_factor={job.capacity_factor:g}" if job.capacity_factor else "")
             + ") in the model")
    if job.moe_dispatcher == "einsum":
        return layer
    return (layer + "; its gate dispatches by one-hot einsums into capacity slots, which this estimate does not "
            "count: estimate it with --moe-dispatcher einsum --capacity-factor to match")
