"""What a request's fields mean without pydantic: the rules that normalise values, and a table of the
request models' fields that validates command-line values on rigplan's start-up path.

flow/request.py declares the requests as pydantic models; the HTTP API, the validation cases and the
CLI validate with them. Importing pydantic and building those models takes longer than the rest of a
`rigplan memory` answer together (about 90 of 210 ms), so `validated()` first tries the field table:
a description of every field of the request models (its type, choices, bound, limits, default and
the rule that normalises it, below), derived from the models themselves (`describe_models`) the first
time pydantic runs and kept in the cache folder (catalog/cache.py) under a SHA-256 of the code that
decides it (`CODE`), so an edited model or bound is a miss, never a stale table.

The table accepts only values the pydantic model accepts, as the same values: exact types (an int for
a float field becomes a float, as pydantic's lax mode has it), every bound and limit, the same rules,
the framework preset applied the same way (flow/framework.py). Anything else (a value out of range or
of another type, a field the table cannot check, a model with a validator it does not know) goes to
pydantic, which accepts it or gives the error message. tests/unit/test_fast_request.py checks that both
paths agree, value by value, on the CLI's examples, the hostile inputs and generated ones.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rigplan.bounds import BOUNDS, PARSERS
from rigplan.catalog import cache
from rigplan.domain.job import LORA_TARGET_NAMES
from rigplan.errors import RigplanError
from rigplan.files import read_bytes
from rigplan.flow.framework import FrameworkApplied, cli_option, fill_preset

FAST_MODELS = ("MemoryRequest", "EstimateRequest")
"""The models whose requests may take the table's path (their flow reads fields and the methods below)."""
_PACKAGE = Path(__file__).resolve().parent.parent
CODE = ("flow/request.py", "flow/fields.py", "flow/framework.py", "bounds.py", "units.py", "domain/frameworks.py",
        "domain/job.py")
"""Modules whose code decides what the table says (the models, their bounds, rules, presets)."""
FORMAT = 1


# --- rules shared with the pydantic models' validators (flow/request.py) ------------------------------

def split_lora_targets(value: object) -> object:
    """'q,v' -> ['q', 'v']; 'all' (any case, alone) -> every LoRA target."""
    if isinstance(value, str):
        value = [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list) and all(isinstance(t, str) for t in value) and [t.lower() for t in value] == ["all"]:
        return list(LORA_TARGET_NAMES)
    return value


PEFT_ONLY_FIELDS = {"lora_rank": ("lora", "qlora"), "lora_targets": ("lora", "qlora"), "qlora_double_quant": ("qlora",)}
"""Request fields that mean something only under some methods: the methods, by field."""


def peft_only_problem(method: str, field: str, flag: str) -> str | None:
    """What is wrong with giving the PEFT-only `field` (spelt `flag` to the user) under `method`, or None where it
    applies (or is not PEFT-only)."""
    methods = PEFT_ONLY_FIELDS.get(field)
    if not methods or method in methods:
        return None
    return (f"{flag} applies only with --method {'/'.join(methods)}, and --method is {method}; add --method "
            f"{methods[0]} or drop {flag}")


def alias_precision(value: str | None) -> str | None:
    """bf16 -> bf16-mixed, fp16 -> fp16-mixed."""
    return {"bf16": "bf16-mixed", "fp16": "fp16-mixed"}.get(value, value) if value else value


MAX_STAGE_ENTRIES = 65_536
"""Most virtual stages --stage-layers may spell out (its LAYERSxSTAGES form would otherwise build any length)."""


def split_stage_layers(value: object) -> object:
    """'7,8,8,7' -> [7, 8, 8, 7]; a count repeated as LAYERSxSTAGES, as the split is printed: '1,2x30,0' -> [1] +
    [2] * 30 + [0] (DeepSeek-V3's PP16 x VPP2 split)."""
    if isinstance(value, str):
        counts: list[int] = []
        try:
            for token in (t.strip().lower() for t in value.split(",") if t.strip()):
                layers, by, times = token.partition("x")
                repeat = int(times) if by else 1
                if repeat < 1 or len(counts) + repeat > MAX_STAGE_ENTRIES:
                    raise ValueError
                counts.extend([int(layers)] * repeat)
        except ValueError:
            raise ValueError(f"--stage-layers takes comma-separated layer counts such as 7,8,8,7 (or 1,2x30,0: "
                             f"2 layers on each of 30 stages; at most {MAX_STAGE_ENTRIES:,} stages), "
                             f"got {value!r}") from None
        return counts
    return value


