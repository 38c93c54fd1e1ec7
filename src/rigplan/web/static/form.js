/* The form: built from the field spec and the API's OpenAPI schemas; reads fields into request bodies. */
import {api, clearErrors, schedule} from "./app.js";
import {ENDPOINT_SCHEMA, FIELDS, GROUP_VIEWS, VIEW_SCHEMAS} from "./fields.js";
import {$, $$, el, state, t} from "./util.js";

// ---------------------------------------------------------------------------------------------- schema
export function schemaProp(schemaName, prop) {
  const s = state.schemas[schemaName];
  return s && s.properties ? s.properties[prop] : undefined;
}
export function enumOf(p) {
  if (!p) return null;
  if (p.enum) return p.enum;
  if (p.$ref) return enumOf(state.refs[p.$ref]);
  for (const alt of p.anyOf || []) { const e = enumOf(alt); if (e) return e; }
  if (p.items) return enumOf(p.items);
  return null;
}
/** The request schemas of the views a field shows in that have the field. */
export function fieldSchemas(f) {
  const api = f.api || f.name;
  const names = (f.views || GROUP_VIEWS[f.group] || []).flatMap((v) => VIEW_SCHEMAS[v] || []);
  return [...new Set(names)].filter((s) => schemaProp(s, api) !== undefined);
}
export function defaultOf(f) {
  if (f.def !== undefined) return f.def;
  for (const s of fieldSchemas(f)) {
    const d = schemaProp(s, f.api || f.name).default;
    if (d !== undefined && d !== null && typeof d !== "object") return String(d);
  }
  return "";
}
export function visibleIn(f, view) {
  const views = f.views || GROUP_VIEWS[f.group] || [];
  if (!views.includes(view)) return false;
  const api = f.api || f.name;
  return (VIEW_SCHEMAS[view] || []).some((s) => schemaProp(s, api) !== undefined);
}

/** Whether a field applies under the form's training method: a field with `methods` (the LoRA rank) only under
    those, so a full fine-tune neither shows nor sends it (the API refuses a LoRA setting without LoRA). */
export function applies(f) {
  if (!f.methods) return true;
  const method = FIELDS.find((x) => x.name === "method");
  return f.methods.includes(readField(method) ?? "full");
}

// ---------------------------------------------------------------------------------------------- form
export function buildForm() {
  for (const f of FIELDS) {
    const fieldset = $(`fieldset[data-group="${f.group}"]`);
    let parent = fieldset;
    if (f.sub) {
      let det = $(`details[data-sub="${f.sub}"]`, fieldset);
      if (!det) {
        det = el("details", {"data-sub": f.sub}, el("summary", {"data-i18n": f.sub, text: t(f.sub)}));
        fieldset.append(det);
      }
      parent = det;
    }
    if (f.grid) {
      let grid = $(":scope > .grid2", parent);
      if (!grid || grid.dataset.for !== f.group) {
        grid = el("div", {class: "grid2", "data-for": f.group});
        parent.append(grid);
      }
      parent = grid;
    }
    const id = `f-${f.name}`;
    let input;
    if (f.type === "select" || f.type === "gpu" || f.type === "server") {
      input = el("select", {id, name: f.name});
    } else if (f.type === "multi") {
      input = el("select", {id, name: f.name, multiple: true});
    } else if (f.type === "bool") {
      input = el("input", {id, name: f.name, type: "checkbox"});
    } else if (f.type === "json" || f.type === "yaml") {
      input = el("textarea", {id, name: f.name, spellcheck: "false", rows: f.type === "yaml" ? 14 : 5});
    } else {
      input = el("input", {id, name: f.name, type: "text", list: f.list,
        inputmode: f.type === "int" ? "numeric" : f.type === "num" ? "decimal" : undefined});
    }
    const row = el("div", {class: "row" + (f.type === "json" || f.type === "yaml" ? " wide" : ""),
      "data-field": f.name},
    el("label", {for: id, "data-i18n": `f.${f.name}`, text: t(`f.${f.name}`)}), input,
    el("div", {class: "hint", "data-hint": f.hint || "", text: f.hint ? t(f.hint) : ""}),
    el("div", {class: "field-error", id: `err-${f.name}`, "aria-live": "polite"}));
    f.el = input;
    f.row = row;
    parent.append(row);
  }
  fillOptions();
  for (const f of FIELDS) {
    const d = defaultOf(f);
    if (f.type === "bool") f.el.checked = d === "true";
    else if (["select", "gpu", "server"].includes(f.type)) setSelect(f, d);
    else if (f.type !== "multi" && d !== "") f.el.value = d;
  }
}

