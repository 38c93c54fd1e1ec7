/* Lint view: the server build's findings. */
import {$, el, notes, t} from "./util.js";

export function renderLint(data) {
  const findings = data.findings || [];
  const out = [];
  if (data.build) out.push(el("p", {class: "muted", text: Object.entries(data.build).map(([k, v]) => `${t(`b.${k}`)}: ${v}`).join(" · ")}));
  const sm = data.summary || {};
  out.push(el("div", {class: `banner ${data.ok ? "ok" : "bad"}`, id: "lint-banner",
    text: t(data.ok ? "lint.ok" : "lint.fail", {e: sm.error || 0, w: sm.warning || 0, i: sm.info || 0})}));
  if (!findings.length) out.push(el("p", {class: "muted", text: t("lint.none")}));
  out.push(el("table", {id: "lint-table"}, el("tbody", {}, findings.map((f) => el("tr", {"data-code": f.code},
    el("td", {}, el("span", {class: `sev ${f.severity}`, "data-severity": f.severity, text: t(`sev.${f.severity}`)})),
    el("td", {text: f.code}), el("td", {text: f.message}))))));
  out.push(notes(t("assumptions"), data.assumptions) || "");
  $("#lint-out").replaceChildren(...out);
}