def split_graph_scope(value: object) -> object:
    """'attn,moe_router' -> ['attn', 'moe_router']."""
    if isinstance(value, str):
        return [s.strip() for s in value.split(",") if s.strip()]
    return value


RULES: dict[str, Callable[[Any], Any]] = {
    "_split_targets": split_lora_targets, "_alias_precision": alias_precision,
    "_split_stage_layers": split_stage_layers, "_split_graph_scope": split_graph_scope,
}
"""The models' field validators by method name, each the rule it applies. A validator not named here
makes its field one the table does not check (a value given for it goes to pydantic)."""


def shape_flags(request: object, names: Iterable[str]) -> dict[str, object]:
    """The model-shape fields that were given (not None)."""
    return {k: getattr(request, k) for k in names if getattr(request, k) is not None}


def shape_flag_args(flags: dict[str, object]) -> list[str]:
    """The command-line flags that give these model-shape fields again (--hidden 4096, --untied-embeddings), for a
    reproduce line."""
    return [cli_option(name, value, negated="--un") for name, value in flags.items()]


def routing_values(request: Any) -> dict[str, object]:
    """Job fields: moe_imbalance (0 = default, 1 = balanced), capacity_factor, a2a_overlap, its schedule,
    moe_dispatcher, moe_pad_to_capacity, moe_fused_grouped_mlp, experts_implementation, moe_rank_capacity_factor."""
    if request.balanced_routing and request.moe_imbalance not in (None, 1.0):
        raise ValueError("--balanced-routing sets the imbalance to 1; drop --moe-imbalance or --balanced-routing")
    imbalance = 1.0 if request.balanced_routing else (request.moe_imbalance or 0.0)
    if request.capacity_factor and 0 < request.capacity_factor < 1:
        raise ValueError(f"--capacity-factor must be >= 1 (0 = dropless), got {request.capacity_factor}")
    if request.moe_pad_to_capacity and not request.capacity_factor:
        raise ValueError("--moe-pad-to-capacity needs --capacity-factor (the capacity each expert is padded to)")
    return {"moe_imbalance": imbalance, "capacity_factor": request.capacity_factor,
            "a2a_overlap": request.a2a_overlap, "a2a_overlap_schedule": request.a2a_overlap_schedule,
            "moe_dispatcher": request.moe_dispatcher, "moe_pad_to_capacity": request.moe_pad_to_capacity,
            "moe_fused_grouped_mlp": request.moe_fused_grouped_mlp,
            "experts_implementation": request.experts_implementation,
            "moe_rank_capacity_factor": request.moe_rank_capacity_factor}


def overlap_values(request: object, names: Iterable[str]) -> dict[str, object]:
    """The overlap switches that were given (the others keep domain.job.Job's defaults)."""
    return {k: getattr(request, k) for k in names if getattr(request, k) is not None}


# --- the request checked by the table ------------------------------------------------------------------

class PlainRequest:
    """A request the field table accepted: the model's fields as attributes, and the model's methods."""

    def __init__(self, model: str, values: dict[str, Any], groups: dict[str, list[str]],
                 framework_applied: FrameworkApplied | None) -> None:
        self.__dict__.update(values)
        self._model = model
        self._groups = groups
        self._framework_applied = framework_applied

    @property
    def framework_applied(self) -> FrameworkApplied | None:
        return self._framework_applied

    def shape_flags(self) -> dict[str, object]:
        return shape_flags(self, self._groups["shape"])

    def routing_values(self) -> dict[str, object]:
        return routing_values(self)

    def overlap_values(self) -> dict[str, object]:
        return overlap_values(self, self._groups["overlap"])

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if not k.startswith("_"))
        return f"{self._model}({shown})"


