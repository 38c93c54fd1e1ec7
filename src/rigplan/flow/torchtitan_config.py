"""A torchtitan job TOML (the file of `--job.config_file`) read as request fields: the parallel degrees, pipeline
schedule and split, batch and length, precision and fp8/MX converters, activation checkpointing, compile and
optimizer of torchtitan's job_config.py (JobConfig: [parallelism], [training], [activation_checkpoint], [compile],
[quantize.*], [optimizer], [debug]; the [float8] and [mx] tables and converters of 2025, and the degrees that 2024
files kept in [training] and [experimental], are read too).

The model is MODEL's: [model] name and flavor are compared with the torchtitan flavor of MODEL (torchtitan's
registry in domain.torchtitan_models, unless the caller passes one) and a mismatch is a note, not applied. Data
parallelism is read as rigplan's export writes it: data_parallel_shard_degree is the FSDP (ZeRO-3) group,
data_parallel_replicate_degree the DDP group, -1 (the shard default) the GPUs left over, which rigplan derives from
--gpus. Absent keys keep torchtitan's
defaults, which the torchtitan framework preset sets (flow.framework); the preset is chosen unless the request names
one. Every key read but not used is named in the notes. `rigplan export --framework torchtitan` writes such a file,
so an exported job reads back as the same request.

May import: domain.
"""

from __future__ import annotations

import re
import sys
import tomllib
from typing import Any

from rigplan.domain.torchtitan_models import FLAVORS
from rigplan.errors import InvalidSpec
from rigplan.flow.megatron_args import ImportedArgs, token_count

READ_TABLES = ("parallelism", "training", "activation_checkpoint", "compile", "quantize", "float8", "mx",
               "optimizer", "experimental", "debug")
"""Tables with keys rigplan applies (and model.converters); a file with none of them is refused ([job] and [metrics]
alone say nothing)."""

OLD_PLACES = ("parallelism", "training", "experimental")
"""Where a parallel degree may stand: [parallelism] since 2025, [training] or [experimental] in 2024 files."""

DEGREES = {"tensor_parallel_degree": "tp", "pipeline_parallel_degree": "pp", "context_parallel_degree": "cp",
           "expert_parallel_degree": "ep", "expert_tensor_parallel_degree": "etp"}
"""torchtitan's parallel degrees that map one to one onto rigplan's."""

SCHEDULES = {"1f1b": "single", "gpipe": "single", "interleaved1f1b": "looped", "loopedbfs": "looped",
             "interleavedzerobubble": "looped", "zbvzerobubble": "v", "dualpipev": "v"}
"""torch.distributed.pipelining schedules by name (get_schedule_class reads it case-insensitively): single runs one
stage per rank, looped and v several (two by default; v places them in a V, rank r holding stages r and S-1-r)."""

AS_ESTIMATED = {"gpipe": "1F1B", "loopedbfs": "interleaved 1F1B", "interleavedzerobubble": "interleaved 1F1B",
                "zbvzerobubble": "interleaved 1F1B with vpp 2", "dualpipev": "interleaved 1F1B with vpp 2"}
"""Schedules rigplan does not time as such, and the schedule it times instead."""

LINEAR_CONVERTERS = frozenset({"quantize.linear.float8", "quantize.dense.float8", "float8",
                               "quantize.linear.mx", "quantize.dense.mx", "mx"})
"""torchtitan's model converters that put the linear layers (nn.Linear) in fp8, each named as its TOML table: 0.2's
quantize.linear, the quantize.dense of some 2025 versions, and 2025's float8 and mx."""

GROUPED_CONVERTERS = {"quantize.grouped_mm.float8": "fqns", "quantize.moe.float8": "fqns",
                      "quantize.grouped_mm.mx": "fqns", "quantize.moe.mx": "fqns",
                      "float8": "moe_fqns_prototype", "mx": "moe_fqns_prototype"}
"""The converters that put the routed experts' grouped GEMMs in fp8, and the key of their table naming the modules
converted (none named: none converted)."""

