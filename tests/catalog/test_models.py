"""Built-in model catalog: every required record loads, is sourced, and reproduces its published count.

count_params(arch).total must be within 0.5% of `official_params` for every model, and `.active`
within 0.5% of `official_active_params` for every MoE model, with two documented kinds of exception:

* active_excludes_input_embedding (a field of the record): the authors publish an active count
  without the input embedding table (they do count the output head); the check compares
  `active_published` (= active - embedding) for those.
* COARSE_PUBLISHED: the only published figure is coarser than 0.5%. Each entry carries the widest
  error it allows and why; a companion test fails when an entry is no longer needed.

Where an exact count of the released checkpoint is published by a third party (CHECKPOINT_COUNTS),
the count must match it to the parameter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rigplan.catalog.hf_config import SUPPORTED_MODEL_TYPES
from rigplan.catalog.load import BUILTIN_DIR, ENV_VAR, Catalog, load_catalog
from rigplan.catalog.schema import ModelRecord
from rigplan.estimate.params import ParamCounts, count_params

REQUIRED_IDS = (
    "gpt-3-175b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b",
    "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b",
    "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b", "gemma-2-9b",
    "phi-3-mini", "gpt-neox-20b", "bloom-176b", "opt-175b", "gpt2-124m", "mpt-7b", "mpt-30b",
    "llama-4-scout", "llama-4-maverick", "kimi-k2", "glm-4.5",
    "llama-3.3-70b", "qwen2.5-14b", "qwen2.5-32b", "qwen3-4b", "qwen3-14b", "qwen3-32b", "mistral-nemo-12b",
    "mistral-small-24b", "phi-4",
    "nemotron-4-15b", "nemotron-4-340b", "falcon-7b", "falcon-40b", "falcon-180b", "mistral-large-2",
    "deepseek-v2-lite", "deepseek-v2", "qwen3-0.6b", "qwen3-1.7b", "qwen2.5-0.5b", "qwen2.5-1.5b",
    "qwen2.5-3b", "llama-1-7b", "llama-1-13b", "llama-1-33b", "llama-1-65b",
)

TOLERANCE = 0.005
AS_OF = dt.date(2026, 12, 3)

ACTIVE_EXCLUDES_INPUT_EMBEDDING = {
    "deepseek-v3": "README_WEIGHTS.md: 36.6B activated 'including 0.9B for the output Head'",
    "deepseek-r1": "the DeepSeek-V3 architecture (same README_WEIGHTS.md convention; 37B activated in the R1 README)",
    "gpt-oss-20b": "model card Table 1: active = routed MLP + attention + unembedding (3.61B)",
    "gpt-oss-120b": "model card Table 1: active = routed MLP + attention + unembedding (5.13B)",
    "kimi-k2": "DeepSeek-V3 architecture and DeepSeek's convention (31.69B exact vs the card's 32B)",
    "kimi-linear-48b-a3b": "Moonshot's Kimi K2 convention; 3.11B exact without the input embedding vs the card's 3B "
                           "(3.48B with it)",
    "glm-4.5": "32.86B exact without the input embedding vs the card's 32B (33.63B with it)",
    "glm-4.5-air": "GLM-4.5's convention; 12.80B exact without the input embedding vs 12B (13.42B with it)",
    "glm-4.6": "GLM-4.5's shape and convention (32.86B exact without the input embedding vs the card's 32B)",
    "deepseek-v3.1": "DeepSeek-V3's shape and README_WEIGHTS.md convention (36.6B activated with the output head)",
    "kimi-k2-thinking": "Kimi K2's shape and convention (31.69B exact vs the card's 32B)",
    "deepseek-v3.2": "DeepSeek-V3's convention; 37.48B exact without the input embedding (V3's 36.6B and the indexers)",
    "glm-5": "GLM-4.5's convention; 40.83B exact without the input embedding vs the README's 40B (41.78B with it)",
    "glm-5.2": "GLM-4.5's convention; 40.30B exact without the input embedding vs GLM-5's 40B (41.25B with it)",
    "deepseek-v2": "DeepSeek's V3 convention; 20.85B exact without the input embedding vs 21B (21.38B with it)",
    "deepseek-v2-lite": "DeepSeek's V3 convention; 2.45B exact without the input embedding vs 2.4B (2.66B with it)",
    "minimax-m2": "10.41B exact without the input embedding vs the release's 10B (11.03B with it)",
    "ernie-4.5-300b-a47b": "47.08B exact without the input embedding vs the card's 47B (47.93B with it)",
    "nemotron-3-nano-30b-a3b": "the card's 'about 3.2B active, 3.6B with embeddings'; 3.23B exact without the input "
                               "embedding (3.58B with it)",
    "nemotron-3-super-120b-a12b": "the Nano card's convention; 12.23B exact without the input embedding vs NVIDIA's "
                                  "12B (12.77B with it)",
    "glm-4.7-flash": "GLM-4.5's convention; 3.58B exact without the input embedding vs the card's A3B (3.90B with it)",
}
"""The records whose active_excludes_input_embedding is true, and why."""

COARSE_PUBLISHED: dict[tuple[str, str], tuple[float, str]] = {
    ("grok-1", "total"): (
        0.01, "xAI gives 314B (whole billions), the 64 layers' 314.88B rounded down; with the tied embedding table "
              "the exact count is 315.68B (0.54% above)",
    ),
    ("grok-1", "active"): (
        0.07, "xAI gives '25% of the weights active' (a round share) of 314B, 78.5B; the exact count with the tied "
              "table is 83.76B (26.5% of 315.68B, 6.7% above)",
    ),
    ("glm-4.7-flash", "active"): (
        0.20, "the card names it 30B-A3B (one significant figure); the exact count without the input embedding is "
              "3.58B (19% above), 3.90B with it",
    ),
    ("granite-4.0-h-small", "total"): (
        0.01, "IBM gives 32B (whole billions); the exact count is 32.21B (0.65% above), equal to transformers' "
              "GraniteMoeHybridForCausalLM",
    ),
    ("granite-4.0-h-small", "active"): (
        0.025, "IBM gives 9B active (one significant figure); the exact count with the tied embedding table counted "
               "once is 8.80B (2.2% below)",
    ),
    ("trinity-mini", "active"): (
        0.16, "the report gives 3B activated (one significant figure); the exact count with both embedding tables is "
              "3.47B (15.8% above), 3.06B without the input one",
    ),
    ("trinity-large", "active"): (
        0.03, "the card gives ~13B active (two significant figures); the exact count with both embedding tables is "
              "13.37B (2.9% above)",
    ),
    ("mpt-7b", "total"): (
        0.01,
        "the model card's n_parameters is 6.7B; the published shape (32 x 4096, vocab 50432, no biases, "
        "ALiBi, tied) has 6,649,286,656 parameters, 0.76% less; MPT-30B's card figure (29.95B) matches "
        "its shape within 0.03%, so the 7B figure is a size label",
    ),
    ("qwen3-30b-a3b", "active"): (
        0.02,
        "the model card gives '3.3B activated' (two significant figures); the exact count with both "
        "embedding tables is 3,353,032,704 (1.6% above)",
    ),
    ("nemotron-3-nano-30b-a3b", "active"): (
        0.01,
        "the model card gives about 3.2B active without embeddings (two significant figures); the exact count "
        "without the input embedding is 3,227,751,872 (0.87% above), with it 3,580,073,408 (the card's 3.6B)",
    ),
    ("nemotron-3-super-120b-a12b", "total"): (
        0.01,
        "NVIDIA gives '120B total' (two significant figures); the exact count without the multi-token-prediction "
        "block is 120,668,687,360 (0.56% above), as transformers' NemotronHForCausalLM counts it",
    ),
    ("nemotron-3-super-120b-a12b", "active"): (
        0.02,
        "NVIDIA gives '12B active' (two significant figures); the exact count without the input embedding is "
        "12,233,346,048 (1.9% above)",
    ),
    ("nemotron-h-56b", "total"): (
        0.01, "NVIDIA gives '56B' (a size label); the exact count is 56,324,350,464 (0.58% above), equal to "
              "transformers' NemotronHForCausalLM",
    ),
    ("nemotron-h-8b", "total"): (
        0.02, "NVIDIA gives '8B' (a size label); the exact count is 8,100,852,736 (1.3% above), equal to "
              "transformers' NemotronHForCausalLM",
    ),
    ("nemotron-nano-9b-v2", "total"): (
        0.02, "the name's '9B' (a size label, pruned from the 12B base); the exact count is 8,888,227,328 (1.2% "
              "below), equal to transformers' NemotronHForCausalLM",
    ),
    ("nemotron-nano-12b-v2", "total"): (
        0.03, "the name's '12B' (a size label); the exact count is 12,310,001,152 (2.6% above), equal to "
              "transformers' NemotronHForCausalLM",
    ),
    ("deepseek-v3.2", "total"): (
        0.02, "the Hub's 685B counts the 14B multi-token-prediction module, which rigplan leaves out as DeepSeek's "
              "671B for V3 does; the main model counts 671,877,929,216 (1.9% below), equal to transformers' "
              "DeepseekV32ForCausalLM",
    ),
    ("deepseek-v3.2", "active"): (
        0.02, "DeepSeek gives V3's '37B activated' (two significant figures); the indexers add 0.85B, 37.48B exact "
              "without the input embedding (1.3% above)",
    ),
    ("glm-5", "active"): (
        0.03, "the README gives '40B active' (two significant figures); the exact count without the input embedding "
              "is 40,833,126,912 (2.1% above)",
    ),
    ("glm-5.2", "active"): (
        0.01, "GLM-5's '40B active' (two significant figures) for the same layers; GLM-5.2's 57 shared-index layers "
              "have no indexer, 40,298,928,384 exact without the input embedding (0.75% above)",
    ),
    ("qwen3-235b-a22b", "active"): (
        0.01,
        "the model card gives '22B activated' (two significant figures); the exact count with both "
        "embedding tables is 22.19B (0.87% above)",
    ),
    ("minimax-m2", "total"): (
        0.01, "the release gives '230 billion' (two significant figures); the shape gives 228.69B (0.57% below)",
    ),
    ("minimax-m2", "active"): (
        0.05, "the release gives '10 billion active'; the exact count without the input embedding is 10.41B (4.1% "
              "above), 9.80B without either embedding table",
    ),
    ("moonlight-16b-a3b", "active"): (
        0.03, "the name and card give '3B activated' (one significant figure); the exact count with both "
              "embedding tables is 2.915B (2.8% below)",
    ),
    ("llama-4-scout", "total"): (
        0.015,
        "the card's 109B counts the vision encoder too; the text decoder of config.json has 107.77B (1.1% below)",
    ),
    ("llama-4-scout", "active"): (
        0.015, "the card gives '17B activated' (two significant figures); the exact count is 17.17B",
    ),
    ("llama-4-maverick", "active"): (
        0.015, "the card gives '17B activated' (two significant figures); the exact count is 17.18B",
    ),
    ("kimi-k2", "total"): (
        0.03, "the card gives '1T' (one significant figure); config.json gives 1,026.4B (2.6% above)",
    ),
    ("kimi-k2", "active"): (
        0.015, "the card gives '32B activated' (two significant figures); the exact count is 31.69B",
    ),
    ("kimi-linear-48b-a3b", "total"): (
        0.025, "the card gives '48B total'; config.json gives 49.12B (2.3% above), and 48.37B without the embedding "
               "and output tables, which the figure matches",
    ),
    ("kimi-linear-48b-a3b", "active"): (
        0.04, "the card gives '3B activated' (one significant figure); the exact count is 3.11B without the input "
              "embedding (3.6% above), 3.48B with it and 2.73B without either table",
    ),
    ("glm-4.5", "total"): (
        0.01, "the card gives 355B; the 92 main layers of config.json hold 352.80B (0.6% below), with the "
              "multi-token-prediction layer 356.7B: the card's figure sits between the two",
    ),
    ("glm-4.5", "active"): (
        0.03, "the card gives '32B activated' (two significant figures); the exact count is 32.86B",
    ),
    ("glm-4.6", "total"): (0.01, "GLM-4.5's shape and figures (the card gives 355B; 352.80B in the main layers)"),
    ("glm-4.6", "active"): (0.03, "GLM-4.5's: '32B activated'; the exact count is 32.86B"),
    ("kimi-k2-thinking", "total"): (0.03, "Kimi K2's shape and figures ('1T'; config.json gives 1,026.4B)"),
    ("kimi-k2-thinking", "active"): (0.015, "Kimi K2's: '32B activated'; the exact count is 31.69B"),
    ("glm-4.5-air", "total"): (
        0.01, "the documentation gives 106B; the 46 main layers of the config hold 106.85B (0.8% above)",
    ),
    ("glm-4.5-air", "active"): (
        0.07, "the documentation gives '12B active'; the exact count is 12.80B without the input embedding and "
              "12.18B without the output head too, the convention the 12B (and GLM-4.5's 32B: 32.08B) matches",
    ),
    ("falcon-7b", "total"): (
        0.015, "the card gives only the size label 7B; the published shape (32 x 4544, multi-query, "
               "tied 65024 x 4544 embedding) has 6,921,720,704 parameters (1.1% below)",
    ),
    ("falcon-40b", "total"): (
        0.035, "the card gives only the size label 40B; the published shape (60 x 8192, 8 KV groups, tied "
               "embedding) has 41,303,293,952 parameters (3.3% above)",
    ),
    ("falcon-180b", "total"): (
        0.01, "the card gives only the size label 180B; the published shape (80 x 14848, 8 KV groups, tied "
              "embedding) has 178,557,088,768 parameters (0.8% below)",
    ),
    ("llama-1-7b", "total"): (
        0.01, "the paper's Table 2 gives 6.7B (two significant figures); the shape has 6,738,415,616, the "
              "same as Llama 2 7B, whose hub total reads 6.74B",
    ),
    ("qwen2.5-0.5b", "total"): (
        0.01, "the card gives 0.49B (two significant figures); the exact count is 494,032,768 (non-embedding "
              "357.9M against the card's 0.36B)",
    ),
    ("qwen3-0.6b", "total"): (
        0.01, "the card gives 0.6B (one significant figure); the exact count 596,049,920 equals the Keras Hub "
              "port's (CHECKPOINT_COUNTS)",
    ),
    ("qwen3-1.7b", "total"): (
        0.015, "the card gives 1.7B (two significant figures); the exact count 1,720,574,976 equals the Keras "
               "Hub port's (CHECKPOINT_COUNTS)",
    ),
    ("qwen3-next-80b-a3b", "active"): (
        0.30, "the card gives '3B activated' (one significant figure); the exact count is 3.87B with both embedding "
              "tables (29% above) and 3.25B without either, which the figure matches",
    ),
    ("qwen3.5-35b-a3b", "total"): (
        0.01, "the card's 35B counts the checkpoint (35,951,822,704 with the multi-token-prediction layer and the "
              "vision encoder); the language model alone has 34,660,610,688 (1.0% below)",
    ),
    ("qwen3.5-35b-a3b", "active"): (
        0.16, "the card gives '3B activated' (one significant figure); the exact count is 3.45B with both embedding "
              "tables (15% above), 2.95B without the input one",
    ),
    ("qwen3.5-397b-a17b", "active"): (
        0.025, "the card gives '17B activated' (two significant figures); the exact count with both embedding "
               "tables is 17.35B (2.1% above)",
    ),
    ("qwen3.5-122b-a10b", "active"): (
        0.025, "the card gives '10B activated' (two significant figures); the exact count with both embedding "
               "tables is 9.77B (2.3% below)",
    ),
    ("deepseek-v2", "active"): (
        0.01, "the README gives '21B activated' (two significant figures); the exact count without the input "
              "embedding is 20.85B (0.7% below)",
    ),
    ("deepseek-v2-lite", "active"): (
        0.025, "the card gives '2.4B activated' (two significant figures); the exact count without the input "
               "embedding is 2.45B (2.1% above)",
    ),
    ("dbrx", "active"): (
        0.015, "the card and blog give '36B active' (two significant figures); the exact count with both embedding "
               "tables is 36.47B (1.3% above), 35.85B without the input embedding (0.4% below): Databricks does not "
               "say which it counts",
    ),
    ("qwen3-coder-480b-a35b", "active"): (
        0.015, "the card gives '35B activated' (two significant figures); the exact count with both embedding "
               "tables is 35.47B (1.4% above)",
    ),
    ("qwen2-57b-a14b", "active"): (
        0.02, "the report gives '14 billion activated' (two significant figures); the exact count with both "
              "embedding tables is 14.25B (1.8% above)",
    ),
    ("olmoe-1b-7b", "active"): (
        0.015, "the paper gives '1.3B active' (two significant figures); the exact count with both embedding tables "
               "is 1.282B (1.4% below)",
    ),
    ("phi-3.5-moe", "active"): (
        0.01, "the card gives '6.6B active' (two significant figures); the exact count with both embedding tables "
              "is 6.64B (0.6% above), 6.51B without the input embedding",
    ),
    ("ernie-4.5-21b-a3b", "total"): (
        0.04, "the card and name give 21B; config.json gives 21.83B (3.9% above), 21.56B without the tied "
              "embedding table: the label is truncated",
    ),
    ("ernie-4.5-21b-a3b", "active"): (
        0.12, "the card gives '3B activated' (one significant figure); the exact count is 3.35B with the tied "
              "embedding table counted once, as the output head (11.7% above), 3.09B without it",
    ),
    ("hunyuan-a13b", "active"): (
        0.02, "the card gives '13B activated' (two significant figures); the exact count with the tied embedding "
              "table counted once is 12.75B (1.9% below)",
    ),
}

CHECKPOINT_COUNTS: dict[str, int] = {
    "qwen3-0.6b": 596_049_920,
    "qwen3-1.7b": 1_720_574_976,
    "qwen3-4b": 4_022_468_096,
    "qwen3-8b": 8_190_735_360,
    "qwen3-14b": 14_768_307_200,
    "qwen3-32b": 32_762_123_264,
}
"""Parameters of the released checkpoints as counted by the Keras Hub ports (keras-team/keras-hub,
keras_hub/src/models/qwen3/qwen3_presets.py, metadata "params"), tied embeddings counted once.
The Hugging Face hub totals of the tied Qwen3 models count the tied matrix twice (Qwen3-0.6B reads
751,632,384 = 596,049,920 + 151936 x 1024), so they are not used."""

FAMILIES_WITHOUT_HF_READER: dict[str, str] = {
    "gpt-3": "paper family: no weights or config.json were released",
    "falcon": "Hugging Face model_type of the Falcon records; rigplan's config.json reader has no falcon reader",
    "nemotron": "Hugging Face model_type of Nemotron-4; rigplan's config.json reader has no nemotron reader",
    "grok-1": "xAI released JAX code and a checkpoint without a config.json; the record reads run.py's config",
}
"""Record families that are not model types of rigplan's Hugging Face config reader, and why."""

