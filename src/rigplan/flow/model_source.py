"""Turn what the user typed (a catalog id, a config.json path, a size, shape flags) into domain values."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rigplan.bounds import BOUNDS
from rigplan.catalog.load import Catalog, load_catalog, normalize_id
from rigplan.catalog.views import model_show
from rigplan.domain.model import Architecture, MoE
from rigplan.errors import InvalidSpec, UnknownEntry
from rigplan.estimate.params import count_params
from rigplan.files import is_confined, user_path
from rigplan.units import format_count, parse_count

# Llama-family shapes by size (Touvron et al. 2023, Llama 2 Table 1; Llama 3 herd paper Table 3):
# (params, layers, hidden, heads, kv_heads). A generic size is fitted to the nearest row.
GENERIC_SHAPES = (
    (0.125e9, 12, 768, 12, 12),
    (0.35e9, 24, 1024, 16, 16),
    (1.0e9, 16, 2048, 32, 8),
    (3.0e9, 28, 3072, 24, 8),
    (7.0e9, 32, 4096, 32, 8),
    (13e9, 40, 5120, 40, 8),
    (34e9, 48, 8192, 64, 8),
    (70e9, 80, 8192, 64, 8),
    (175e9, 96, 12288, 96, 8),
    (405e9, 126, 16384, 128, 8),
    (1000e9, 128, 25600, 160, 8),
)
GENERIC_VOCAB = 128_256

SHAPE_FLAGS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "mlp", "positions",
               "norm", "tied_embeddings", "experts", "top_k", "expert_ffn", "shared_experts", "mtp_layers",
               "dense_layers", "moe_latent_size", "expert_groups", "group_top_k")


@dataclass(frozen=True)
class ResolvedModel:
    arch: Architecture
    source: str
    """'catalog', 'hf-config', 'generic-size' or 'flags'."""
    assumptions: list[str] = field(default_factory=list)


def generic_architecture(size_text: str) -> ResolvedModel:
    """A Llama-style dense model of about the given size: nearest shape, FFN solved to hit the size."""
    target = parse_count(size_text, "model size")
    if not 1e6 <= target <= BOUNDS["params"].high:
        raise InvalidSpec(f"model size {size_text} is out of range; give between 1M and 100T parameters, e.g. 7b")
    _, layers, hidden, heads, kv = min(GENERIC_SHAPES, key=lambda row: abs(row[0] - target) / row[0])
    probe = Architecture(id="generic", num_layers=layers, hidden=hidden, num_heads=heads, num_kv_heads=kv,
                         ffn=1, vocab=GENERIC_VOCAB)
    fixed = count_params(probe).total - layers * 3 * hidden
    ffn = max(int((target - fixed) / (3 * hidden * layers) / 256) * 256, 256)
    arch = replace(probe, id=f"generic-{size_text.lower()}", name=f"generic {size_text} dense model", ffn=ffn)
    note = (f"'{size_text}' is not a catalog id: assumed a generic Llama-style dense model with layers={layers}, "
            f"hidden={hidden}, heads={heads}, kv_heads={kv}, ffn={ffn}, vocab={GENERIC_VOCAB} "
            f"({count_params(arch).total / 1e9:.2f} B params); pass a config.json or shape flags for a real one")
    return ResolvedModel(arch=arch, source="generic-size", assumptions=[note])


def _spelled_as_path(model: str) -> bool:
    return model.endswith(".json") or "/" in model or "\\" in model or model.startswith((".", "~"))


def _names_a_file(model: str, catalog: Catalog) -> bool:
    """MODEL names a config.json (or a folder holding one). Spelled as a path (`./x`, `a/b`, `x.json`, `~/x`) it
    always does. A bare name that is a catalog id or a size never does: the catalog wins over a folder of the
    same name (`./NAME` reads the folder). Over HTTP only the spelling decides, so the file system is never
    looked at for an id or a size. Otherwise (the CLI) a bare name is a file, or a folder holding a
    config.json, if one exists; else it is looked up in the catalog."""
    if _spelled_as_path(model):
        return True
    if is_confined() or normalize_id(model) in catalog.models or _is_size(model):
        return False
    path = Path(model)
    return path.is_file() or (path / "config.json").is_file()


VARIANT_SUFFIXES = ("-instruct", "-base", "-chat", "-it", "-hf")
"""Name endings of a model's tuned or converted checkpoints that keep the base model's config.json shape
(Llama-3.1-8B-Instruct, Qwen3-8B-Base, Llama-2-7b-chat-hf, gemma-3-27b-it). Version and date tags
(Mistral-7B-Instruct-v0.3, Qwen3-30B-A3B-Instruct-2507) are not stripped: those can change the vocabulary
or the context length."""


def _hub_repo_name(model: str) -> str | None:
    """The 'Name' of a MODEL spelled as a Hugging Face repository ('Name' or 'org/Name'), else None."""
    parts = model.strip().split("/")
    if len(parts) > 2 or not all(parts) or model.endswith(".json") or model.startswith((".", "~")) or "\\" in model:
        return None
    return parts[-1]


def catalog_id_for_hub_name(model: str, catalog: Catalog) -> str | None:
    """The catalog id a Hugging Face repository name stands for, or None: 'org/Name' is read as 'Name',
    then a 'meta-' prefix (Meta-Llama-3.1-8B) and VARIANT_SUFFIXES are dropped. Nothing is downloaded."""
    repo_name = _hub_repo_name(model)
    if repo_name is None or normalize_id(model) in catalog.models:
        return None
    name = normalize_id(repo_name)
    if name.startswith("meta-llama-"):
        name = name[len("meta-"):]
    while name not in catalog.models:
        suffix = next((s for s in VARIANT_SUFFIXES if name.endswith(s)), None)
        if suffix is None:
            return None
        name = name[: -len(suffix)]
    return name


def _refuse_missing_hub_name(model: str, catalog: Catalog) -> None:
    """A Hugging Face repository name ('org/Name') with no such file here and no catalog model behind it (CLI): say
    both, with the closest catalog ids, instead of a bare 'no such file'."""
    repo_name = _hub_repo_name(model)
    if repo_name is None or "/" not in model or is_confined() or Path(model).exists():
        return
    close = UnknownEntry("model", normalize_id(repo_name), catalog.models).suggestions
    hint = f"closest catalog ids: {', '.join(close)}" if close else "`rigplan models` lists the catalog"
    raise InvalidSpec(f"{model}: no such config.json here and no catalog model of that name (rigplan downloads "
                      f"nothing); {hint}")


def _on_disk_too(model: str) -> bool:
    """A bare MODEL that the catalog answered also names something in the working folder (CLI only)."""
    return not is_confined() and not _spelled_as_path(model) and Path(model).exists()


def _is_size(text: str) -> bool:
    return re.fullmatch(r"[0-9]*\.?[0-9]+\s*[mbt]", text.strip().lower()) is not None


def _apply_shape_flags(arch: Architecture | None, flags: dict[str, Any]) -> Architecture:
    given = {k: v for k, v in flags.items() if v is not None}
    if arch is None:
        missing = [k for k in ("layers", "hidden", "heads", "vocab") if k not in given]
        if missing:
            raise InvalidSpec(
                "without MODEL, give at least --layers, --hidden, --heads and --vocab "
                f"(missing: {', '.join('--' + m.replace('_', '-') for m in missing)})"
            )
        arch = Architecture(id="custom", name="custom model", num_layers=given["layers"], hidden=given["hidden"],
                            num_heads=given["heads"], ffn=given.get("ffn") or 4 * given["hidden"],
                            vocab=given["vocab"])
    changes: dict[str, Any] = {}
    simple = {"layers": "num_layers", "hidden": "hidden", "heads": "num_heads", "kv_heads": "num_kv_heads",
              "head_dim": "head_dim", "ffn": "ffn", "vocab": "vocab", "mlp": "mlp", "positions": "positions",
              "norm": "norm", "tied_embeddings": "tied_embeddings"}
    for flag, attr in simple.items():
        if flag in given:
            changes[attr] = given[flag]
    if changes.get("positions") == "learned" and not arch.max_positions:
        changes["max_positions"] = arch.context_length or 2048
    moe_fields = {"experts": "num_experts", "top_k": "top_k", "expert_ffn": "expert_ffn",
                  "shared_experts": "num_shared_experts", "mtp_layers": "mtp_layers",
                  "dense_layers": "first_dense_layers", "moe_latent_size": "latent_size",
                  "expert_groups": "routing_groups", "group_top_k": "routing_group_topk"}
    overrides = {attr: given[flag] for flag, attr in moe_fields.items() if flag in given}
    if "first_dense_layers" in overrides:  # a leading count replaces a listed set (domain.model.MoE.dense_layers)
        overrides["dense_layers"] = ()
    if overrides:
        base = arch.moe
        if base is None and "num_experts" not in overrides:
            raise InvalidSpec("--top-k/--expert-ffn/--shared-experts/--mtp-layers/--dense-layers/--moe-latent-size/"
                              "--expert-groups/--group-top-k need --experts for a dense model")
        if base is not None:
            # the model's own routing, shared-expert width, dense layers and MTP stay unless a flag says otherwise
            changes["moe"] = replace(base, **overrides)
        else:
            changes["moe"] = MoE(**{"top_k": 2, "expert_ffn": changes.get("ffn", arch.ffn), **overrides})
    moe = changes.get("moe", arch.moe)
    layers = changes.get("num_layers", arch.num_layers)
    if "dense_layers" in given and moe is not None and moe.first_dense_layers >= layers:
        raise InvalidSpec(f"--dense-layers {moe.first_dense_layers} leaves no MoE layer among {layers}: give fewer "
                          "than --layers")
    if changes:
        changes["official_params"] = 0.0
        changes["official_active_params"] = 0.0
    return replace(arch, **changes) if changes else arch


def resolve_model(model: str | None, catalog: Catalog, shape_flags: dict[str, Any] | None = None) -> ResolvedModel:
    """MODEL is a catalog id, a config.json (or a folder holding one), a size like '70b', or None.
    A shape whose parameter count is beyond the bound `params` (shape flags or a config.json of
    10^6 hidden x 10^7 vocab) is an error, not an estimate."""
    resolved = _resolve_model(model, catalog, shape_flags)
    total = count_params(resolved.arch).total
    if BOUNDS["params"].problem(total):
        raise InvalidSpec(f"the model has {format_count(total)} parameters; rigplan plans models of up to "
                          f"{format_count(BOUNDS['params'].high)}: check --layers, --hidden, --ffn, --vocab "
                          "(or the config.json)")
    return resolved


def _resolve_model(model: str | None, catalog: Catalog, shape_flags: dict[str, Any] | None) -> ResolvedModel:
    flags = {k: v for k, v in (shape_flags or {}).items() if v is not None}
    unknown_flags = set(flags) - set(SHAPE_FLAGS)
    if unknown_flags:
        raise InvalidSpec(f"unknown shape flag(s): {', '.join(sorted(unknown_flags))}")
    if model is None:
        if not flags:
            raise InvalidSpec("give MODEL (a catalog id, a config.json path or a size like 7b) or shape flags")
        return ResolvedModel(arch=_apply_shape_flags(None, flags), source="flags",
                             assumptions=["model built from shape flags"])
    hub_id = catalog_id_for_hub_name(model, catalog)
    local_file = not is_confined() and _names_a_file(model, catalog) and Path(model).exists()
    if hub_id is not None and not local_file:
        return _with_flags(ResolvedModel(
            arch=catalog.model_domain(hub_id), source="catalog",
            assumptions=[f"'{model}' read as the catalog model {hub_id} (a tuned or converted checkpoint keeps "
                         "its base model's shape; rigplan downloads nothing: pass the config.json for another "
                         "shape)"]), flags)
    if _names_a_file(model, catalog):
        from rigplan.catalog.hf_config import architecture_from_hf_config

        _refuse_missing_hub_name(model, catalog)

        path = user_path(model, "model", "send the config.json's content as hf_config")
        arch = architecture_from_hf_config(path)
        resolved = ResolvedModel(arch=arch, source="hf-config", assumptions=[f"model read from {path}"])
    elif normalize_id(model) in catalog.models or not _is_size(model):
        try:
            arch = catalog.model_domain(model)
        except UnknownEntry as err:
            if _on_disk_too(model):
                raise InvalidSpec(f"{err}; '{model}' here is neither a config.json nor a folder holding one") \
                    from None
            raise
        resolved = ResolvedModel(arch=arch, source="catalog")
        if _on_disk_too(model):
            resolved.assumptions.append(f"'{model}' is the catalog model; the '{model}' in this folder was not "
                                        f"read (write ./{model} to read its config.json)")
    else:
        resolved = generic_architecture(model)
    return _with_flags(resolved, flags)


def _with_flags(resolved: ResolvedModel, flags: dict[str, Any]) -> ResolvedModel:
    if not flags:
        return resolved
    arch = _apply_shape_flags(resolved.arch, flags)
    overridden = ", ".join(f"{k}={v}" for k, v in flags.items())
    return ResolvedModel(arch=arch, source=resolved.source,
                         assumptions=[*resolved.assumptions, f"shape overridden by flags: {overridden}"])


def describe_model(model: str, overlays: Sequence[str] = ()) -> dict[str, Any]:
    """MODEL as rigplan reads it: a catalog id's record with its sources (catalog.views.model_show), else the
    architecture a config.json (or a folder holding one), a hub name of a catalog model or a size like '70b'
    resolves to, its parameter counts (total; active as model cards count them; active matmul weights, which 6N
    uses) and what was assumed."""
    catalog = load_catalog(list(overlays))
    if normalize_id(model) in catalog.models:
        return model_show(model, overlays)
    resolved = resolve_model(model, catalog)
    counts = count_params(resolved.arch)
    shape = asdict(resolved.arch)
    parts = {key: shape.pop(key) for key in ("moe", "mla", "linear_attention")}
    read = list(shape.pop("notes"))
    notes = [*read, *(a for a in resolved.assumptions if not any(a.endswith(note) for note in read))]
    return {"model": model, "source": resolved.source, "params_total": counts.total,
            "params_active": counts.active_published, "params_active_matmul": counts.active_matmul,
            "architecture": shape, **{key: value for key, value in parts.items() if value is not None},
            "notes": list(dict.fromkeys(notes))}
