"""`plan`: which GPU, how many, which layout and whether to rent or buy, under a budget and a deadline.

GPU type x GPU count (node multiples) x layout (tp, pp, vpp, dp, cp, ep, micro-batch, recompute,
ZeRO stage) x purchase mode. Layouts are evaluated with numpy arrays (search/); for each GPU type
and count the fastest layout that fits is kept, then priced in every mode: the cheapest cloud
offer of each pricing kind in the catalog, and owning (cost/onprem.py). The ranked and Pareto
candidates are then estimated again one by one through `flow.estimate.estimate`, so that `rigplan
estimate` with a candidate's options reproduces its numbers exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rigplan.catalog.load import Catalog, load_catalog
from rigplan.catalog.schema import GpuRecord, as_of_text
from rigplan.cost.cloud import DEFAULT_CAPACITY_GPUS, INTERRUPTIBLE_KINDS, interruptible_pricing_unsuitable
from rigplan.cost.money import CNY_PER_USD_DEFAULT
from rigplan.cost.money import parse_money as parse_money
from rigplan.cost.onprem import onprem_cost_usd, scenario_for_gpu, unit_costs
from rigplan.cost.power import HOURS_PER_YEAR
from rigplan.domain.frameworks import expert_parallel_note, no_pipeline_note
from rigplan.domain.hardware import Gpu
from rigplan.domain.job import Job
from rigplan.errors import InvalidSpec, RigplanError, UnsupportedPrecision
from rigplan.estimate import hf_experts
from rigplan.estimate.step import scale_up_domain, with_network
from rigplan.flow.estimate import checkpoint_bytes, default_global_batch, estimate
from rigplan.flow.fit import MEMORY_UNCERTAINTY_FRACTION
from rigplan.flow.framework import FrameworkApplied, cli_option, given_fields
from rigplan.flow.model_source import ResolvedModel
from rigplan.flow.plan_spaces import PlanSpaces, SpaceKey
from rigplan.flow.regime import wall_spread
from rigplan.flow.request import EstimateRequest, PlanRequest
from rigplan.flow.resolve import TrainingSetup, build_setup, check_precision_on_gpu
from rigplan.reliab import reliability_for_job
from rigplan.reliab.failures import DEFAULT_FAILURE_MODEL, PREEMPTIONS_PER_NODE_MONTH, with_preemptions
from rigplan.search.evaluate import fastest_per_count
from rigplan.search.pareto import pareto_front, thin_front
from rigplan.search.space import MAX_EP, MAX_PP, gpu_counts
from rigplan.units import parse_count, parse_duration

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Offer:
    kind: str
    """'cloud' or 'onprem'."""
    provider: str
    pricing: str
    usd_per_gpu_hour: float | None
    """For cloud; on-prem cost comes from the ownership scenario."""
    as_of: str = ""
    source: str = ""
    capacity_gpus: int | None = None
    """Most GPUs rentable at once under this offer (cloud.DEFAULT_CAPACITY_GPUS when not stated)."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "provider": self.provider, "pricing": self.pricing,
                "usd_per_gpu_hour": self.usd_per_gpu_hour, "as_of": self.as_of, "source": self.source,
                "capacity_gpus": self.capacity_gpus}


@dataclass
class Candidate:
    gpu: str
    gpus: int
    layout: dict[str, Any]
    global_batch: int
    offer: Offer
    time_to_train_s: float
    """Ideal time: tokens / tokens per second."""
    wall_time_s: float
    """With expected interruptions, restarts and checkpoint writes (reliab/); deadline and cost use it."""
    cost_usd: float
    tokens_per_s: float
    estimate: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    meets_deadline: bool = True
    meets_budget: bool = True
    over_limit: bool = False
    """Needs more memory than the GPU has, by less than rigplan's memory uncertainty: kept, marked, ranked
    after the options that fit."""


OVER_LIMIT_REASON = "over the GPU's memory by less than rigplan's memory uncertainty: may not fit"
UNPRICED_OFFER = Offer(kind="unpriced", provider="-", pricing="none", usd_per_gpu_hour=None,
                       source="no cloud offer and no purchase price in the catalog")
"""The offer of a GPU type rigplan cannot price, kept with PlanRequest.unpriced: its cost is infinite, so it ranks
after every priced option and never on a cost limit's side."""


