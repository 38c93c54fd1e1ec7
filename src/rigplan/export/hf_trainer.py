"""Hugging Face TrainingArguments keyword arguments (JSON), with the model dtype, PEFT and 4-bit settings.

`TrainingArguments(**file["training_arguments"])` builds the trainer's arguments; `peft` holds
peft.LoraConfig's arguments (target_parameters for an MoE's routed experts, which transformers 5 holds as 3-D
parameters) and `quantization` transformers.BitsAndBytesConfig's for QLoRA. FSDP goes
through TrainingArguments' fsdp=True and fsdp_config (FSDP2; reshard_after_forward true = ZeRO-3,
false = ZeRO-2), the form of transformers 5.
Optimizer names are TrainingArguments' `optim` values (transformers.training_args.OptimizerNames).
Not expressible here: tensor / pipeline / context / expert parallelism, ZeRO-1 (pass a DeepSpeed
config: `rigplan export ... --framework deepspeed`), optimizer-only offload, selective/per-op recompute.
"""

from __future__ import annotations

import json
from typing import Any

from rigplan.estimate import linear_attention
from rigplan.estimate.params import attention_linears, dense_mlp_linears
from rigplan.estimate.peft_experts import PEFT_MLP_NAME_REWRITE_FAMILIES
from rigplan.export.common import MEGATRON_ONLY_RECIPES, Exported, batch_of, require, torchrun_prefix, unsupported
from rigplan.flow.resolve import TrainingSetup

NAME = "Hugging Face Trainer"
OPTIM = {"adamw": "adamw_torch_fused", "adamw-8bit": "adamw_bnb_8bit", "paged-adamw": "paged_adamw_32bit",
         "paged-adamw-8bit": "paged_adamw_8bit", "sgd": "sgd", "sgd-momentum": "sgd", "adafactor": "adafactor"}
PEFT_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
              "down": "down_proj"}


def target_modules(setup: TrainingSetup) -> list[str]:
    """peft target_modules for the job's LoRA targets, as transformers names the modules (peft matches them by name
    suffix): the attention linears params.attention_linears lists (under MLA q_a_proj and q_b_proj or q_proj for 'q',
    kv_a_proj_with_mqa and kv_b_proj for 'k' or 'v'), the MLP's gate_proj, up_proj and down_proj, Phi-3's fused
    qkv_proj and gate_up_proj (fused_projections), and a hybrid's linear-attention mixers: in_proj as its input
    projection modules (Qwen3.5 in_proj_qkv, in_proj_z, in_proj_b and in_proj_a; Qwen3-Next in_proj_qkvz and
    in_proj_ba; Mamba-2 in_proj), out_proj as out_proj but on Mamba-2, where peft refuses it
    (mamba_out_proj_left_out); Kimi Delta Attention's q_proj, k_proj, v_proj and o_proj for q, k, v and o. No MLP
    module names on a model type whose MLP names peft rewrites onto the routed experts (mlp_names_rewritten): the
    experts' parameters are named instead (expert_parameters)."""
    arch, job = setup.arch, setup.job
    targets = set(job.lora_targets)
    mlp = targets - {"gate", "up", "down"} if mlp_names_rewritten(setup) else targets
    names = [lin.module for lin in attention_linears(arch) if set(lin.targets) & targets]
    names += [lin.module for lin in dense_mlp_linears(arch) if set(lin.targets) & mlp]
    if arch.moe is not None and not arch.ffn:  # no dense MLP: the shared experts' modules carry the MLP names
        names += [PEFT_NAMES[t] for t in ("gate", "up", "down") if t in mlp and PEFT_NAMES[t] not in names]
    if arch.linear_attention is not None:  # the mixers' modules the other layers have not named already
        refused = {"out_proj"} if arch.has_mamba2 else set()
        names += [lin.module for lin in linear_attention.mixer_linears(arch, transformers_modules=True)
                  if set(lin.targets) & targets and lin.module not in names and lin.module not in refused]
    return names


def mlp_names_rewritten(setup: TrainingSetup) -> bool:
    """Whether the job's MLP targets fall on a transformers 5 MoE whose gate_proj, up_proj and down_proj names peft
    would rewrite onto the routed experts (peft_experts.PEFT_MLP_NAME_REWRITE_FAMILIES): doubling gate_up_proj's rank
    and leaving the dense MLPs and shared experts without adapters."""
    arch, job = setup.arch, setup.job
    return (job.is_peft and arch.moe is not None and job.experts_implementation != "eager"
            and arch.family in PEFT_MLP_NAME_REWRITE_FAMILIES and bool({"gate", "up", "down"} & set(job.lora_targets)))


def mamba_out_proj_left_out(setup: TrainingSetup) -> bool:
    """Whether the job targets a Mamba-2 mixer's out_proj, which target_modules leaves out (peft refuses it)."""
    la = setup.arch.linear_attention
    return setup.job.is_peft and la is not None and la.kind == "mamba2" and "out_proj" in setup.job.lora_targets


def expert_parameters(setup: TrainingSetup) -> list[str]:
    """peft target_parameters for the routed experts' LoRA on transformers 5, which holds each MoE layer's experts as
    3-D parameters that target_modules cannot reach (estimate.peft_experts): the fused gate_up_proj (up_proj for
    ungated experts) when gate or up is targeted, down_proj when down is; peft matches them by name suffix. None
    under --experts-implementation eager, which rigplan takes as transformers 4's per-expert nn.Linear modules."""
    arch, job = setup.arch, setup.job
    if arch.moe is None or job.experts_implementation == "eager":
        return []
    fc1 = "experts.gate_up_proj" if arch.mlp == "gated" else "experts.up_proj"
    return ([fc1] if {"gate", "up"} & set(job.lora_targets) else []) + (
        ["experts.down_proj"] if "down" in job.lora_targets else [])


