"""Catalog records of four MoE models whose config.json rigplan already reads: GLM-4.7-Flash, Granite-4.0-H-Small,
Arcee Trinity Mini and Large (their config.json values: tests/unit/published_configs.py). Each record describes the
architecture the config.json reader gives for the published file (so the counts agree to the parameter), its official
figures are the publisher's rounding of those counts, it runs through the estimators, and its Hugging Face repository
name reads as the record."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Literal

import pytest
from hf_files import read_config
from published_configs import GLM47_FLASH, H_SMALL, TRINITY_LARGE, TRINITY_MINI

from rigplan.catalog.load import load_catalog
from rigplan.domain.model import Architecture
from rigplan.estimate.params import count_params
from rigplan.flow.estimate import estimate
from rigplan.flow.model_source import catalog_id_for_hub_name
from rigplan.flow.request import EstimateRequest

CONFIGS: dict[str, dict[str, Any]] = {
    "glm-4.7-flash": GLM47_FLASH,
    "granite-4.0-h-small": H_SMALL,
    "trinity-mini": TRINITY_MINI,
    "trinity-large": TRINITY_LARGE,
}
IDS = list(CONFIGS)

NOT_READ_FROM_THE_SHAPE = ("id", "name", "notes", "official_params", "official_active_params", "context_length")
"""Fields a record sets that are not the architecture the counts and the estimate use: its names, notes, published
figures and context length (H_SMALL has no max_position_embeddings; Trinity Large's fixture keeps Nano's 131,072 where
the record gives the 256K Arcee trained at)."""

Rounding = Literal["round", "cut"]
PUBLISHED: dict[str, tuple[Rounding, Rounding]] = {
    "glm-4.7-flash": ("round", "cut"),  # 30B-A3B: 29.94B rounds to 30; 3.58B without the input embedding cut to 3
    "granite-4.0-h-small": ("round", "round"),  # 32B and 9B: 32.21B and 8.80B (the tied table counted once)
    "trinity-mini": ("cut", "cut"),  # 26B and 3B: 26.12B and 3.47B (both embedding tables)
    "trinity-large": ("cut", "cut"),  # ~398B and ~13B: 398.64B and 13.37B (both embedding tables)
}
"""How each publisher's whole-billion figures relate to rigplan's exact counts (active as the record's convention counts
it: counts.active_published)."""


def _whole_billions(count: int, rounding: Rounding) -> float:
    billions = count / 1e9
    return float(round(billions) if rounding == "round" else math.floor(billions)) * 1e9


@pytest.fixture(scope="module")
def records() -> dict[str, Architecture]:
    catalog = load_catalog()
    return {model_id: catalog.model(model_id).to_domain() for model_id in IDS}


@pytest.mark.parametrize("model_id", IDS)
def test_record_counts_what_the_config_reader_counts(tmp_path: Path, records: dict[str, Architecture],
                                                     model_id: str) -> None:
    record = records[model_id]
    read = read_config(tmp_path, CONFIGS[model_id])
    ours, theirs = count_params(record), count_params(read)
    assert (ours.total, ours.active, ours.active_published) == (theirs.total, theirs.active, theirs.active_published)
    assert ours == theirs
    same_names = dataclasses.replace(read, **{f: getattr(record, f) for f in NOT_READ_FROM_THE_SHAPE})
    assert same_names == record, f"{model_id}: the record's architecture differs from the config.json reader's"


@pytest.mark.parametrize("model_id", IDS)
def test_official_figures_are_the_publishers_rounding_of_the_counts(records: dict[str, Architecture],
                                                                    model_id: str) -> None:
    record = records[model_id]
    counts = count_params(record)
    total_rule, active_rule = PUBLISHED[model_id]
    assert record.official_params == _whole_billions(counts.total, total_rule)
    assert record.official_active_params == _whole_billions(counts.active_published, active_rule)
    assert any("official_params" in note for note in record.notes)


def test_counts_to_the_parameter() -> None:
    """The exact counts the records' notes state."""
    catalog = load_catalog()
    counts = {m: count_params(catalog.model(m).to_domain()) for m in IDS}
    assert {m: (c.total, c.active_published) for m, c in counts.items()} == {
        "glm-4.7-flash": (29_943_390_976, 3_579_568_896),
        "granite-4.0-h-small": (32_207_337_984, 8_803_121_664),
        "trinity-mini": (26_123_970_560, 3_474_728_960),
        "trinity-large": (398_635_272_192, 13_371_672_576),
    }


@pytest.mark.parametrize(("model_id", "ep"), [
    ("glm-4.7-flash", 8), ("granite-4.0-h-small", 8), ("trinity-mini", 8), ("trinity-large", 8),
])
def test_estimate_runs(model_id: str, ep: int) -> None:
    """rigplan estimate ID --gpu h100-sxm --gpus 64 --ep EP gives a positive step time."""
    result = estimate(EstimateRequest(model=model_id, gpu="h100-sxm", gpus=64, ep=ep))
    step = float(result.step.step_time_s)
    assert math.isfinite(step) and step > 0


@pytest.mark.parametrize(("repo", "model_id"), [
    ("zai-org/GLM-4.7-Flash", "glm-4.7-flash"),
    ("ibm-granite/granite-4.0-h-small", "granite-4.0-h-small"),
    ("arcee-ai/Trinity-Mini", "trinity-mini"),
])
def test_repository_names_read_as_the_records(repo: str, model_id: str) -> None:
    assert catalog_id_for_hub_name(repo, load_catalog()) == model_id