def cloud_offers(record: GpuRecord, cny_per_usd: float = CNY_PER_USD_DEFAULT) -> list[Offer]:
    """The cheapest catalog offer of each pricing kind for this GPU (CNY quotes at `cny_per_usd`)."""
    best: dict[str, Offer] = {}
    for price in record.cloud_prices:
        usd = price.usd_per_hour(cny_per_usd)
        if price.pricing not in best or usd < (best[price.pricing].usd_per_gpu_hour or 0):
            best[price.pricing] = Offer(kind="cloud", provider=price.provider, pricing=price.pricing,
                                        usd_per_gpu_hour=usd, as_of=as_of_text(price.as_of),
                                        source=price.source,
                                        capacity_gpus=price.capacity_gpus or DEFAULT_CAPACITY_GPUS[price.pricing])
    return list(best.values())


def _base_estimate_fields(request: PlanRequest) -> dict[str, Any]:
    shape = request.shape_flags()
    return given_fields(request, {
            "model": request.model, **shape, "method": request.method, "lora_rank": request.lora_rank,
            "lora_targets": request.lora_targets, "seq": request.seq, "precision": request.precision,
            "optimizer": request.optimizer, "loss": request.loss, "kernels": request.kernels,
            "catalog": request.catalog, "tokens": request.tokens, "calibration": request.calibration,
            "moe_imbalance": request.moe_imbalance,
            "balanced_routing": request.balanced_routing, "capacity_factor": request.capacity_factor,
            "a2a_overlap": request.a2a_overlap, "a2a_overlap_schedule": request.a2a_overlap_schedule,
            "moe_dispatcher": request.moe_dispatcher, "moe_pad_to_capacity": request.moe_pad_to_capacity,
            "moe_fused_grouped_mlp": request.moe_fused_grouped_mlp, "compile": request.compile,
            "experts_implementation": request.experts_implementation,
            "autocast": request.autocast, "moe_rank_capacity_factor": request.moe_rank_capacity_factor,
            "attention_kernel": request.attention_kernel, "fp8_recipe": request.fp8_recipe,
            "fp8_attention": request.fp8_attention, "cuda_graphs": request.cuda_graphs,
            "fp8_param_gather": request.fp8_param_gather, "bf16_moments": request.bf16_moments,
            "cuda_graph_scope": list(request.cuda_graph_scope), "step_overhead_ms": request.step_overhead_ms,
            "grad_bucket_params": request.grad_bucket_params, "fp8_activation_store": request.fp8_activation_store,
            **request.overlap_values(), "framework": request.framework})


def candidate_request(request: PlanRequest, cand: Candidate) -> EstimateRequest:
    """The EstimateRequest that reproduces a candidate."""
    lay = cand.layout
    return EstimateRequest(**_base_estimate_fields(request), gpu=cand.gpu, gpus=cand.gpus,
                           gpus_per_node=request.gpus_per_node,
                           preemptions_per_node_month=PREEMPTIONS_PER_NODE_MONTH.get(cand.offer.pricing, 0.0),
                           tp=lay["tp"], pp=lay["pp"],
                           vpp=lay["vpp"], cp=lay["cp"], ep=lay["ep"], etp=lay.get("etp", 0), zero=lay["zero"],
                           micro_batch=lay["micro_batch"], recompute=lay["recompute"],
                           sequence_parallel=lay["sequence_parallel"], global_batch=cand.global_batch)


SEARCHED_FIELDS = ("zero", "recompute", "recompute_every", "sequence_parallel")
"""Preset fields that plan searches itself (a preset's layout defaults are not imposed on the search)."""


