/* Plan view: the time-vs-cost scatter and the ranked options. */
import {frame, hideTip, showTip} from "./charts.js";
import {$, el, notes, fmtBytes, fmtDuration, fmtInt, fmtLayout, fmtMoney, fmtNum, fmtPct, modeText, money, state, svg, svgTitle, t} from "./util.js";

export function candKey(c) { return `${c.gpu}|${c.gpus}|${c.mode.provider}|${c.mode.pricing}`; }

export function renderPlan(data) {
  const all = data.candidates || [];
  const paretoKeys = new Set((data.pareto || []).map(candKey));
  const rankedKeys = new Set((data.ranked || []).map(candKey));
  const box = $("#plan-chart");
  // Nothing to recommend: say so first, in the server's words (the CLI's INFEASIBLE line).
  const verdict = data.infeasible ? el("div", {class: "banner bad", id: "plan-infeasible",
    text: `${t("infeasible")}: ${data.infeasible}`}) : null;
  if (!all.length) {
    box.replaceChildren(...[verdict, el("p", {class: "muted", text: t("none")})].filter(Boolean));
  } else {
    const days = all.map((c) => c.time_to_train_s / 86400), costs = all.map((c) => money(c.cost_usd));
    const pad = (lo, hi) => [lo / 1.25, hi * 1.25];
    const f = frame({W: 760, H: 380, xDomain: pad(Math.min(...days), Math.max(...days)),
      yDomain: pad(Math.min(...costs), Math.max(...costs)), xLog: true, yLog: true,
      xLabel: t("ax.time"), yLabel: t("ax.cost"), xFmt: (v) => fmtNum(v, 2), yFmt: (v) => fmtMoney(v / (state.currency === "cny" ? state.fx : 1))});
    if (data.deadline_s) {
      const dx = f.x(data.deadline_s / 86400);
      f.plot.append(svg("line", {x1: dx, x2: dx, y1: f.m.t, y2: 380 - f.m.b, stroke: "#c0392b", "stroke-dasharray": "5 4"}));
    }
    if (data.budget_usd) {
      const by = f.y(money(data.budget_usd));
      f.plot.append(svg("line", {x1: f.m.l, x2: 760 - f.m.r, y1: by, y2: by, stroke: "#c0392b", "stroke-dasharray": "5 4"}));
    }
    const front = (data.pareto || []).slice().sort((a, b) => a.time_to_train_s - b.time_to_train_s);
    if (front.length > 1) {
      f.plot.append(svg("polyline", {fill: "none", stroke: "#2f5fd0", "stroke-width": 1.5, "stroke-opacity": 0.6,
        points: front.map((c) => `${f.x(c.time_to_train_s / 86400)},${f.y(money(c.cost_usd))}`).join(" ")}));
    }
    // Full candidates first, then the front and the ranked ones on top (their numbers are the re-estimated ones).
    const shown = [...all.map((c) => ({c, kind: "cand"})), ...front.map((c) => ({c, kind: "pareto"})),
      ...(data.ranked || []).map((c) => ({c, kind: "ranked"}))];
    for (const {c, kind} of shown) {
      const key = candKey(c);
      const inLimits = c.meets_deadline && c.meets_budget;
      const cls = kind === "cand" ? `cand${inLimits ? "" : " out"}` : kind === "pareto"
        ? `pareto${rankedKeys.has(key) ? " ranked" : ""}` : `pareto ranked`;
      if (kind === "ranked" && paretoKeys.has(key)) continue;
      const text = `${c.gpus} × ${c.gpu}\n${modeText(c.mode)}\n${t("c.time")}: ${fmtDuration(c.time_to_train_s)}\n`
        + `${t("c.cost")}: ${fmtMoney(c.cost_usd)}` + (c.layout ? `\n${fmtLayout(c.layout)}` : "")
        + (c.mfu ? `\nMFU ${fmtPct(c.mfu)}` : "");
      const dot = svg("circle", {cx: f.x(c.time_to_train_s / 86400), cy: f.y(money(c.cost_usd)),
        r: kind === "cand" ? 4 : 6, class: cls, "data-key": key, tabindex: kind === "cand" ? undefined : 0},
      svgTitle(text.replace(/\n/g, " · ")));
      dot.addEventListener("mousemove", (e) => showTip(e, text));
      dot.addEventListener("mouseleave", hideTip);
      f.plot.append(dot);
    }
    const legend = el("div", {class: "legend"}, [["l.cand", "#98a2b3"], ["l.out", "#d0d5dd"], ["l.pareto", "#2f5fd0"],
      ["l.ranked", "#f79009"]].map(([k, c]) => { const s = el("span", {text: t(k)}); s.style.setProperty("--c", c); return s; }));
    f.root.id = "pareto-svg";
    box.replaceChildren(...[verdict, f.root, legend].filter(Boolean));
  }
  const s = data.stats || {};
  $("#plan-stats").textContent = t("evaluated", {e: fmtInt(s.evaluated), f: fmtInt(s.feasible),
    c: fmtInt(s.candidates), g: fmtInt(s.eligible), s: fmtDuration(s.elapsed_s)});
  const cols = ["c.gpus", "c.purchase", "c.layout", "c.time", "c.cost", "c.mfu", "c.mem", "c.why"];
  const rows = (data.ranked || []).map((c) => el("tr", {"data-key": candKey(c)},
    el("td", {text: `${c.gpus} × ${c.gpu}`}), el("td", {text: modeText(c.mode)}), el("td", {text: fmtLayout(c.layout)}),
    timeCell(c), el("td", {class: "num", text: fmtMoney(c.cost_usd)}),
    el("td", {class: "num", text: fmtPct(c.mfu)}), el("td", {class: "num", text: fmtBytes(c.memory.total_bytes)}),
    el("td", {text: (c.reasons || []).join("; ")})));
  $("#plan-table").replaceChildren(el("table", {id: "ranked-table"},
    el("thead", {}, el("tr", {}, cols.map((k) => el("th", {class: ["c.time", "c.cost", "c.mfu", "c.mem"].includes(k) ? "num" : null, text: t(k)})))),
    el("tbody", {}, rows)), notes(t("assumptions"), data.assumptions) || "");
}


// An MoE option's time also under the error of the published MoE runs of its regime (10th-90th percentile).
function timeCell(c) {
  const spread = c.moe_accuracy && c.moe_accuracy.time_to_train_s_spread;
  if (!spread) return el("td", {class: "num", text: fmtDuration(c.time_to_train_s)});
  return el("td", {class: "num", title: c.moe_accuracy.note}, el("div", {text: fmtDuration(c.time_to_train_s)}),
    el("div", {class: "muted spread", text: `${t("c.spread")} ${fmtDuration(spread[0])} – ${fmtDuration(spread[1])}`}));
}
