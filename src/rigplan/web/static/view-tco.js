/* Rent-or-buy view: cumulative cost of cloud offers and owning over months, break-even. */
import {LINE_COLORS, frame, hideTip, showTip} from "./charts.js";
import {$, HOURS_PER_MONTH, el, kpi, notes, fmtInt, fmtMoney, fmtPct, money, pricingText, state, svg, svgTitle, t} from "./util.js";

export function renderTco(data) {
  const own = data.onprem;
  const n = data.num_gpus, u = own.utilisation, months = Math.max(own.years * 12, 1);
  // Owning costs the whole capex up front and its yearly running cost spread over months; the resale credit
  // comes back at the horizon's end (the line drops there to the lifetime total). Renting costs the same busy
  // GPU-hours. A break-even point (rigplan.cost.breakeven: net of resale) is drawn on its cloud line.
  const ownAt = (m) => own.capex_usd + own.opex_usd_per_year / 12 * m - (m >= months ? own.residual_credit_usd : 0);
  const lines = [{label: t("l.owned"), color: "#2f5fd0", at: ownAt, width: 3, id: "owned"}];
  (data.cloud || []).forEach((c, i) => lines.push({label: `${c.provider} (${pricingText(c.pricing)})`, color: LINE_COLORS[i % LINE_COLORS.length],
    at: (m) => n * c.usd_per_gpu_hour * u * HOURS_PER_MONTH * m, width: 2, id: `cloud-${i}`, offer: c}));
  const top = Math.max(...lines.map((l) => l.at(months))) * 1.05;
  const conv = state.currency === "cny" ? state.fx : 1;
  const f = frame({W: 760, H: 360, xDomain: [0, months], yDomain: [0, money(top)], xLabel: t("ax.months"),
    yLabel: t("ax.cumcost"), xFmt: (v) => String(Math.round(v)), yFmt: (v) => fmtMoney(v / conv)});
  for (const l of lines) {
    const pts = [];
    for (let i = 0; i < 60; i++) { const m = months * i / 60; pts.push(`${f.x(m)},${f.y(money(l.at(m)))}`); }
    pts.push(`${f.x(months)},${f.y(money(l.at(months - 1e-9)))}`, `${f.x(months)},${f.y(money(l.at(months)))}`);
    f.plot.append(svg("polyline", {points: pts.join(" "), fill: "none", stroke: l.color, "stroke-width": l.width,
      class: "tco-line", "data-line": l.id}, svgTitle(l.label)));
  }
  (data.breakeven || []).forEach((b) => {
    if (b.months === null || b.months > months) return;
    const cloud = lines.find((l) => l.offer && l.offer.provider === b.provider && l.offer.pricing === b.pricing);
    const at = cloud ? cloud.at(b.months) : ownAt(b.months);
    const cx = f.x(b.months), cy = f.y(money(at));
    const text = `${t("l.breakeven")}: ${b.provider} (${pricingText(b.pricing)})\n${b.months.toFixed(1)} ${t("ax.months")} · ${fmtMoney(at)}`;
    const dot = svg("circle", {cx, cy, r: 6, class: "pareto breakeven", "data-months": b.months.toFixed(3)},
      svgTitle(text.replace("\n", " · ")));
    dot.addEventListener("mousemove", (e) => showTip(e, text));
    dot.addEventListener("mouseleave", hideTip);
    f.plot.append(dot);
  });
  f.root.id = "tco-svg";
  const legend = el("div", {class: "legend"}, lines.map((l) => { const s = el("span", {text: l.label}); s.style.setProperty("--c", l.color); return s; }));
  $("#tco-chart").replaceChildren(f.root, legend);
  $("#tco-verdict").replaceChildren(el("p", {}, el("strong", {text: data.verdict})));
  const be = (data.breakeven || []).map((b) => el("tr", {},
    el("td", {text: b.provider}), el("td", {text: pricingText(b.pricing)}), el("td", {class: "num", text: fmtMoney(b.usd_per_gpu_hour, true)}),
    el("td", {text: t(`cheaper.${b.cheaper}`)}),
    el("td", {class: "num", text: b.months === null ? t("never") : `${b.months.toFixed(1)} ${t("ax.months")}` + (b.within_period ? "" : ` (${t("after")})`)}),
    el("td", {class: "num", text: b.breakeven_utilisation === null ? t("never") : fmtPct(b.breakeven_utilisation)})));
  const table = el("table", {id: "breakeven-table"}, el("thead", {}, el("tr", {}, ["c.provider", "c.pricing", "c.pergpuh", "c.cheaper", "c.months", "c.util"]
    .map((k) => el("th", {text: t(k)})))), el("tbody", {}, be));
  $("#tco-out").replaceChildren(table, el("div", {class: "kpis"},
    kpi(t("tco.capex"), fmtMoney(own.capex_usd)), kpi(t("tco.residual"), `-${fmtMoney(own.residual_credit_usd)}`),
    kpi(t("tco.opex"), fmtMoney(own.opex_usd_per_year)), kpi(t("tco.lifetime"), fmtMoney(own.lifetime_usd)),
    kpi(t("tco.useful"), fmtMoney(own.usd_per_useful_gpu_hour, true)),
    kpi(t("tco.facility"), `${own.it_kw_peak.toFixed(1)} kW · ${fmtInt(own.airflow_cfm_peak)} CFM`)),
  notes(t("assumptions"), data.assumptions) || "");
}

