"""Power and cooling: PSU capacity, PSU redundancy, airflow, rack and circuit power."""

from __future__ import annotations

import math

from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding, finding
from rigplan.lint.registry import rule
from rigplan.servers.power import DEFAULT_DELTA_T_F, airflow_cfm, heat_btu_per_h
from rigplan.units import format_number

PSU_HEADROOM = 0.10
"""Warn when the working PSUs run above 90% of their rating at full load (no margin for GPU power
excursions); rigplan convention."""
AIR_RACK_PLAN_W = 25_000.0
AIR_RACK_LIMIT_W = 30_000.0
"""Air cooling: ~25-30 kW per rack practical limit (hardware-facts.md B3: flashgenius.net, mp-is.eu)."""
CIRCUIT_120V_W = 1_440.0
"""120 V x 15 A x 80% continuous load (NEC): a standard US office outlet."""
CIRCUIT_230V_W = 3_680.0
"""230 V x 16 A: a standard European/Chinese single-phase circuit."""
ARTICLE_LESSON = ("the article's author lost 3 days of training when a non-redundant PSU failed on day 7 and now "
                  "insists on 2+1")


def _kw(w: float) -> str:
    return f"{w / 1000:.2f} kW"


def _supplies(n: int) -> str:
    return "1 working supply" if n == 1 else f"{n} working supplies"


@rule("psu.capacity", "PSU capacity under full load")
def psu_capacity(ctx: LintContext) -> list[Finding]:
    """The N working supplies of an 'N+M' scheme must carry the node's full load on their own:
    N x W >= load. Load = vendor maximum system power, else rigplan's estimate (servers/power.py)."""
    b, load = ctx.build, ctx.load
    code = "psu.capacity"
    values = {"load_w": load.load_w, "load_source": load.source, "estimate_w": load.estimate_w,
              "gpu_w": load.gpu_w, "cpu_w": load.cpu_w}
    if b.psu is None:
        return [finding(code, "warning", f"PSUs not stated. Full load is {_kw(load.load_w)} per node ({load.source}: "
                        f"GPUs {_kw(load.gpu_w)}, CPUs {_kw(load.cpu_w)}); size the supplies so that N x W "
                        f">= {_kw(load.load_w)} with at least one spare ({ARTICLE_LESSON}).", **values)]
    p = b.psu
    working, spare = p.scheme
    capacity = working * p.watts_each
    total = p.count * p.watts_each
    values.update(psu_count=p.count, psu_w_each=p.watts_each, redundancy=p.redundancy, working_capacity_w=capacity,
                  total_capacity_w=total)
    if working + spare != p.count:
        return [finding(code, "error", f"Redundancy {p.redundancy} means {working + spare} supplies but the build "
                        f"has {p.count}.", **values)]
    if load.load_w > total:
        return [finding(code, "error", f"Full load {_kw(load.load_w)} exceeds all {p.count} supplies together "
                        f"({p.count} x {format_number(p.watts_each)} W = {_kw(total)}): the node cannot run at "
                        "full load.", **values)]
    if load.load_w > capacity:
        return [finding(code, "error", f"Full load {_kw(load.load_w)} ({load.source}) exceeds the "
                        f"{_supplies(working)} of the {p.redundancy} scheme "
                        f"({working} x {format_number(p.watts_each)} W = {_kw(capacity)}): "
                        f"the node needs its 'spare' supplies just to run, so the redundancy is not real.",
                        **values)]
    if load.load_w > (1 - PSU_HEADROOM) * capacity:
        return [finding(code, "warning", f"Full load {_kw(load.load_w)} is {load.load_w / capacity:.0%} of the "
                        f"{_supplies(working)} ({_kw(capacity)}): under {PSU_HEADROOM:.0%} headroom for GPU "
                        "power excursions.", **values)]
    verb = "carries" if working == 1 else "carry"
    return [finding(code, "info", f"{_supplies(working)} ({working} x {format_number(p.watts_each)} W = "
                    f"{_kw(capacity)}) {verb} the {_kw(load.load_w)} full load ({load.source}) at "
                    f"{load.load_w / capacity:.0%}.", **values)]


