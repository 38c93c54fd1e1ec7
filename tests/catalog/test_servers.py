"""Integrity of the server-build records (src/rigplan/servers/data) and the overlay loader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rigplan.catalog.load import ENV_VAR, load_catalog
from rigplan.errors import InvalidSpec, UnknownEntry
from rigplan.servers import get_server, load_servers, read_server_file, resolve_build
from rigplan.servers.load import BUILTIN_DIR
from rigplan.servers.schema import ServerRecord

REQUIRED_IDS = {
    "article-entry", "article-mid", "article-cluster",
    "article-entry-fixed", "article-mid-fixed", "article-cluster-fixed",
    "dgx-h100", "dgx-h200", "dgx-b200", "mi300x-8gpu", "workstation-4x-rtx5090", "workstation-4x-rtx-pro-6000",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_overlays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def servers() -> dict[str, ServerRecord]:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV_VAR, raising=False)
        return load_servers()


def test_required_builds_present(servers: dict[str, ServerRecord]) -> None:
    assert set(servers) >= REQUIRED_IDS


@pytest.mark.parametrize("path", sorted(BUILTIN_DIR.glob("*.y*ml")), ids=lambda p: p.stem)
def test_file_name_matches_id_and_sources_present(path: Path) -> None:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    record = ServerRecord.model_validate(raw)
    assert record.id == path.stem
    assert record.sources and all(s.title.strip() for s in record.sources)
    assert record.as_of is not None


def test_gpu_and_claim_models_resolve(servers: dict[str, ServerRecord]) -> None:
    catalog = load_catalog()
    for record in servers.values():
        catalog.gpu(record.gpus.id)
        for claim in record.claims:
            if claim.model and not claim.model[0].isdigit():
                catalog.model(claim.model)


def test_corrections_point_at_article_builds(servers: dict[str, ServerRecord]) -> None:
    for bid in ("article-entry", "article-mid", "article-cluster"):
        assert servers[bid].category == "article" and servers[bid].budget is not None
        fixed = servers[f"{bid}-fixed"]
        assert fixed.category == "corrected" and fixed.corrects == bid
        assert fixed.price is not None and fixed.budget is not None


def test_article_builds_as_stated(servers: dict[str, ServerRecord]) -> None:
    entry, mid, cluster = servers["article-entry"], servers["article-mid"], servers["article-cluster"]
    assert (entry.chassis.model, entry.cpu.model, entry.gpus.id, entry.gpus.count, entry.gpus.link) == (
        "PowerEdge R7525", "AMD EPYC 7313P", "rtx-6000-ada", 2, "nvlink-bridge")
    assert entry.memory is not None and entry.memory.ram_gib == 256
    assert (entry.budget.min, entry.budget.max, entry.budget.currency) == (50000, 80000, "CNY")
    assert "AS-4124GO-NART" in mid.chassis.model and mid.cpu.model == "Intel Xeon Gold 6348" and mid.cpu.count == 2
    assert (mid.gpus.id, mid.gpus.count) == ("a100-80gb-sxm", 4)
    assert mid.storage[0].raid == "raid0" and mid.storage[0].count == 4 and mid.storage[0].capacity_tb == 3.84
    assert (cluster.nodes, cluster.gpus.count, cluster.total_gpus, cluster.cpu.model) == (8, 8, 64, "AMD EPYC 9654")
    assert cluster.budget.max == 1_000_000
    # what the article does not state stays unstated
    assert entry.psu is None and cluster.psu is None and cluster.memory is None


def test_psu_schemes_add_up(servers: dict[str, ServerRecord]) -> None:
    for record in servers.values():
        if record.psu:
            working, spare = record.psu.scheme
            assert working + spare == record.psu.count, record.id


def test_unknown_id_suggests(servers: dict[str, ServerRecord]) -> None:
    with pytest.raises(UnknownEntry, match="did you mean"):
        get_server("dgx-h10")
    assert get_server("DGX_H100").id == "dgx-h100"


def _write(folder: Path, name: str, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_overlay_adds_and_replaces(tmp_path: Path, servers: dict[str, ServerRecord]) -> None:
    mine = servers["dgx-h100"].model_dump(mode="json")
    mine.update(id="my-box", name="my box", category="user")
    _write(tmp_path / "servers", "my-box.yaml", mine)
    replaced = servers["dgx-h200"].model_dump(mode="json")
    replaced["name"] = "patched"
    _write(tmp_path / "servers", "dgx-h200.yaml", replaced)
    merged = load_servers([tmp_path])
    assert merged["my-box"].category == "user" and merged["dgx-h200"].name == "patched"
    assert load_servers()["dgx-h200"].name != "patched"


def test_overlay_file_name_must_match_id(tmp_path: Path, servers: dict[str, ServerRecord]) -> None:
    _write(tmp_path / "servers", "wrong-name.yaml", servers["dgx-h100"].model_dump(mode="json"))
    with pytest.raises(InvalidSpec, match="file name must match"):
        load_servers([tmp_path])


def test_build_file_errors_are_one_line(tmp_path: Path, servers: dict[str, ServerRecord]) -> None:
    bad = servers["dgx-h100"].model_dump(mode="json")
    bad["psu"]["redundancy"] = "four plus two"
    path = _write(tmp_path, "bad.yaml", bad)
    with pytest.raises(InvalidSpec, match=r"psu\.redundancy"):
        read_server_file(path)
    extra = servers["dgx-h100"].model_dump(mode="json")
    extra["colour"] = "green"
    with pytest.raises(InvalidSpec, match="colour"):
        read_server_file(_write(tmp_path, "extra.yaml", extra))
    nosrc = servers["dgx-h100"].model_dump(mode="json")
    nosrc["sources"] = []
    with pytest.raises(InvalidSpec, match="sources"):
        read_server_file(_write(tmp_path, "nosrc.yaml", nosrc))
    (tmp_path / "broken.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(InvalidSpec, match="not valid YAML"):
        read_server_file(tmp_path / "broken.yaml")
    with pytest.raises(InvalidSpec, match="not found"):
        resolve_build(str(tmp_path / "missing.yaml"))


def test_resolve_build_reads_a_file_or_an_id(tmp_path: Path, servers: dict[str, ServerRecord]) -> None:
    path = _write(tmp_path, "anything.yml", servers["article-mid"].model_dump(mode="json"))
    assert resolve_build(str(path)).id == "article-mid"
    assert resolve_build("article-mid").id == "article-mid"
