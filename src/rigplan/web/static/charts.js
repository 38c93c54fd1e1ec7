/* SVG charts: the stacked bar, axes with ticks, the tooltip. */
import {$, el, svg, svgText, svgTitle, t} from "./util.js";

export const MEMORY_PARTS = [
  ["weights_bytes", "#4e79a7"], ["gradients_bytes", "#f28e2b"], ["optimizer_bytes", "#e15759"],
  ["activations_bytes", "#76b7b2"], ["logits_bytes", "#59a14f"], ["transient_bytes", "#edc948"],
  ["cuda_context_bytes", "#b07aa1"], ["nccl_bytes", "#ff9da7"], ["fragmentation_bytes", "#9c755f"],
];
// The six parts sum to the step time (estimate.step.StepBreakdown): the host's share is an MoE job's wait on the
// host issuing its ops and the training loop's per-step time; offload the host optimizer and the host-link copies.
export const STEP_PARTS = [["compute_s", "#4e79a7"], ["exposed_comm_s", "#e15759"], ["bubble_s", "#edc948"],
  ["optimizer_s", "#59a14f"], ["host_s", "#b07aa1"], ["offload_s", "#9c755f"]];
export const LINE_COLORS = ["#e15759", "#f28e2b", "#76b7b2", "#b07aa1", "#9c755f", "#ff9da7", "#59a14f", "#edc948"];
// ---------------------------------------------------------------------------------------------- charts
/** A horizontal stacked bar: parts [{key,label,value,color}], a capacity marker, labels under it. */
export function stackedBar(parts, capacity, fmt, capLabel) {
  const W = 760, H = capacity ? 82 : 64, x0 = 4, barY = 8, barH = 28;
  const total = parts.reduce((s, p) => s + p.value, 0);
  const scale = Math.max(total, capacity || 0) * 1.06 || 1;
  const x = (v) => x0 + (W - 2 * x0) * v / scale;
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", class: "stacked"});
  let at = 0;
  for (const p of parts) {
    if (p.value <= 0) { continue; }
    root.append(svg("rect", {x: x(at), y: barY, width: Math.max(x(at + p.value) - x(at), 0.5), height: barH,
      fill: p.color, "data-part": p.key}, svgTitle(`${p.label}: ${fmt(p.value)}`)));
    at += p.value;
  }
  if (capacity) {
    const cx = x(capacity);
    root.append(svg("line", {x1: cx, x2: cx, y1: 2, y2: barY + barH + 6, stroke: "#101828", "stroke-width": 2,
      "stroke-dasharray": "4 3", class: "capacity"}));
    // One row below the total's, so the two never overlap; anchored to stay inside the chart.
    const room = capLabel.length * 7 + 8;
    const atEnd = cx >= room;
    root.append(svgText(atEnd ? Math.min(cx, W - 4) : cx + 4, H - 4, capLabel,
      {"text-anchor": atEnd ? "end" : "start", class: "cap-label"}));
  }
  root.append(svgText(x0, barY + barH + 18, `${fmt(total)}`, {class: "total-label"}));
  const legend = el("div", {class: "legend"}, parts.filter((p) => p.value > 0).map((p) => {
    const s = el("span", {text: `${p.label} ${fmt(p.value)}`});
    s.style.setProperty("--c", p.color);
    return s;
  }));
  return el("div", {}, root, legend);
}

export function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) { const v = m * 10 ** e; if (v >= lo && v <= hi) ticks.push(v); }
  }
  return ticks;
}
export function linTicks(lo, hi, n = 6) {
  const step0 = (hi - lo) / n, mag = 10 ** Math.floor(Math.log10(step0 || 1));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) ticks.push(v);
  return ticks;
}

export function showTip(evt, text) {
  const tip = $("#tooltip");
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = `${Math.min(evt.clientX + 14, window.innerWidth - 330)}px`;
  tip.style.top = `${evt.clientY + 14}px`;
}
export function hideTip() { $("#tooltip").hidden = true; }

/** Frame with axes: returns {root, x, y, plot} for a chart of size W x H. */
export function frame({W, H, xDomain, yDomain, xLog, yLog, xLabel, yLabel, xFmt, yFmt}) {
  const m = {l: 72, r: 16, t: 12, b: 42};
  const [x0, x1] = xDomain, [y0, y1] = yDomain;
  const fx = xLog ? Math.log10 : (v) => v, fy = yLog ? Math.log10 : (v) => v;
  const x = (v) => m.l + (W - m.l - m.r) * (fx(v) - fx(x0)) / ((fx(x1) - fx(x0)) || 1);
  const y = (v) => H - m.b - (H - m.t - m.b) * (fy(v) - fy(y0)) / ((fy(y1) - fy(y0)) || 1);
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img"});
  const grid = svg("g", {class: "grid"}), axis = svg("g", {class: "axis"});
  for (const v of xLog ? logTicks(x0, x1) : linTicks(x0, x1)) {
    grid.append(svg("line", {x1: x(v), x2: x(v), y1: m.t, y2: H - m.b}));
    axis.append(svgText(x(v), H - m.b + 14, xFmt(v), {"text-anchor": "middle"}));
  }
  for (const v of yLog ? logTicks(y0, y1) : linTicks(y0, y1)) {
    grid.append(svg("line", {x1: m.l, x2: W - m.r, y1: y(v), y2: y(v)}));
    axis.append(svgText(m.l - 6, y(v) + 4, yFmt(v), {"text-anchor": "end"}));
  }
  axis.append(svg("line", {x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b}));
  axis.append(svg("line", {x1: m.l, x2: m.l, y1: m.t, y2: H - m.b}));
  axis.append(svgText((m.l + W - m.r) / 2, H - 6, xLabel, {"text-anchor": "middle"}));
  axis.append(svgText(14, (m.t + H - m.b) / 2, yLabel, {"text-anchor": "middle",
    transform: `rotate(-90 14 ${(m.t + H - m.b) / 2})`}));
  root.append(grid, axis);
  const plot = svg("g", {class: "plot"});
  root.append(plot);
  return {root, x, y, plot, m};
}

