"""Every file rigplan reads goes through here: size-capped, regular files only, never blocking.

`read_text(path, what)` opens without blocking (a FIFO or a device is refused, not read), checks on
the open descriptor that it is a regular file no larger than the cap, then reads at most cap + 1
bytes and decodes UTF-8. `load_json` / `load_yaml` turn nesting too deep to parse into one clear
line instead of a RecursionError.

Over HTTP nobody may name a file on the server: the web worker runs requests inside
`confined(root)`. There, `user_path()` refuses any path unless the server was started with a data
folder (`rigplan serve --data-dir DIR`), in which case the path must resolve inside it. Files the
server writes for a request itself (an uploaded config.json) are granted by `grant()`.

May import: errors.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigplan.errors import InvalidSpec

FILE_CAP_BYTES = 4 * 1024 * 1024
"""Largest file rigplan reads (4 MiB). The largest real inputs are far smaller: a Hugging Face
config.json is a few KiB, a catalog record or a server build under 20 KiB, the biggest validation
case file under 1 MiB."""


@dataclass(frozen=True)
class _Confinement:
    root: Path | None
    granted: frozenset[Path] = field(default_factory=frozenset)


_CONFINEMENT: ContextVar[_Confinement | None] = ContextVar("rigplan_file_confinement", default=None)


@contextlib.contextmanager
def confined(root: str | Path | None) -> Iterator[None]:
    """Within this block, user-named paths must lie in `root` (None: no user path is allowed)."""
    token = _CONFINEMENT.set(_Confinement(Path(root).resolve() if root is not None else None))
    try:
        yield
    finally:
        _CONFINEMENT.reset(token)


@contextlib.contextmanager
def grant(path: Path) -> Iterator[None]:
    """Allow `path` (a file the server wrote for this request) inside a confined block."""
    current = _CONFINEMENT.get()
    if current is None:
        yield
        return
    token = _CONFINEMENT.set(_Confinement(current.root, current.granted | {path.resolve()}))
    try:
        yield
    finally:
        _CONFINEMENT.reset(token)


def paths_allowed() -> bool:
    """Whether a user may name files at all here (the CLI: yes; HTTP: only with a data folder)."""
    current = _CONFINEMENT.get()
    return current is None or current.root is not None or bool(current.granted)


def is_confined() -> bool:
    """Whether user-named paths are checked here (a request over HTTP), so that a bare name is never looked up
    on the file system."""
    return _CONFINEMENT.get() is not None


def user_path(text: str | Path, what: str, hint: str = "") -> Path:
    """The path a user named, checked against the confinement. `what` names the flag or field."""
    current = _CONFINEMENT.get()
    path = Path(text)
    if current is None:
        return path
    if "\x00" in str(text):
        raise InvalidSpec(f"{what}: contains a NUL character")
    if current.root is None:  # decided on the text alone: the file system is not looked at
        if current.granted and path.resolve() in current.granted:
            return path.resolve()
        advice = f"; {hint}" if hint else ""
        raise InvalidSpec(f"{what}: this server reads no files named in a request{advice} "
                          "(the server can be started with --data-dir DIR to allow files inside DIR)")
    resolved = (current.root / path).resolve()
    if resolved in current.granted:
        return resolved
    if not resolved.is_relative_to(current.root):
        raise InvalidSpec(f"{what}: '{text}' is outside the server's data folder")
    return resolved


def read_bytes(path: str | Path, what: str, cap_bytes: int = FILE_CAP_BYTES) -> bytes:
    """The bytes of a regular file of at most `cap_bytes`; InvalidSpec for anything else."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InvalidSpec(f"{what}: {p}: no such file") from None
    except IsADirectoryError:
        raise InvalidSpec(f"{what}: {p} is a folder; give a file") from None
    except OSError as err:
        raise InvalidSpec(f"{what}: {p}: cannot be read ({err.strerror or err})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InvalidSpec(f"{what}: {p} is a folder; give a file")
        if not stat.S_ISREG(info.st_mode):
            raise InvalidSpec(f"{what}: {p} is not a regular file (a pipe, socket or device is never read)")
        if info.st_size > cap_bytes:
            raise InvalidSpec(f"{what}: {p} is {info.st_size:,} bytes, over the {cap_bytes:,}-byte cap")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= cap_bytes:
            chunk = os.read(fd, min(1 << 20, cap_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap_bytes:
            raise InvalidSpec(f"{what}: {p} grew past the {cap_bytes:,}-byte cap while being read")
        return b"".join(chunks)
    except OSError as err:
        raise InvalidSpec(f"{what}: {p}: cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, what: str, cap_bytes: int = FILE_CAP_BYTES) -> str:
    """A UTF-8 text file of at most `cap_bytes` (see `read_bytes`)."""
    data = read_bytes(path, what, cap_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidSpec(f"{what}: {path} is not UTF-8 text (byte {err.start}: {err.reason})") from None


_WRITE_REASONS = {errno.ENXIO: "a pipe with no reader", errno.ENOSPC: "the disk is full",
                  errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                  errno.EROFS: "a read-only file system", errno.ENOTDIR: "a part of the path is not a folder"}
"""OS errors of a write, said in rigplan's words (so that they translate)."""


def write_text(path: str | Path, text: str, what: str) -> None:
    """Write a report or configuration the user asked for (UTF-8), never blocking: a FIFO without a reader is
    an error, not a hang; a folder, a missing folder or a full disk is one line naming `what` (the flag)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0), 0o666)
    except IsADirectoryError:
        raise InvalidSpec(f"{what} {p} is a folder; give a file name") from None
    except FileNotFoundError:
        raise InvalidSpec(f"{what} {p}: the folder {p.parent} does not exist; create it or choose another path") \
            from None
    except OSError as err:
        raise InvalidSpec(f"{what} {p}: cannot be written ({_WRITE_REASONS.get(err.errno or 0, err.strerror)})") \
            from None
    try:
        os.set_blocking(fd, True)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.ftruncate(fd, 0)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as err:
        raise InvalidSpec(f"{what} {p}: cannot be written ({_WRITE_REASONS.get(err.errno or 0, err.strerror)})") \
            from None
    finally:
        os.close(fd)


def load_json(text: str, where: str) -> Any:
    """json.loads, with every failure as one line naming `where`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidSpec(f"{where}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise InvalidSpec(f"{where}: JSON nested too deeply") from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() (4,300) digits
        raise InvalidSpec(f"{where}: a number of more than {sys.get_int_max_str_digits():,} digits") from None


YAML_NESTING_CAP = 64
"""Deepest `[`/`{` nesting, and indentation in columns over 2, that load_yaml parses. PyYAML's scanner slows
down sharply with depth: 1,000 nested `[` (2 KB) took it 5.9 s and a 40 KB file nested 20,000 deep 12 s,
where 64 deep takes 0.04 s (measured on the 2-CPU development machine). rigplan's own YAML files nest at
most 1 bracket and 6 columns deep."""


def _yaml_too_deep(text: str) -> bool:
    if any(len(line) - len(line.lstrip(" ")) > 2 * YAML_NESTING_CAP for line in text.splitlines()):
        return True
    depth = 0
    for bracket in re.sub(r"[^\[\]{}]", "", text):
        depth += 1 if bracket in "[{" else -1
        if depth > YAML_NESTING_CAP:
            return True
    return False


def load_yaml(text: str, where: str, loader: Any = None) -> Any:
    """yaml.load with the safe loader (or `loader`), every failure as one line naming `where`. Nesting deeper
    than YAML_NESTING_CAP is refused before parsing."""
    import yaml

    if _yaml_too_deep(text):
        raise InvalidSpec(f"{where}: YAML nested too deeply (more than {YAML_NESTING_CAP} levels or "
                          f"{2 * YAML_NESTING_CAP} columns of indentation)")
    try:
        return yaml.load(text, Loader=loader or yaml.SafeLoader)
    except yaml.YAMLError as err:
        raise InvalidSpec(f"{where}: not valid YAML ({str(err).splitlines()[0]})") from None
    except RecursionError:
        raise InvalidSpec(f"{where}: YAML nested too deeply") from None
    except (ValueError, TypeError, OverflowError):  # a value PyYAML parses but cannot build: 2026-13-45
        raise InvalidSpec(f"{where}: not valid YAML (a value that cannot be read, such as a date that does not "
                          "exist)") from None
