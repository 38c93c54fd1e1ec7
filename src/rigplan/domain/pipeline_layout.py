"""Megatron-Core's pipeline layout string (`--pipeline-model-parallel-layout`), read as rigplan's per-stage split.

The string lists the pipeline's pp·vpp virtual stages in virtual-stage order, separated by '|': 'E' the embedding,
't' a decoder layer, 'm' a multi-token-prediction module, 'L' the loss (with the final norm and LM head). 'X*n'
repeats the letter before it n times, '(...)*n' the text in parentheses (no nesting), and commas are cosmetic:
DeepSeek-V3's PP16 x VPP2 recipe writes "Et*3|(tt|)*29,m|L" for a first stage of the embedding and 3 layers, 29
stages of 2 layers, the MTP module alone and the loss alone. Source of the grammar and its rules:
megatron/core/transformer/pipeline_parallel_layer_layout.py (`parse_str_to_list`, `validate_layer_layout`): the
number of stages is a multiple of pp and gives vpp; the embedding comes first and the loss last, once each; every
decoder layer comes before the MTP modules, which share one stage, the last chunk of its rank.

`rigplan.export.megatron.pipeline_layout` writes the same grammar, so an exported split reads back unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigplan.errors import InvalidSpec

LAYER_LETTERS = frozenset("EtmL")
"""Megatron-Core's layer letters: E embedding, t decoder layer, m MTP module, L loss."""
MAX_EXPANDED_CHARS = 200_000
"""Longest layout rigplan expands (after the repetitions): far above any real pipeline (a 10,000-layer model
in 65,536 stages is about 75,000 characters), low enough that a typo like 't*999999999' fails at once."""

_GROUP = re.compile(r"\(([^()]+)\)\*(\d+)")
_LETTER = re.compile(r"(.)\*(\d+)")


@dataclass(frozen=True, kw_only=True, slots=True)
class MegatronLayout:
    """A layout string read into rigplan's terms."""

    stage_layers: tuple[int, ...]
    """Decoder layers ('t') of each virtual stage, in virtual-stage order."""
    mtp_modules: int
    """MTP modules ('m') in the layout."""
    mtp_stage: int | None
    """The virtual stage that holds them (None without any)."""

    @property
    def stages(self) -> int:
        return len(self.stage_layers)


def _expand(text: str, pattern: re.Pattern[str], flag: str) -> str:
    def repeat(match: re.Match[str]) -> str:
        times = int(match.group(2))
        if len(match.group(1)) * times > MAX_EXPANDED_CHARS:
            raise InvalidSpec(f"{flag} {match.group(0)!r} repeats to more than {MAX_EXPANDED_CHARS:,} characters; "
                              "give the stages of a real pipeline")
        return match.group(1) * times

    expanded = pattern.sub(repeat, text)
    if len(expanded) > MAX_EXPANDED_CHARS:
        raise InvalidSpec(f"{flag} expands to more than {MAX_EXPANDED_CHARS:,} characters; "
                          "give the stages of a real pipeline")
    return expanded


def parse_megatron_layout(text: str, pp: int, flag: str = "--pipeline-layout") -> MegatronLayout:
    """The layout `text` for `pp` pipeline ranks, checked as Megatron-Core checks it (module docstring); raises
    InvalidSpec with one line naming what is wrong. The decoder-layer and MTP counts are checked against the model
    by the caller."""
    body = text.strip().strip("'\"").replace(",", "").replace(" ", "")
    if not body:
        raise InvalidSpec(f"{flag} is empty; give Megatron's layout, e.g. 'Et*3|(tt|)*29,m|L'")
    body = _expand(_expand(body, _GROUP, flag), _LETTER, flag)
    stages = body.split("|")
    for stage in stages:
        for letter in stage:
            if letter not in LAYER_LETTERS:
                raise InvalidSpec(f"{flag}: {letter!r} is not a layer letter (stage {stage!r}); Megatron's letters are "
                                  "E (embedding), t (decoder layer), m (MTP module) and L (loss), with | between "
                                  "stages and X*n or (...)*n for repeats")
    if len(stages) % pp:
        raise InvalidSpec(f"{flag} lists {len(stages)} stages, not a multiple of --pp {pp} (Megatron takes "
                          "vpp = stages / pp)")
    flat = body.replace("|", "")
    if flat.count("E") != 1 or not flat.startswith("E"):
        raise InvalidSpec(f"{flag} must start with the embedding 'E', once (got {flat.count('E')} 'E')")
    if flat.count("L") != 1 or not flat.endswith("L"):
        raise InvalidSpec(f"{flag} must end with the loss 'L', once (got {flat.count('L')} 'L')")
    mtp_modules = flat.count("m")
    mtp_stage = None
    if mtp_modules:
        if "t" in flat[flat.index("m"):]:
            raise InvalidSpec(f"{flag}: every decoder layer 't' must come before the MTP modules 'm'")
        holding = [k for k, stage in enumerate(stages) if "m" in stage]
        if len(holding) > 1:
            raise InvalidSpec(f"{flag}: the MTP modules 'm' must share one stage (they are in stages "
                              f"{', '.join(map(str, holding))})")
        mtp_stage = holding[0]
        if mtp_stage < len(stages) - pp:
            raise InvalidSpec(f"{flag}: the MTP modules must sit in the last chunk of a pipeline rank (one of the "
                              f"last {pp} stages), not stage {mtp_stage}")
    return MegatronLayout(stage_layers=tuple(stage.count("t") for stage in stages), mtp_modules=mtp_modules,
                          mtp_stage=mtp_stage)
