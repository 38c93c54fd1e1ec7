/* Memory & speed view: the memory bar against the GPU, the step-time breakdown, time and cost. */
import {MEMORY_PARTS, STEP_PARTS, stackedBar} from "./charts.js";
import {$, el, kpi, notes, fmtBytes, fmtDuration, fmtInt, fmtMoney, fmtNum, fmtPct, pricingText, t} from "./util.js";


export function renderJob({mem, est, cost}) {
  const g = mem.per_gpu;
  const parts = MEMORY_PARTS.map(([k, c]) => ({key: k, label: t(`p.${k}`), value: g[k] || 0, color: c}));
  const usable = mem.gpu.usable_bytes;
  const banner = el("div", {class: `banner ${mem.fits ? "ok" : "bad"}`, id: "fit-banner",
    text: `${mem.fits ? t("fits") : t("nofit")}: ${fmtBytes(g.total_bytes)} ${t("of")} ${fmtBytes(usable)} `
      + `${t("usable")} (${t("headroom")} ${fmtBytes(mem.headroom_bytes)}) · ${mem.gpu.name}`});
  const out = [banner, stackedBar(parts, usable, fmtBytes, `${t("usable")} ${fmtBytes(usable)}`)];
  const k = [];
  if (mem.max_micro_batch !== null && mem.max_micro_batch !== undefined) k.push(kpi(t("k.maxmb"), fmtInt(mem.max_micro_batch)));
  if (mem.max_seq_len !== null && mem.max_seq_len !== undefined) k.push(kpi(t("k.maxseq"), fmtInt(mem.max_seq_len)));
  if (k.length) out.push(el("div", {class: "kpis"}, k));
  const m = mem.model, l = mem.layout;
  out.push(el("p", {class: "muted", text: `${m.name || m.id}: ${fmtNum(m.params_total)} ${t("params")}` +
    (m.moe ? ` (${fmtNum(m.params_active)} ${t("active")})` : "") + ` · ${m.layers} ${t("layers")} · ${m.attention} · ` +
    `tp${l.tp} pp${l.pp} dp${l.dp} cp${l.cp} ep${l.ep} zero${l.zero} · ${l.gpus} ${t("c.gpus")}`}));
  out.push(notes(t("violations"), mem.violations), notes(t("assumptions"), mem.assumptions));
  $("#memory-out").replaceChildren(...out.filter(Boolean));

  const b = est.breakdown;
  const steps = STEP_PARTS.map(([key, c]) => ({key, label: t(`s.${key}`), value: b[key] || 0, color: c}));
  const costError = cost && cost.error;
  const cheapest = cost && cost.cloud && cost.cloud.length
    ? cost.cloud.reduce((a, c) => (c.total_usd < a.total_usd ? c : a)) : null;
  const kpis = [
    kpi(t("k.step"), fmtDuration(est.step_time_s), {id: "kpi-step"}),
    kpi(t("k.tps"), fmtNum(est.tokens_per_s)), kpi(t("k.tpsgpu"), fmtNum(est.tokens_per_s_per_gpu)),
    kpi(t("k.mfu"), `${fmtPct(est.mfu)} / ${fmtPct(est.hfu)}`),
  ];
  // An eager MoE job: the host's time to issue a micro-batch's ops over its GPU time, which the accuracy line follows.
  if (b.host_load > 0) {
    const note = est.moe_accuracy ? est.moe_accuracy.note : "";
    kpis.push(kpi(t("k.hostload"), b.host_load.toFixed(2), {id: "kpi-host-load", title: note}));
  }
  // A job that does not fit is estimated as set, but its time and cost are marked, as the CLI prints INFEASIBLE.
  const mark = mem.fits ? {} : {class: "kpi infeasible", title: t("infeasible.note")};
  const flag = (v) => (mem.fits ? v : `${t("infeasible")} ${v}`);
  if (est.time_to_train_s) {
    kpis.push(kpi(t("k.ttt"), flag(fmtDuration(est.time_to_train_s)), {id: "kpi-ttt", ...mark}));
    // An MoE estimate also shows its time to train under the error of the published MoE runs of its regime.
    const spread = est.moe_accuracy && est.moe_accuracy.time_to_train_s_spread;
    if (spread) {
      kpis.push(kpi(t("k.tttspread"), flag(`${fmtDuration(spread[0])} – ${fmtDuration(spread[1])}`),
        {id: "kpi-ttt-spread", title: est.moe_accuracy.note, ...mark}));
    }
    kpis.push(kpi(t("k.gpuh"), flag(fmtInt(est.gpu_hours)), mark), kpi(t("k.energy"), flag(`${fmtInt(est.energy_kwh)} kWh`), mark));
    if (cheapest) kpis.push(kpi(`${t("k.rent")} (${cheapest.provider} ${pricingText(cheapest.pricing)})`, flag(fmtMoney(cheapest.total_usd)), {id: "kpi-rent", ...mark}));
    if (cost && cost.job) {
      const own = cost.job.onprem_usd == null ? t("k.nopurchase") : flag(fmtMoney(cost.job.onprem_usd));
      kpis.push(kpi(t("k.own"), own, {id: "kpi-own", ...mark}));
    }
    if (costError) kpis.push(kpi(`${t("k.rent")} / ${t("k.own")}: ${costError}`, "–", {id: "kpi-cost-missing"}));
  } else {
    kpis.push(kpi(t("k.ttt"), "–", {title: t("k.notokens")}));
  }
  const comm = Object.entries(b.comm || {}).filter(([, v]) => v > 0)
    .map(([key, v]) => `${key.replace("_s", "")} ${fmtDuration(v)}`).join(", ");
  $("#speed-out").replaceChildren(...[
    mem.fits ? null : el("div", {class: "banner bad", id: "infeasible-banner", text: `${t("infeasible")}: ${t("infeasible.note")}`}),
    el("div", {class: "kpis"}, kpis),
    el("h3", {text: `${t("k.step")}: ${fmtDuration(est.step_time_s)}`}),
    stackedBar(steps, null, fmtDuration, ""),
    comm ? el("p", {class: "muted", text: `${t("k.comm")}: ${comm}`}) : null,
    notes(t("assumptions"), est.assumptions),
  ].filter(Boolean));
}