MOE_MODELS = frozenset({"deepseek_v3", "gpt_oss", "llama4"})
"""torchtitan models that are mixtures of experts in every flavor (qwen3's are where the flavor names its active
size, 30B-A3B)."""

LAYER = re.compile(r"layers\.(\d+)")


class _Reading:
    """The parsed file, the keys read from it (dotted: parallelism.tensor_parallel_degree) and the notes."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.used: set[str] = set()
        self.notes: list[str] = []

    def table(self, path: str) -> dict[str, Any]:
        node: Any = self.data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}

    def value(self, places: str | tuple[str, ...], key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        """The value of `key` in the first of `places` that holds it, when it is of `kind` (a comma-separated
        string counts as a list, an integer as a float); otherwise `default`, with a note for a value of the wrong
        type."""
        for place in (places,) if isinstance(places, str) else places:
            table = self.table(place)
            if key not in table:
                continue
            name, value = f"{place}.{key}", table[key]
            self.used.add(name)
            if kind is list and isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
                self.notes.append(f"{name} {value!r}: not a value of the type torchtitan defines for it: skipped")
                return default
            return value
        return default

    def unused(self) -> list[str]:
        """The keys of the file not read, a whole table as `name.*`."""
        left: list[str] = []
        for name, table in self.data.items():
            leaves = list(_leaves(name, table))
            unread = [leaf for leaf in leaves if leaf not in self.used]
            left.extend([f"{name}.*"] if isinstance(table, dict) and unread and unread == leaves else unread)
        return left


def _leaves(name: str, value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [name]
    return [leaf for key, sub in value.items() for leaf in _leaves(f"{name}.{key}", sub)]


def read_torchtitan_config(text: str, source: str = "--torchtitan-config", *, gpus: int | None = None,
                           dp: int | None = None, model: str | None = None,
                           flavor: tuple[str, str] | None = None) -> ImportedArgs:
    """The request fields of a torchtitan job TOML (module docstring). `gpus`, `dp`: the GPU count and data-parallel
    degree the request gives (a shard degree of -1 takes the ranks left over, which sets torchtitan's default global
    batch); `model`: MODEL; `flavor`: its torchtitan (name, flavor), by default from torchtitan's registry
    (domain.torchtitan_models), None when rigplan knows none. InvalidSpec when the text is not TOML or holds no
    table rigplan reads."""
    if flavor is None and model is not None:
        flavor = FLAVORS.get(model)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InvalidSpec(f"{source}: not TOML ({err}); give a torchtitan job file (the TOML of "
                          "--job.config_file)") from None
    except RecursionError:
        raise InvalidSpec(f"{source}: TOML nested too deeply; give a torchtitan job file") from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() (4,300) digits
        raise InvalidSpec(f"{source}: a number of more than {sys.get_int_max_str_digits():,} digits; give a "
                          "torchtitan job file") from None
    model_table = data.get("model")
    if not any(isinstance(data.get(name), dict) and data[name] for name in READ_TABLES) and not (
            isinstance(model_table, dict) and "converters" in model_table):
        raise InvalidSpec(f"{source}: no table rigplan reads (parallelism.tensor_parallel_degree, "
                          "training.local_batch_size, activation_checkpoint.mode, ...); give a torchtitan job file "
                          "(the TOML of --job.config_file)")
    reading = _Reading(data)
    fields: dict[str, Any] = {"framework": "torchtitan"}
    ranks = _layout(reading, fields, gpus, dp)
    _pipeline(reading, fields)
    _batch(reading, fields, ranks)
    _precision(reading, fields, _mixture_of_experts(reading, fields, flavor))
    _recompute(reading, fields)
    _compile_and_overlap(reading, fields)
    _optimizer_and_routing(reading, fields)
    _model(reading, model, flavor)
    unused = reading.unused()
    if unused:
        reading.notes.append("read but not used by the estimate: " + ", ".join(unused))
    return ImportedArgs(fields=fields, notes=[f"from {source}: {note}" for note in reading.notes])


def _layout(reading: _Reading, fields: dict[str, Any], gpus: int | None, dp: int | None) -> int | None:
    """The parallel degrees, ZeRO stage and data-parallel degree (returned: None where it is not known)."""
    for key, name in DEGREES.items():
        degree = reading.value(OLD_PLACES, key, int)
        if degree is not None:
            fields[name] = degree
    if fields.get("ep", 1) > 1 and fields.get("tp", 1) > 1:
        fields.setdefault("etp", 1)  # torchtitan's expert_tensor_parallel_degree defaults to 1
    if fields.get("tp", 1) > 1:
        fields["sequence_parallel"] = True
        reading.notes.append(f"tensor_parallel_degree {fields['tp']}: torchtitan's tensor-parallel plan runs the "
                             "norms on sequence shards ('SequenceParallel'), so sequence_parallel is on")
    if fields.get("cp", 1) > 1:
        fields["cp_comm_type"] = "p2p"  # torchtitan's context parallelism is ring attention
    replicate: int = reading.value(OLD_PLACES, "data_parallel_replicate_degree", int, 1)
    shard: int | None = reading.value(OLD_PLACES, "data_parallel_shard_degree", int, -1)
    if shard is None or replicate < 1 or shard == 0 or shard < -1:
        reading.notes.append(f"data_parallel_shard_degree {shard} with data_parallel_replicate_degree {replicate}: "
                             "not a data-parallel layout torchtitan runs: skipped")
        return None
    if shard > 0:
        fields["dp"] = replicate * shard
    elif dp or gpus:  # -1: the ranks left over: --dp, or --gpus over the file's tp*pp*cp, as rigplan derives dp
        group: int = fields.get("tp", 1) * fields.get("pp", 1) * fields.get("cp", 1)
        ranks = dp or ((gpus or 0) // group if group > 0 and (gpus or 0) % group == 0 else 0)
        shard = ranks // replicate if ranks and ranks % replicate == 0 else None
    else:
        shard = 1
        if replicate > 1:
            fields["dp"] = replicate
    if shard is None:
        return None
    if shard > 1:
        fields["zero"] = 3
        if replicate > 1:
            reading.notes.append(f"HSDP (data_parallel_replicate_degree {replicate} x data_parallel_shard_degree "
                                 f"{shard}): estimated as ZeRO-3 over all {replicate * shard} data-parallel ranks "
                                 "(rigplan has no hybrid sharding; HSDP keeps more per GPU)")
    elif replicate > 1:
        fields["zero"] = 0
    return replicate * shard


def _pipeline(reading: _Reading, fields: dict[str, Any]) -> None:
    """vpp, the split of the layers over the virtual stages, and the schedule's expert-parallel overlap."""
    name = reading.value(("parallelism", "experimental"), "pipeline_parallel_schedule", str, "1F1B")
    parts = reading.value("parallelism", "module_fqns_per_model_part", list)
    points = reading.value(("parallelism", "experimental"), "pipeline_parallel_split_points", list)
    per_stage = reading.value("parallelism", "pipeline_parallel_layers_per_stage", int)
    first_less = reading.value("parallelism", "pipeline_parallel_first_stage_less_layers", int, 1)
    last_less = reading.value("parallelism", "pipeline_parallel_last_stage_less_layers", int, 1)
    overlap = reading.value("parallelism", "pipeline_parallel_expert_parallel_overlap", bool, True)
    pp = fields.get("pp", 1)
    if pp <= 1:
        return
    kind = SCHEDULES.get(name.lower())
    if kind is None:
        reading.notes.append(f"pipeline_parallel_schedule '{name}': not a schedule rigplan knows, estimated as 1F1B")
        kind = "single"
    elif name.lower() in AS_ESTIMATED:
        reading.notes.append(f"pipeline_parallel_schedule '{name}': not modelled, estimated as "
                             f"{AS_ESTIMATED[name.lower()]}")
    if parts:
        stages = len(parts)
        _split_from_parts(reading, fields, parts)
    elif points:
        stages = len(points) + 1
        reading.notes.append(f"pipeline_parallel_split_points: {stages} stages; the layers of each follow "
                             "rigplan's split (give --stage-layers)")
    elif per_stage and kind != "single":
        reading.notes.append(f"pipeline_parallel_layers_per_stage {per_stage} with the schedule '{name}': the stage "
                             "count needs the model's layers, vpp not set (give --vpp)")
        stages = pp
    else:
        stages = pp if kind == "single" else 2 * pp
    if not parts and not points:
        fields["embedding_layer_weight"], fields["head_layer_weight"] = first_less, last_less
    if stages % pp:
        reading.notes.append(f"{stages} pipeline stages do not divide over pipeline_parallel_degree {pp}: vpp not "
                             "set (give --vpp)")
    elif stages > pp:
        fields["vpp"] = stages // pp
    if name.lower() == "dualpipev" and fields.get("ep", 1) > 1 and overlap:
        fields.update(a2a_overlap=True, a2a_overlap_schedule="dualpipe")
        fields.setdefault("moe_dispatcher", "alltoall")
        reading.notes.append("pipeline_parallel_expert_parallel_overlap under 'DualPipeV' runs one micro-batch's "
                             "expert all-to-all beside another's compute: estimated as --a2a-overlap with the "
                             "dualpipe schedule")


