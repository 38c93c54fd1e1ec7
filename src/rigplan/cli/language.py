"""`--lang` / RIGPLAN_LANG: the language of everything the CLI prints.

The commands print English; in another language the text is translated on its way out (rigplan.i18n):
every rich `Console.print` (its strings and the title, headings and cells of its tables, before rich
lays them out, so that wide characters keep the columns straight), the error line, and the sentences
of `--json` output. Nothing is loaded for English.
"""

from __future__ import annotations

from typing import Any

import click

from rigplan import i18n

_patched = False


def language_option(func: Any) -> Any:
    return click.option(
        "--lang", type=click.Choice(i18n.LANGUAGES, case_sensitive=False), default=None, expose_value=False,
        is_eager=True,
        callback=_set_language,
        help=f"Language of the output: en or zh (Chinese). Default: ${i18n.ENV_VAR}, else en. Numbers, units, "
             "flag names and model/GPU ids stay as typed; --json keys and codes stay English.")(func)


def _set_language(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    lang = i18n.resolve_language(value)
    i18n.set_language(lang)
    if lang != "en":
        _translate_rich_output()
    ctx.call_on_close(lambda: i18n.set_language("en"))


def tr(text: str) -> str:
    """`text` in the CLI's language."""
    lang = i18n.active_language()
    return text if lang == "en" else i18n.translate(text, lang)


def error_line(message: str, lang: str | None = None) -> str:
    line = f"rigplan: error: {message}"
    lang = lang or i18n.active_language()
    return line if lang == "en" else i18n.translate(line, lang)


def _translate_rich_output() -> None:
    """Route rich's Console.print through the catalog while a non-English language is active."""
    global _patched
    if _patched:
        return
    from rich.console import Console
    from rich.table import Table

    original = Console.print

    def translated(obj: Any) -> Any:
        if isinstance(obj, str):
            return tr(obj)
        if isinstance(obj, Table):
            _translate_table(obj)
        return obj

    def print_translated(self: Console, *objects: Any, **kwargs: Any) -> None:
        if i18n.active_language() != "en":
            objects = tuple(translated(obj) for obj in objects)
        original(self, *objects, **kwargs)

    Console.print = print_translated  # type: ignore[method-assign]
    _patched = True


def _tr_cell(cell: str) -> str:
    """A cell the command escaped (`rich.markup.escape`: text with brackets) is translated as its plain text."""
    if "\\[" not in cell:
        return tr(cell)
    from rich.markup import escape

    return escape(tr(cell.replace("\\[", "[")))


def _translate_table(table: Any) -> None:
    if getattr(table, "_rigplan_translated", False):
        return
    if isinstance(table.title, str):
        table.title = tr(table.title)
    if isinstance(table.caption, str):
        table.caption = tr(table.caption)
    for column in table.columns:
        if isinstance(column.header, str):
            column.header = tr(column.header)
        column._cells = [_tr_cell(cell) if isinstance(cell, str) else cell for cell in column._cells]
    table._rigplan_translated = True
