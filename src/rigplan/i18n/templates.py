"""The template engine behind rigplan.i18n: English message templates compiled to regexes, matched most specific
first, nested messages translated recursively. Imported only when a language other than English is asked for.

May import: nothing.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"\{(\w+)([*#~^]?)\}")
_VALUE = r"(?:(?!: ).)*?"
"""A value copied as typed (a number, a name, a path) holds no ': ' (that would be a message's frame)."""
_NESTED = r".*?"
_KINDS = {"": _VALUE, "*": _NESTED, "#": r"[-+~$¥]?\d[\d.,]*(?:e[-+]?\d+)?(?:\s?[A-Za-z%万亿]+)?", "~": r"\S+",
          "^": _NESTED}
"""{name}: a value as typed; {name*}: a nested message, translated; {name#}: a number (with a unit);
{name~}: one word (a path, a flag, an id); {name^}: a quoted text (a source), kept as written, ': ' and all."""
_MARKUP = re.compile(r"^(\[[a-z ]+\])(.*)(\[/[a-z ]*\])$", re.S)


class _Template:
    """One English template: its regex (compiled on first use), the translation, the nested placeholders, and
    its longest literal piece (a text without it cannot match: the fast first test)."""

    __slots__ = ("_pattern", "anchor", "nested", "regex", "target")

    def __init__(self, regex: str, target: str, nested: frozenset[str], anchor: str) -> None:
        self.regex, self.target, self.nested, self.anchor = regex, target, nested, anchor
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self.regex, re.S)
        return self._pattern


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
                regex, _PLACEHOLDER.sub(r"{\1}", target), nested, max(literals, key=len))))
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