@rule("psu.redundancy", "PSU redundancy and what one PSU failure does")
def psu_redundancy(ctx: LintContext) -> list[Finding]:
    """What happens when one supply fails: with M >= 1 spare the remaining (count-1) x W carries the load;
    with M = 0 the node (or the GPUs on that supply) goes down. M = N (2+2, 3+3) lets the spare half sit on
    a second feed (A/B). Sources: DGX A100 3+3, DGX H100/H200 4+2, DGX B200 5+1 (hardware-facts.md B2/B7)."""
    b, load = ctx.build, ctx.load
    if b.psu is None:
        return []  # psu.capacity already says the supplies are missing
    p = b.psu
    code = "psu.redundancy"
    working, spare = p.scheme
    after_one = (p.count - 1) * p.watts_each
    after_two = max(p.count - 2, 0) * p.watts_each
    values = {"redundancy": p.redundancy, "spare": spare, "after_one_failure_w": after_one,
              "after_two_failures_w": after_two, "load_w": load.load_w}
    if spare == 0:
        return [finding(code, "warning", f"No spare supply ({p.redundancy}): when one of the {p.count} x "
                        f"{format_number(p.watts_each)} W supplies fails, {_kw(after_one)} is left for a "
                        f"{_kw(load.load_w)} load and the node (or the GPUs on that supply) goes down mid-run; "
                        f"{ARTICLE_LESSON}. "
                        f"Use N+1 or better.", **values)]
    if after_one < load.load_w:
        return [finding(code, "error", f"After one supply fails, {_kw(after_one)} remains for a "
                        f"{_kw(load.load_w)} load: the {p.redundancy} scheme does not survive a failure.", **values)]
    second = ("keeps running" if after_two >= load.load_w else
              "must throttle or stop" if after_two > 0 else "stops")
    feeds = (f" With {working}+{spare} the spare half can sit on a second power feed (A/B), so losing a whole feed "
             "keeps the node up." if spare >= working else "")
    return [finding(code, "info", f"{p.redundancy}: after one supply fails {_kw(after_one)} remains for "
                    f"{_kw(load.load_w)}, the node keeps running; after a second failure ({_kw(after_two)}) it "
                    f"{second}.{feeds}", **values)]


@rule("cooling.airflow", "Heat and airflow")
def cooling_airflow(ctx: LintContext) -> list[Finding]:
    """Heat = 3,412 BTU/h per kW; airflow CFM = 3.16 x W / dT(F), 158 CFM/kW at dT = 20 F (fanacdc.com,
    insidehpc.com; hardware-facts.md B3). The article's '300 CFM per kW' corresponds to dT ~ 10.5 F."""
    b, load = ctx.build, ctx.load
    cfm = airflow_cfm(load.load_w)
    total_w = load.load_w * b.nodes
    values = {"load_w_per_node": load.load_w, "heat_btu_per_h_per_node": heat_btu_per_h(load.load_w),
              "airflow_cfm_per_node": cfm, "delta_t_f": DEFAULT_DELTA_T_F, "total_w": total_w,
              "airflow_cfm_total": airflow_cfm(total_w)}
    cluster = (f"; {b.nodes} nodes: {_kw(total_w)}, {airflow_cfm(total_w):,.0f} CFM" if b.nodes > 1 else "")
    if b.cooling == "liquid":
        return [finding("cooling.airflow", "info", f"Liquid-cooled: {_kw(load.load_w)} per node "
                        f"({heat_btu_per_h(load.load_w):,.0f} BTU/h) goes mostly to the coolant loop{cluster}.",
                        **values)]
    return [finding("cooling.airflow", "info", f"{_kw(load.load_w)} per node = {heat_btu_per_h(load.load_w):,.0f} "
                    f"BTU/h; needs {cfm:,.0f} CFM of air at a {format_number(DEFAULT_DELTA_T_F)} F rise "
                    f"(158 CFM/kW; the vendor's airflow spec wins){cluster}.", **values)]