def _split_from_parts(reading: _Reading, fields: dict[str, Any], parts: list[Any]) -> None:
    """stage_layers from module_fqns_per_model_part: the decoder layers (layers.N) of each virtual stage, in order;
    an even split is rigplan's default and is left to it."""
    counts: list[int] = []
    order: list[int] = []
    for part in parts:
        names = part if isinstance(part, list) else [part]
        found = [int(m.group(1)) for n in names if isinstance(n, str) and (m := LAYER.fullmatch(n))]
        counts.append(len(found))
        order.extend(found)
    if order != list(range(len(order))):
        reading.notes.append("module_fqns_per_model_part: its layers.N are not in order from layers.0, so the "
                             "split is rigplan's (give --stage-layers)")
    elif len(set(counts)) > 1:
        fields["stage_layers"] = counts


def _batch(reading: _Reading, fields: dict[str, Any], dp: int | None) -> None:
    """micro_batch, global_batch, seq and the tokens of training.steps. Without pipelining local_batch_size is the
    micro-batch; with it, the step's batch per data-parallel rank, cut into pipeline_parallel_microbatch_size
    micro-batches. global_batch_size -1 (the default) is local_batch_size x the data-parallel degree."""
    local = reading.value("training", "local_batch_size", int)
    if local is None:
        local = reading.value("training", "batch_size", int)
    total = reading.value("training", "global_batch_size", int, -1)
    seq = reading.value("training", "seq_len", int)
    steps = reading.value("training", "steps", int)
    micro = reading.value("parallelism", "pipeline_parallel_microbatch_size", int, 1)
    if fields.get("pp", 1) > 1:
        fields["micro_batch"] = micro
    elif local is not None:
        fields["micro_batch"] = local
    if total > 0:
        fields["global_batch"] = total
    elif local is not None and dp is not None:
        fields["global_batch"] = local * dp
    elif local is not None:
        reading.notes.append("training.global_batch_size not given and the data-parallel degree not known (the "
                             "GPUs do not divide as the degrees say): global batch left to --global-batch")
    if seq is not None:
        fields["seq"] = seq
    if steps and seq and fields.get("global_batch"):
        fields["tokens"] = token_count(steps * fields["global_batch"] * seq, "training.steps")


