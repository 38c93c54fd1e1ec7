"""The page in a real browser: Debian's headless Chromium driven by Playwright, against a live server.

Skipped only where /usr/bin/chromium is absent (CI installs Debian's `chromium` package). The
Playwright browser download is not used: it needs the network.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is absent (apt-get install -y chromium)", allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs the dev extra (playwright)")

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


@pytest.fixture()
def page(browser, live_server) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_server.url + "/")
    page.wait_for_selector("body[data-done]", timeout=TIMEOUT_MS)
    yield page
    context.close()
    assert not errors, errors


def post(live_server, path: str, body: dict[str, Any]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    request = urllib.request.Request(live_server.url + path, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def settle(page, action) -> None:  # type: ignore[no-untyped-def]
    """Do `action`, then wait until the page has answered a newer request than before it."""
    before = int(page.evaluate("Number(document.body.dataset.done || 0)"))
    action()
    page.wait_for_function("(n) => Number(document.body.dataset.done || 0) > n", arg=before, timeout=TIMEOUT_MS)


def test_memory_and_speed_then_plan_view(page, live_server) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: (page.fill("#f-model", "llama-3.1-70b"), page.select_option("#f-gpu", "h200-sxm"),
                          page.fill("#f-gpus", "16"), page.fill("#f-tp", "8")))
    banner = page.inner_text("#fit-banner")
    expected = post(live_server, "/api/memory", {"model": "llama-3.1-70b", "gpu": "h200-sxm", "gpus": 16, "tp": 8})
    assert f"{expected['per_gpu']['total_bytes'] / 2**30:.2f} GiB" in banner
    assert ("FITS" in banner) == expected["fits"] and "H200" in banner
    assert page.locator("#memory-out svg rect").count() >= 5  # the stacked bar, one rect per part
    assert page.locator("#memory-out svg line.capacity").count() == 1
    assert "s" in page.inner_text("#kpi-step") and "days" in page.inner_text("#kpi-ttt")
    # The catalog has no H200 purchase price: renting is priced, owning says why it is not.
    assert "AWS" in page.inner_text("#kpi-rent")
    assert "purchase price" in page.inner_text("#kpi-own")
    settle(page, lambda: page.select_option("#f-gpu", "h100-sxm"))
    assert "$" in page.inner_text("#kpi-rent") and "$" in page.inner_text("#kpi-own")

    # The plan view: the time-vs-cost scatter is drawn, hovering a point shows the candidate.
    page.click('#tabs button[data-view="plan"]')
    page.wait_for_selector("body[data-ready=plan]", timeout=TIMEOUT_MS)
    settle(page, lambda: page.select_option("#f-plan_gpus", ["h100-sxm", "a100-80gb-sxm"]))
    circles = page.locator("#pareto-svg circle")
    assert circles.count() > 3
    page.locator("#pareto-svg circle.pareto").first.hover()
    tooltip = page.locator("#tooltip")
    assert tooltip.is_visible() and "×" in tooltip.inner_text()
    assert page.locator("#ranked-table tbody tr").count() >= 1


def test_plan_view_gives_moe_options_their_published_spread(page) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: page.fill("#f-model", "qwen3-30b-a3b"))
    page.click('#tabs button[data-view="plan"]')
    page.wait_for_selector("body[data-ready=plan]", timeout=TIMEOUT_MS)
    settle(page, lambda: page.select_option("#f-plan_gpus", ["h100-sxm"]))
    spread = page.locator("#ranked-table .spread")
    assert spread.count() == page.locator("#ranked-table tbody tr").count() >= 1
    assert "–" in spread.first.inner_text()
    settle(page, lambda: page.fill("#f-model", "llama-3.1-8b"))
    assert page.locator("#ranked-table tbody tr").count() >= 1 and page.locator("#ranked-table .spread").count() == 0


def test_inputs_validate_as_you_type(page) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: page.fill("#f-tp", "abc"))
    assert "integer" in page.inner_text("#err-tp") and "invalid" in page.get_attribute("#f-tp", "class")
    settle(page, lambda: page.fill("#f-tp", "1"))
    assert page.inner_text("#err-tp") == ""
    settle(page, lambda: page.fill("#f-model", "llama-9"))
    assert "unknown model" in page.inner_text("#err-model")
    settle(page, lambda: page.fill("#f-model", "llama-3.1-8b"))
    settle(page, lambda: page.fill("#f-gpus", "6"))  # 6 GPUs with tp=1 is fine; tp=4 does not divide it
    settle(page, lambda: page.fill("#f-tp", "4"))
    assert "tp*pp*cp" in page.inner_text("#err-gpus")


def test_config_json_paste(page, live_server) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    config = (Path(__file__).parents[1] / "data" / "hf" / "mistral-7b" / "config.json")
    if not config.exists():
        config = next((Path(__file__).parents[1] / "data" / "hf").glob("*/config.json"))
    page.click('details[data-sub="sub.config"] summary')
    settle(page, lambda: page.fill("#f-hf_config", config.read_text()))
    assert page.is_disabled("#f-model")
    assert "FIT" in page.inner_text("#fit-banner")
    settle(page, lambda: page.fill("#f-hf_config", '{"model_type": "llama"}'))
    assert "config.json: missing key" in page.inner_text("#err-hf_config")


def test_tco_compare_lint_and_chinese(page, live_server) -> None:  # type: ignore[no-untyped-def]
    page.click('#tabs button[data-view="tco"]')
    page.wait_for_selector("body[data-ready=tco]", timeout=TIMEOUT_MS)
    lines = page.locator("#tco-svg polyline.tco-line")
    assert lines.count() >= 2  # owned, and one line per cloud offer
    expected = post(live_server, "/api/tco", {"gpu": "h100-sxm", "gpus": 1, "currency": "usd"})
    months = [b["months"] for b in expected["breakeven"] if b["months"] is not None and b["months"] <= 36]
    marks = page.locator("#tco-svg circle.breakeven")
    assert marks.count() == len(months)
    if months:
        drawn = sorted(float(marks.nth(i).get_attribute("data-months")) for i in range(marks.count()))
        assert drawn == pytest.approx(sorted(months), abs=1e-3)

    page.select_option("#lang", "zh")
    assert page.inner_text('#tabs button[data-view="plan"]') == "方案搜索"
    settle(page, lambda: page.select_option("#currency", "cny"))
    out = page.inner_text("#tco-out")
    assert "¥" in out and "万" in out

    page.click('#tabs button[data-view="compare"]')
    page.wait_for_selector("body[data-ready=compare]", timeout=TIMEOUT_MS)
    assert page.locator("#compare-table tbody tr").count() >= 5
    assert page.locator("#compare-table td.win").count() >= 1

    page.click('#tabs button[data-view="lint"]')
    page.wait_for_selector("body[data-ready=lint]", timeout=TIMEOUT_MS)
    assert page.locator("#lint-table tr[data-code]").count() >= 1
    assert "不通过" in page.inner_text("#lint-banner")  # the page is in Chinese since the TCO step


def test_first_story_is_the_clis(page, live_server) -> None:  # type: ignore[no-untyped-def]
    """The page opens on what `rigplan memory llama-3.1-8b --gpu h100-sxm` prints: one GPU, no sharding."""
    page.wait_for_selector("body[data-ready=job]", timeout=TIMEOUT_MS)
    expected = post(live_server, "/api/memory", {"model": "llama-3.1-8b", "gpu": "h100-sxm"})
    assert expected["layout"]["gpus"] == 1 and expected["layout"]["zero"] == 0
    banner = page.inner_text("#fit-banner")
    assert f"{expected['per_gpu']['total_bytes'] / 2**30:.2f} GiB" in banner and "H100" in banner


def test_an_moe_job_shows_its_time_to_train_under_the_published_runs_spread(page, live_server) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: (page.fill("#f-model", "qwen3-30b-a3b"), page.select_option("#f-gpu", "b200"),
                          page.fill("#f-gpus", "8"), page.fill("#f-ep", "8")))
    expected = post(live_server, "/api/estimate", {"model": "qwen3-30b-a3b", "gpu": "b200", "gpus": 8, "ep": 8,
                                                   "tokens": "100B"})
    low, high = expected["moe_accuracy"]["time_to_train_s_spread"]
    spread = page.locator("#kpi-ttt-spread")
    assert spread.inner_text().count("days") == 2 and f"{low / 86400:.1f}" in spread.inner_text()
    assert f"{high / 86400:.1f}" in spread.inner_text()
    assert (spread.get_attribute("title") or "").startswith("validation: "), spread.get_attribute("title")
    settle(page, lambda: (page.fill("#f-ep", ""), page.fill("#f-model", "llama-3.1-8b")))
    assert "days" in page.inner_text("#kpi-ttt") and page.locator("#kpi-ttt-spread").count() == 0


def _boxes_overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_infeasible_job_is_marked_and_its_bar_labels_stay_apart(page) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: (page.fill("#f-model", "llama-3.1-70b"), page.fill("#f-gpus", "1")))
    assert "DOES NOT FIT" in page.inner_text("#fit-banner")
    assert "INFEASIBLE" in page.inner_text("#infeasible-banner")
    ttt = page.locator("#kpi-ttt")
    assert "infeasible" in (ttt.get_attribute("class") or "") and "INFEASIBLE" in ttt.inner_text()
    assert "INFEASIBLE" in page.inner_text("#kpi-rent")
    svg = page.locator("#memory-out svg.stacked").bounding_box()
    total = page.locator("#memory-out svg .total-label").bounding_box()
    capacity = page.locator("#memory-out svg .cap-label").bounding_box()
    assert svg and total and capacity and not _boxes_overlap(total, capacity)
    for box in (total, capacity):
        assert svg["x"] - 1 <= box["x"] and box["x"] + box["width"] <= svg["x"] + svg["width"] + 1
    settle(page, lambda: page.fill("#f-model", "llama-3.2-1b"))
    assert page.locator("#infeasible-banner").count() == 0
    assert "infeasible" not in (page.locator("#kpi-ttt").get_attribute("class") or "")


def test_an_input_error_dims_the_old_results_and_says_so_in_plain_words(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_selector("body[data-ready=job]", timeout=TIMEOUT_MS)
    settle(page, lambda: page.fill("#f-tp", "3"))  # 3 does not divide the heads: the server says so (400/422)
    banner = page.locator("#error")
    assert banner.is_visible() and "HTTP" not in banner.inner_text()
    assert banner.inner_text().startswith("Check the input:")
    assert "stale" in (page.get_attribute("#view-job", "class") or "")
    assert page.evaluate("document.querySelector('#error').getBoundingClientRect().top") < 900
    settle(page, lambda: page.fill("#f-tp", "1"))
    assert not banner.is_visible() and "stale" not in (page.get_attribute("#view-job", "class") or "")


def test_owning_pays_the_capex_up_front_and_gets_the_resale_back_at_the_end(page, live_server) -> None:  # type: ignore[no-untyped-def]
    page.click('#tabs button[data-view="tco"]')
    page.wait_for_selector("body[data-ready=tco]", timeout=TIMEOUT_MS)
    points = [tuple(map(float, p.split(","))) for p in
              page.get_attribute('#tco-svg polyline[data-line="owned"]', "points").split()]
    (x_before, y_before), (x_end, y_end) = points[-2], points[-1]
    assert x_before == pytest.approx(x_end) and y_end > y_before  # a drop (SVG y grows downwards) at the horizon
    tco = post(live_server, "/api/tco", {"gpu": "h100-sxm", "gpus": 1, "currency": "usd"})["onprem"]
    running = tco["opex_usd_per_year"] * tco["years"]
    # The chart's y is linear in cost, so ratios of pixel differences are ratios of costs. Month 0 is the
    # whole capex; just before the end, capex + running costs; at the end the lifetime total (resale back).
    assert tco["lifetime_usd"] == pytest.approx(tco["capex_usd"] - tco["residual_credit_usd"] + running, rel=1e-6)
    y0 = points[0][1]
    assert (y0 - y_end) / (y0 - y_before) == pytest.approx((running - tco["residual_credit_usd"]) / running, rel=1e-3)


def test_chinese_mode_shows_the_servers_own_text_in_chinese(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_selector("body[data-ready=job]", timeout=TIMEOUT_MS)  # notes sit in closed <details>
    assert "(default; set --seq)" in page.text_content("#memory-out")
    settle(page, lambda: page.select_option("#lang", "zh"))
    memory = page.text_content("#memory-out")
    assert "序列长度 4096（默认；用 --seq 设置）" in memory and "(default; set --seq)" not in memory
    assert "每节点" in page.text_content("#speed-out")
    settle(page, lambda: page.select_option("#lang", "en"))
    assert "(default; set --seq)" in page.text_content("#memory-out")


def test_moe_fields_reach_the_estimate(page, live_server) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: (page.fill("#f-model", "qwen3-30b-a3b"), page.select_option("#f-gpu", "h100-sxm"),
                          page.fill("#f-gpus", "8"), page.fill("#f-ep", "8"), page.fill("#f-etp", "1")))
    dropless = page.inner_text("#kpi-step")
    page.click('details[data-sub="sub.moe"] summary')
    settle(page, lambda: page.check("#f-balanced_routing"))
    balanced = page.inner_text("#kpi-step")
    body = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 8, "ep": 8, "etp": 1}
    slow = post(live_server, "/api/estimate", body)["step_time_s"]
    fast = post(live_server, "/api/estimate", {**body, "balanced_routing": True})["step_time_s"]
    assert fast < slow and dropless != balanced


def test_a_plan_with_no_option_in_the_limits_says_infeasible_first(page, live_server) -> None:  # type: ignore[no-untyped-def]
    page.click('#tabs button[data-view="plan"]')
    page.wait_for_selector("body[data-ready=plan]", timeout=TIMEOUT_MS)
    settle(page, lambda: (page.fill("#f-model", "llama-3.1-70b"), page.select_option("#f-plan_gpus", ["h100-sxm"]),
                          page.fill("#f-budget", "1k"), page.fill("#f-deadline", "1d")))
    banner = page.locator("#plan-infeasible")
    assert banner.is_visible() and banner.inner_text().startswith("INFEASIBLE: no option meets both the budget")
    assert page.locator("#ranked-table tbody tr").count() == 0
    settle(page, lambda: (page.fill("#f-budget", ""), page.fill("#f-deadline", "")))
    assert page.locator("#plan-infeasible").count() == 0 and page.locator("#ranked-table tbody tr").count() >= 1


def test_compare_marks_an_option_that_cannot_run_and_says_why(page) -> None:  # type: ignore[no-untyped-def]
    page.click('#tabs button[data-view="compare"]')
    page.wait_for_selector("body[data-ready=compare]", timeout=TIMEOUT_MS)
    settle(page, lambda: (page.fill("#f-model", "llama-3.1-70b"), page.fill("#f-options", "1xh100-sxm, 64xh100-sxm")))
    heads = page.locator("#compare-table thead th")
    assert "INFEASIBLE" in heads.nth(1).inner_text() and "INFEASIBLE" not in heads.nth(2).inner_text()
    reason = page.locator('#compare-out .banner[data-option="1xh100-sxm"]')
    assert reason.inner_text() == "INFEASIBLE 1xh100-sxm: no layout fits this job in GPU memory"
    assert page.locator('#compare-out .banner[data-option="64xh100-sxm"]').count() == 0


def test_chinese_mode_shows_lint_findings_offer_kinds_and_verdicts_in_chinese(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_selector("body[data-ready=job]", timeout=TIMEOUT_MS)
    settle(page, lambda: page.select_option("#lang", "zh"))
    page.click('#tabs button[data-view="lint"]')
    page.wait_for_selector("body[data-ready=lint]", timeout=TIMEOUT_MS)
    assert page.inner_text("#lint-banner").startswith("不通过：")
    assert page.inner_text('#lint-table tr[data-code="psu.capacity"]').count("工作电源") == 1
    assert "错误" in page.inner_text('#lint-table span[data-severity="error"] >> nth=0')
    assert "放不下" in page.inner_text('#lint-table tr[data-code="workload.fit"]')  # article-mid's 70B claim
    page.click('#tabs button[data-view="tco"]')
    page.wait_for_selector("body[data-ready=tco]", timeout=TIMEOUT_MS)
    table = page.inner_text("#breakeven-table")
    assert "按需" in table and "on-demand" not in table and ("自建" in table or "云" in table)
    assert "按需" in page.inner_text("#tco-chart .legend")


def test_kernel_switches_reach_the_estimate(page, live_server) -> None:  # type: ignore[no-untyped-def]
    # balanced fp8 on Grace, one sequence a micro-batch: host-paced without graphs (estimate.moe_host.host_paced_s)
    settle(page, lambda: (page.fill("#f-model", "qwen3-30b-a3b"), page.select_option("#f-gpu", "gb200"),
                          page.fill("#f-gpus", "8"), page.fill("#f-ep", "8"), page.fill("#f-micro_batch", "1"),
                          page.select_option("#f-precision", "fp8")))
    page.click('details[data-sub="sub.moe"] summary')
    settle(page, lambda: page.check("#f-balanced_routing"))
    eager = page.inner_text("#kpi-step")
    settle(page, lambda: page.select_option("#f-cuda_graphs", "full"))
    graphed = page.inner_text("#kpi-step")
    body = {"model": "qwen3-30b-a3b", "gpu": "gb200", "gpus": 8, "ep": 8, "micro_batch": 1, "precision": "fp8",
            "balanced_routing": True}
    slow = post(live_server, "/api/estimate", body)["step_time_s"]
    fast = post(live_server, "/api/estimate", {**body, "cuda_graphs": "full"})["step_time_s"]
    assert fast < slow and eager != graphed
    assert page.locator("#f-fp8_attention").count() == 1
    assert page.locator("#kpi-host-load").count() == 0  # a full-iteration graph: the host issues nothing
    settle(page, lambda: page.select_option("#f-cuda_graphs", "none"))  # host-paced again: the bar shows the wait
    eager_body = post(live_server, "/api/estimate", body)
    host = eager_body["breakdown"]["host_s"]
    assert host > 0.0 and page.locator('#speed-out rect[data-part="host_s"]').count() == 1
    assert page.inner_text("#kpi-host-load .v") == f"{eager_body['breakdown']['host_load']:.2f}"
    assert page.get_attribute("#kpi-host-load", "title") == eager_body["moe_accuracy"]["note"]
    assert page.locator("#speed-out .stacked .total-label").text_content() == page.inner_text("#kpi-step .v")


def test_compare_marks_an_option_whose_layouts_are_all_over_the_memory(page) -> None:  # type: ignore[no-untyped-def]
    page.click('#tabs button[data-view="compare"]')
    page.wait_for_selector("body[data-ready=compare]", timeout=TIMEOUT_MS)
    settle(page, lambda: (page.fill("#f-model", "deepseek-v3"), page.fill("#f-options", "256xh100-sxm, 128xh100-sxm")))
    over = page.locator('#compare-out .banner[data-option="128xh100-sxm"]')
    assert over.inner_text().startswith("MAY NOT FIT 128xh100-sxm: over the GPU's memory")
    assert page.locator('#compare-out .banner[data-option="256xh100-sxm"]').count() == 0


def test_the_lora_rank_shows_and_is_sent_only_under_lora(page, live_server) -> None:  # type: ignore[no-untyped-def]
    settle(page, lambda: (page.fill("#f-model", "llama-3.1-8b"), page.select_option("#f-gpu", "h100-sxm")))
    assert page.locator("#f-lora_rank").is_hidden()  # a full fine-tune has no LoRA rank to give
    settle(page, lambda: page.select_option("#f-method", label="lora"))
    assert page.locator("#f-lora_rank").is_visible()
    settle(page, lambda: page.fill("#f-lora_rank", "64"))
    expected = post(live_server, "/api/memory", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "method": "lora",
                                                  "lora_rank": 64})
    assert f"{expected['per_gpu']['total_bytes'] / 2**30:.2f} GiB" in page.inner_text("#fit-banner")
    settle(page, lambda: page.select_option("#f-method", label="full"))
    assert page.locator("#f-lora_rank").is_hidden()
    full = post(live_server, "/api/memory", {"model": "llama-3.1-8b", "gpu": "h100-sxm"})
    assert f"{full['per_gpu']['total_bytes'] / 2**30:.2f} GiB" in page.inner_text("#fit-banner")