MODEL_FILES = sorted((BUILTIN_DIR / "models").glob("*.yaml"))
MODEL_IDS = [p.stem for p in MODEL_FILES]


@pytest.fixture(scope="module")
def catalog() -> Iterator[Catalog]:
    """The built-in catalog only (no overlays from the environment)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV_VAR, raising=False)
        yield load_catalog()


def _record(path: Path) -> ModelRecord:
    return ModelRecord.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def _rel_error(counted: float, official: float) -> float:
    return (counted - official) / official


def _counted_active(model_id: str, counts: ParamCounts) -> int:
    return counts.active_published


def _tolerance(model_id: str, which: str) -> float:
    return COARSE_PUBLISHED.get((model_id, which), (TOLERANCE, ""))[0]


def test_all_required_ids_present(catalog: Catalog) -> None:
    missing = sorted(set(REQUIRED_IDS) - set(catalog.models))
    assert not missing, f"catalog lacks model records: {missing}"


def test_every_builtin_file_is_in_the_catalog(catalog: Catalog) -> None:
    assert set(MODEL_IDS) <= set(catalog.models)


@pytest.mark.parametrize("path", MODEL_FILES, ids=MODEL_IDS)
def test_record_loads_and_converts(path: Path) -> None:
    record = _record(path)
    assert record.id == path.stem
    arch = record.to_domain()
    assert arch.official_params == record.official_params
    assert arch.context_length > 0


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_total_params_match_official(catalog: Catalog, model_id: str) -> None:
    arch = catalog.model(model_id).to_domain()
    counted = count_params(arch).total
    err = _rel_error(counted, arch.official_params)
    tol = _tolerance(model_id, "total")
    assert abs(err) <= tol, (
        f"{model_id}: counted {counted:,} vs official {arch.official_params:,.0f} "
        f"({err:+.3%}, limit {tol:.1%})"
    )


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_active_params_match_official(catalog: Catalog, model_id: str) -> None:
    record = catalog.model(model_id)
    arch = record.to_domain()
    if arch.moe is None:
        assert record.official_active_params is None, f"{model_id}: dense model with an active count"
        return
    assert record.official_active_params, f"{model_id}: MoE record without official_active_params"
    counted = _counted_active(model_id, count_params(arch))
    err = _rel_error(counted, record.official_active_params)
    tol = _tolerance(model_id, "active")
    assert abs(err) <= tol, (
        f"{model_id}: counted active {counted:,} vs official {record.official_active_params:,.0f} "
        f"({err:+.3%}, limit {tol:.1%})"
    )


@pytest.mark.parametrize(("model_id", "which"), sorted(COARSE_PUBLISHED))
def test_coarse_published_exceptions_are_still_needed(catalog: Catalog, model_id: str, which: str) -> None:
    """An exception whose error has fallen within 0.5% must be removed from COARSE_PUBLISHED."""
    record = catalog.model(model_id)
    counts = count_params(record.to_domain())
    if which == "total":
        err = _rel_error(counts.total, record.official_params)
    else:
        assert record.official_active_params
        err = _rel_error(_counted_active(model_id, counts), record.official_active_params)
    assert abs(err) > TOLERANCE, f"{model_id} {which}: error {err:+.3%} is within 0.5%; drop the exception"


def test_active_convention_flags_are_the_listed_ones(catalog: Catalog) -> None:
    flagged = {m for m, r in catalog.models.items() if r.active_excludes_input_embedding}
    assert flagged == set(ACTIVE_EXCLUDES_INPUT_EMBEDDING)


def test_published_active_drops_exactly_the_input_embedding(catalog: Catalog) -> None:
    """gpt-oss-20b: the card's 3.61B, not the 4.19B that counts the embedding lookup."""
    counts = count_params(catalog.model("gpt-oss-20b").to_domain())
    assert counts.active - counts.active_published == counts.embedding == 201088 * 2880
    assert abs(counts.active_published / 3.61e9 - 1) < 0.005
    assert counts.active_matmul == counts.active_published