def estimate_command(request: PlanRequest, cand: Candidate) -> str:
    lay = cand.layout
    parts = [f"rigplan estimate {request.model or ''}".rstrip(), *request.shape_flag_args(),
             f"--gpu {cand.gpu} --gpus {cand.gpus}", f"--tp {lay['tp']}", f"--pp {lay['pp']}"]
    parts += [f"--{k} {lay[k]}" for k in ("vpp", "cp", "ep", "zero") if lay[k] not in (1, 0) or k == "zero"]
    parts += [f"--micro-batch {lay['micro_batch']}", f"--recompute {lay['recompute']}",
              f"--global-batch {cand.global_batch}", f"--tokens {request.tokens}"]
    if lay.get("etp", 0) not in (0, lay["tp"]):
        parts.append(f"--etp {lay['etp']}")
    if lay["sequence_parallel"]:
        parts.append("--sequence-parallel")
    if request.gpus_per_node:
        parts.append(f"--gpus-per-node {request.gpus_per_node}")
    if cand.offer.pricing in PREEMPTIONS_PER_NODE_MONTH:
        parts.append(f"--preemptions-per-node-month {PREEMPTIONS_PER_NODE_MONTH[cand.offer.pricing]:g}")
    for switch, on in (("--balanced-routing", request.balanced_routing), ("--a2a-overlap", request.a2a_overlap),
                       ("--moe-pad-to-capacity", request.moe_pad_to_capacity),
                       ("--moe-fused-grouped-mlp", request.moe_fused_grouped_mlp), ("--compile", request.compile),
                       ("--autocast", request.autocast), ("--fp8-attention", request.fp8_attention),
                       ("--fp8-activation-store", request.fp8_activation_store),
                       ("--fp8-param-gather", request.fp8_param_gather), ("--bf16-moments", request.bf16_moments)):
        if on:
            parts.append(switch)
    parts += [cli_option(name, value) for name, value in request.overlap_values().items()]
    if request.moe_imbalance:
        parts.append(f"--moe-imbalance {request.moe_imbalance:g}")
    if request.step_overhead_ms is not None and "step_overhead_ms" in request.model_fields_set:
        parts.append(f"--step-overhead-ms {request.step_overhead_ms:g}")
    if request.grad_bucket_params:
        parts.append(f"--grad-bucket-params {request.grad_bucket_params:.0f}")
    if request.capacity_factor:
        parts.append(f"--capacity-factor {request.capacity_factor:g}")
    if request.a2a_overlap and request.a2a_overlap_schedule != "1f1b":
        parts.append(f"--a2a-overlap-schedule {request.a2a_overlap_schedule}")
    own = request.model_fields_set if request.framework else set(type(request).model_fields)
    for flag, value in (("--method", request.method if request.method != "full" else None),
                        ("--precision", request.precision if "precision" in own else None), ("--seq", request.seq),
                        ("--framework", request.framework),
                        ("--kernels", request.kernels if request.kernels != "fused" and "kernels" in own else None),
                        ("--loss", request.loss if request.loss != "unfused" and "loss" in own else None),
                        ("--attention-kernel", request.attention_kernel if "attention_kernel" in own else None),
                        ("--fp8-recipe", request.fp8_recipe if request.fp8_recipe != "delayed" and "fp8_recipe" in own
                         else None),
                        ("--optimizer", request.optimizer if request.optimizer != "adamw" else None),
                        ("--cuda-graphs", request.cuda_graphs if request.cuda_graphs != "none" else None),
                        ("--cuda-graph-scope", ",".join(request.cuda_graph_scope)),
                        ("--moe-dispatcher", request.moe_dispatcher),
                        ("--experts-implementation", request.experts_implementation),
                        ("--moe-rank-capacity-factor", request.moe_rank_capacity_factor)):
        if value:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