@rule("power.rack", "Rack density and circuit power")
def power_rack(ctx: LintContext) -> list[Finding]:
    """Air-cooled racks: plan <= 25 kW, ~30 kW is the practical limit (hardware-facts.md B3). A tower or
    open-frame machine on an office outlet: 1.44 kW at 120 V/15 A (80% continuous), 3.68 kW at 230 V/16 A."""
    b, load = ctx.build, ctx.load
    code = "power.rack"
    node_w = load.load_w
    values = {"node_w": node_w, "nodes": b.nodes, "nodes_per_rack": b.nodes_per_rack,
              "air_rack_plan_w": AIR_RACK_PLAN_W, "air_rack_limit_w": AIR_RACK_LIMIT_W}
    if b.chassis.form != "rack":
        if node_w > CIRCUIT_230V_W:
            return [finding(code, "warning", f"{_kw(node_w)} is more than one 230 V/16 A circuit carries "
                            f"({_kw(CIRCUIT_230V_W)}): the supplies must go on separate circuits.", **values)]
        if node_w > CIRCUIT_120V_W:
            return [finding(code, "warning", f"{_kw(node_w)} exceeds a 120 V/15 A office outlet "
                            f"({_kw(CIRCUIT_120V_W)} continuous); it needs a dedicated 208-240 V circuit "
                            f"(230 V/16 A gives {_kw(CIRCUIT_230V_W)}).", **values)]
        return [finding(code, "info", f"{_kw(node_w)} fits one 120 V/15 A outlet ({_kw(CIRCUIT_120V_W)}).",
                        **values)]
    if b.cooling == "air" and node_w > AIR_RACK_LIMIT_W:
        return [finding(code, "error", f"One node draws {_kw(node_w)}, above the ~{_kw(AIR_RACK_LIMIT_W)} an "
                        "air-cooled rack can take: it needs liquid cooling.", **values)]
    per_rack_plan = max(int(AIR_RACK_PLAN_W // node_w), 1) if b.cooling == "air" else b.nodes
    if b.nodes_per_rack:
        rack_w = b.nodes_per_rack * node_w
        values["rack_w"] = rack_w
        if b.cooling == "air" and rack_w > AIR_RACK_LIMIT_W:
            return [finding(code, "error", f"{b.nodes_per_rack} nodes per rack x {_kw(node_w)} = {_kw(rack_w)}, "
                            f"above the ~{_kw(AIR_RACK_LIMIT_W)} air-cooling limit; at most {per_rack_plan} per "
                            "rack.", **values)]
        if b.cooling == "air" and rack_w > AIR_RACK_PLAN_W:
            return [finding(code, "warning", f"{b.nodes_per_rack} nodes per rack = {_kw(rack_w)}, above the "
                            f"{_kw(AIR_RACK_PLAN_W)} planning figure for air cooling.", **values)]
        return [finding(code, "info", f"{b.nodes_per_rack} nodes per rack = {_kw(rack_w)} per rack "
                        f"({math.ceil(b.nodes / b.nodes_per_rack)} rack(s)).", **values)]
    racks = math.ceil(b.nodes / per_rack_plan)
    values.update(max_nodes_per_rack=per_rack_plan, racks=racks)
    return [finding(code, "info", f"{_kw(node_w)} per node: at most {per_rack_plan} per air-cooled "
                    f"{_kw(AIR_RACK_PLAN_W)} rack" + (f", so {b.nodes} nodes need {racks} racks "
                                                     f"({_kw(node_w * b.nodes)} in all)." if b.nodes > 1 else "."),
                    **values)]
