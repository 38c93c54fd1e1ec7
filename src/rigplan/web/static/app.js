/* rigplan page, entry module: plain JavaScript ES modules, no build step, no library. Every number shown
   comes from the JSON API (/api/...); this module sends the requests, shows errors and dispatches to the
   view modules (view-*.js). Shared parts: util.js (state, formatting), strings.js, fields.js, form.js, charts.js. */
import {FIELDS} from "./fields.js";
import {bodyFor, buildForm, readField, showRows, showView, visibleIn} from "./form.js";
import {$, $$, fmtInt, fmtNum, state, t} from "./util.js";
import {renderCompare} from "./view-compare.js";
import {renderJob} from "./view-job.js";
import {renderLint} from "./view-lint.js";
import {renderPlan} from "./view-plan.js";
import {renderTco} from "./view-tco.js";

// ---------------------------------------------------------------------------------------------- errors
export function clearErrors() {
  for (const f of FIELDS) { f.el.classList.remove("invalid"); $(`#err-${f.name}`).textContent = ""; }
  $("#error").hidden = true;
  for (const v of $$(".view")) v.classList.remove("stale");
}
/** What went wrong, in plain words: input problems name the field; others say what failed. */
function errorLead(status) {
  if (status === 0) return t("err.unreachable");
  if (status === 400 || status === 404 || status === 422) return t("err.input");
  if (status === 408 || status === 503) return t("err.slow");
  return t("err.server");
}
export function formFieldFor(apiField) {
  if (!apiField) return null;
  return FIELDS.find((f) => (f.api || f.name) === apiField && visibleIn(f, state.view))
    || FIELDS.find((f) => f.name === apiField && visibleIn(f, state.view)) || null;
}
export function showError(err) {
  const problems = err.errors && err.errors.length
    ? err.errors.map((e) => ({field: (e.loc || []).filter((p) => !["body", "query", "path"].includes(p))[0],
      message: e.msg}))
    : [{field: err.field, message: err.detail}];
  const said = [];
  for (const p of problems) {
    const f = formFieldFor(p.field);
    if (f) {
      f.el.classList.add("invalid");
      const box = $(`#err-${f.name}`);
      if (!box.textContent) box.textContent = p.message;
    }
    said.push(f ? `${t(`f.${f.name}`)}: ${p.message}` : p.message);
  }
  // Shown above the results (not only beside a field that may be scrolled away), and the results of the
  // previous input are dimmed: they no longer answer what the form says.
  const banner = $("#error");
  const lead = err.status === undefined ? t("err.input") : errorLead(err.status);
  banner.textContent = `${lead}: ${said.filter(Boolean).join("; ") || err.detail || ""}`;
  banner.hidden = false;
  const view = $(`#view-${state.view}`);
  if (view) view.classList.add("stale");
  banner.scrollIntoView({block: "nearest"});
}

// ---------------------------------------------------------------------------------------------- API
export async function api(method, path, body) {
  // The server translates the sentences it makes (verdicts, findings, assumptions, errors) into this language.
  const opts = {method, headers: {"accept-language": state.lang === "zh" ? "zh-CN" : "en"}};
  if (body !== undefined) { opts.headers["content-type"] = "application/json"; opts.body = JSON.stringify(body); }
  let res;
  try { res = await fetch(path, opts); } catch (e) { throw {status: 0, detail: String(e), field: null}; }
  let data = null;
  try { data = await res.json(); } catch (e) { data = {detail: res.statusText}; }
  if (!res.ok) throw {status: res.status, detail: data.detail, field: data.field, errors: data.errors};
  if (data && typeof data.cny_per_usd === "number") state.fx = data.cny_per_usd;
  return data;
}

export function schedule(delay) {
  clearTimeout(state.timer);
  const d = delay !== undefined ? delay : ["plan", "compare"].includes(state.view) ? 700 : 300;
  state.timer = setTimeout(refresh, d);
}

export async function refresh() {
  const seq = ++state.seq;
  const view = state.view;
  const status = $("#status");
  status.className = "status busy";
  status.textContent = t("busy");
  try {
    const result = await compute(view);
    if (seq !== state.seq) return;
    clearErrors();
    state.last[view] = result;
    render(view);
    status.className = "status";
    status.textContent = t("ready");
    document.body.dataset.ready = view;
    document.body.dataset.done = String(seq);
  } catch (err) {
    if (seq !== state.seq) return;
    clearErrors();
    if (err && err.field !== undefined && err.status === undefined && err.message) {
      showError({field: err.field, detail: err.message});  // read locally, never sent
    } else {
      showError(err || {detail: "error"});
    }
    status.className = "status";
    status.textContent = "";
    document.body.dataset.ready = `${view}-error`;
    document.body.dataset.done = String(seq);
  }
}