@dataclass
class PlanResult:
    request: PlanRequest
    ranked: list[Candidate]
    pareto: list[Candidate]
    stats: dict[str, Any]
    assumptions: list[str]
    budget_usd: float | None
    deadline_s: float | None
    cny_per_usd: float
    catalog: Any
    onprem_overrides: dict[str, Any] = field(default_factory=dict)
    model: ResolvedModel | None = None
    """The model as resolved once for the whole search."""
    candidates: list[Candidate] = field(default_factory=list)
    """Every priced candidate (the fastest fitting layout per GPU type, count and purchase option)."""
    framework: FrameworkApplied | None = None
    """The --framework preset's recipe fields (the layout and recompute are searched, not preset)."""

    @property
    def infeasible(self) -> str | None:
        """Why no option is recommended, in plain words (None when one is)."""
        if self.stats.get("eligible"):
            return None
        if not self.candidates:
            return why_nothing_runs(self.stats["infeasible_by_reason"], self.stats.get("feasible", 0))
        return ("no option meets both the budget and the deadline; the Pareto front shows the trade-off that "
                "exists, each option marked with the limit it breaks")

    def to_dict(self) -> dict[str, Any]:
        def cand(c: Candidate) -> dict[str, Any]:
            e = c.estimate
            return {
                "gpu": c.gpu, "gpus": c.gpus, "layout": c.layout, "global_batch": c.global_batch,
                "mode": c.offer.to_dict(), "time_to_train_s": c.time_to_train_s, "wall_time_s": c.wall_time_s,
                "gpu_hours": c.time_to_train_s * c.gpus / 3600, "wall_gpu_hours": c.wall_time_s * c.gpus / 3600,
                "cost_usd": _finite(c.cost_usd), "reliability": e.get("reliability"), "over_limit": c.over_limit,
                "cost_cny": _finite(c.cost_usd * self.cny_per_usd), "tokens_per_s": c.tokens_per_s,
                "mfu": e.get("mfu"), "step_time_s": e.get("step_time_s"),
                "memory": {k: e["memory"]["per_gpu"][k] for k in ("total_bytes", "allocated_bytes")} | {
                    "usable_bytes": e["memory"]["gpu"]["usable_bytes"],
                    "headroom_bytes": e["memory"]["headroom_bytes"], "fits": e["memory"]["fits"],
                    "borderline": e["memory"]["fit"]["borderline"]},
                "energy_kwh": e.get("energy_kwh"), "meets_deadline": c.meets_deadline,
                "residual_value_usd": residual_value_usd(self.catalog.gpu(c.gpu), c.gpus, self.onprem_overrides)
                if c.offer.pricing == "purchase" else None,
                "meets_budget": c.meets_budget, "reasons": c.reasons,
                "estimate_command": estimate_command(self.request, c), "moe_accuracy": wall_spread(e, c.wall_time_s),
            }
        return {
            "model": self.request.model, "tokens": parse_count(self.request.tokens, "--tokens"),
            "budget_usd": self.budget_usd, "deadline_s": self.deadline_s,
            "ranked": [cand(c) for c in self.ranked], "pareto": [cand(c) for c in self.pareto],
            "infeasible": self.infeasible,
            "stats": self.stats, "assumptions": self.assumptions, "cny_per_usd": self.cny_per_usd,
            "framework": self.framework.to_dict() if self.framework else None,
            "candidates": [{"gpu": c.gpu, "gpus": c.gpus, "mode": c.offer.to_dict(),
                            "time_to_train_s": c.time_to_train_s, "wall_time_s": c.wall_time_s,
                            "cost_usd": _finite(c.cost_usd),
                            "meets_deadline": c.meets_deadline, "meets_budget": c.meets_budget}
                           for c in self.candidates],
        }


def _finite(usd: float) -> float | None:
    """A cost for JSON: None for an unpriced option's infinite one (UNPRICED_OFFER)."""
    return usd if math.isfinite(usd) else None


def _offers_for(record: GpuRecord, mode: str, basis: str, cny_per_usd: float) -> list[Offer]:
    offers = cloud_offers(record, cny_per_usd) if mode in ("cloud", "both") else []
    if mode in ("onprem", "both") and record.price is not None:
        offers.append(Offer(kind="onprem", provider="owned", pricing=basis, usd_per_gpu_hour=None,
                            as_of=as_of_text(record.price.as_of), source=record.price.source))
    return offers


def _price(record: GpuRecord, offer: Offer, gpus: int, hours: float, overrides: dict[str, Any] | None = None,
           ) -> float:
    """Cloud: GPU-hours x price. Owned, 'purchase' basis: the build's capex for every GPU plus energy
    and fixed running costs for the job's hours (the hardware keeps its residual value, reported
    apart); 'amortized' basis: the job's share of a cluster busy at the scenario's utilisation."""
    if offer.kind == "unpriced":
        return math.inf
    if offer.kind == "cloud":
        assert offer.usd_per_gpu_hour is not None
        return gpus * hours * offer.usd_per_gpu_hour
    scenario = scenario_for_gpu(record, **(overrides or {}))
    if offer.pricing == "amortized":
        return float(onprem_cost_usd(gpus, hours, scenario))
    unit = unit_costs(scenario)
    running = unit.energy_usd_per_busy_hour + unit.fixed_usd_per_year / HOURS_PER_YEAR
    return gpus * (unit.capex_usd + hours * running)


def residual_value_usd(record: GpuRecord, gpus: int, overrides: dict[str, Any] | None = None) -> float:
    return gpus * unit_costs(scenario_for_gpu(record, **(overrides or {}))).residual_credit_usd


