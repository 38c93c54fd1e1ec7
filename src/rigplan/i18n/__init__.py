"""rigplan's output in other languages: English text translated by message templates, at the output boundary.

rigplan writes its messages (errors, hints, verdicts, lint findings, assumptions, table labels) in English
where they arise. Another language is a catalog of those messages as templates, `zh.txt` for Chinese:

    en: {flag} must be a finite number, got {value}
    zh: {flag} 必须是有限数，收到 {value}

A placeholder `{name}` matches any text and is copied as typed (numbers, units, flag names, model and GPU
ids stay as they are); `{name*}` is a nested message, itself translated; `{name#}` only a number (with its
unit) and `{name~}` only one word, for short templates that would otherwise match inside sentences.
The CLI (`--lang`) translates what it prints and the web API (`lang`, Accept-Language) what it answers;
the code that makes a message never knows the language. A catalog is read only when its language is asked for.

May import: nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LANGUAGES = ("en", "zh")
"""English (the text as written in the code) and Simplified Chinese."""

ENV_VAR = "RIGPLAN_LANG"

PROSE_KEYS = frozenset({
    "assumptions", "verdict", "message", "hint", "detail", "basis", "note", "notes", "find_max_note",
    "label", "layout", "offload_layout", "warning", "warnings", "reason", "reasons", "summary", "why", "msg",
})
"""JSON keys whose string values (or lists of strings) are sentences made by rigplan, translated in `--json`
output and in the web API's answers. Codes, ids, names and sources are never translated."""

_PLACEHOLDER = re.compile(r"\{(\w+)([*#~]?)\}")
_VALUE = r"(?:(?!: ).)*?"
"""A value copied as typed (a number, a name, a path) holds no ': ' (that would be a message's frame)."""
_NESTED = r".*?"
_KINDS = {"": _VALUE, "*": _NESTED, "#": r"[-+~$¥]?\d[\d.,]*(?:e[-+]?\d+)?(?:\s?[A-Za-z%万亿]+)?", "~": r"\S+"}
"""{name}: a value as typed; {name*}: a nested message, translated; {name#}: a number (with a unit);
{name~}: one word (a path, a flag, an id)."""
_MARKUP = re.compile(r"^(\[[a-z ]+\])(.*)(\[/[a-z ]*\])$", re.S)


def normalize(lang: str | None) -> str:
    """'zh', 'zh-CN', 'zh_CN.UTF-8', 'zh-Hans' -> 'zh'; 'en-US' -> 'en'; anything else -> 'en'."""
    base = re.split(r"[-_.@]", (lang or "").strip().lower(), maxsplit=1)[0]
    return base if base in LANGUAGES else "en"


def from_accept_language(header: str | None) -> str:
    """The first language of an HTTP Accept-Language header that rigplan speaks, by q-value ('en' if none)."""
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        base = re.split(r"[-_]", tag.strip().lower(), maxsplit=1)[0]
        if base in LANGUAGES and q > 0:
            ranked.append((-q, index, base))
    return min(ranked)[2] if ranked else "en"


def resolve_language(flag: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The CLI's language: `--lang` if given, else RIGPLAN_LANG, else English. The system locale (LANG,
    LC_ALL) is not consulted: output that scripts read must not change with the machine it runs on."""
    if flag:
        return normalize(flag)
    env = os.environ if environ is None else environ
    return normalize(env.get(ENV_VAR))


@dataclass(frozen=True)
class _Template:
    pattern: re.Pattern[str]
    target: str
    nested: frozenset[str]
    anchor: str
    """The template's longest literal piece: a text without it cannot match (a fast first test)."""


