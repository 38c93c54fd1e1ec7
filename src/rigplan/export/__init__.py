"""A resolved training setup written as a framework's own launch configuration.

common.py      what every exporter shares: the Exported value, batch arithmetic, the Unsupported error
megatron.py    Megatron-LM / NeMo-style arguments: a torchrun command line for pretrain_gpt.py
torchtitan.py  a torchtitan job TOML (torchtitan 0.2.x job files)
deepspeed.py   a DeepSpeed JSON config and its `deepspeed` launcher line
accelerate.py  an accelerate config YAML (FSDP or DDP) and its `accelerate launch` line
hf_trainer.py  Hugging Face TrainingArguments keyword arguments (JSON), with the PEFT LoRA settings

A layout the framework cannot express raises Unsupported naming the missing feature; nothing is
silently changed. The frameworks themselves are not imported (the tests check the files with them).

May import: flow, estimate, domain, units, errors.
"""

from __future__ import annotations

from collections.abc import Callable

from rigplan.export.accelerate import export_accelerate
from rigplan.export.common import Exported, Unsupported
from rigplan.export.deepspeed import export_deepspeed
from rigplan.export.hf_trainer import export_hf_trainer
from rigplan.export.megatron import export_megatron
from rigplan.export.torchtitan import export_torchtitan
from rigplan.flow.resolve import TrainingSetup

EXPORTERS: dict[str, Callable[[TrainingSetup], Exported]] = {
    "megatron": export_megatron, "torchtitan": export_torchtitan, "deepspeed": export_deepspeed,
    "accelerate": export_accelerate, "hf-trainer": export_hf_trainer,
}
FRAMEWORKS = tuple(EXPORTERS)

__all__ = ["EXPORTERS", "FRAMEWORKS", "Exported", "Unsupported", "export"]


def export(setup: TrainingSetup, framework: str) -> Exported:
    """The setup as `framework`'s configuration; Unsupported when the framework cannot express it."""
    if framework not in EXPORTERS:
        raise Unsupported(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")
    return EXPORTERS[framework](setup)