@pytest.mark.parametrize("model_id", sorted(ACTIVE_EXCLUDES_INPUT_EMBEDDING))
def test_active_convention_is_noted_in_the_record(catalog: Catalog, model_id: str) -> None:
    notes = " ".join(catalog.model(model_id).notes).lower()
    assert "input embedding" in notes, f"{model_id}: say in notes that the active count excludes it"


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_sources_and_date(catalog: Catalog, model_id: str) -> None:
    record = catalog.model(model_id)
    assert record.sources, f"{model_id}: no sources"
    for source in record.sources:
        assert source.title.strip(), f"{model_id}: a source without a title"
        assert source.url and source.url.startswith("https://"), f"{model_id}: source '{source.title}' has no url"
    assert record.as_of >= AS_OF, f"{model_id}: as_of {record.as_of} predates the catalog review"
    assert any("official_params" in note for note in record.notes), (
        f"{model_id}: say in notes where official_params comes from"
    )


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_family_is_a_model_type_the_hf_reader_knows(catalog: Catalog, model_id: str) -> None:
    family = catalog.model(model_id).family
    assert family in FAMILIES_WITHOUT_HF_READER or family in SUPPORTED_MODEL_TYPES, f"{model_id}: family '{family}'"


@pytest.mark.parametrize("family", sorted(FAMILIES_WITHOUT_HF_READER))
def test_families_without_a_reader_are_still_unread(catalog: Catalog, family: str) -> None:
    """An entry whose family the config reader has learned must leave FAMILIES_WITHOUT_HF_READER."""
    assert family not in SUPPORTED_MODEL_TYPES, f"the config reader now knows '{family}'; drop the exception"
    assert any(r.family == family for r in catalog.models.values()), f"no record of family '{family}'"


@pytest.mark.parametrize("model_id", sorted(CHECKPOINT_COUNTS))
def test_count_matches_the_checkpoint_count(catalog: Catalog, model_id: str) -> None:
    """Exact, not within 0.5%: the record's shape must be the checkpoint's to the parameter."""
    assert count_params(catalog.model(model_id).to_domain()).total == CHECKPOINT_COUNTS[model_id]


def test_moe_shapes_are_consistent(catalog: Catalog) -> None:
    for model_id, record in catalog.models.items():
        arch = record.to_domain()
        if arch.moe is None:
            continue
        counts = count_params(arch)
        assert counts.active < counts.total, model_id
        assert arch.num_moe_layers >= 1, model_id


def test_readme_counts_the_catalog(catalog: Catalog) -> None:
    """The README's catalog sentence ('It holds N parts ... and M models') states the built-in catalog as it is."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    parts = re.search(r"holds (\d+) parts", readme)
    models = re.search(r"and (\d+) models\.", readme)
    assert parts is not None and int(parts.group(1)) == len(catalog.gpus)
    assert models is not None and int(models.group(1)) == len(catalog.models)