def _reference_setup(request: PlanRequest, records: list[GpuRecord], catalog: Catalog,
                     model: ResolvedModel | None) -> TrainingSetup:
    """Model and job from the first GPU that runs the recipe (a V100 cannot run bf16, an A100 not fp8);
    when none does, the first GPU's error. Its recompute is given (none) so that a preset's recompute and its
    granularity (torchtitan's every second layer) stay out of the search, which tries each recompute itself and
    whose candidates' commands give it explicitly (SEARCHED_FIELDS)."""
    first_error: UnsupportedPrecision | None = None
    for record in records:
        try:
            return build_setup(EstimateRequest(**_base_estimate_fields(request), gpu=record.id, recompute="none"),
                               catalog, model)
        except UnsupportedPrecision as err:
            first_error = first_error or err
    assert first_error is not None
    raise first_error


@dataclass
class _GpuEntry:
    """One GPU type of a plan before its search: why it is skipped (reason codes and counts, in the order
    they are reported), or its domain values, offers and layout space (NVLink domain, GPU counts)."""

    record: GpuRecord
    gpu: Gpu
    offers: list[Offer] = field(default_factory=list)
    key: SpaceKey | None = None
    skipped: list[tuple[str, int]] = field(default_factory=list)


def _prepare_gpu(request: PlanRequest, record: GpuRecord, job: Job, cny_per_usd: float,
                 fp32_gemms: bool = False) -> _GpuEntry:
    """`fp32_gemms`: the job may run fp32 GEMMs (hf_experts.fp32_experts_possible), which a part without an fp32
    figure in the catalog cannot time."""
    gpu = with_network(record.to_domain(), gpus_per_node=request.gpus_per_node)
    entry = _GpuEntry(record=record, gpu=gpu)
    try:
        check_precision_on_gpu(gpu, job.precision, defaulted=request.precision is None, fp8_recipe=job.fp8_recipe)
    except UnsupportedPrecision:
        entry.skipped.append(("precision.unsupported", 1))
        return entry
    if fp32_gemms and not gpu.peak("fp32"):
        entry.skipped.append(("precision.unsupported", 1))
        return entry
    offers = _offers_for(record, request.mode, request.onprem_basis, cny_per_usd)
    if not offers and request.unpriced:
        offers = [UNPRICED_OFFER]
    if not offers:
        entry.skipped.append(("price.unknown", 1))
        return entry
    counts = sorted(set(request.gpu_counts)) or gpu_counts(gpu.gpus_per_node, request.gpus_max, request.gpus_min)
    if not gpu.nic_bits_per_s:  # no published scale-out rate: one node at most
        beyond = [c for c in counts if c > gpu.gpus_per_node]
        if beyond:
            entry.skipped.append(("network.unknown", len(beyond)))
            counts = [c for c in counts if c <= gpu.gpus_per_node]
    entry.offers, entry.key = offers, (scale_up_domain(gpu), tuple(counts))
    return entry


