/* The form's fields: which request field each one fills, in which group and views. */
import {api} from "./app.js";

// ---------------------------------------------------------------------------------------------- form spec
// name: form field; api: request field (default name); group: fieldset; sub: collapsible sub-section;
// views: where it shows (default: the group's views, when the view's request schema has the field).
export const GROUP_VIEWS = {
  model: ["job", "plan", "compare"], recipe: ["job", "plan", "compare"], layout: ["job"],
  cluster: ["job", "plan", "compare", "tco"], plan: ["plan"], compare: ["compare"], tco: ["tco"], lint: ["lint"],
};
export const FIELDS = [
  {name: "model", group: "model", type: "text", def: "llama-3.1-8b", list: "model-ids", hint: "h.model"},
  {name: "hf_config", group: "model", type: "json", sub: "sub.config"},
  ...["layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "top_k"].map(
    (n) => ({name: n, group: "model", type: "int", sub: "sub.shape", grid: true})),
  {name: "framework", group: "recipe", type: "select", empty: "h.none", hint: "h.framework"},
  {name: "method", group: "recipe", type: "select"},
  {name: "precision", group: "recipe", type: "select", empty: "h.auto"},
  {name: "optimizer", group: "recipe", type: "select"},
  {name: "seq", group: "recipe", type: "int", placeholder: "h.auto"},
  {name: "micro_batch", group: "recipe", type: "int"},
  {name: "global_batch", group: "recipe", type: "int", def: "", placeholder: "h.auto"},
  {name: "recompute", group: "recipe", type: "select", empty: "h.auto"},
  {name: "zero", group: "recipe", type: "select", empty: "h.auto"},
  {name: "attention", group: "recipe", type: "select"},
  {name: "offload", group: "recipe", type: "select"},
  {name: "loss", group: "recipe", type: "select", empty: "h.auto"},
  {name: "kernels", group: "recipe", type: "select", empty: "h.auto"},
  {name: "lora_rank", group: "recipe", type: "int"},
  {name: "balanced_routing", group: "recipe", type: "bool", sub: "sub.moe"},
  {name: "moe_imbalance", group: "recipe", type: "num", sub: "sub.moe", placeholder: "h.default"},
  {name: "capacity_factor", group: "recipe", type: "num", sub: "sub.moe", placeholder: "h.default"},
  {name: "a2a_overlap", group: "recipe", type: "bool", sub: "sub.moe"},
  {name: "a2a_overlap_schedule", group: "recipe", type: "select", sub: "sub.moe"},
  {name: "moe_dispatcher", group: "recipe", type: "select", sub: "sub.moe", empty: "h.default"},
  {name: "moe_pad_to_capacity", group: "recipe", type: "bool", sub: "sub.moe"},
  ...["tp", "pp", "vpp", "cp", "ep", "etp", "dp"].map((n) => ({name: n, group: "layout", type: "int", grid: true})),
  {name: "sequence_parallel", group: "layout", type: "bool"},
  {name: "gpu", group: "cluster", type: "gpu", views: ["job", "tco"]},
  {name: "gpus", group: "cluster", type: "int", def: "1", views: ["job", "tco"]},
  {name: "tokens", group: "cluster", type: "text", def: "100B", hint: "h.tokens", views: ["job", "plan", "compare"]},
  {name: "find_max", group: "cluster", type: "bool"},
  {name: "gpus_per_node", group: "cluster", type: "int", sub: "sub.network", placeholder: "h.default"},
  {name: "nic_gbit", group: "cluster", type: "num", sub: "sub.network", placeholder: "h.default"},
  {name: "plan_gpus", api: "gpu", group: "plan", type: "multi", hint: "h.plan_gpus"},
  {name: "gpus_max", group: "plan", type: "int"},
  {name: "gpus_min", group: "plan", type: "int"},
  {name: "budget", group: "plan", type: "text", hint: "h.budget"},
  {name: "deadline", group: "plan", type: "text", hint: "h.deadline"},
  {name: "mode", group: "plan", type: "select"},
  {name: "onprem_basis", group: "plan", type: "select"},
  {name: "top", group: "plan", type: "int"},
  {name: "options", group: "compare", type: "list", def: "8xh100-sxm, 8xh200-sxm, 8xa100-80gb-sxm",
   hint: "h.options"},
  {name: "utilisation", group: "tco", type: "num"},
  {name: "years", group: "tco", type: "num"},
  {name: "residual", group: "tco", type: "num"},
  {name: "price_per_kwh", group: "tco", type: "num", placeholder: "h.default"},
  {name: "cloud_price", group: "tco", type: "num", placeholder: "h.default"},
  {name: "pue", group: "tco", type: "num", sub: "sub.more"},
  {name: "licence", group: "tco", type: "text", sub: "sub.more"},
  {name: "gpu_price", group: "tco", type: "num", sub: "sub.more", placeholder: "h.default"},
  {name: "staff_per_year", group: "tco", type: "num", sub: "sub.more"},
  {name: "colo_per_kw_month", group: "tco", type: "num", sub: "sub.more"},
  {name: "build", group: "lint", type: "server", def: "article-mid"},
  {name: "build_yaml", group: "lint", type: "yaml", sub: "sub.yaml"},
  {name: "for_model", group: "lint", type: "text", list: "model-ids", hint: "h.for_model"},
  {name: "lint_method", api: "method", group: "lint", type: "select", empty: "h.default"},
  {name: "lint_tokens", api: "tokens", group: "lint", type: "text", hint: "h.tokens"},
  {name: "lint_seq", api: "seq", group: "lint", type: "int", placeholder: "h.default"},
];
export const VIEW_SCHEMAS = {
  job: ["MemoryBody", "EstimateBody"], plan: ["PlanBody"], compare: ["CompareBody"], tco: ["TcoBody"],
  lint: ["LintBody"],
};
export const ENDPOINT_SCHEMA = {
  memory: "MemoryBody", estimate: "EstimateBody", plan: "PlanBody", compare: "CompareBody", tco: "TcoBody",
  lint: "LintBody",
};
