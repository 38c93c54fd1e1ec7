"""Take the screenshots in docs/screenshots/ with Debian's Chromium: `python -m tests.web.screenshots`.

Starts the app on a free 127.0.0.1 port, opens each view and saves a PNG. Chinese text needs a CJK font
(Debian: fonts-noto-cjk).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from .server import ServerThread

OUT = Path(__file__).parents[2] / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"


def settle(page: Page, action) -> None:  # type: ignore[no-untyped-def]
    before = int(page.evaluate("Number(document.body.dataset.done || 0)"))
    action()
    page.wait_for_function("(n) => Number(document.body.dataset.done || 0) > n", arg=before, timeout=60_000)


def view(page: Page, name: str) -> None:
    settle(page, lambda: page.click(f'#tabs button[data-view="{name}"]'))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with ServerThread() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
        page.goto(server.url + "/?lang=en")
        page.wait_for_selector("body[data-done]")
        settle(page, lambda: (page.fill("#f-model", "llama-3.1-70b"), page.fill("#f-gpus", "64"),
                              page.fill("#f-tp", "8"), page.fill("#f-tokens", "1T"),
                              page.select_option("#f-recompute", label="selective")))
        page.screenshot(path=str(OUT / "job.png"), full_page=True)

        view(page, "plan")
        settle(page, lambda: (page.fill("#f-budget", "3M"), page.fill("#f-deadline", "60d")))
        page.locator("#pareto-svg circle.pareto").nth(2).hover()
        page.screenshot(path=str(OUT / "plan.png"), full_page=True)

        view(page, "compare")
        settle(page, lambda: page.fill("#f-options", "64xh100-sxm, 64xh200-sxm, 128xa100-80gb-sxm, 64xmi300x"))
        page.screenshot(path=str(OUT / "compare.png"), full_page=True)

        view(page, "tco")
        settle(page, lambda: page.fill("#f-gpus", "64"))
        page.screenshot(path=str(OUT / "tco.png"), full_page=True)

        view(page, "lint")
        page.screenshot(path=str(OUT / "lint.png"), full_page=True)

        page.select_option("#lang", "zh")
        settle(page, lambda: page.select_option("#currency", "cny"))
        view(page, "tco")
        page.screenshot(path=str(OUT / "tco-zh-cny.png"), full_page=True)
        view(page, "job")
        page.screenshot(path=str(OUT / "job-zh-cny.png"), full_page=True)
        browser.close()
    print(f"wrote {', '.join(sorted(p.name for p in OUT.glob('*.png')))} to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
