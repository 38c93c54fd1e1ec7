"""Parsing and formatting of human quantities. Inside rigplan every value is in base units.

Memory capacities use binary prefixes (GiB); counts, rates and bandwidths use decimal prefixes.

May import: errors.
"""

from __future__ import annotations

import math
import re

from rigplan.errors import InvalidSpec

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12

_COUNT_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_BYTES_SUFFIX = {
    "b": 1, "kb": KB, "mb": MB, "gb": GB, "tb": TB,
    "kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
}
_DURATION_SUFFIX = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0,
                    "mo": 30 * 86400.0, "y": 365 * 86400.0}

_NUMBER = r"([+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)"


def parse_count(text: str | float | int, what: str = "value", *, allow_negative: bool = False) -> float:
    """Parse '2T', '300B', '1.5M', '7e9' or a plain number into a float count. allow_negative leaves the sign to
    the caller (a bound that names the whole allowed range)."""
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = re.fullmatch(_NUMBER + r"\s*([kmbgtp]?)", text.strip().lower().replace(",", "").replace("_", ""))
        if not match:
            raise InvalidSpec(f"{what} '{text}' is not a number; use e.g. 2T, 300B, 1.5M or 7e9")
        value = float(match.group(1)) * _COUNT_SUFFIX[match.group(2)]
    if not math.isfinite(value):
        raise InvalidSpec(f"{what} must be a finite number, got {text}")
    if value < 0 and not allow_negative:
        raise InvalidSpec(f"{what} must be >= 0, got {text}")
    return value


def parse_bytes(text: str | float | int, what: str = "size") -> float:
    """Parse '80GiB', '80GB' (decimal), '512MiB' or a plain number of bytes."""
    if isinstance(text, int | float):
        return float(text)
    match = re.fullmatch(_NUMBER + r"\s*([kmgt]?i?b)?", text.strip().lower())
    if not match:
        raise InvalidSpec(f"{what} '{text}' is not a size; use e.g. 80GiB, 512MiB or 40GB")
    return float(match.group(1)) * _BYTES_SUFFIX[match.group(2) or "b"]


def parse_duration(text: str | float | int, what: str = "duration") -> float:
    """Parse '30d', '12h', '2w', '3mo', '1y' or plain seconds into seconds."""
    if isinstance(text, int | float):
        return float(text)
    match = re.fullmatch(_NUMBER + r"\s*(s|min|m|h|d|w|mo|y)?", text.strip().lower())
    if not match:
        raise InvalidSpec(f"{what} '{text}' is not a duration; use e.g. 30d, 12h, 2w")
    return float(match.group(1)) * _DURATION_SUFFIX[match.group(2) or "s"]


def format_bytes(n_bytes: float) -> str:
    """Binary prefixes: 85899345920 -> '80.00 GiB'."""
    value = float(n_bytes)
    for unit, size in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value:.0f} B"


def format_number(value: float) -> str:
    """A number as people write it: 262,144; 0.5; 2.75; 1e30 where only an exponent can say it (never 1e+30)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}".replace("e+", "e")


def _three_significant(value: float) -> str:
    """3 significant digits, never in exponent notation: 8.03, 300, 1,000 (not 1e+03)."""
    text = f"{value:.3g}"
    return f"{value:,.0f}" if "e" in text else text


def format_count(n: float, unit: str = "") -> str:
    """Decimal prefixes: 8.03e9 -> '8.03 B'."""
    value = float(n)
    for suffix, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{_three_significant(value / size)} {suffix}{unit}".rstrip()
    return f"{_three_significant(value)} {unit}".rstrip()


def format_tokens(n: float) -> str:
    """A token count as people write it: 5e10 -> '50B tokens', 1e12 -> '1T tokens', 2.5e6 -> '2.5M tokens'."""
    return format_count(n).replace(" ", "") + " tokens"


def format_duration(seconds: float) -> str:
    """Human durations: '3.2 days', '41 min', '1.52 s'."""
    s = float(seconds)
    if s >= 1000 * 86400:
        return f"{s / 86400:,.0f} days"
    if s >= 2 * 86400:
        return f"{s / 86400:.1f} days"
    if s >= 2 * 3600:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.0f} min"
    if s >= 1:
        return f"{s:.2f} s"
    return f"{s * 1e3:.1f} ms"


def format_rate(flop_per_s: float) -> str:
    return f"{flop_per_s / 1e12:.1f} TFLOP/s"
