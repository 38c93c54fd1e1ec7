"""Apply a framework preset (domain.frameworks) to a request, once, and say what it set.

`apply_preset(request)` fills each field of the preset that the request did not set explicitly
(pydantic's `model_fields_set`: given in the JSON body, the YAML case or on the command line; the CLI
passes only flags whose value did not come from click's default) and whose condition holds for the
request's precision and tensor-parallel degree. The explicit fields stay as the user gave them, and
`model_fields_set` keeps naming only those. The record (`FrameworkApplied`) goes into the
assumptions and into the `framework` key of the JSON of record. `fill_preset` does the same on plain
values (the CLI's pydantic-free path, flow/fields.py).

May import: domain.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rigplan.domain.frameworks import FRAMEWORK_PRESETS, PRESETS, RELATED_FIELDS, PresetSetting, condition_holds

if TYPE_CHECKING:
    from pydantic import BaseModel

PRESET_FIELDS = frozenset({f for p in PRESETS for s in p.settings for f in s.fields}
                          | {g for group in RELATED_FIELDS.values() for g in group})
"""Request fields some preset may fill."""


def given_fields(request: BaseModel, values: dict[str, Any]) -> dict[str, Any]:
    """`values` less the preset-settable fields the request did not set itself, for building a derived
    request that re-applies the same preset (plan's candidates)."""
    return {k: v for k, v in values.items() if k not in PRESET_FIELDS or k in request.model_fields_set}


@dataclass(frozen=True)
class FrameworkApplied:
    """Which preset ran, what it set (field -> value, with the source), and what the user kept."""

    name: str
    title: str
    set_values: dict[str, object] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    """Preset fields the user gave explicitly (their value was used, not the preset's)."""
    kept_values: dict[str, object] = field(default_factory=dict)
    """The values of the kept fields, as the user gave them."""
    not_applicable: list[str] = field(default_factory=list)
    """Preset settings whose condition does not hold for this job (e.g. fp8-only on a bf16 run)."""
    note: str = ""

    def without(self, fields: tuple[str, ...]) -> FrameworkApplied:
        """The record without `fields` (plan searches the layout and recompute itself)."""
        return FrameworkApplied(name=self.name, title=self.title,
                                set_values={k: v for k, v in self.set_values.items() if k not in fields},
                                sources={k: v for k, v in self.sources.items() if k not in fields},
                                kept=[k for k in self.kept if k not in fields],
                                kept_values={k: v for k, v in self.kept_values.items() if k not in fields},
                                not_applicable=list(self.not_applicable), note=self.note)

    def assumption(self) -> str:
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in self.set_values.items()) or "nothing"
        line = f"framework {self.name}: {self.title} defaults set {shown}"
        if self.kept:
            line += f"; kept your {', '.join(cli_option(k, self.kept_values.get(k)) for k in self.kept)}"
        if self.note:
            line += f"; left to you: {self.note}"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "set": dict(self.set_values), "sources": dict(self.sources),
                "kept": list(self.kept), "not_applicable": list(self.not_applicable), "note": self.note}


def cli_option(name: str, value: object, negated: str = "--no-") -> str:
    """A request field as the option that sets it: --autocast, --no-autocast (`negated` and the name for False:
    --untied-embeddings), --zero 3; None is the bare option."""
    option = "--" + name.replace("_", "-")
    if value is True or value is None:
        return option
    if value is False:
        return negated + name.replace("_", "-")
    return f"{option} {value}"


def _shown(value: object) -> str:
    return "on" if value is True else "off" if value is False else str(value)


def _precision_of(values: dict[str, Any]) -> str:
    """The precision recipe the job will run: as given, else rigplan's default for the method."""
    precision = values.get("precision")
    if precision:
        return str(precision)
    return "bf16-true" if values.get("method") in ("lora", "qlora") else "bf16-mixed"


def apply_preset(request: BaseModel) -> FrameworkApplied | None:
    """Fill the request's unset fields from its framework preset (in place); None without --framework."""
    name = getattr(request, "framework", None)
    if not name:
        return None
    explicit = set(request.model_fields_set)
    known = type(request).model_fields
    updates, applied = fill_preset(name, {k: getattr(request, k) for k in known}, explicit, known)
    for key, value in updates.items():
        object.__setattr__(request, key, value)
    object.__setattr__(request, "__pydantic_fields_set__", explicit)
    return applied


def fill_preset(name: str, current: dict[str, Any], explicit: Collection[str],
                known: Collection[str]) -> tuple[dict[str, Any], FrameworkApplied]:
    """The values preset `name` gives the request fields `known` that are not in `explicit` (and whose
    setting's condition holds for `current`, the request's values), and the record of what it did."""
    preset = FRAMEWORK_PRESETS[name]
    current = dict(current)
    updates: dict[str, Any] = {}
    applied = FrameworkApplied(name=preset.name, title=preset.title, note=preset.note)
    for setting in preset.settings:
        fields = [f for f in setting.fields if f in known]
        if not fields:
            continue
        guard = {g for f in fields for g in RELATED_FIELDS.get(f, (f,))}
        given = sorted(guard & set(explicit))
        if given:
            applied.kept.extend(g for g in given if g not in applied.kept)
            applied.kept_values.update({g: current.get(g) for g in given})
            if not _agrees(setting, given, current):
                continue
        if not condition_holds(setting.when, precision=_precision_of(current), tp=int(current.get("tp") or 1),
                               zero=int(current.get("zero") or 0), method=str(current.get("method") or "full"),
                               compile=bool(current.get("compile"))):
            if not given:
                applied.not_applicable.append(f"{setting.label} (only {setting.when})")
            continue
        for name_, value in setting.values:
            if name_ not in known or name_ in given:
                continue
            updates[name_] = current[name_] = value
            applied.set_values[name_] = value
            applied.sources[name_] = setting.source
    return updates, applied


def _agrees(setting: PresetSetting, given: list[str], current: dict[str, Any]) -> bool:
    """Whether a coupled setting (PresetSetting.coupled) still fills its other fields: every field the user gave
    is one of the setting's, at the setting's value."""
    values = dict(setting.values)
    return setting.coupled and all(g in values and current.get(g) == values[g] for g in given)
