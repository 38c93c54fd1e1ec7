"""rigplan.files: YAML nested or indented beyond the cap is refused before PyYAML parses it (its scanner
slows down sharply with depth); real nesting within the cap still parses."""

from __future__ import annotations

import pytest

from rigplan.errors import InvalidSpec
from rigplan.files import YAML_NESTING_CAP, load_yaml


@pytest.mark.parametrize("text", ["[" * 20_000 + "]" * 20_000, "{a: " * 100 + "1" + "}" * 100,
                                  "a:\n" + "  " * 2000 + "b: 1\n"])
def test_yaml_beyond_the_nesting_cap_is_one_clear_error(text: str) -> None:
    with pytest.raises(InvalidSpec, match="YAML nested too deeply"):
        load_yaml(text, "offers")


def test_yaml_within_the_cap_parses() -> None:
    depth = YAML_NESTING_CAP
    assert load_yaml("[" * depth + "1" + "]" * depth, "x") is not None
    assert load_yaml("a: [1, {b: [2, '[[[']}]\n", "x") == {"a": [1, {"b": [2, "[[["]}]}
