"""A Megatron-LM launch command read as request fields: the layout, batch, precision, recompute, MoE and overlap
flags of `pretrain_gpt.py` (megatron/training/arguments.py), and torchrun's node and process counts.

The command may span lines with trailing backslashes and carry comments, environment assignments and other
programs' flags: every token that is not one of the flags below is left alone, and the notes list the Megatron flags
read but not used. A value that is not a literal (a shell variable such as $TP) is skipped with a note. The model
itself comes from MODEL: of Megatron's shape flags only --num-layers (a shortened proxy of a model) and
--mtp-num-layers are applied, as the --layers and --mtp-layers overrides. Absent flags keep Megatron's defaults,
which the megatron framework preset sets (flow.framework); the preset is chosen unless the request names one.
`rigplan export --framework megatron` writes these flags, so an exported job reads back as the same request.

May import: domain.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from rigplan.bounds import check
from rigplan.errors import InvalidSpec

Setter = Callable[[dict[str, Any], str], None]


def _int(name: str) -> Setter:
    def put(fields: dict[str, Any], value: str) -> None:
        fields[name] = int(value)
    return put


def _float(name: str) -> Setter:
    def put(fields: dict[str, Any], value: str) -> None:
        fields[name] = float(value)
    return put


def _text(name: str, allowed: dict[str, Any] | None = None) -> Setter:
    def put(fields: dict[str, Any], value: str) -> None:
        if allowed is not None and value not in allowed:
            raise ValueError(value)
        fields[name] = value if allowed is None else allowed[value]
    return put


VALUED: dict[str, Setter] = {
    "tensor-model-parallel-size": _int("tp"), "pipeline-model-parallel-size": _int("pp"),
    "num-virtual-stages-per-pipeline-rank": _int("vpp"), "context-parallel-size": _int("cp"),
    "expert-model-parallel-size": _int("ep"), "expert-tensor-parallel-size": _int("etp"),
    "micro-batch-size": _int("micro_batch"), "global-batch-size": _int("global_batch"), "seq-length": _int("seq"),
    "decoder-first-pipeline-num-layers": _int("first_stage_layers"),
    "decoder-last-pipeline-num-layers": _int("last_stage_layers"),
    "pipeline-model-parallel-layout": _text("pipeline_layout"),
    "recompute-num-layers": _int("recompute_num_layers"),
    "recompute-method": _text("recompute_method", {"uniform": "uniform", "block": "block"}),
    "recompute-granularity": _text("recompute", {"full": "full", "selective": "selective"}),
    "moe-expert-capacity-factor": _float("capacity_factor"),
    "cp-comm-type": _text("cp_comm_type", {"p2p": "p2p", "a2a": "a2a"}),
    "fp8-recipe": _text("fp8_recipe", {"delayed": "delayed", "tensorwise": "current", "mxfp8": "mxfp8",
                                       "blockwise": "blockwise"}),
    "optimizer": _text("optimizer", {"adam": "adamw", "sgd": "sgd", "muon": "muon", "dist_muon": "muon"}),
    "num-layers": _int("layers"), "mtp-num-layers": _int("mtp_layers"),
    "hybrid-override-pattern": _text("_hybrid_pattern"),
    "num-layers-per-virtual-pipeline-stage": _int("_layers_per_virtual_stage"),
    "fp8-format": _text("_fp8_format"), "fp4-format": _text("_fp4_format"), "fp4-recipe": _text("_fp4_recipe"),
    "moe-token-dispatcher-type": _text("_dispatcher"), "moe-flex-dispatcher-backend": _text("_flex_backend"),
    "attention-dropout": _float("_attention_dropout"), "hidden-dropout": _float("_hidden_dropout"),
    "cuda-graph-impl": _text("_graph_impl"), "exp-avg-dtype": _text("_exp_avg_dtype"),
    "attention-backend": _text("_attention_backend"),
    "train-iters": _int("_train_iters"), "train-samples": _int("_train_samples"),
    "nnodes": _int("_nnodes"), "nproc-per-node": _int("_nproc_per_node"), "nproc_per_node": _int("_nproc_per_node"),
}
"""Flags that take one value, and the field (or, with a leading underscore, the intermediate) each sets."""

SWITCHES: dict[str, dict[str, Any]] = {
    "sequence-parallel": {"sequence_parallel": True}, "use-distributed-optimizer": {"zero": 1},
    "use-torch-fsdp2": {"zero": 3}, "use-megatron-fsdp": {"zero": 3}, "bf16": {"_bf16": True},
    "fp16": {"_fp16": True}, "fp8-param-gather": {"fp8_param_gather": True},
    "fp8-dot-product-attention": {"fp8_attention": True},
    "moe-router-force-load-balancing": {"balanced_routing": True},
    "moe-pad-expert-input-to-capacity": {"moe_pad_to_capacity": True},
    "overlap-moe-expert-parallel-comm": {"a2a_overlap": True}, "overlap-grad-reduce": {"overlap_grad_reduce": True},
    "overlap-param-gather": {"overlap_param_gather": True}, "tp-comm-overlap": {"tp_comm_overlap": True},
    "account-for-embedding-in-pipeline-split": {"embedding_layer_weight": 1},
    "account-for-loss-in-pipeline-split": {"head_layer_weight": 1},
    "recompute-activations": {"recompute": "selective"}, "moe-enable-deepep": {"_flex_backend": "deepep"},
    "optimizer-cpu-offload": {"offload": "optimizer"}, "use-precision-aware-optimizer": {"_precision_aware": True},
    "enable-cuda-graph": {"_graph_impl": "local"}, "external-cuda-graph": {"_graph_impl": "transformer_engine"},
}
"""Flags without a value, and what each sets."""

LISTS = {"recompute-modules", "cuda-graph-scope"}
"""Flags that take the values up to the next flag."""

RECOMPUTE_MODULES = {"moe_act": "recompute_moe_act", "layernorm": "recompute_layernorm",
                     "mla_up_proj": "recompute_mla_up_proj", "mlp": "recompute_mlp", "moe": "recompute_moe"}
"""Megatron-Core's --recompute-modules with their rigplan switch (core_attn, the default, is --recompute selective)."""
GRAPH_SCOPES = ("attn", "mamba", "moe_router", "moe_preprocess")
"""The per-module CUDA graph scopes rigplan times (Job.cuda_graph_scope)."""
SHAPE_FLAGS = frozenset({"hidden-size", "ffn-hidden-size", "num-attention-heads", "num-query-groups", "kv-channels",
                         "num-experts", "moe-router-topk", "moe-ffn-hidden-size", "moe-shared-expert-intermediate-size",
                         "moe-layer-freq", "vocab-size", "max-position-embeddings", "q-lora-rank", "kv-lora-rank",
                         "moe-latent-size", "moe-router-num-groups", "moe-router-group-topk", "mamba-num-heads",
                         "mamba-head-dim", "mamba-state-dim",
                         "mamba-num-groups"})
