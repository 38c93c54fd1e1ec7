/* Shared by every view: the page state, DOM/SVG builders, number, money and duration formatting. */
import {STRINGS} from "./strings.js";

export const HOURS_PER_MONTH = 730;
export const SVGNS = "http://www.w3.org/2000/svg";

export const state = {
  lang: "en", currency: "usd", fx: 7.1, view: "job", schemas: {}, models: [], gpus: [], seq: 0, timer: null,
  last: {}, configSummary: null, endpoints: new Set(), servers: [],
};

// ---------------------------------------------------------------------------------------------- helpers
export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
export function t(key, vars) {
  let s = (STRINGS[state.lang] && STRINGS[state.lang][key]) || STRINGS.en[key] || key;
  for (const [k, v] of Object.entries(vars || {})) s = s.replace(`{${k}}`, v);
  return s;
}
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}
export function svgTitle(text) { const n = svg("title"); n.textContent = text; return n; }
export function svgText(x, y, text, attrs = {}) { const n = svg("text", {x, y, ...attrs}); n.textContent = text; return n; }

export const GiB = 2 ** 30, MiB = 2 ** 20;
export function fmtBytes(b) {
  if (b === null || b === undefined) return "–";
  return Math.abs(b) >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / MiB).toFixed(0)} MiB`;
}
export function fmtNum(x, digits = 3) {
  if (x === null || x === undefined || !isFinite(x)) return "–";
  return new Intl.NumberFormat(state.lang === "zh" ? "zh-CN" : "en-US",
    {notation: "compact", maximumSignificantDigits: digits}).format(x);
}
export function fmtInt(x) {
  if (x === null || x === undefined) return "–";
  return new Intl.NumberFormat(state.lang === "zh" ? "zh-CN" : "en-US", {maximumFractionDigits: 0}).format(x);
}
export function fmtPct(x) { return x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`; }
export function fmtDuration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  const zh = state.lang === "zh";
  if (s < 1) return `${(s * 1000).toFixed(1)} ${zh ? "毫秒" : "ms"}`;
  if (s < 120) return `${s.toFixed(2)} ${zh ? "秒" : "s"}`;
  if (s < 7200) return `${(s / 60).toFixed(1)} ${zh ? "分钟" : "min"}`;
  if (s < 2 * 86400) return `${(s / 3600).toFixed(1)} ${zh ? "小时" : "h"}`;
  const days = s / 86400;
  return `${days >= 1000 ? fmtInt(days) : days.toFixed(1)} ${zh ? "天" : "days"}`;
}
export function sig3(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
/** A USD amount in the chosen currency: $1.23M, or ¥123万 / ¥1.23亿 in CNY. */
export function fmtMoney(usd, rate = false) {
  if (usd === null || usd === undefined || !isFinite(usd)) return "–";
  if (state.currency === "cny") {
    const v = usd * state.fx, a = Math.abs(v), sign = v < 0 ? "-" : "";
    if (rate || a < 1e4) return `${sign}¥${a < 100 ? a.toFixed(2) : fmtInt(a)}`;
    if (a < 1e8) return `${sign}¥${sig3(a / 1e4)}万`;
    return `${sign}¥${sig3(a / 1e8)}亿`;
  }
  const a = Math.abs(usd), sign = usd < 0 ? "-" : "";
  if (rate || a < 1e4) return `${sign}$${a < 100 ? a.toFixed(2) : fmtInt(a)}`;
  if (a < 1e6) return `${sign}$${sig3(a / 1e3)}k`;
  if (a < 1e9) return `${sign}$${sig3(a / 1e6)}M`;
  return `${sign}$${sig3(a / 1e9)}B`;
}
export function money(usd) { return usd === null || usd === undefined ? null : usd * (state.currency === "cny" ? state.fx : 1); }
export function fmtLayout(l) {
  if (!l) return "–";
  let s = `tp${l.tp} pp${l.pp}` + (l.vpp > 1 ? `x${l.vpp}` : "") + ` dp${l.dp}`;
  if (l.cp > 1) s += ` cp${l.cp}`;
  if (l.ep > 1) s += ` ep${l.ep}`;
  return s + ` z${l.zero} mb${l.micro_batch} ${l.recompute}`;
}
/** An offer's pricing kind (on-demand, spot, reserved, purchase ...) in the page's language. */
export function pricingText(kind) {
  const key = `pricing.${kind}`;
  return t(key) === key ? kind : t(key);
}
export function modeText(m) {
  return m.kind === "cloud" ? `${t("rent")}: ${m.provider} ${pricingText(m.pricing)}` : `${t("buy")} (${pricingText(m.pricing)})`;
}

// ---------------------------------------------------------------------------------------------- views
export function kpi(label, value, attrs = {}) {
  return el("div", {class: "kpi", ...attrs}, el("div", {class: "v", text: value}), el("div", {class: "k", text: label}));
}
export function notes(title, items) {
  if (!items || !items.length) return null;
  return el("details", {}, el("summary", {text: `${title} (${items.length})`}),
    el("ul", {class: "notes"}, items.map((a) => el("li", {text: typeof a === "string" ? a : a.message || JSON.stringify(a)}))));
}
