/* Lint view: the server build's findings. */
import {$, el, notes, t} from "./util.js";

export function renderLint(data) {
  const findings = data.findings || [];
  const out = [];
  if (data.build) out.push(el("p", {class: "muted", text: Object.entries(data.build).map(([k, v]) => `${k}: ${v}`).join(" · ")}));
  const sm = data.summary || {};
  out.push(el("div", {class: `banner ${data.ok ? "ok" : "bad"}`, id: "lint-banner",
    text: `${data.ok ? "OK" : "FAIL"}: ${sm.error || 0} error(s), ${sm.warning || 0} warning(s), ${sm.info || 0} info`}));
  if (!findings.length) out.push(el("p", {class: "muted", text: t("lint.none")}));
  out.push(el("table", {id: "lint-table"}, el("tbody", {}, findings.map((f) => el("tr", {"data-code": f.code},
    el("td", {}, el("span", {class: `sev ${f.severity}`, text: f.severity})), el("td", {text: f.code}),
    el("td", {text: f.message}))))));
  out.push(notes(t("assumptions"), data.assumptions) || "");
  $("#lint-out").replaceChildren(...out);
}