"""Model shape flags: the model is MODEL's, so these are named in the notes, not applied."""


DEFAULT_DISPATCHER_NOTE = ("no --moe-token-dispatcher-type: Megatron-LM's default, allgather (arguments.py), timed: "
                           "every token gathered over the expert tensor x expert parallel group; Megatron recommends "
                           "--moe-token-dispatcher-type alltoall with expert parallelism")
"""A MoE launch without the dispatcher flag runs Megatron-LM's MoEAllGatherTokenDispatcher (moe_dispatcher
'allgather'); with tp and ep both 1 it has nothing to gather and no note is made."""


SPLIT_FIELDS = frozenset({"stage_layers", "pipeline_layout", "first_stage_layers", "last_stage_layers",
                          "embedding_layer_weight", "head_layer_weight"})
"""The ways to split the pipeline: one the request sets replaces all that a file gives (rigplan takes one way)."""


@dataclass(frozen=True)
class ImportedArgs:
    """Request fields read from a framework's job file (a Megatron-LM launch command here, a torchtitan job TOML in
    flow.torchtitan_config), and what the reading assumed or skipped."""

    fields: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def merged_into(self, given: Collection[str], accepted: Collection[str],
                    flag: str) -> tuple[dict[str, Any], list[str]]:
        """(fields to set, notes) for a request that set `given` itself and takes the fields `accepted`: the file's
        fields that the request did not set (a pipeline split it set replaces the file's whole split, rigplan taking
        one way), and the reading's notes with one more for each field the request does not take."""
        fields = self.fields
        if set(given) & SPLIT_FIELDS:
            fields = {name: value for name, value in fields.items() if name not in SPLIT_FIELDS}
        notes = list(self.notes)
        notes += [f"{name} from {flag}: not an option of this command, not used" for name in fields
                  if name not in accepted]
        return {name: value for name, value in fields.items() if name in accepted and name not in given}, notes