def hf_training_file(setup: TrainingSetup) -> dict[str, Any]:
    job, lay = setup.job, setup.layout
    require(NAME, setup, tp=False, pp=False, cp=False, ep=False, qlora=True)
    if lay.zero == 1:
        raise unsupported(NAME, "ZeRO-1 through TrainingArguments' FSDP",
                          "export a DeepSpeed config (--framework deepspeed) and pass deepspeed=ds_config.json")
    if job.offload == "optimizer":
        raise unsupported(NAME, "optimizer-only offload", "FSDP offload moves parameters too: use --offload all")
    if job.optimizer not in OPTIM:
        raise unsupported(NAME, f"the {job.optimizer} optimizer in TrainingArguments",
                          "pass it to the Trainer as optimizers=(...) in code, or use adamw")
    if job.offload == "all" and lay.zero < 2:
        raise unsupported(NAME, "offload without FSDP", "use --zero 3")
    if job.recompute in ("selective", "op"):
        raise unsupported(NAME, f"{job.recompute} recompute", "use --recompute full (gradient_checkpointing)")
    if job.precision == "fp8" and job.fp8_recipe in MEGATRON_ONLY_RECIPES:
        raise unsupported(NAME, f"--fp8-recipe {job.fp8_recipe}", "--framework megatron runs it")
    if job.precision == "fp8":
        raise unsupported(NAME, "fp8 training in TrainingArguments", "use accelerate's fp8 mixed precision")
    b = batch_of(setup)
    args: dict[str, Any] = {
        "output_dir": "outputs", "per_device_train_batch_size": b.micro_batch,
        "gradient_accumulation_steps": b.accumulation, "bf16": job.precision in ("bf16-mixed", "bf16-true"),
        "fp16": job.precision == "fp16-mixed", "gradient_checkpointing": job.recompute == "full" and lay.zero < 2,
        "optim": OPTIM[job.optimizer], "max_grad_norm": 1.0, "learning_rate": 2e-4 if job.is_peft else 3e-4,
        "report_to": "none",
    }
    if lay.zero >= 2:
        # FSDP2; reshard_after_forward false keeps parameters gathered until backward (ZeRO-2); FSDP's own
        # activation checkpointing, as TrainingArguments' docs advise under FSDP.
        args["fsdp"] = True
        args["fsdp_config"] = {"version": 2, "reshard_after_forward": lay.zero == 3,
                               "cpu_offload": job.offload == "all",
                               "activation_checkpointing": job.recompute == "full",
                               "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "state_dict_type": "SHARDED_STATE_DICT"}
    data: dict[str, Any] = {"training_arguments": args,
                            "model": {"torch_dtype": "float32" if job.precision == "fp32" or
                                      job.precision.endswith("-mixed") else "bfloat16",
                                      "attn_implementation": "sdpa" if job.attention == "flash" else "eager"},
                            "sequence_length": job.seq_len, "world_size": lay.num_gpus,
                            "peft": None, "quantization": None}
    if job.is_peft:
        data["peft"] = {"r": job.lora_rank, "lora_alpha": 2 * job.lora_rank, "lora_dropout": 0.0,
                        "target_modules": target_modules(setup), "task_type": "CAUSAL_LM"}
        if wrapped := expert_parameters(setup):
            data["peft"]["target_parameters"] = wrapped
    if job.method == "qlora":
        data["quantization"] = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                                "bnb_4bit_use_double_quant": job.qlora_double_quant,
                                "bnb_4bit_compute_dtype": "bfloat16"}
    return data


def export_hf_trainer(setup: TrainingSetup) -> Exported:
    data = hf_training_file(setup)
    command = f"{torchrun_prefix(setup)} train.py --config hf_training.json"
    notes = ["train.py: TrainingArguments(**cfg['training_arguments']); the model with cfg['model'] "
             "(from_pretrained(..., **cfg['model'])); peft.LoraConfig(**cfg['peft']) when set; "
             "BitsAndBytesConfig(**cfg['quantization']) for QLoRA"]
    if setup.job.method == "qlora" and setup.arch.moe is not None and setup.job.experts_implementation != "eager":
        notes.append("transformers 5 holds the routed experts as 3-D parameters, which BitsAndBytesConfig leaves "
                     "unquantized (bitsandbytes issue #1849) and prepare_model_for_kbit_training casts to fp32: "
                     "`rigplan memory ... --framework hf` counts them so")
    if mlp_names_rewritten(setup):
        notes.append("target_modules names no MLP module: on this model type peft 0.21 rewrites gate_proj, up_proj "
                     "and down_proj onto the routed experts (doubling gate_up_proj's rank) and drops them, so the "
                     "dense-layer MLPs and shared experts take no adapter (peft issue #3711); target_parameters names "
                     "the experts at the rank given, and rigplan counts no adapter on those MLPs")
    if mamba_out_proj_left_out(setup):
        notes.append("target_modules leaves out_proj out: peft refuses LoRA on a Mamba model's out_proj, whose "
                     "weight transformers' fused scan kernel reads directly (`--framework hf` estimates it so)")
    return Exported(framework="hf-trainer", files={"hf_training.json": json.dumps(data, indent=2) + "\n"},
                    command=command, notes=notes, values=data)