class Catalog:
    """English message templates and their translations, matched most specific first."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.exact: dict[str, str] = {}
        templates: list[tuple[int, int, _Template]] = []
        for source, target in pairs:
            if not _PLACEHOLDER.search(source):
                self.exact[source] = target
                continue
            pieces = _PLACEHOLDER.split(source)
            literals = pieces[0::3]
            regex = "".join(
                re.escape(piece) if i % 3 == 0 else
                (f"(?P<{piece}>{_KINDS[pieces[i + 1]]})" if i % 3 == 1 else "")
                for i, piece in enumerate(pieces))
            nested = frozenset(name for name, kind in _PLACEHOLDER.findall(source) if kind == "*")
            templates.append((len(literals[0]), sum(map(len, literals)), _Template(
                re.compile(regex, re.S), _PLACEHOLDER.sub(r"{\1}", target), nested, max(literals, key=len))))
        # The most specific first: the most literal text, then the longest literal start.
        self.templates = [t for _, _, t in sorted(templates, key=lambda item: (-item[1], -item[0]))]

    def translate(self, text: str, depth: int = 0) -> str | None:
        """The translation of `text` by one template, or None when no template matches it."""
        return self._match(text, depth)[0]

    def _match(self, text: str, depth: int) -> tuple[str | None, bool]:
        """(translation, whether every nested message in it translated too). Of the templates that match, the
        first (the most specific, see __init__) whose nested messages all translate wins; else the first."""
        found = self.exact.get(text)
        if found is not None:
            return found, True
        partial: str | None = None
        for template in self.templates:
            if template.anchor not in text:
                continue
            match = template.pattern.fullmatch(text)
            if match is None:
                continue
            values = match.groupdict()
            complete = True
            for name in template.nested:
                if depth < 6:
                    values[name], ok = self._render(values[name], depth + 1)
                    complete = complete and ok
            result = template.target.format_map(values)
            if complete:
                return result, True
            partial = partial or result
        return partial, False

    def render(self, text: str, depth: int = 0) -> str:
        """`text` translated: whole, else without its surrounding markup or spaces, else clause by clause
        ('; ', then ', '), else as far as a template goes, else as it is."""
        return self._render(text, depth)[0]

    def _render(self, text: str, depth: int) -> tuple[str, bool]:
        """(translation, whether it is whole): text without a space (an id, a flag, a number) needs none."""
        markup = _MARKUP.match(text)
        if markup:
            inner, inner_ok = self._match(markup.group(2), depth)
            if inner_ok and inner is not None:
                return markup.group(1) + inner + markup.group(3), True
        found, ok = self._match(text, depth)
        if ok and found is not None:
            return found, True
        stripped = text.strip()
        if stripped != text and stripped:
            start = text.index(stripped)
            inner, inner_ok = self._render(stripped, depth)
            return text[:start] + inner + text[start + len(stripped):], inner_ok
        for sep, joined in (("; ", "；"), (", ", "，")):  # clauses, then a list of short notes
            if sep in text:
                parts = [self._render(part, depth) for part in text.split(sep)]
                if all(part_ok for _, part_ok in parts):
                    return joined.join(part for part, _ in parts), True
        if found is not None:
            return found, False
        return text, " " not in text


def parse_catalog(text: str) -> list[tuple[str, str]]:
    """`en:` / `zh:` line pairs; blank lines and `#` comments between pairs."""
    pairs: list[tuple[str, str]] = []
    source: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition(": ")
        if not sep or key not in ("en", "zh") or (key == "zh") != (source is not None):
            raise ValueError(f"catalog line {number}: expected 'en: ...' then 'zh: ...', got {line!r}")
        if key == "en":
            source = value
        else:
            assert source is not None
            pairs.append((source, value))
            source = None
    return pairs


_CATALOGS: dict[str, Catalog] = {}


def catalog(lang: str) -> Catalog | None:
    """The catalog of `lang`, read on first use (None for English, the language of the code)."""
    lang = normalize(lang)
    if lang == "en":
        return None
    if lang not in _CATALOGS:
        text = (Path(__file__).parent / f"{lang}.txt").read_text(encoding="utf-8")
        _CATALOGS[lang] = Catalog(parse_catalog(text))
    return _CATALOGS[lang]


def translate(text: str, lang: str) -> str:
    """`text` in `lang` (unchanged for English or when the catalog has no template for it)."""
    found = catalog(lang)
    return text if found is None else found.render(text)


def translate_data(data: Any, lang: str) -> Any:
    """A result dict with the sentences under PROSE_KEYS translated (a copy; English returns `data`)."""
    if catalog(lang) is None:
        return data

    def walk(value: Any, prose: bool) -> Any:
        if isinstance(value, str):  # a value without a space is a code ("fits", "on-demand"), never translated
            return translate(value, lang) if prose and " " in value else value
        if isinstance(value, dict):
            return {k: walk(v, isinstance(k, str) and k in PROSE_KEYS) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v, prose) for v in value]
        return value

    return walk(data, False)


_active = "en"


def set_language(lang: str) -> None:
    """The language of this process's CLI output (the web app passes its language per request instead)."""
    global _active
    _active = normalize(lang)


def active_language() -> str:
    return _active
