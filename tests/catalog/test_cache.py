"""The cached domain values of the built-in catalog (catalog/cache.py) are the validated ones, are never
served for changed records or code, and never stand in for a user's overlay."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rigplan.catalog import cache, load
from rigplan.catalog.load import BUILTIN_DIR, load_catalog


@pytest.fixture()
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV_VAR, str(folder))
    monkeypatch.delenv(load.ENV_VAR, raising=False)
    load._load.cache_clear()
    yield folder
    load._load.cache_clear()


def test_cached_values_equal_the_validated_records(cache_folder: Path) -> None:
    first = load_catalog()  # a miss: validates, then stores
    assert first.gpu_values is None
    assert list(cache_folder.glob("catalog-*.json"))
    load._load.cache_clear()
    fast = load_catalog()
    assert fast.gpu_values is not None and fast.model_values is not None
    assert sorted(fast.gpus) == sorted(first.gpus) and sorted(fast.models) == sorted(first.models)
    for gpu_id, record in first.gpus.items():
        assert fast.gpu_domain(gpu_id) == record.to_domain(), gpu_id
    for model_id, record in first.models.items():
        assert fast.model_domain(model_id) == record.to_domain(), model_id
    # the records themselves are still there, validated on first use
    assert fast.gpu("h100-sxm") == first.gpu("h100-sxm")


def test_a_changed_or_added_record_changes_the_fingerprint(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(BUILTIN_DIR, data)
    before = cache.fingerprint(data)
    assert before == cache.fingerprint(BUILTIN_DIR)
    record = data / "gpus" / "h100-sxm.yaml"
    record.write_text(record.read_text(encoding="utf-8").replace("tdp_w: 700", "tdp_w: 701"), encoding="utf-8")
    changed = cache.fingerprint(data)
    assert changed != before
    (data / "models" / "extra.yaml").write_text("id: extra\n", encoding="utf-8")
    assert cache.fingerprint(data) not in (before, changed)


def test_a_damaged_cache_file_is_a_miss(cache_folder: Path) -> None:
    key = cache.fingerprint(BUILTIN_DIR)
    assert key is not None
    cache_folder.mkdir(parents=True)
    path = cache_folder / f"catalog-{key[:32]}.json"
    broken = json.dumps({"key": key, "gpus": {"x": 1}})
    for junk in ("{not json", json.dumps({"key": "other", "gpus": {}, "models": {}}), broken):
        path.write_text(junk, encoding="utf-8")
        assert cache.load(key) is None
    catalog = load_catalog()
    assert catalog.gpu_domain("h100-sxm") == catalog.gpu("h100-sxm").to_domain()


def test_an_unwritable_cache_folder_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(cache.CACHE_ENV_VAR, str(blocker / "cache"))
    load._load.cache_clear()
    try:
        assert load_catalog().gpu("h100-sxm").id == "h100-sxm"
    finally:
        load._load.cache_clear()


def test_overlays_are_validated_not_cached(cache_folder: Path, tmp_path: Path) -> None:
    load_catalog()
    overlay = tmp_path / "overlay"
    (overlay / "gpus").mkdir(parents=True)
    shutil.copy(BUILTIN_DIR / "gpus" / "h100-sxm.yaml", overlay / "gpus" / "h100-sxm.yaml")
    catalog = load_catalog([overlay])
    assert catalog.gpu_values is None and catalog.model_values is None
    bad = overlay / "gpus" / "h100-sxm.yaml"
    bad.write_text(bad.read_text(encoding="utf-8") + "unknown_key: 1\n", encoding="utf-8")
    load._load.cache_clear()
    env = {**os.environ, "RIGPLAN_CATALOG": str(overlay)}
    run = subprocess.run([sys.executable, "-m", "rigplan.cli.main", "memory", "llama-3.1-8b"], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.startswith("rigplan: error: ") and "unknown_key" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_memory_with_a_warm_cache_imports_no_yaml_or_catalog_schema(cache_folder: Path) -> None:
    code = ("import sys; from rigplan.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('loaded:', *sorted(m for m in ('yaml', 'rigplan.catalog.schema') if m in sys.modules), "
            "file=sys.stderr)")
    env = {**os.environ, cache.CACHE_ENV_VAR: str(cache_folder)}
    args = [sys.executable, "-c", code, "memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"]
    cold = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    warm = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    assert "rigplan.catalog.schema" in cold.stderr
    assert warm.stderr.strip() == "loaded:"
    assert warm.stdout == cold.stdout


def test_other_versions_caches_are_kept_up_to_a_few(cache_folder: Path) -> None:
    catalog = load_catalog()
    gpus = {"h100-sxm": catalog.gpu_domain("h100-sxm")}
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(cache.KEEP + 2)]
    for i, key in enumerate(keys):
        cache.store(key, gpus, {})
        os.utime(cache_folder / f"catalog-{key[:32]}.json", (1000 + i, 1000 + i))
    kept = sorted(cache_folder.glob("catalog-*.json"))
    assert len(kept) == cache.KEEP
    assert cache.load(keys[-1]) == (gpus, {})
    assert cache.load(keys[0]) is None