export function fillOptions() {
  for (const f of FIELDS) {
    if (f.type === "select") {
      let values = null;
      for (const s of fieldSchemas(f)) { values = enumOf(schemaProp(s, f.api || f.name)); if (values) break; }
      f.values = f.empty ? ["", ...(values || [])] : values || [];
      f.el.replaceChildren(...f.values.map((v, i) => el("option", {value: String(i),
        text: v === "" ? t(f.empty) : String(v)})));
    } else if (f.type === "server") {
      // Catalog selects carry the ids themselves as option values.
      f.el.replaceChildren(el("option", {value: "", "data-i18n": "h.yaml", text: t("h.yaml")}),
        ...state.servers.map((b) => el("option", {value: b.id, text: `${b.id}  (${b.name})`})));
    } else if (f.type === "gpu" || f.type === "multi") {
      f.el.replaceChildren(...state.gpus.map((g) => el("option", {value: g.id, text: `${g.id}  (${g.name})`})));
    }
  }
  $("#model-ids").replaceChildren(...state.models.map((m) => el("option", {value: m.id, label: m.name})));
}

export function setSelect(f, value) {
  if (f.type !== "select") { f.el.value = value; return; }
  const i = f.values.findIndex((v) => String(v) === String(value));
  if (i >= 0) f.el.value = String(i);
}

/** The value of a form field as the API wants it; `undefined` when empty; throws {field, message} when unreadable. */
export function readField(f) {
  const raw = f.el.value;
  switch (f.type) {
    case "bool": return f.el.checked ? true : undefined;
    case "select": { const v = f.values[Number(raw)]; return v === "" ? undefined : v; }
    case "gpu": case "server": return raw || undefined;
    case "multi": {
      const chosen = Array.from(f.el.selectedOptions).map((o) => o.value);
      return chosen.length ? chosen : undefined;
    }
    case "list": {
      const items = raw.split(/[\s,]+/).filter(Boolean);
      return items.length ? items : undefined;
    }
    case "json": {
      if (!raw.trim()) return undefined;
      let parsed;
      try { parsed = JSON.parse(raw); } catch (e) { throw {field: f.name, message: t("err.json")}; }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw {field: f.name, message: t("err.object")};
      return parsed;
    }
    case "int": case "num": {
      const s = raw.trim();
      if (!s) return undefined;
      // Numbers go as numbers; anything else is sent as typed so the API names the field in its 422.
      return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s) ? Number(s) : s;
    }
    default: { const s = raw.trim(); return s ? s : undefined; }
  }
}

/** Request body for `endpoint` from the fields visible in `view`; `extra` overrides. */
export function bodyFor(endpoint, view, extra = {}) {
  const schema = ENDPOINT_SCHEMA[endpoint];
  const body = {};
  for (const f of FIELDS) {
    const api = f.api || f.name;
    if (!visibleIn(f, view) || !applies(f) || schemaProp(schema, api) === undefined) continue;
    const v = readField(f);
    if (v !== undefined) body[api] = v;
  }
  if (body.hf_config) delete body.model;
  if (schemaProp(schema, "currency") !== undefined) body.currency = state.currency;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && schemaProp(schema, k) !== undefined) body[k] = v;
  return body;
}

/** Shows the rows of the fields visible in the current view that apply under the current method. */
export function showRows() {
  for (const f of FIELDS) f.row.hidden = !visibleIn(f, state.view) || !applies(f);
  for (const fs of $$("fieldset")) fs.hidden = !$$(".row", fs).some((r) => !r.hidden);
  for (const det of $$("details[data-sub]")) det.hidden = !$$(".row", det).some((r) => !r.hidden);
}

export function showView(view) {
  state.view = view;
  for (const b of $$("#tabs button")) b.classList.toggle("active", b.dataset.view === view);
  for (const v of $$(".view")) v.classList.toggle("active", v.id === `view-${view}`);
  showRows();
  clearErrors();
  schedule(0);
}

