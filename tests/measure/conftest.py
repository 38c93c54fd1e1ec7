"""Tables the measurement tests print, repeated in pytest's terminal summary (seen without -s)."""

from __future__ import annotations

from typing import Any

import pytest

TABLES: list[str] = []


@pytest.fixture
def report_table() -> Any:
    def add(text: str) -> None:
        print(text)
        TABLES.append(text)

    return add


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TABLES:
        terminalreporter.section("rigplan check / probe: measured versus estimated")
        for text in TABLES:
            terminalreporter.write_line(text)
