"""The one table of allowed ranges: messages name the CLI flag and the range; pydantic fields use it."""

from __future__ import annotations

import math
import re
from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError

from rigplan.bounds import BOUND_ERROR_TYPE, BOUNDS, Bounded, check, parse
from rigplan.errors import InvalidSpec
from rigplan.flow.request import EstimateRequest, JobSpec, PlanRequest


def test_check_names_the_flag_and_the_range() -> None:
    with pytest.raises(InvalidSpec, match=r"^--hidden must be <= 262,144 \(allowed 1 to 262,144\); got 1e30$"):
        check("hidden", 1e30)
    with pytest.raises(InvalidSpec, match=r"^--hours must be >= 0\.001 \(allowed 0\.001 to 10,000,000\); got -5$"):
        check("hours", -5.0)
    with pytest.raises(InvalidSpec, match="finite"):
        check("utilisation", math.nan)
    with pytest.raises(InvalidSpec, match="whole number"):
        check("layers", 2.5)
    with pytest.raises(InvalidSpec, match=r"^config\.json: key 'hidden_size' must be"):
        check("hidden", 0, label="config.json: key 'hidden_size'")
    assert check("hidden", 4096) == 4096


def test_parse_checks_the_parsed_value() -> None:
    assert parse("tokens", "2T") == 2e12
    with pytest.raises(InvalidSpec, match=r"^--tokens must be <= 1,000T \(allowed 1 to 1,000T\); got 1e30$"):
        parse("tokens", "1e30")
    # a negative count gets the bound's whole range, as 0 does (not a separate "must be >= 0")
    with pytest.raises(InvalidSpec, match=r"^--tokens must be >= 1 \(allowed 1 to 1,000T\); got '?-5'?$"):
        parse("tokens", "-5")
    with pytest.raises(InvalidSpec, match=r"^--deadline must be >= 1 s \(allowed 1 s to 36,500 days\); got 0$"):
        parse("deadline", "0d", kind="duration")
    with pytest.raises(InvalidSpec, match=r"^--budget must be >= \$1 \(allowed \$1 to \$10T\); got 0$"):
        check("budget", 0.0)


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_limits_read_as_people_write_them(name: str) -> None:
    """No bound is shown as 1e+15 or 3.1536e+09: counts, money and days carry their unit."""
    bound = BOUNDS[name]
    text = f"{bound.allowed()} {bound.problem(bound.high * 10 + 1)} {bound.problem(math.inf)}"
    assert not re.search(r"\de[+-]?\d", text), text


def test_a_value_given_is_shown_as_typed_or_as_people_write_numbers() -> None:
    with pytest.raises(InvalidSpec, match=r"got 1e30$"):
        check("hidden", 1e30)
    with pytest.raises(InvalidSpec, match=r"got 12,000,000$"):
        check("hidden", 12_000_000)
    with pytest.raises(InvalidSpec, match=r"got '9e9'$"):
        check("hidden", "9e9")


class _Probe(BaseModel):
    gpus: Annotated[int, Bounded("gpus")] | None = None
    tokens: Annotated[str | float, Bounded("tokens", parse="count")] | None = None


def test_pydantic_marker_reports_one_line_and_the_schema_has_the_range() -> None:
    with pytest.raises(ValidationError) as info:
        _Probe(gpus=0)
    first = info.value.errors()[0]
    assert first["type"] == BOUND_ERROR_TYPE
    assert first["msg"].startswith("--gpus must be >= 1")
    assert _Probe(tokens="300B").tokens == "300B"  # kept as given
    schema = _Probe.model_json_schema()["properties"]["gpus"]["anyOf"][0]
    assert (schema["minimum"], schema["maximum"]) == (1, BOUNDS["gpus"].high)


@pytest.mark.parametrize(("model", "values", "flag"), [
    (JobSpec, {"global_batch": 0}, "--global-batch"),
    (JobSpec, {"tp": 0}, "--tp"),
    (JobSpec, {"hidden": 10**6}, "--hidden"),
    (EstimateRequest, {"tokens": "0"}, "--tokens"),
    (EstimateRequest, {"tokens": 1e30}, "--tokens"),
    (PlanRequest, {"tokens": "1T", "deadline": "-3d"}, "--deadline"),
    (PlanRequest, {"tokens": "1T", "gpu_counts": [8, 0]}, "GPU count"),
    (JobSpec, {"expert_groups": 0}, "--expert-groups"),
    (JobSpec, {"group_top_k": 0}, "--group-top-k"),
    (JobSpec, {"moe_latent_size": -1}, "--moe-latent-size"),
])
def test_request_fields_use_the_table(model, values, flag) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as info:
        model.model_validate(values)
    assert info.value.errors()[0]["msg"].startswith(flag)


def test_every_bound_is_well_formed() -> None:
    for name, b in BOUNDS.items():
        assert b.low < b.high, name
        assert b.flag, name


@pytest.mark.parametrize("name", ["hours", "months", "years", "utilisation", "gpu_price", "cloud_price", "budget",
                                  "deadline", "nic_gbit", "checkpoint_interval_s", "fx", "delta_t_f"])
def test_a_positive_amount_has_a_smallest_meaningful_value(name: str) -> None:
    # 5e-324 (the smallest float) made the cost and step-time formulas divide by zero or overflow.
    low = BOUNDS[name].low
    assert low > 0 and not BOUNDS[name].low_open
    with pytest.raises(InvalidSpec, match=rf"must be >= {re.escape(BOUNDS[name].limit(low))} "):
        check(name, 5e-324)
    assert check(name, low) == low
