"""The API answers in the language asked (`?lang=`, else Accept-Language): sentences translated, keys and codes
as in English, the same numbers."""

from __future__ import annotations

from typing import Any

BODY: dict[str, Any] = {"model": "llama-3.1-70b", "gpu": "h100-sxm"}


def test_accept_language_zh_translates_sentences_and_keeps_codes(client) -> None:  # type: ignore[no-untyped-def]
    en = client.post("/api/memory", json=BODY).json()
    zh_answer = client.post("/api/memory", json=BODY, headers={"accept-language": "zh-CN,zh;q=0.9,en;q=0.8"})
    zh = zh_answer.json()
    assert zh_answer.headers["content-language"] == "zh-CN" and "Accept-Language" in zh_answer.headers["vary"]
    assert zh["assumptions"] == ["序列长度 4096（默认；用 --seq 设置）"] != en["assumptions"]
    assert zh["fit"]["verdict"] == en["fit"]["verdict"] == "does-not-fit"
    assert zh["advice"] == en["advice"] and zh["per_gpu"] == en["per_gpu"]
    assert zh["violations"][0]["code"] == en["violations"][0]["code"]
    assert zh["violations"][0]["message"].startswith("每 GPU 需要 ")


def test_the_query_wins_over_the_header_and_english_is_unchanged(client) -> None:  # type: ignore[no-untyped-def]
    plain = client.post("/api/memory", json=BODY).json()
    asked = client.post("/api/memory?lang=en", json=BODY, headers={"accept-language": "zh-CN"})
    assert asked.headers["content-language"] == "en" and asked.json() == plain
    assert client.post("/api/memory?lang=zh", json=BODY).json()["assumptions"][0].startswith("序列长度")


def test_errors_are_translated_with_their_status_and_field(client) -> None:  # type: ignore[no-untyped-def]
    bad = {**BODY, "tp": 3}
    en = client.post("/api/memory", json=bad)
    zh = client.post("/api/memory", json=bad, headers={"accept-language": "zh"})
    assert en.status_code == zh.status_code == 400 and zh.json()["field"] == en.json()["field"]
    assert zh.json()["detail"] == ("tp=3 必须整除 heads=64，并且整除 kv_heads=8 或是它的倍数"
                                   "（此时每个键值头由 tp/kv_heads 个张量并行进程共同持有）")
    invalid = client.post("/api/memory", json={**BODY, "micro_batch": "many"}, headers={"accept-language": "zh"})
    assert invalid.status_code == 422 and "应为有效的整数" in invalid.json()["detail"]


def test_tco_verdict_and_plan_reasons_in_chinese(client) -> None:  # type: ignore[no-untyped-def]
    tco = client.post("/api/tco?lang=zh", json={"gpu": "h100-sxm", "gpus": 8}).json()
    assert tco["verdict"].split("：")[0] in ("自购", "租用", "混合")