export async function compute(view) {
  if (view === "job") {
    const [mem, est] = await Promise.all([api("POST", "/api/memory", bodyFor("memory", "job")),
      api("POST", "/api/estimate", bodyFor("estimate", "job"))]);
    let cost = null;
    if (est.time_to_train_s) {
      const extra = {hours: est.time_to_train_s / 3600, gpus: est.gpus, gpu: est.memory.gpu.id};
      // Cost needs the GPU's prices (cloud offers, purchase price); without them say why instead.
      try { cost = await api("POST", "/api/tco", bodyFor("tco", "tco", extra)); } catch (e) { cost = {error: e.detail}; }
    }
    return {mem, est, cost};
  }
  if (view === "plan") return api("POST", "/api/plan", bodyFor("plan", "plan"));
  if (view === "compare") return api("POST", "/api/compare", bodyFor("compare", "compare"));
  if (view === "tco") return api("POST", "/api/tco", bodyFor("tco", "tco"));
  if (view === "lint") return api("POST", "/api/lint", bodyFor("lint", "lint"));
  return null;
}

export function render(view) {
  const data = state.last[view];
  if (!data) return;
  ({job: renderJob, plan: renderPlan, compare: renderCompare, tco: renderTco, lint: renderLint})[view](data);
}

// ---------------------------------------------------------------------------------------------- i18n
export function applyLanguage() {
  document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
  for (const node of $$("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of $$("[data-hint]")) node.textContent = node.dataset.hint ? t(node.dataset.hint) : "";
  for (const f of FIELDS) {
    if (f.placeholder) f.el.setAttribute("placeholder", t(f.placeholder));
    if (f.type === "select" && f.empty) f.el.options[0].textContent = t(f.empty);
  }
  updateModelHint();
  render(state.view);
}

export function updateModelHint() {
  const f = FIELDS.find((x) => x.name === "model");
  const cfg = FIELDS.find((x) => x.name === "hf_config");
  const hint = $(".hint", f.row);
  const usingConfig = cfg.el.value.trim() !== "";
  f.el.disabled = usingConfig;
  if (usingConfig && state.configSummary) {
    const a = state.configSummary;
    hint.textContent = `config.json: ${a.architecture.name || a.architecture.id} · ${fmtNum(a.params_total)} ${t("params")} · ${a.architecture.num_layers} ${t("layers")}`;
    return;
  }
  const m = state.models.find((x) => x.id === f.el.value.trim().toLowerCase());
  hint.textContent = m ? `${m.name} · ${fmtNum(m.params_total)} ${t("params")}` + (m.moe ? ` (${fmtNum(m.params_active)} ${t("active")})` : "")
    + ` · ${m.layers} ${t("layers")} · ${fmtInt(m.context_length)} ${t("ctx")}` : t("h.model");
}

let configTimer = null;
export function onConfigInput() {
  clearTimeout(configTimer);
  configTimer = setTimeout(async () => {
    const f = FIELDS.find((x) => x.name === "hf_config");
    state.configSummary = null;
    let cfg;
    try { cfg = readField(f); } catch (e) { updateModelHint(); return; }
    if (cfg) {
      try { state.configSummary = await api("POST", "/api/models/from-config", cfg); } catch (e) { state.configSummary = null; }
    }
    updateModelHint();
  }, 300);
}

// ---------------------------------------------------------------------------------------------- start
export async function start() {
  const [openapi, models, gpus] = await Promise.all([api("GET", "/openapi.json"), api("GET", "/api/models"),
    api("GET", "/api/gpus")]);
  state.schemas = openapi.components.schemas;
  state.refs = Object.fromEntries(Object.entries(state.schemas).map(([k, v]) => [`#/components/schemas/${k}`, v]));
  state.models = models.models;
  state.gpus = gpus.gpus;
  state.endpoints = new Set(Object.keys(openapi.paths));
  const lintTab = $('#tabs button[data-view="lint"]');
  lintTab.hidden = !state.endpoints.has("/api/lint");
  if (state.endpoints.has("/api/servers")) state.servers = (await api("GET", "/api/servers")).servers;
  buildForm();
  const params = new URLSearchParams(location.search);
  state.lang = params.get("lang") || ((navigator.language || "").startsWith("zh") ? "zh" : "en");
  if (params.get("currency")) state.currency = params.get("currency");
  $("#lang").value = state.lang;
  $("#currency").value = state.currency;
  $("#form").addEventListener("input", (e) => {
    if (e.target.name === "hf_config") onConfigInput();
    if (e.target.name === "model") updateModelHint();
    schedule();
  });
  $("#form").addEventListener("change", (e) => {
    if (e.target.name === "method") showRows();
    schedule();
  });
  $("#form").addEventListener("submit", (e) => { e.preventDefault(); schedule(0); });
  for (const b of $$("#tabs button")) b.addEventListener("click", () => showView(b.dataset.view));
  $("#lang").addEventListener("change", (e) => { state.lang = e.target.value; applyLanguage(); schedule(0); });
  $("#currency").addEventListener("change", (e) => { state.currency = e.target.value; render(state.view); schedule(0); });
  applyLanguage();
  showView(params.get("view") || "job");
}

start().catch((err) => {
  const banner = $("#error");
  banner.textContent = `rigplan: ${err && err.detail ? err.detail : err}`;
  banner.hidden = false;
});