def token_count(count: int, what: str) -> float:
    """A job file's token count (steps x batch x sequence) as a float, held to --tokens' bound (bounds 'tokens'); a
    count of hundreds of digits, which no float holds, is out of it too."""
    return float(check("tokens", float(count) if count < 1e300 else math.inf, label=what))


def _tokens(text: str, source: str) -> list[str]:
    try:
        return shlex.split(text.replace("\\\r\n", " ").replace("\\\n", " "), comments=True, posix=True)
    except ValueError as err:
        raise InvalidSpec(f"{source}: cannot split it into shell words ({err}); give a launch command or its "
                          "flags, one per line or on one line") from None


def _scan(tokens: list[str]) -> tuple[dict[str, Any], dict[str, list[str]], list[str], set[str]]:
    """(values set, list flags, notes, unused Megatron-looking flags) of the command's tokens."""
    raw: dict[str, Any] = {}
    lists: dict[str, list[str]] = {}
    notes: list[str] = []
    unused: set[str] = set()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--") or len(token) == 2:
            continue
        name, has_value, inline = token[2:].partition("=")
        if name in LISTS:
            values = [inline] if has_value else []
            while not has_value and i < len(tokens) and not tokens[i].startswith("--"):
                values.append(tokens[i])
                i += 1
            lists[name] = [v for value in values for v in value.replace(",", " ").split()]
        elif name in VALUED:
            if has_value:
                value = inline
            elif i < len(tokens) and not tokens[i].startswith("--"):
                value, i = tokens[i], i + 1
            else:
                notes.append(f"--{name} has no value: skipped")
                continue
            try:
                VALUED[name](raw, value)
            except ValueError:
                notes.append(f"--{name} {value}: not a value rigplan reads (a shell variable?): skipped")
        elif name in SWITCHES:
            raw.update(SWITCHES[name])
        elif name in SHAPE_FLAGS:
            unused.add(name)
    return raw, lists, notes, unused


def read_megatron_args(text: str, source: str = "--megatron-args") -> ImportedArgs:
    """The request fields of a Megatron-LM launch command (module docstring); InvalidSpec when it holds no
    Megatron flag rigplan reads."""
    raw, lists, notes, shape = _scan(_tokens(text, source))
    if not raw and not lists:
        raise InvalidSpec(f"{source}: no Megatron-LM flag rigplan reads (--tensor-model-parallel-size, "
                          "--micro-batch-size, --bf16, ...); give the arguments of pretrain_gpt.py")
    fields = {k: v for k, v in raw.items() if not k.startswith("_")}
    fields.setdefault("framework", "megatron")
    _precision(raw, fields)
    _pipeline(raw, fields, notes)
    _recompute_and_graphs(raw, lists, fields, notes)
    _moe_and_optimizer(raw, fields, notes)
    if "num-experts" in shape and "_dispatcher" not in raw and "_flex_backend" not in raw and not fields.get(
            "a2a_overlap"):
        fields["moe_dispatcher"] = "allgather"
        if fields.get("tp", 1) > 1 or fields.get("ep", 1) > 1:
            notes.append(DEFAULT_DISPATCHER_NOTE)
    _size_and_length(raw, fields, notes)
    if raw.get("_hybrid_pattern") and "layers" in fields:  # pretrain_mamba.py counts blocks, rigplan layers
        notes.append(f"--num-layers {fields.pop('layers')} counts the blocks of --hybrid-override-pattern (a Mamba "
                     "hybrid), not rigplan's layers (a mixer and its feed-forward block): not applied, the model is "
                     "MODEL's")
    if shape:
        notes.append("model shape flags (" + ", ".join(f"--{s}" for s in sorted(shape)) + ") not applied: the "
                     "model is MODEL's")
    return ImportedArgs(fields=fields, notes=[f"from {source}: {note}" for note in notes])


def _precision(raw: dict[str, Any], fields: dict[str, Any]) -> None:
    if raw.get("_fp4_format") or raw.get("_fp4_recipe"):
        fields.update(precision="fp8", fp8_recipe="nvfp4")
    elif raw.get("_fp8_format"):
        fields["precision"] = "fp8"
    elif raw.get("_bf16"):
        fields["precision"] = "bf16-mixed"
    elif raw.get("_fp16"):
        fields["precision"] = "fp16-mixed"
    if fields.get("precision") != "fp8":
        fields.pop("fp8_recipe", None)