def _precision(reading: _Reading, fields: dict[str, Any], moe: bool | None) -> None:
    """precision, fp8_recipe and which of the linears and the routed experts run in fp8, from model.converters
    (LINEAR_CONVERTERS, GROUPED_CONVERTERS; 2024: float8.enable_float8_linear) and the modules their tables name.
    `moe`: MODEL is a mixture of experts (None: not known), whose routed experts stay bf16 under a linear converter
    alone."""
    converters = [str(c) for c in reading.value("model", "converters", list, [])]
    param = reading.value("training", "mixed_precision_param", str)
    dtype = reading.value("training", "dtype", str)
    linear = next((c for c in converters if c in LINEAR_CONVERTERS), None)
    if linear is None and reading.value("float8", "enable_float8_linear", bool, False):
        linear = "float8"
    experts = next((c for c in converters if c in GROUPED_CONVERTERS), None)
    fqns = reading.value(experts, GROUPED_CONVERTERS[experts], list, []) if experts else []
    mx = any(c.endswith("mx") for c in (linear, experts) if c)
    recipe = reading.value(tuple(c for c in (linear, experts) if c) or "float8", "recipe_name", str)
    if recipe and not mx and linear and recipe != "tensorwise":
        reading.notes.append(f"float8 recipe_name '{recipe}': row-wise scaling not modelled, estimated with "
                             "tensorwise (current) scaling")
    elif recipe and mx and not recipe.startswith("mxfp8"):
        reading.notes.append(f"MX recipe_name '{recipe}': not modelled, estimated as mxfp8")
    other = [c for c in converters if c not in LINEAR_CONVERTERS and c not in GROUPED_CONVERTERS]
    if other:
        reading.notes.append(f"model.converters {', '.join(other)}: not modelled")
    if linear:
        fields.update(precision="fp8", fp8_recipe="mxfp8" if mx else "current")
        if not fqns and moe:
            fields["bf16_experts"] = True
        elif not fqns and moe is None:
            reading.notes.append("the float8 and MX linear converters swap nn.Linear modules only: on a "
                                 "mixture-of-experts model pass --bf16-experts (its routed experts stay bf16)")
        if dtype == "bfloat16":
            reading.notes.append("training.dtype 'bfloat16' under fp8: estimated with fp32 master weights")
    elif fqns:
        fields.update(fp8_experts=True, fp8_recipe="mxfp8" if mx else "current")
    if not linear and dtype == "bfloat16":
        fields["precision"] = "bf16-true"
    elif not linear and param in ("bfloat16", "float32"):
        fields["precision"] = "bf16-mixed" if param == "bfloat16" else "fp32"


