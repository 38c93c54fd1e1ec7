"""Catalog architectures shared by the unit tests of the MoE memory terms."""

from __future__ import annotations

import pytest

from rigplan.catalog.load import load_catalog
from rigplan.domain.model import Architecture


@pytest.fixture(scope="module")
def dsv3() -> Architecture:
    return load_catalog().model("deepseek-v3").to_domain()


@pytest.fixture(scope="module")
def qwen3_moe() -> Architecture:
    return load_catalog().model("qwen3-30b-a3b").to_domain()