def validated(model: str, values: dict[str, Any]) -> Any:
    """The request `model` (a flow.request model name) from `values`: a PlainRequest when the field table
    accepts them, else the pydantic model, whose ValidationError says what is wrong."""
    key = table_key()
    table = cache.load_json("requests", key) if key else None
    if table is not None and model in FAST_MODELS:
        fast = validate_fast(table.get(model), values)
        if fast is not None:
            return fast
    from rigplan.flow import request as models

    try:
        return getattr(models, model).model_validate(values)
    finally:
        if key and table is None:
            cache.store_json("requests", key, describe_models())


def table_key() -> str | None:
    """SHA-256 over the code that decides the table; None when a file cannot be read."""
    digest = hashlib.sha256(f"format {FORMAT}\n".encode())
    try:
        for name in CODE:
            data = read_bytes(_PACKAGE / name, "rigplan module")
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)
    except RigplanError:
        return None
    return digest.hexdigest()


_FAIL = object()


def validate_fast(table: dict[str, Any] | None, values: dict[str, Any]) -> PlainRequest | None:
    """The request when every value passes the model's table, else None (pydantic decides)."""
    if not table or not table.get("supported"):
        return None
    fields: dict[str, Any] = table["fields"]
    if any(spec["required"] and name not in values for name, spec in fields.items()):
        return None
    out: dict[str, Any] = {}
    for name, value in values.items():
        spec = fields.get(name)
        if spec is None:
            return None
        checked = _field(spec, value)
        if checked is _FAIL:
            return None
        out[name] = checked
    for name, spec in fields.items():
        if name not in out:
            out[name] = copy.deepcopy(spec["default"])
    applied = None
    if table["preset"] and out.get("framework"):
        updates, applied = fill_preset(out["framework"], out, set(values), fields)
        out.update(updates)
    return PlainRequest(table["name"], out, table["groups"], applied)


def _field(spec: dict[str, Any], value: Any) -> Any:
    if not spec["checked"]:
        return _FAIL
    try:
        for mode, rule in spec["rules"]:
            if mode == "before":
                value = RULES[rule](value)
        value = _match(spec["type"], value, lax=True)
        if value is _FAIL:
            return _FAIL
        for mode, rule in spec["rules"]:
            if mode == "after":
                value = RULES[rule](value)
    except (ValueError, AssertionError, RigplanError):
        return _FAIL
    return value


def _match(spec: dict[str, Any], value: Any, lax: bool) -> Any:
    """`value` as the type `spec` validates it (pydantic's smart unions: an exact match first, then int
    for float), or _FAIL."""
    kind = spec["t"]
    if kind == "union":
        for strict_pass in (True, False):
            if strict_pass is False and not lax:
                break
            for arm in spec["of"]:
                result = _match(arm, value, lax=not strict_pass)
                if result is not _FAIL:
                    return result if _within(spec, result) else _FAIL
        return _FAIL
    if kind == "none":
        result = None if value is None else _FAIL
    elif kind in ("int", "bool", "str"):
        result = value if type(value) is {"int": int, "bool": bool, "str": str}[kind] else _FAIL
    elif kind == "float":
        result = value if type(value) is float else float(value) if lax and type(value) is int else _FAIL
    elif kind == "literal":
        result = value if any(type(value) is type(c) and value == c for c in spec["values"]) else _FAIL
    elif kind == "list":
        if type(value) is not list:
            return _FAIL
        result = [_match(spec["item"], item, lax) for item in value]
        if any(r is _FAIL for r in result):
            return _FAIL
    else:
        return _FAIL
    if result is _FAIL:
        return _FAIL
    return result if _within(spec, result) else _FAIL


def _within(spec: dict[str, Any], value: Any) -> bool:
    """The bound (bounds.Bounded, with its parser) and the Field limits of `spec` hold for `value`."""
    if "bound" in spec:
        bound = BOUNDS[spec["bound"]]
        number = value
        if spec.get("parse") and isinstance(value, str | int | float):
            try:
                number = PARSERS[spec["parse"]](value, bound.flag)
            except RigplanError:
                return False
        if bound.problem(number):
            return False
    limits = (("ge", lambda v, x: v >= x), ("gt", lambda v, x: v > x), ("le", lambda v, x: v <= x),
              ("lt", lambda v, x: v < x))
    return all(test(value, spec[name]) for name, test in limits if name in spec)