def plan(request: PlanRequest, progress: Progress | None = None, *, catalog: Catalog | None = None,
         model: ResolvedModel | None = None) -> PlanResult:
    """Search GPU types, counts, layouts and purchase modes; rank and return the Pareto front.

    The request is resolved once (catalog, model, reference setup) and that value is carried down:
    the search and the estimates of the shown candidates look nothing up again."""
    started = time.perf_counter()
    if request.gpus_min > request.gpus_max:
        raise InvalidSpec(f"--gpus-min {request.gpus_min} exceeds --gpus-max {request.gpus_max}")
    catalog = catalog or load_catalog(request.catalog)
    records = [catalog.gpu(g) for g in request.gpu] if request.gpu else list(catalog.gpus.values())
    overrides: dict[str, Any] = {}
    build_notes: list[str] = []
    if request.server is not None:
        from rigplan.cost.build import build_costs
        from rigplan.servers.load import resolve_build

        costs = build_costs(resolve_build(request.server, request.catalog), catalog)
        others = [g for g in request.gpu or () if g != costs.gpu_id]
        if others:
            raise InvalidSpec(f"--server {request.server} holds {costs.gpu_id} GPUs, not --gpu {', '.join(others)}; "
                              "drop one of them")
        records = [catalog.gpu(costs.gpu_id)]
        overrides = {"server_share_usd_per_gpu": costs.server_share_usd_per_gpu,
                     "host_w_per_gpu": costs.host_w_per_gpu}
        build_notes = [f"server build {request.server}: {note}" for note in costs.notes]
    cny_per_usd = request.fx_cny_per_usd or CNY_PER_USD_DEFAULT
    budget = parse_money(request.budget, request.currency, cny_per_usd)
    deadline = parse_duration(request.deadline, "--deadline") if request.deadline is not None else None
    tokens = parse_count(request.tokens, "--tokens")
    if tokens <= 0:
        raise InvalidSpec("--tokens must be positive, e.g. 2T or 300B")
    reference = _reference_setup(request, records, catalog, model)
    model = reference.model
    arch, job = reference.arch, reference.job
    ckpt_bytes = checkpoint_bytes(reference)
    target = request.global_batch or default_global_batch(1, 1, job.seq_len)
    framework = reference.framework.without(SEARCHED_FIELDS) if reference.framework else None
    preset_line = reference.framework.assumption() if reference.framework else None
    assumptions = [framework.assumption() if framework and a == preset_line else a
                   for a in reference.assumptions if "dp=" not in a]
    assumptions.extend(build_notes)
    assumptions.append(f"global batch about {target} sequences of {job.seq_len} tokens (rounded per layout)")
    assumptions.append("interruption rate: Llama 3 405B's on 16,384 H100 (Meta 2024), applied to every GPU type; "
                       "checkpoints to node-local NVMe on one host (up to 8 GPUs), to shared storage (ceph-4) beyond")
    stats: dict[str, Any] = {"evaluated": 0, "feasible": 0, "kept_over_limit": 0, "infeasible_by_reason": {},
                             "gpu_types": len(records)}
    reasons: dict[str, int] = stats["infeasible_by_reason"]
    candidates: list[Candidate] = []
    fp32_gemms = hf_experts.fp32_experts_possible(arch, job)
    prepared = [_prepare_gpu(request, record, job, cny_per_usd, fp32_gemms) for record in records]
    keys = [entry.key for entry in prepared if entry.key is not None]
    preset = reference.framework.name if reference.framework else None
    pipeline_note = no_pipeline_note(preset)
    experts_note = expert_parallel_note(preset) if arch.moe is not None else None
    assumptions.extend(note for note in (pipeline_note, experts_note) if note)
    with PlanSpaces(arch, job, keys, target, max_pp=1 if pipeline_note else MAX_PP,
                    max_ep=1 if experts_note else MAX_EP) as spaces:
        for done, entry in enumerate(prepared):
            if progress:
                progress(done, len(records))
            for code, n in entry.skipped:
                reasons[code] = reasons.get(code, 0) + n
            if entry.key is None:
                continue
            memory = spaces.get(entry.key)
            if memory is None:
                continue
            record, gpu = entry.record, entry.gpu
            usable = gpu.usable_bytes()
            for count, best in sorted(fastest_per_count(arch, job, gpu, memory, usable, reference.calibration,
                                                       over_limit_bytes=usable / (1 - MEMORY_UNCERTAINTY_FRACTION)
                                                       ).items()):
                stats["evaluated"] += best.evaluated
                stats["feasible"] += best.feasible
                reasons["memory.exceeds_capacity"] = (reasons.get("memory.exceeds_capacity", 0)
                                                      + best.infeasible_memory)
                if best.infeasible_batch:
                    reasons["batch.smaller_than_dp"] = reasons.get("batch.smaller_than_dp", 0) + best.infeasible_batch
                for winner, over in ((best, False), (best.borderline, True)):
                    if winner is None or winner.index < 0 or not math.isfinite(winner.step_time_s):
                        continue  # no layout of this count that runs (a rate the part has no figure for)
                    stats["kept_over_limit"] += over
                    candidates.extend(_priced(record, gpu, count, memory.layouts, winner, entry.offers, over,
                                              tokens, ckpt_bytes, request.interruptible, reasons, overrides))
    if progress:
        progress(len(records), len(records))
    for c in candidates:
        c.meets_deadline = deadline is None or c.wall_time_s <= deadline
        c.meets_budget = budget is None or c.cost_usd <= budget
    for code, attr in (("deadline.exceeded", "meets_deadline"), ("budget.exceeded", "meets_budget")):
        missed = sum(1 for c in candidates if not getattr(c, attr))
        if missed:
            reasons[code] = missed
    eligible = [c for c in candidates if c.meets_deadline and c.meets_budget]
    ranked = _best_per_option(sorted(eligible, key=_rank_key))[: request.top]
    limited = budget is not None or deadline is not None
    front = _front(eligible if limited and eligible else candidates)
    for c in front:
        if not c.meets_deadline:
            c.reasons.append("misses the deadline")
        if not c.meets_budget:
            c.reasons.append("over budget")
    _explain(ranked, eligible, budget, deadline)
    shown = {id(c): c for c in [*ranked, *front]}
    for c in shown.values():
        # each candidate's remedies are one `rigplan memory` away; searching them for every row costs the plan 10%
        c.estimate = estimate(candidate_request(request, c), catalog, model).to_dict(with_advice=False)
        c.time_to_train_s = c.estimate["time_to_train_s"]
        c.wall_time_s = c.estimate["wall_time_s"]
        c.tokens_per_s = c.estimate["tokens_per_s"]
        c.cost_usd = _price(catalog.gpu(c.gpu), c.offer, c.gpus, c.wall_time_s / 3600, overrides)
    stats["candidates"] = len(candidates)
    stats["eligible"] = len(eligible)
    stats["elapsed_s"] = time.perf_counter() - started
    if eligible and limited:
        assumptions.append("the Pareto front holds only options within the budget and the deadline")
    assumptions.append("cloud capacity per offer: 512 GPUs on-demand/reserved, 64 spot/community, 8 serverless "
                       "unless the offer states its own (AWS Capacity Blocks: 1-64 instances); spot and community "
                       "offers add 0.2 reclaims per node-month to the failure rate (AWS Spot Advisor's top band)")
    return PlanResult(request=request, ranked=ranked, pareto=front, stats=stats, assumptions=assumptions,
                      budget_usd=budget, deadline_s=deadline, cny_per_usd=cny_per_usd, catalog=catalog,
                      candidates=candidates, onprem_overrides=overrides, model=model, framework=framework)