def _pipeline(raw: dict[str, Any], fields: dict[str, Any], notes: list[str]) -> None:
    per_stage = raw.get("_layers_per_virtual_stage")
    if per_stage:
        layers, pp = raw.get("layers"), fields.get("pp", 1)
        if layers and pp * per_stage > 0 and layers % (pp * per_stage) == 0:
            fields["vpp"] = layers // (pp * per_stage)
        else:
            notes.append(f"--num-layers-per-virtual-pipeline-stage {per_stage} without --num-layers that "
                         f"{pp} x {per_stage} divides: vpp not set (give --vpp)")


def _recompute_and_graphs(raw: dict[str, Any], lists: dict[str, list[str]], fields: dict[str, Any],
                          notes: list[str]) -> None:
    modules = lists.get("recompute-modules")
    if modules is not None and fields.get("recompute") == "selective":
        if "core_attn" not in modules:
            fields["recompute"] = "none"
        for module in modules:
            if module in RECOMPUTE_MODULES:
                fields[RECOMPUTE_MODULES[module]] = True
            elif module != "core_attn":
                notes.append(f"--recompute-modules {module}: not modelled, not recomputed in the estimate")
    scopes = lists.get("cuda-graph-scope", [])
    impl = raw.get("_graph_impl")
    if impl == "local" and (not scopes or "full_iteration" in scopes):
        fields["cuda_graphs"] = "full" if "full_iteration" in scopes else "none"
        if not scopes:
            notes.append("per-layer CUDA graphs (--enable-cuda-graph or --cuda-graph-impl local without a "
                         "scope): not modelled, estimated eager")
    elif impl in ("local", "transformer_engine") and scopes:
        fields["cuda_graph_scope"] = [s for s in scopes if s in GRAPH_SCOPES]
        other = [s for s in scopes if s not in GRAPH_SCOPES]
        if other:
            notes.append(f"CUDA graph scopes {', '.join(other)}: not modelled (rigplan times attn, mamba, moe_router "
                         "and moe_preprocess)")
    dropouts = [raw[k] for k in ("_attention_dropout", "_hidden_dropout") if k in raw]
    if dropouts:
        fields["dropout"] = any(p > 0 for p in dropouts)


def _moe_and_optimizer(raw: dict[str, Any], fields: dict[str, Any], notes: list[str]) -> None:
    kind, backend = raw.get("_dispatcher"), raw.get("_flex_backend")
    if backend in ("deepep", "hybridep") and kind in (None, "flex"):
        fields["moe_dispatcher"] = backend
    elif kind == "flex":
        fields["moe_dispatcher"] = "deepep"
        notes.append("--moe-token-dispatcher-type flex without a backend: DeepEP, Megatron-Core's default")
    elif kind in ("alltoall", "allgather"):
        fields["moe_dispatcher"] = kind
    elif kind is not None:
        notes.append(f"--moe-token-dispatcher-type {kind}: not modelled, estimated with the all-to-all dispatcher")
    if raw.get("_precision_aware") and raw.get("_exp_avg_dtype") in ("bf16", "torch.bfloat16"):
        fields["bf16_moments"] = True
    backend_name = raw.get("_attention_backend")
    if backend_name == "fused":
        fields["attention_kernel"] = "cudnn"
    elif backend_name in ("unfused", "local"):
        fields["attention"] = "eager"


def _size_and_length(raw: dict[str, Any], fields: dict[str, Any], notes: list[str]) -> None:
    nodes, per_node = raw.get("_nnodes"), raw.get("_nproc_per_node")
    if nodes and per_node:
        fields["gpus"] = nodes * per_node
        notes.append(f"gpus {nodes * per_node} from torchrun's --nnodes {nodes} x --nproc-per-node {per_node}")
    seq, batch = fields.get("seq"), fields.get("global_batch")
    if raw.get("_train_iters") and seq and batch:
        fields["tokens"] = token_count(raw["_train_iters"] * batch * seq, "--train-iters")
    elif raw.get("_train_samples") and seq:
        fields["tokens"] = token_count(raw["_train_samples"] * seq, "--train-samples")