# --- the table, derived from the pydantic models --------------------------------------------------------

def describe_models() -> dict[str, Any]:
    """The table of every fast-path model (imports pydantic and flow.request)."""
    from rigplan.flow import request as models

    return {name: describe(getattr(models, name)) for name in FAST_MODELS}


def describe(cls: Any) -> dict[str, Any]:
    """One pydantic request model as the table holds it."""
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    from rigplan.flow.request import CommOverlapSpec, FrameworkPresetMixin, ModelSpec

    decorators = cls.__pydantic_decorators__
    rules: dict[str, list[list[str]]] = {}
    unknown_rules: set[str] = set()
    for method, decorator in decorators.field_validators.items():
        for name in decorator.info.fields:
            if method in RULES and decorator.info.mode in ("before", "after"):
                rules.setdefault(name, []).append([decorator.info.mode, method])
            else:
                unknown_rules.add(name)
    post_init = inspect.unwrap(cls.model_post_init)  # pydantic wraps it to set private attributes first
    supported = (not decorators.model_validators and not decorators.root_validators
                 and not cls.model_config.get("strict") and cls.model_config.get("extra") == "forbid"
                 and set(cls.__private_attributes__) <= {"_framework_applied"}
                 and post_init in (inspect.unwrap(BaseModel.model_post_init),
                                   inspect.unwrap(FrameworkPresetMixin.model_post_init)))
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if info.default_factory is not None:
            default = info.default_factory()
        else:
            default = None if info.default is PydanticUndefined else info.default
        spec = _type_spec(info.annotation, list(info.metadata))
        fields[name] = {
            "type": spec, "default": default, "rules": rules.get(name, []),
            "required": info.is_required(),
            "checked": name not in unknown_rules and info.alias is None and info.validation_alias is None,
        }
    groups = {"shape": [n for n in ModelSpec.model_fields if n != "model"] if issubclass(cls, ModelSpec) else [],
              "overlap": list(CommOverlapSpec.model_fields) if issubclass(cls, CommOverlapSpec) else []}
    return {"name": cls.__name__, "supported": supported, "preset": issubclass(cls, FrameworkPresetMixin),
            "groups": groups, "fields": fields}


def _type_spec(annotation: Any, metadata: list[Any]) -> dict[str, Any]:
    """A type annotation (with its Annotated metadata) as the table's type: int, float, bool, str, none,
    literal, list, union, or unsupported, with bound / parse / ge / gt / le / lt."""
    import annotated_types
    from pydantic.fields import FieldInfo

    from rigplan.bounds import Bounded

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_spec(args[0], [*metadata, *annotation.__metadata__])
    spec: dict[str, Any]
    if origin in (typing.Union, types.UnionType):
        spec = {"t": "union", "of": [_type_spec(a, []) for a in args]}
    elif origin is typing.Literal:
        scalar = all(isinstance(a, str | int | bool) for a in args)
        spec = {"t": "literal", "values": list(args)} if scalar else {"t": "unsupported"}
    elif origin is list and len(args) == 1:
        spec = {"t": "list", "item": _type_spec(args[0], [])}
    elif annotation in (int, float, bool, str):
        spec = {"t": annotation.__name__}
    elif annotation is type(None):
        spec = {"t": "none"}
    else:
        return {"t": "unsupported"}
    for meta in metadata:
        if isinstance(meta, FieldInfo):
            nested = _type_spec(annotation, list(meta.metadata))
            if nested["t"] == "unsupported":
                return nested
            spec.update({k: v for k, v in nested.items() if k not in ("t", "of", "values", "item")})
        elif isinstance(meta, Bounded):
            spec["bound"] = meta.name
            if meta.parse:
                spec["parse"] = meta.parse
        elif isinstance(meta, annotated_types.Ge | annotated_types.Gt | annotated_types.Le | annotated_types.Lt):
            name = type(meta).__name__.lower()
            spec[name] = getattr(meta, name)
        else:
            return {"t": "unsupported"}
    return spec