def _priced(record: GpuRecord, gpu: Any, count: int, lay: Any, best: Any, offers: list[Offer], over_limit: bool,
            tokens: float, ckpt_bytes: float, interruptible: bool, reasons: dict[str, int],
            overrides: dict[str, Any]) -> list[Candidate]:
    """The candidates of one searched layout, one per purchase offer it can use. `over_limit`: the layout
    needs more memory than the GPU has, by less than rigplan's memory uncertainty (kept, marked)."""
    i = best.index
    layout = {"tp": int(lay.tp[i]), "pp": int(lay.pp[i]), "vpp": int(lay.vpp[i]), "dp": int(lay.dp[i]),
              "cp": int(lay.cp[i]), "ep": int(lay.ep[i]), "etp": int(lay.etp[i]), "zero": int(lay.zero[i]),
              "micro_batch": int(lay.micro_batch[i]), "recompute": best.recompute,
              "sequence_parallel": bool(lay.tp[i] > 1)}
    ideal_s = tokens / best.tokens_per_s
    walls: dict[float, float] = {}
    out = []
    for offer in offers:
        if offer.capacity_gpus is not None and count > offer.capacity_gpus:
            reasons["cloud.capacity"] = reasons.get("cloud.capacity", 0) + 1
            continue
        if (offer.pricing in INTERRUPTIBLE_KINDS and not interruptible
                and interruptible_pricing_unsuitable(count, ideal_s / 3600, gpu.gpus_per_node)):
            reasons["cloud.interruptible_for_long_job"] = reasons.get("cloud.interruptible_for_long_job", 0) + 1
            continue
        reclaims = PREEMPTIONS_PER_NODE_MONTH.get(offer.pricing, 0.0)
        if reclaims not in walls:
            walls[reclaims] = reliability_for_job(
                num_gpus=count, ideal_time_s=ideal_s, checkpoint_bytes=ckpt_bytes,
                gpus_per_node=gpu.gpus_per_node, step_time_s=best.step_time_s,
                failure_model=with_preemptions(DEFAULT_FAILURE_MODEL, reclaims, gpu.gpus_per_node),
            ).wall_time_s
        wall_s = walls[reclaims]
        try:
            cost = _price(record, offer, count, wall_s / 3600, overrides)
        except RigplanError:
            reasons["price.unknown"] = reasons.get("price.unknown", 0) + 1
            continue
        out.append(Candidate(gpu=record.id, gpus=count, layout=layout, global_batch=best.global_batch,
                             offer=offer, time_to_train_s=ideal_s, wall_time_s=wall_s, cost_usd=cost,
                             tokens_per_s=best.tokens_per_s, over_limit=over_limit,
                             reasons=[OVER_LIMIT_REASON] if over_limit else []))
    return out


