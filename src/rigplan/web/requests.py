"""HTTP request bodies: rigplan's own request models, plus what only HTTP needs.

`hf_config` carries the content of a Hugging Face config.json: the route writes it to a temporary
file and passes that path as MODEL, exactly as `rigplan memory ./config.json` would read it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rigplan.bounds import Bounded
from rigplan.cost.tco import TcoRequest
from rigplan.errors import InvalidSpec
from rigplan.flow.fields import PEFT_ONLY_FIELDS, peft_only_problem
from rigplan.flow.request import EstimateRequest, JobSpec, MemoryRequest, PlanRequest

HF_CONFIG_DESCRIPTION = (
    "Content of a Hugging Face config.json (a JSON object). When given it is the model, and `model` must be "
    "left out; shape fields still override it."
)


def _split_targets_checked(cls: type[BaseModel], value: object) -> object:
    """JobSpec's lora_targets splitting, for lists of strings only: anything else goes on to pydantic's type
    check (a 422 naming lora_targets) instead of raising inside the splitter."""
    if isinstance(value, list) and not all(isinstance(item, str) for item in value):
        return value
    return JobSpec._split_targets.__func__(cls, value)  # type: ignore[attr-defined]


def refuse_inert_peft_fields(body: BaseModel) -> None:
    """InvalidSpec for a PEFT-only field (flow.fields.PEFT_ONLY_FIELDS) the body gives at a value other than its
    default under a method it does not apply to: `"lora_rank": 64` with `"method": "full"` changed nothing before.
    A body that repeats a default (a client sending a whole dumped request) is taken as it is; the CLI refuses the
    typed option whatever its value (cli.given)."""
    method = getattr(body, "method", None)
    if not isinstance(method, str):
        return
    for field in sorted(PEFT_ONLY_FIELDS.keys() & body.model_fields_set):
        info = type(body).model_fields[field]
        if getattr(body, field) == info.get_default(call_default_factory=True):
            continue
        problem = peft_only_problem(method, field, "--" + field.replace("_", "-"))
        if problem:
            raise InvalidSpec(problem)


class WithHfConfig(BaseModel):
    hf_config: dict[str, Any] | None = Field(None, description=HF_CONFIG_DESCRIPTION)


JOB_FILE_CAP = 60_000
"""Longest job file the HTTP API reads (characters): a Megatron-LM launch script or a torchtitan TOML is a few
thousand."""


class WithJobFile(BaseModel):
    """A framework's own job file as text: its fields fill those the body leaves out (what the CLI's
    --megatron-args and --torchtitan-config read)."""

    megatron_args: str | None = Field(None, max_length=JOB_FILE_CAP, description=(
        "A Megatron-LM launch command or its flags (the text --megatron-args reads): its layout, batch, precision, "
        "recompute, MoE and overlap flags fill the fields the body does not give, with the megatron preset"))
    torchtitan_config: str | None = Field(None, max_length=JOB_FILE_CAP, description=(
        "A torchtitan job TOML (the text --torchtitan-config reads): its parallelism, batch, precision, "
        "activation checkpointing, compile and optimizer fill the fields the body does not give, with the "
        "torchtitan preset"))


class MemoryBody(MemoryRequest, WithHfConfig, WithJobFile):
    """`rigplan memory`: the fields are the command's options (`--kv-heads` is `kv_heads`)."""

    _split_targets = field_validator("lora_targets", mode="before")(_split_targets_checked)


class EstimateBody(EstimateRequest, WithHfConfig, WithJobFile):
    """`rigplan estimate`: the fields are the command's options."""

    _split_targets = field_validator("lora_targets", mode="before")(_split_targets_checked)


class PlanBody(PlanRequest, WithHfConfig):
    """`rigplan plan`: the fields are the command's options (`--gpu` repeated is the list `gpu`)."""

    _split_targets = field_validator("lora_targets", mode="before")(_split_targets_checked)


class CompareBody(PlanRequest, WithHfConfig):
    """`rigplan compare MODEL OPTION...`: the plan fields it takes, plus the COUNTxGPU options."""

    _split_targets = field_validator("lora_targets", mode="before")(_split_targets_checked)

    options: list[str] = Field(..., description="Options to compare, each COUNTxGPU, e.g. 8xa100-80gb-sxm")


class TcoBody(TcoRequest):
    """`rigplan tco`: the fields are the command's options; `scenario: "seed"` is `--scenario seed`."""

    gpu: str | None = Field(None, description="GPU id; default h100-sxm (a100-80gb-sxm with scenario seed)")  # type: ignore[assignment]
    scenario: Literal["seed"] | None = None
    offers_yaml: str | None = Field(None, max_length=60_000,
                                    description="The content of an offers YAML file (what `--offers FILE` reads)")


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: one message, and the request field it is about (null when none is)."""

    detail: str
    field: str | None = None
    errors: list[dict[str, Any]] | None = Field(
        None, description="422 only: every validation problem (loc, msg, type)")


class LintBody(BaseModel):
    """`rigplan lint BUILD [--for MODEL --method --tokens --seq]`: BUILD as an id or as the YAML text of a build."""

    model_config = ConfigDict(extra="forbid")

    build: str | None = Field(None, description="Build id (GET /api/servers); or give build_yaml")
    build_yaml: str | None = Field(None, max_length=60_000, description="The content of a BUILD.yaml")
    for_model: str | None = Field(
        None, description="`--for MODEL`: check this workload (catalog id or a size like 70b) instead of the "
                          "build's own claims")
    method: Literal["full", "lora", "qlora"] | None = Field(None, description="Training method for for_model [full]")
    tokens: str | None = Field(None, description="Training tokens for for_model, e.g. 2T: adds the time to train")
    seq: Annotated[int, Bounded("seq")] | None = Field(None, description="Sequence length for for_model")
    catalog: list[str] = Field(default_factory=list)
