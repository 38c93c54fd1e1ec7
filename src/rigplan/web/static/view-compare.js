/* Compare view: concrete options side by side. */
import {STRINGS} from "./strings.js";
import {$, el, fmtBytes, fmtDuration, fmtInt, fmtLayout, fmtMoney, fmtNum, fmtPct, state, t} from "./util.js";

export const COMPARE_FORMAT = {
  time_to_train_s: fmtDuration, tokens_per_s: (v) => fmtNum(v), mfu: fmtPct, memory_per_gpu_bytes: fmtBytes,
  headroom_bytes: fmtBytes, cloud_cost_usd: (v) => fmtMoney(v), onprem_cost_usd: (v) => fmtMoney(v),
  power_w: (v) => `${(v / 1000).toFixed(1)} kW`, energy_kwh: (v) => `${fmtInt(v)} kWh`, layout: fmtLayout,
};
/** A value of a compare row, by its key's unit suffix when the page does not know the key. */
export function formatByKey(key, v) {
  if (COMPARE_FORMAT[key]) return COMPARE_FORMAT[key](v);
  if (typeof v !== "number") return typeof v === "object" ? JSON.stringify(v) : String(v);
  if (key.endsWith("_s")) return fmtDuration(v);
  if (key.endsWith("_bytes")) return fmtBytes(v);
  if (key.endsWith("_usd")) return fmtMoney(v);
  if (key.endsWith("_w")) return `${(v / 1000).toFixed(1)} kW`;
  if (key.endsWith("_kwh")) return `${fmtInt(v)} kWh`;
  return fmtNum(v);
}
export function renderCompare(data) {
  const why = data.infeasible || [];
  // An option that cannot run the job is marked in its column and says why below the table (as the CLI does).
  const head = el("tr", {}, el("th", {text: ""}), data.options.map((o, i) => el("th", {class: "num" + (why[i] ? " infeasible" : ""),
    title: why[i] || null}, o, why[i] ? el("div", {class: "flag", text: t("infeasible")}) : null)),
  el("th", {text: t("c.winner")}));
  const rows = data.rows.map((r) => el("tr", {"data-row": r.key},
    el("td", {text: STRINGS[state.lang][`row.${r.key}`] || r.label}),
    r.values.map((v, i) => el("td", {class: "num" + (r.winner === data.options[i] ? " win" : "") + (why[i] ? " infeasible" : ""),
      text: v === null || v === undefined ? "–" : formatByKey(r.key, v)})),
    el("td", {text: r.winner || ""})));
  const unpriced = data.unpriced || [];
  const over = data.over_limit || [];
  const reasons = data.options.flatMap((o, i) => why[i] ? [el("div", {class: "banner bad", "data-option": o,
    text: `${t("infeasible")} ${o}: ${why[i]}`})] : [
    over[i] ? el("div", {class: "banner bad", "data-option": o, text: `${t("overlimit")} ${o}: ${t("overlimit.note")}`}) : null,
    unpriced[i] ? el("div", {class: "banner", "data-option": o, text: `${t("unpriced")} ${o}: ${t("unpriced.note")}`}) : null,
  ]).filter(Boolean);
  $("#compare-out").replaceChildren(el("table", {id: "compare-table"}, el("thead", {}, head), el("tbody", {}, rows)),
    ...reasons);
}

