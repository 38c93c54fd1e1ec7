"""The seed article's day-7 PSU failure (3 days lost) against Daly checkpoints and 2+1 PSUs."""

from __future__ import annotations

import math

import pytest

from rigplan.errors import InvalidSpec
from rigplan.reliab.failures import DAY_S, HOUR_S
from rigplan.reliab.psu import implied_periodic_interval_s, psu_incident


def test_seed_incident_numbers() -> None:
    inc = psu_incident()
    assert inc.failure_at_s == 7 * DAY_S and inc.lost_progress_s == 3 * DAY_S
    assert inc.implied_min_interval_s == 3 * DAY_S
    assert inc.implied_periodic_interval_s == 4 * DAY_S  # checkpoints at day 0 and 4
    # one 8-GPU server at Llama 3 rates: 50,677 GPU-h / 8 = 6,335 h MTBF
    assert inc.server_mtbf_s / HOUR_S == pytest.approx(6334.6, abs=0.1)
    # 98 GB to a 4-drive PCIe 4.0 RAID 0 (4 × 3.5 GB/s) = 7 s; Daly: ~4.96 h
    assert inc.checkpoint_write_s == pytest.approx(7.0)
    assert inc.daly_interval_s / HOUR_S == pytest.approx(4.96, abs=0.01)

    article, daly, spare = inc.outcomes
    assert not article.server_stays_up and article.lost_work_s == 3 * DAY_S
    assert article.downtime_s == pytest.approx(24 * HOUR_S + 600)
    assert article.delay_s / DAY_S == pytest.approx(4.007, abs=1e-3)
    assert daly.lost_work_s / HOUR_S == pytest.approx(2.48, abs=0.01)
    assert daly.delay_s < article.delay_s / 3
    assert spare.server_stays_up and spare.psus_installed == 3 and spare.delay_s == 0
    assert spare.p_outage_before_repair == pytest.approx(-math.expm1(-2 * 24 / 100_000))


def test_to_dict_is_json_shaped() -> None:
    d = psu_incident().to_dict()
    assert [o["psus_installed"] for o in d["outcomes"]] == [2, 2, 3]
    assert d["outcomes"][2]["delay_s"] == 0


def test_implied_periodic_interval_cases() -> None:
    """Failure at 7 d: loss 2 d -> last checkpoint day 5 -> 2.5 d (0, 2.5, 5); loss 7 d -> none saved."""
    assert implied_periodic_interval_s(failure_at_s=7, lost_progress_s=2) == pytest.approx(2.5)
    assert implied_periodic_interval_s(failure_at_s=7, lost_progress_s=7) is None
    assert implied_periodic_interval_s(failure_at_s=7, lost_progress_s=5) is None  # day 2, next at 4 < 7
    with pytest.raises(InvalidSpec, match="lost progress"):
        implied_periodic_interval_s(failure_at_s=7, lost_progress_s=8)


def test_faster_repair_shrinks_the_non_redundant_delay() -> None:
    slow, fast = psu_incident(repair_s=DAY_S), psu_incident(repair_s=4 * HOUR_S)
    assert fast.outcomes[0].delay_s == pytest.approx(slow.outcomes[0].delay_s - 20 * HOUR_S)
    assert fast.outcomes[2].p_outage_before_repair < slow.outcomes[2].p_outage_before_repair