def _mixture_of_experts(reading: _Reading, fields: dict[str, Any], flavor: tuple[str, str] | None) -> bool | None:
    """Whether MODEL is a mixture of experts, by its torchtitan flavor; without one, True where the file sets expert
    parallelism or a key only such models read (rigplan's export writes expert_tensor_parallel_degree for each),
    else None (not known)."""
    if flavor is not None:
        return flavor[0] in MOE_MODELS or "-A" in flavor[1]
    keys = ("expert_tensor_parallel_degree", "expert_parallel_comm_backend")
    if fields.get("ep", 1) > 1 or any(k in reading.table("parallelism") for k in keys) or (
            "moe_force_load_balance" in reading.table("debug")):
        return True
    return None


def _recompute(reading: _Reading, fields: dict[str, Any]) -> None:
    """activation_checkpoint.mode: none, full, or selective with selective_ac_option 'op' (rigplan's op) or N (every
    N-th layer checkpointed whole: rigplan's full with recompute_every N); torchtitan's defaults are selective, 2."""
    if not reading.table("activation_checkpoint"):
        return
    mode = reading.value("activation_checkpoint", "mode", str, "selective")
    option = str(reading.value("activation_checkpoint", "selective_ac_option", (str, int), "2"))
    if mode in ("none", "full"):
        fields["recompute"] = mode
    elif mode == "selective" and option == "op":
        fields["recompute"] = "op"
    elif mode == "selective" and option.isdecimal() and option.isascii() and int(option) >= 1:
        fields.update(recompute="full", recompute_every=int(option))
    else:
        reading.notes.append(f"activation_checkpoint.mode '{mode}' (selective_ac_option '{option}'): not modelled, "
                             "recompute left to --recompute")


