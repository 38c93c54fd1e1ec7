"""The READMEs' counts of validation rows are the suites' own: a row added without touching the README (English or
Chinese) fails here instead of leaving a stale figure on the front page (724 and 652 stood there at 768 rows)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigplan.validation.run import run_suite

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("memory", "throughput", "moe", "frontier", "dense_oos")


@pytest.fixture(scope="module")
def counts() -> dict[str, int]:
    sizes = {name: len(run_suite(name)) for name in SUITES}
    return {"all": sum(sizes.values()), **sizes}


@pytest.mark.parametrize(("readme", "pattern", "suite"), [
    ("README.md", r"against (\d[\d,]*) published measured", "all"),
    ("README.md", r"`--suite moe` (\d[\d,]*) mixture-of-experts runs", "moe"),
    ("README.md", r"(\d[\d,]*) dense runs added out of sample", "dense_oos"),
    ("README.zh.md", r"与 (\d[\d,]*) 个公开发表的实测结果对比", "all"),
    ("README.zh.md", r"`--suite moe` 含 (\d[\d,]*) 个混合专家", "moe"),
    ("README.zh.md", r"`--suite dense_oos` 含 (\d[\d,]*) 个样本外", "dense_oos"),
])
def test_the_readme_counts_the_rows_the_suites_hold(counts: dict[str, int], readme: str, pattern: str,
                                                    suite: str) -> None:
    text = (ROOT / readme).read_text(encoding="utf-8")
    found = re.findall(pattern, text)
    assert len(found) == 1, f"{readme}: {pattern!r} found {len(found)} times"
    assert int(found[0].replace(",", "")) == counts[suite], f"{readme} says {found[0]} for {suite}"
