"""Megatron-Core's pipeline layout string read as rigplan's per-stage split (domain.pipeline_layout): the grammar,
Megatron's rules as one-line errors, the export's strings read back, and the layouts the MoE suite's runs cite."""

from __future__ import annotations

import re

import pytest

from rigplan.domain.pipeline_layout import MAX_EXPANDED_CHARS, parse_megatron_layout
from rigplan.errors import InvalidSpec
from rigplan.export.megatron import pipeline_layout
from rigplan.validation.run import SUITES, load_case_file


def test_deepseek_v3_recipe_layout() -> None:
    # Megatron-Core's docs example for DeepSeek-V3 at PP16 x VPP2: embedding + 3 layers, 29 stages of 2, MTP, loss.
    parsed = parse_megatron_layout("Et*3|(tt|)*29,m|L", pp=16)
    assert parsed.stage_layers == (3, *[2] * 29, 0, 0)
    assert (parsed.stages, parsed.mtp_modules, parsed.mtp_stage) == (32, 1, 30)


def test_repeats_commas_spaces_and_shell_quotes() -> None:
    assert parse_megatron_layout("'Et*4|(t*4|)*14tmL'", pp=4).stage_layers == (4, *[4] * 14, 1)
    assert parse_megatron_layout("E, tt | t t | ttL", pp=3).stage_layers == (2, 2, 2)
    assert parse_megatron_layout("E(t|)*3tL", pp=2).stage_layers == (1, 1, 1, 1)
    assert parse_megatron_layout("Et*2L", pp=1).mtp_stage is None


@pytest.mark.parametrize(("stages", "mtp"), [((3, *[2] * 29, 2), 1), ((4, 4, 4, 1), 1), ((7, 8, 8, 7), 0),
                                             ((2, 0, 3, 3), 0), ((5,), 2)])
def test_exported_layouts_read_back(stages: tuple[int, ...], mtp: int) -> None:
    parsed = parse_megatron_layout(pipeline_layout(stages, mtp), pp=1)
    assert parsed.stage_layers == stages
    assert parsed.mtp_modules == mtp
    assert parsed.mtp_stage == (len(stages) - 1 if mtp else None)


@pytest.mark.parametrize(("text", "pp", "message"), [
    ("", 1, "is empty"),
    ("Et|tx|L", 1, "'x' is not a layer letter"),
    ("Et|tt|L", 2, "3 stages, not a multiple of --pp 2"),
    ("tE|tL", 1, "must start with the embedding"),
    ("Et|EtL", 1, "must start with the embedding"),
    ("Et|tL|L", 1, "must end with the loss"),
    ("Etm|tL", 1, "before the MTP modules"),
    ("Et|m|m|L", 1, "share one stage"),
    ("Et|t|m|||L", 2, "last chunk of a pipeline rank"),
    ("Et*999999999|L", 1, f"more than {MAX_EXPANDED_CHARS:,} characters"),
    ("E(t|)*99999tL", 1, f"more than {MAX_EXPANDED_CHARS:,} characters"),
])
def test_megatron_rules_fail_as_one_line(text: str, pp: int, message: str) -> None:
    with pytest.raises(InvalidSpec) as info:
        parse_megatron_layout(text, pp=pp)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


LAYOUT_IN_NOTES = re.compile(r"E[Etm*\d|(),]*L")


def _cited_layouts() -> list[tuple[str, str, object]]:
    """(case id, layout, case) for each MoE validation run whose notes cite its recipe's layout string."""
    cited = []
    for case in load_case_file(SUITES["moe"].default_file).cases:
        for text in sorted({m for note in case.notes for m in LAYOUT_IN_NOTES.findall(note) if "|" in m}):
            cited.append((case.id, text, case))
    return cited


CITED = _cited_layouts()


def test_the_suite_cites_layouts() -> None:
    assert len({case_id for case_id, _, _ in CITED}) >= 20


@pytest.mark.parametrize("case_id", sorted({c for c, _, _ in CITED}))
def test_cited_layout_gives_the_runs_split_and_estimate(case_id: str) -> None:
    """A run's entered split is what its recipe's layout string says, and entering the string instead of the
    counts gives the same estimate."""
    from rigplan.flow import estimate as speed

    options = [(text, case) for c, text, case in CITED if c == case_id]
    case = options[0][1]
    request = case.request  # type: ignore[attr-defined]
    matching = [text for text, _ in options
                if parse_megatron_layout(text, request.pp).stage_layers == tuple(request.stage_layers)]
    assert matching, f"no cited layout of {case_id} gives its stage_layers {request.stage_layers}"
    by_layout = request.model_copy(update={"stage_layers": [], "vpp": 1, "pipeline_layout": matching[0]})
    base = speed.estimate(request)
    assert base.setup.arch.moe is not None
    assert parse_megatron_layout(matching[0], request.pp).mtp_modules == base.setup.arch.moe.mtp_layers
    assert speed.estimate(by_layout).step.step_time_s == pytest.approx(base.step.step_time_s, rel=1e-12)
