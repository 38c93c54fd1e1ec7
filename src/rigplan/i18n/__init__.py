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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rigplan.i18n.templates import Catalog

LANGUAGES = ("en", "zh")
"""English (the text as written in the code) and Simplified Chinese."""

ENV_VAR = "RIGPLAN_LANG"

PROSE_KEYS = frozenset({
    "assumptions", "verdict", "message", "hint", "detail", "basis", "note", "notes", "find_max_note",
    "label", "layout", "offload_layout", "warning", "warnings", "reason", "reasons", "summary", "why", "msg",
    "infeasible",
})
"""JSON keys whose string values (or lists of strings) are sentences made by rigplan, translated in `--json`
output and in the web API's answers. Codes, ids, names and sources are never translated."""

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


_CATALOGS: dict[str, Catalog] = {}


def catalog(lang: str) -> Catalog | None:
    """The catalog of `lang`, read on first use (None for English, the language of the code)."""
    lang = normalize(lang)
    if lang == "en":
        return None
    if lang not in _CATALOGS:
        from pathlib import Path

        from rigplan.i18n.templates import Catalog, parse_catalog

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
