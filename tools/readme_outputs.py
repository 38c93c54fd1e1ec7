"""The outputs README.md shows under its `$ rigplan ...` examples, regenerated from the current code.

    python tools/readme_outputs.py            # rewrite the outputs in README.md
    python tools/readme_outputs.py --check    # exit 1 if an output shown is not what the command prints now

A session block is a fenced code block whose commands start with `$ ` (continuation lines end with a
backslash); the lines after a command, up to the next command or the block's end, are its output, as
rigplan prints it 100 columns wide. tests/cli/test_readme_commands.py runs the same check.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WIDTH = "100"
ENTRY = [sys.executable, "-c", "from rigplan.cli.main import main; main()"]


def output_of(command: str) -> str:
    """What `rigplan ...` prints, run from the repository root, 100 columns wide, in English."""
    env = {k: v for k, v in os.environ.items() if k != "RIGPLAN_LANG"} | {"COLUMNS": WIDTH}
    args = shlex.split(command)[1:]
    proc = subprocess.run([*ENTRY, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{command}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout.rstrip("\n")


def rendered(text: str) -> str:
    """`text` with every session block's outputs replaced by what its commands print now."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        out.append(lines[i])
        if not lines[i].startswith("```"):
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        block = lines[i + 1:end]
        if not any(line.startswith("$ rigplan ") for line in block):
            out.extend(block)
        else:
            out.extend(_session(block))
        out.append(lines[end])
        i = end + 1
    return "\n".join(out)


def _session(block: list[str]) -> list[str]:
    out: list[str] = []
    j = 0
    while j < len(block):
        if not block[j].startswith("$ "):
            j += 1  # an old output line: replaced below
            continue
        command_lines = [block[j]]
        while command_lines[-1].endswith("\\"):
            j += 1
            command_lines.append(block[j])
        j += 1
        out.extend(command_lines)
        command = " ".join(re.sub(r"\\$", "", line).strip() for line in command_lines).removeprefix("$ ")
        out.extend(output_of(command).split("\n"))
    return out


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    new = rendered(text)
    if "--check" in argv:
        if new != text:
            print("README.md: an example's output is not what rigplan prints now; run python tools/readme_outputs.py",
                  file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"wrote {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