def _front(pool: list[Candidate]) -> list[Candidate]:
    """The time-cost Pareto front of the options that fit, thinned, plus the over-the-limit options that no
    fitting option dominates (marked), so an uncertain option never pushes a certain one off the front."""
    def time_of(c: Candidate) -> float:
        return c.wall_time_s

    def cost_of(c: Candidate) -> float:
        return c.cost_usd

    fitting = thin_front(pareto_front([c for c in pool if not c.over_limit], time_of=time_of, cost_of=cost_of),
                         time_of=time_of, cost_of=cost_of)
    union = thin_front(pareto_front(pool, time_of=time_of, cost_of=cost_of), time_of=time_of, cost_of=cost_of)
    over = [c for c in union if c.over_limit]
    return sorted(fitting + over, key=lambda c: (c.wall_time_s, c.cost_usd))


def _rank_key(c: Candidate) -> tuple[Any, ...]:
    return (c.over_limit, c.cost_usd, c.wall_time_s, c.gpu, c.gpus, c.offer.pricing, c.offer.provider)


def _best_per_option(ordered: list[Candidate]) -> list[Candidate]:
    """The first (cheapest) candidate of each GPU type and purchase option, keeping the order."""
    seen: set[tuple[str, str, str]] = set()
    chosen = []
    for c in ordered:
        key = (c.gpu, c.offer.kind, c.offer.pricing)
        if key not in seen:
            seen.add(key)
            chosen.append(c)
    return chosen


def _explain(ranked: list[Candidate], eligible: list[Candidate], budget: float | None,
             deadline: float | None) -> None:
    """Say why the top choices win."""
    eligible = [c for c in eligible if not c.over_limit] or eligible
    if not eligible:
        return
    priced = [c for c in eligible if math.isfinite(c.cost_usd)]  # an unpriced option is never called cheapest
    if priced:
        cheapest = min(priced, key=lambda c: (c.cost_usd, c.wall_time_s))
        cheapest.reasons.append("cheapest that meets the deadline" if deadline else "cheapest")
    fastest = min(eligible, key=lambda c: (c.wall_time_s, c.cost_usd))
    fastest.reasons.append("fastest under budget" if budget else "fastest")
    if fastest not in ranked:
        ranked.append(fastest)


NOTHING_RUNS = {
    "memory.exceeds_capacity": "no layout fits this job in GPU memory",
    "batch.smaller_than_dp": "the global batch is smaller than every data-parallel degree that would fit",
    "precision.unsupported": "the GPU has no tensor cores for this precision",
    "price.unknown": (f"no price: {UNPRICED_OFFER.source} (rigplan compare and rigplan estimate still time it; a "
                      "catalog overlay, --catalog, can add a price)"),
    "cloud.capacity": "no cloud offer rents this many GPUs",
    "cloud.interruptible_for_long_job": "only interruptible offers, left out of a long job (--interruptible)",
}
"""Why a search found nothing to price, by the code of search stats' infeasible_by_reason."""


PRICING_REASONS = frozenset({"price.unknown", "cloud.capacity", "cloud.interruptible_for_long_job"})
"""Reasons that drop a layout that fits, when it is priced (counted per candidate, not per layout)."""


def why_nothing_runs(reasons: dict[str, int], fitted: int = 0) -> str:
    """Plain words for a search that priced nothing: its two most frequent reasons. `fitted`: the layouts that fit
    in memory; where some did, only what kept them from being priced (PRICING_REASONS, counted per candidate) is
    said, though the layouts that did not fit outnumber them."""
    priced_out = {code: n for code, n in reasons.items() if code in PRICING_REASONS}
    shown = priced_out if fitted > 0 and priced_out else reasons
    found = [NOTHING_RUNS[code] for code, _ in sorted(shown.items(), key=lambda kv: -kv[1]) if code in NOTHING_RUNS]
    return "; ".join(found[:2]) if found else "no layout runs this job"
