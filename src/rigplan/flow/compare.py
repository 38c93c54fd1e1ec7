"""`compare`: concrete COUNTxGPU options side by side, each the fastest layout that fits, its costs
renting and buying, and the winner of each row (a `plan` per option, flow.plan)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rigplan.bounds import check
from rigplan.catalog.load import load_catalog
from rigplan.errors import InvalidSpec, UnsupportedPrecision
from rigplan.flow.estimate import estimate
from rigplan.flow.framework import FrameworkApplied
from rigplan.flow.model_source import ResolvedModel
from rigplan.flow.plan import UNPRICED_OFFER, Candidate, candidate_request, plan, why_nothing_runs
from rigplan.flow.request import PlanRequest


@dataclass
class Comparison:
    """Concrete options side by side: each row's values and its winner."""

    options: list[str]
    rows: list[dict[str, Any]]
    best: list[Candidate | None]
    framework: FrameworkApplied | None = None
    infeasible: list[str | None] = field(default_factory=list)
    """Per option: why it cannot run this job, in plain words (None: it can)."""
    unpriced: list[bool] = field(default_factory=list)
    """Per option: rigplan has no price for its GPU (speed and memory only, no cost rows)."""
    over_limit: list[bool] = field(default_factory=list)
    """Per option: no layout fits, and the one shown needs more memory than the GPU has by less than rigplan's
    memory uncertainty (plan's OVER_LIMIT_REASON: it may not fit)."""

    def to_dict(self) -> dict[str, Any]:
        return {"options": self.options, "rows": self.rows, "infeasible": self.infeasible,
                "unpriced": self.unpriced, "over_limit": self.over_limit,
                "framework": self.framework.to_dict() if self.framework else None}


COMPARE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("time_to_train_s", "time to train", "min"),
    ("wall_time_s", "wall time with failures", "min"),
    ("tokens_per_s", "tokens/s", "max"),
    ("mfu", "MFU", "max"),
    ("memory_per_gpu_bytes", "memory per GPU", "none"),
    ("headroom_bytes", "memory headroom", "max"),
    ("cloud_cost_usd", "cost renting (cheapest offer)", "min"),
    ("onprem_cost_usd", "cost buying (purchase)", "min"),
    ("power_w", "power (GPUs + hosts)", "min"),
    ("energy_kwh", "energy", "min"),
)


def parse_option(text: str) -> tuple[int, str]:
    """'8xa100-80gb-sxm' or '8 x h100-sxm' -> (8, id)."""
    count, sep, gpu = text.lower().replace(" ", "").partition("x")
    if not sep or not (count.isdecimal() and count.isascii()) or not gpu:
        raise InvalidSpec(f"option '{text}' is not COUNTxGPU, e.g. 8xa100-80gb-sxm or 4xh100-sxm")
    check("option_gpus", int(count), label=f"option '{text}': the GPU count")
    return int(count), gpu


def compare(base: PlanRequest, options: list[str]) -> Comparison:
    """For each COUNTxGPU option, the fastest layout that fits, its costs renting and buying."""
    if len(options) < 2:
        raise InvalidSpec("compare needs at least two options, e.g. 8xa100-80gb-sxm 4xh100-sxm")
    check("compare_options", len(options))  # each option is a plan search
    values: list[dict[str, Any]] = []
    best: list[Candidate | None] = []
    infeasible: list[str | None] = []
    unpriced: list[bool] = []
    over_limit: list[bool] = []
    catalog = load_catalog(base.catalog)
    model: ResolvedModel | None = None
    framework: FrameworkApplied | None = None
    refused: list[UnsupportedPrecision] = []
    for text in options:
        count, gpu_id = parse_option(text)
        try:
            result = plan(base.model_copy(update={"gpu": [gpu_id], "gpu_counts": [count], "mode": "both",
                                                  "budget": None, "deadline": None, "top": 100, "unpriced": True}),
                          catalog=catalog, model=model)
        except UnsupportedPrecision as error:  # this part lacks the precision; the others may have it
            refused.append(error)
            values.append({})
            best.append(None)
            infeasible.append(str(error))
            unpriced.append(False)
            over_limit.append(False)
            continue
        model = result.model
        framework = framework or result.framework
        fitting = [c for c in result.candidates if c.gpus == count]
        unpriced.append(any(c.offer is UNPRICED_OFFER for c in fitting))
        if not fitting:
            values.append({})
            best.append(None)
            infeasible.append(why_nothing_runs(result.stats["infeasible_by_reason"], result.stats["feasible"]))
            over_limit.append(False)
            continue
        infeasible.append(None)
        # a layout that fits wins over a faster one over the capacity (within the memory uncertainty)
        fitting = [c for c in fitting if not c.over_limit] or fitting
        over_limit.append(all(c.over_limit for c in fitting))
        cloud = [c for c in fitting if c.offer.kind == "cloud"]
        owned = [c for c in fitting if c.offer.kind == "onprem"]
        chosen = min(fitting, key=lambda c: c.wall_time_s)
        chosen.estimate = chosen.estimate or estimate(candidate_request(base, chosen), catalog, model).to_dict()
        e = chosen.estimate
        values.append({
            "time_to_train_s": e["time_to_train_s"], "wall_time_s": e["wall_time_s"],
            "tokens_per_s": e["tokens_per_s"], "mfu": e["mfu"],
            "memory_per_gpu_bytes": e["memory"]["per_gpu"]["total_bytes"],
            "headroom_bytes": e["memory"]["headroom_bytes"],
            "cloud_cost_usd": min((c.cost_usd for c in cloud), default=None),
            "onprem_cost_usd": min((c.cost_usd for c in owned), default=None),
            "power_w": e["power_w"], "energy_kwh": e["energy_kwh"],
            "layout": chosen.layout,
        })
        best.append(chosen)
    if len(refused) == len(options):
        raise refused[0]
    rows = []
    for key, label, better in COMPARE_ROWS:
        row_values = [v.get(key) for v in values]
        known = [(x, i) for i, x in enumerate(row_values) if x is not None]
        winner = None
        if better != "none" and len(known) > 1:
            pick = min(known) if better == "min" else max(known)
            winner = options[pick[1]]
        rows.append({"key": key, "label": label, "values": row_values, "winner": winner})
    rows.append({"key": "layout", "label": "layout", "values": [v.get("layout") for v in values], "winner": None})
    return Comparison(options=list(options), rows=rows, best=best, framework=framework, infeasible=infeasible,
                      unpriced=unpriced, over_limit=over_limit)
