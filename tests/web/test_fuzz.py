"""Property-based fuzzing of the HTTP API from its own OpenAPI schema (schemathesis): no answer is a 5xx.

Schemathesis generates valid and invalid requests for every operation. The plan and compare searches
get a small search (one GPU type, at most 16 GPUs) so the run stays short; what they validate is still
fuzzed. The number of generated requests is printed in pytest's terminal summary.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="fuzzing needs the dev extra (schemathesis)")

from hypothesis import HealthCheck, settings  # noqa: E402

from rigplan.web.app import create_app  # noqa: E402

from .conftest import FUZZ_COUNTS, FUZZ_SERVER_ERRORS  # noqa: E402

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())

SEARCHES = ("/api/plan", "/api/compare")
SMALL_SEARCH = {"gpu": ["l4"], "gpus_max": 16, "gpus_min": 1, "gpu_counts": []}


def shrink_search(case) -> None:  # type: ignore[no-untyped-def]
    """Keep the generated plan/compare body but search one GPU type up to 16 GPUs."""
    if case.path in SEARCHES and isinstance(case.body, dict):
        case.body.update(SMALL_SEARCH if case.path == "/api/plan" else {"gpu_counts": []})
        if case.path == "/api/compare" and isinstance(case.body.get("options"), list):
            case.body["options"] = case.body["options"][:3]


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors(case) -> None:  # type: ignore[no-untyped-def]
    shrink_search(case)
    response = case.call()
    FUZZ_COUNTS[case.path] = FUZZ_COUNTS.get(case.path, 0) + 1
    if response.status_code >= 500:
        FUZZ_SERVER_ERRORS.append(f"{case.method} {case.path}")
    assert response.status_code < 500, f"{case.method} {case.path} {case.body!r} -> {response.status_code}: " \
                                       f"{response.text[:500]}"
