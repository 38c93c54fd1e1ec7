"""The MoE suite's figures per regime that every MoE estimate quotes (flow.regime.MOE_REGIME_FIGURES, and the share of
runs its band holds when each is left out of it, BAND_HELD_LEAVE_ONE_OUT), regenerated.

    python tools/moe_regimes.py            # rewrite MOE_REGIME_FIGURES in src/rigplan/flow/regime.py
    python tools/moe_regimes.py --check    # exit 1 if the figures there are not what the suite gives now

Run it after a change that moves MoE estimates or the MoE cases (as docs/validation.md is regenerated);
tests/validation/test_moe_regimes.py makes the same check.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from rigplan.validation.regimes import figures_source, leave_one_out, regime_figures
from rigplan.validation.run import run_suite

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "rigplan" / "flow" / "regime.py"
BEGIN = "MOE_REGIME_FIGURES: dict[str, tuple[int, float, float, float, int]] = {\n"
END = "}\n"
HELD = "BAND_HELD_LEAVE_ONE_OUT"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the figures are stale")
    args = parser.parse_args()
    text = SOURCE.read_text(encoding="utf-8")
    start = text.index(BEGIN) + len(BEGIN)
    stop = text.index(END, start)
    results = run_suite("moe")
    body = figures_source(regime_figures(results))
    check = leave_one_out(results)
    assert check is not None
    held = f"{HELD} = {check.inside_band / check.runs:.3f}\n"
    written = text[:start] + body + text[stop:]
    written = re.sub(rf"^{HELD} = .*\n", held, written, count=1, flags=re.M)
    if args.check:
        if written != text:
            print(f"{SOURCE.relative_to(ROOT)}: MOE_REGIME_FIGURES or {HELD} is stale; run python tools/moe_regimes.py")
            return 1
        print(f"MOE_REGIME_FIGURES and {HELD} are current")
        return 0
    SOURCE.write_text(written, encoding="utf-8")
    print(f"wrote {len(body.splitlines())} cells and {held.strip()} to {SOURCE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
