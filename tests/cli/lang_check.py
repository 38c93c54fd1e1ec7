"""Find English words left in Chinese output: what may stay English (numbers, units, flag names, option
values, acronyms, model/GPU/server/provider names, sources) is removed first, the rest must be Chinese."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

SRC = Path(__file__).resolve().parents[2] / "src" / "rigplan"
NAME_KEYS = {"name", "source", "vendor", "provider", "model", "family", "title", "chassis", "cpu", "topology",
             "pricing", "product", "label_en", "region", "text"}
"""Keys whose values are names or quoted record text ('text': a build's claims, as the record quotes them)."""

_STAY_ENGLISH_WORDS = """
GiB MiB KiB TiB GB TB MB kB kWh MWh kW W ms min days day h s us TFLOP PFLOP FLOP tokens
adamw sgd adafactor lora qlora full none selective op flash eager uniform block fused unfused chunked hf
gated plain rope learned alibi sharded bitsandbytes torchao optimizer all cloud onprem both spot
megatron torchtitan deepspeed accelerate torchrun torch pip rigplan json yaml csv png svg md
usd cny nvlink pcie infiniband ethernet roce nvswitch sxm oam softmax sigmoid daly young ceph nfs
rigplan nvaie tp pp dp cp ep etp vpp zero cuBLAS cuDNN NVLink PCIe InfiniBand NVSwitch NVMe EPYC Xeon
fp fp8 bf16 fp16 fp32 nf4 int8 x MoE MLA GQA MQA MHA RoPE ZeRO FSDP DDP Megatron TorchTitan DeepSpeed Hugging
Face config Llama Mistral Mixtral Qwen DeepSeek Gemma Phi Falcon GPT Adam AdamW NVIDIA AMD Intel
token schema experts heads layers hidden installed required tolerance expect oom suite
matplotlib web plot rank memory estimate plan compare tco servers lint serve validate models gpus probe check
calibrate export autocast logits peft torchtune true false id ids runs install nan inf null Ctrl Young Daly Meta
Chinchilla http https localhost hccs ici mtlink blink mlu Gold Platinum Threadripper PRO Xeon nvme hdd sata ssd
nemo NeMo unsloth Unsloth fsdp PyTorch DTensor Trainer TrainingArguments DeepEP HybridEP DualPipe NCCL flex
Transformer Engine TransformerEngine Blackwell Hopper Ampere Ada CDNA delayed current mxfp8 nvfp4 NVFP4 Muon muon adam
Mamba mamba Nemotron transformers
"""
STAY_ENGLISH = frozenset(_STAY_ENGLISH_WORDS.split())
"""Units, option values as typed, library, framework, vendor and format names."""


@functools.cache
def data_names() -> tuple[str, ...]:
    """Names that catalog records and server builds carry (longest first): they stay as written."""
    found: set[str] = set()

    def walk(value: object, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and (key in NAME_KEYS or key.endswith("_name")) and len(value) < 200:
            found.add(value.strip())

    for path in [*SRC.glob("catalog/data/**/*.yaml"), *SRC.glob("servers/data/**/*.yaml")]:
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return tuple(sorted(found, key=len, reverse=True))


@functools.cache
def option_values() -> frozenset[str]:
    """Every value a choice option of a command takes (`--attention-kernel cudnn`, `--pricing spot`)."""
    import click

    from rigplan.cli.main import COMMANDS, cli

    words: set[str] = set()
    with click.Context(cli) as ctx:
        for name in COMMANDS:
            command = cli.get_command(ctx, name)
            commands = [*getattr(command, "commands", {}).values(), command]
            for cmd in commands:
                for param in getattr(cmd, "params", []):
                    if isinstance(param.type, click.Choice):
                        words.update(str(c) for c in param.type.choices if re.fullmatch(r"[A-Za-z]+", str(c)))
    return frozenset(words - PROSE_WORDS)


PROSE_WORDS = {"memory", "user", "current", "standard", "purchase", "throughput", "article", "corrected"}
"""Choice values that are also plain English words: in a sentence they are translated."""


PRODUCTS = ("AWS Capacity Blocks", "AWS Spot Advisor", "NVIDIA AI Enterprise", "Hugging Face", "Spot Advisor",
            "CBRE North America Data Center Trends", "Federal Reserve", "CTWatch Quarterly", "Roskies & Zacharia",
            "BLS Employer Costs for Employee Compensation", "EIA Electric Power Monthly", "Uptime Institute",
            "Equinix", "hardware-facts", "Part C", "Secure Cloud", "seed article", "Infinity Fabric")
"""Product and document names that the Chinese text cites as they are."""


@functools.cache
def names_pattern() -> re.Pattern[str]:
    names = sorted({*data_names(), *PRODUCTS}, key=len, reverse=True)
    return re.compile("|".join(rf"(?<![\w-]){re.escape(name)}(?![\w-])" for name in names if name))


IDENTIFIER = re.compile(r"[\w.:]*[0-9_./=*+@<>-][\w./=*+@<>:-]*|--?[\w-]+")
WORD = re.compile(r"[A-Za-z][A-Za-z']+")


def english_words(text: str) -> list[str]:
    """The English words of `text` that should have been translated."""
    text = names_pattern().sub(" ", text)
    text = re.sub(r"https?://\S+|<[^>]*>|`[^`]*`|'[^']*'", " ", text)
    text = re.sub(r"[^\x00-\x7f]", " ", text)  # Chinese text, full-width punctuation, table borders
    left = []
    for token in text.split():
        token = token.strip("()[]{},;:.!?\"'|│┃，：；（）、。")
        if not token or IDENTIFIER.fullmatch(token):
            continue
        for word in WORD.findall(token):
            acronym = word.isupper() or re.fullmatch(r"[A-Z]+x[A-Z]+", word)
            if acronym or word in STAY_ENGLISH or word.lower() in STAY_ENGLISH or word in option_values():
                continue
            left.append(word)
    return left