def _compile_and_overlap(reading: _Reading, fields: dict[str, Any]) -> None:
    """compile from compile.enable and its components (model: the blocks; loss: the loss, rigplan's compiled loss),
    or from 2024's training.compile (the model only); async tensor parallelism, which needs compile."""
    enable = reading.value("compile", "enable", bool)
    components = reading.value("compile", "components", list, ["model", "loss"])
    if enable is None and reading.value("training", "compile", bool, False):
        fields.update(compile=True, loss="unfused")
        reading.notes.append("training.compile (2024 layout) compiles the model blocks, not the loss: loss unfused")
    elif enable is not None:
        fields["compile"] = enable and "model" in components
        if enable and "loss" not in components:
            fields["loss"] = "unfused"
        elif enable and "model" not in components:
            fields["loss"] = "compiled"
        other = [c for c in components if c not in ("model", "loss")]
        if enable and other:
            reading.notes.append(f"compile.components {', '.join(map(str, other))}: not modelled")
    if reading.value(OLD_PLACES, "enable_async_tensor_parallel", bool, False):
        if fields.get("compile"):
            fields["tp_comm_overlap"] = True
        else:
            reading.notes.append("enable_async_tensor_parallel works only under compile (compile.enable with "
                                 "model): not applied")


def _optimizer_and_routing(reading: _Reading, fields: dict[str, Any]) -> None:
    name = reading.value("optimizer", "name", str)
    if name is not None and name.lower() in ("adamw", "adam"):
        fields["optimizer"] = "adamw"
    elif name is not None:
        reading.notes.append(f"optimizer.name '{name}': not an optimizer rigplan reads from torchtitan (AdamW, "
                             "Adam), left to --optimizer")
    implementation = reading.value("optimizer", "implementation", str)
    if implementation in ("fused", "foreach"):
        fields["optimizer_foreach"] = implementation == "foreach"
    elif implementation is not None:
        reading.notes.append(f"optimizer.implementation '{implementation}': not modelled, estimated as fused")
    for place, key, field_name, on, off in (
            ("optimizer", "early_step_in_backward", "optimizer_in_backward", True, False),
            ("training", "enable_cpu_offload", "offload", "all", "none"),
            ("debug", "moe_force_load_balance", "balanced_routing", True, False)):
        given = reading.value(place, key, bool)
        if given is not None:
            fields[field_name] = on if given else off
    reduce = reading.value("training", "mixed_precision_reduce", str)
    if reduce in ("float32", "bfloat16"):
        fields["grad_reduce_dtype"] = "fp32" if reduce == "float32" else "bf16"
    backend = reading.value("parallelism", "expert_parallel_comm_backend", str)
    if backend in ("standard", "deepep", "hybridep"):
        fields["moe_dispatcher"] = {"standard": "alltoall"}.get(backend, backend)
    elif backend is not None:
        reading.notes.append(f"expert_parallel_comm_backend '{backend}': not modelled, estimated with the "
                             "all-to-all dispatcher")
    enabled = reading.value("checkpoint", "enable", bool) or reading.value("checkpoint", "enable_checkpoint", bool)
    interval = reading.value("checkpoint", "interval", int)
    if enabled and interval:
        reading.notes.append(f"checkpoint.interval {interval} steps: rigplan checkpoints every "
                             "--checkpoint-interval-s seconds (Daly's optimum unless given), not every N steps")


def _model(reading: _Reading, model: str | None, flavor: tuple[str, str] | None) -> None:
    name = reading.value("model", "name", str)
    size = reading.value("model", "flavor", str)
    if name is None and size is None:
        return
    if flavor is None:
        reading.notes.append(f"model.name '{name}', model.flavor '{size}' not compared with MODEL (rigplan knows no "
                             "torchtitan flavor of it): the model is MODEL's")
    elif (name, size) != flavor:
        reading.notes.append(f"model.name '{name}', model.flavor '{size}' is not {model} (torchtitan's '{flavor[0]}' "
                             f"'{flavor[1]}'): not applied, the model is MODEL's")
