/* rigplan page: plain JavaScript, no build step, no library. Every number shown comes from the JSON API
   (/api/...); this file only builds requests from the form, formats numbers and draws SVG. */
"use strict";

// ---------------------------------------------------------------------------------------------- text
const STRINGS = {
  en: {
    "tagline": "Plan GPUs for LLM training", "language": "Language", "currency": "Currency",
    "tab.job": "Memory & speed", "tab.plan": "Plan", "tab.compare": "Compare", "tab.tco": "Rent or buy (TCO)",
    "tab.lint": "Lint",
    "group.model": "Model", "group.recipe": "Training recipe", "group.layout": "Parallel layout",
    "group.cluster": "GPU and cluster", "group.plan": "Search limits", "group.compare": "Options to compare",
    "group.tco": "Ownership scenario", "group.lint": "Server build",
    "sub.shape": "Override the shape", "sub.config": "Paste a config.json instead",
    "sub.network": "Network", "sub.more": "More ownership inputs",
    "f.model": "Model", "f.hf_config": "config.json", "f.layers": "layers", "f.hidden": "hidden", "f.heads": "heads",
    "f.kv_heads": "kv heads", "f.ffn": "ffn", "f.vocab": "vocab", "f.experts": "experts", "f.top_k": "top-k",
    "f.method": "Method", "f.precision": "Precision", "f.optimizer": "Optimizer", "f.seq": "Sequence length",
    "f.micro_batch": "Micro-batch", "f.global_batch": "Global batch", "f.recompute": "Recompute",
    "f.attention": "Attention", "f.zero": "ZeRO stage", "f.lora_rank": "LoRA rank", "f.offload": "CPU offload",
    "f.loss": "Loss kernel", "f.kernels": "Kernels", "f.tp": "tp", "f.pp": "pp", "f.vpp": "vpp", "f.cp": "cp",
    "f.ep": "ep", "f.dp": "dp", "f.sequence_parallel": "Sequence parallel", "f.gpu": "GPU", "f.gpus": "GPUs",
    "f.tokens": "Tokens", "f.find_max": "Find largest batch / sequence", "f.gpus_per_node": "GPUs per node",
    "f.nic_gbit": "NIC Gb/s", "f.plan_gpus": "GPUs to consider", "f.gpus_max": "Most GPUs", "f.gpus_min": "Fewest GPUs",
    "f.budget": "Budget", "f.deadline": "Deadline", "f.mode": "Rent or buy", "f.onprem_basis": "Owned cost basis",
    "f.top": "Ranked options", "f.options": "Options", "f.utilisation": "Utilisation", "f.years": "Years",
    "f.residual": "Resale fraction", "f.pue": "PUE", "f.price_per_kwh": "Price per kWh", "f.licence": "Licence",
    "f.cloud_price": "Cloud price /GPU-h", "f.gpu_price": "GPU price", "f.hours": "Job hours", "f.months": "Job months",
    "f.staff_per_year": "Staff per year", "f.colo_per_kw_month": "Colocation /kW-month", "f.build": "Build",
    "f.for_model": "Workload model", "f.build_yaml": "BUILD.yaml", "f.lint_method": "Method",
    "f.lint_tokens": "Tokens", "f.lint_seq": "Sequence length", "sub.yaml": "Or paste a BUILD.yaml",
    "h.yaml": "(the BUILD.yaml below)", "h.for_model": "empty: check the build's own claims",
    "h.model": "catalog id, a size like 7b, or shape fields", "h.tokens": "e.g. 100B, 2T",
    "h.plan_gpus": "none selected = the whole catalog", "h.budget": "e.g. 500k, 3M (CNY: 2000万)",
    "h.deadline": "e.g. 30d, 12w", "h.options": "COUNTxGPU, comma separated", "h.default": "default",
    "h.auto": "auto", "h.all": "whole catalog",
    "memory.title": "Memory per GPU", "speed.title": "Step time and time to train", "plan.title": "Time vs cost",
    "plan.ranked": "Recommended options", "compare.title": "Side by side",
    "tco.title": "Cumulative cost: cloud vs owned", "tco.breakdown": "Break-even and ownership costs",
    "lint.title": "Findings",
    "busy": "computing…", "ready": "up to date", "fits": "FITS", "nofit": "DOES NOT FIT",
    "headroom": "headroom", "of": "of", "usable": "usable", "total": "total on device",
    "p.weights_bytes": "weights", "p.gradients_bytes": "gradients", "p.optimizer_bytes": "optimizer states",
    "p.activations_bytes": "activations", "p.logits_bytes": "logits + loss", "p.transient_bytes": "transient",
    "p.cuda_context_bytes": "CUDA context", "p.nccl_bytes": "NCCL buffers",
    "p.fragmentation_bytes": "fragmentation",
    "s.compute_s": "compute", "s.exposed_comm_s": "exposed communication", "s.bubble_s": "pipeline bubble",
    "s.optimizer_s": "optimizer step",
    "k.step": "step time", "k.tps": "tokens/s", "k.tpsgpu": "tokens/s per GPU", "k.mfu": "MFU / HFU",
    "k.ttt": "time to train", "k.gpuh": "GPU-hours", "k.energy": "energy", "k.rent": "cost renting",
    "k.own": "cost owning (share)", "k.maxmb": "largest micro-batch", "k.maxseq": "longest sequence",
    "k.comm": "communication by axis", "k.notokens": "give tokens for time to train and cost",
    "assumptions": "Assumptions", "violations": "Violations",
    "c.gpus": "GPUs", "c.purchase": "purchase", "c.layout": "layout", "c.time": "time", "c.cost": "cost",
    "c.mfu": "MFU", "c.mem": "mem/GPU", "c.why": "why", "c.provider": "provider", "c.pricing": "pricing",
    "c.pergpuh": "per GPU-h", "c.cheaper": "cheaper", "c.months": "pays back after", "c.util": "own wins from",
    "c.winner": "winner",
    "ax.time": "time to train (days, log)", "ax.cost": "cost (log)", "ax.months": "months",
    "ax.cumcost": "cumulative cost",
    "l.cand": "candidate", "l.pareto": "Pareto front", "l.ranked": "recommended", "l.out": "over budget or deadline",
    "l.owned": "owned (capex net of resale value, then running costs)", "l.breakeven": "break-even",
    "buy": "buy", "rent": "rent", "never": "never", "after": "after the period",
    "evaluated": "{e} layouts evaluated, {f} fit in memory, {c} priced options, {g} within the limits; {s}",
    "tco.capex": "capex (GPUs + servers + fabric)", "tco.residual": "resale credit", "tco.opex": "running cost per year",
    "tco.lifetime": "total over the period", "tco.useful": "per useful GPU-hour", "tco.facility": "facility peak",
    "err.json": "not valid JSON", "err.object": "must be a JSON object",
    "err.status": "HTTP {s}", "none": "none",
    "lint.none": "no findings", "lint.run": "Check build",
    "params": "params", "active": "active", "layers": "layers", "ctx": "ctx",
  },
  zh: {
    "tagline": "大模型训练 GPU 规划", "language": "语言", "currency": "货币",
    "tab.job": "显存与速度", "tab.plan": "方案搜索", "tab.compare": "对比", "tab.tco": "租还是买 (TCO)",
    "tab.lint": "配置检查",
    "group.model": "模型", "group.recipe": "训练配置", "group.layout": "并行切分",
    "group.cluster": "GPU 与集群", "group.plan": "搜索范围", "group.compare": "对比选项",
    "group.tco": "自建场景", "group.lint": "服务器配置",
    "sub.shape": "覆盖模型结构", "sub.config": "改为粘贴 config.json",
    "sub.network": "网络", "sub.more": "更多自建参数",
    "f.model": "模型", "f.hf_config": "config.json", "f.layers": "层数", "f.hidden": "隐藏维度", "f.heads": "注意力头",
    "f.kv_heads": "KV 头", "f.ffn": "FFN", "f.vocab": "词表", "f.experts": "专家数", "f.top_k": "top-k",
    "f.method": "训练方式", "f.precision": "精度", "f.optimizer": "优化器", "f.seq": "序列长度",
    "f.micro_batch": "微批大小", "f.global_batch": "全局批大小", "f.recompute": "重计算",
    "f.attention": "注意力实现", "f.zero": "ZeRO 阶段", "f.lora_rank": "LoRA 秩", "f.offload": "CPU 卸载",
    "f.loss": "损失函数实现", "f.kernels": "算子", "f.tp": "tp", "f.pp": "pp", "f.vpp": "vpp", "f.cp": "cp",
    "f.ep": "ep", "f.dp": "dp", "f.sequence_parallel": "序列并行", "f.gpu": "GPU", "f.gpus": "GPU 数",
    "f.tokens": "训练 token 数", "f.find_max": "搜索最大批/序列", "f.gpus_per_node": "每节点 GPU",
    "f.nic_gbit": "网卡 Gb/s", "f.plan_gpus": "候选 GPU", "f.gpus_max": "最多 GPU", "f.gpus_min": "最少 GPU",
    "f.budget": "预算", "f.deadline": "期限", "f.mode": "租 / 买", "f.onprem_basis": "自建成本口径",
    "f.top": "推荐条数", "f.options": "选项", "f.utilisation": "利用率", "f.years": "折旧年限",
    "f.residual": "残值比例", "f.pue": "PUE", "f.price_per_kwh": "电价 /kWh", "f.licence": "软件授权",
    "f.cloud_price": "云价格 /GPU时", "f.gpu_price": "GPU 单价", "f.hours": "任务小时", "f.months": "任务月数",
    "f.staff_per_year": "年人力成本", "f.colo_per_kw_month": "托管费 /kW·月", "f.build": "服务器配置",
    "f.for_model": "工作负载模型", "f.build_yaml": "BUILD.yaml", "f.lint_method": "训练方式",
    "f.lint_tokens": "训练 token 数", "f.lint_seq": "序列长度", "sub.yaml": "或粘贴 BUILD.yaml",
    "h.yaml": "（使用下方 BUILD.yaml）", "h.for_model": "留空：检查配置自带的声明",
    "h.model": "目录 id、规模如 7b，或填写结构参数", "h.tokens": "例如 100B、2T",
    "h.plan_gpus": "不选 = 整个目录", "h.budget": "例如 2000万（人民币）或 500k（美元）",
    "h.deadline": "例如 30d、12w", "h.options": "数量xGPU，逗号分隔", "h.default": "默认",
    "h.auto": "自动", "h.all": "整个目录",
    "memory.title": "每卡显存", "speed.title": "单步耗时与训练时长", "plan.title": "时间 vs 成本",
    "plan.ranked": "推荐方案", "compare.title": "并排对比",
    "tco.title": "累计成本：云 vs 自建", "tco.breakdown": "回本点与自建成本",
    "lint.title": "检查结果",
    "busy": "计算中…", "ready": "已更新", "fits": "放得下", "nofit": "放不下",
    "headroom": "余量", "of": "/", "usable": "可用", "total": "设备总占用",
    "p.weights_bytes": "权重", "p.gradients_bytes": "梯度", "p.optimizer_bytes": "优化器状态",
    "p.activations_bytes": "激活", "p.logits_bytes": "logits 与损失", "p.transient_bytes": "临时缓冲",
    "p.cuda_context_bytes": "CUDA 上下文", "p.nccl_bytes": "NCCL 缓冲",
    "p.fragmentation_bytes": "显存碎片",
    "s.compute_s": "计算", "s.exposed_comm_s": "未重叠通信", "s.bubble_s": "流水线气泡",
    "s.optimizer_s": "优化器更新",
    "k.step": "单步耗时", "k.tps": "tokens/秒", "k.tpsgpu": "每卡 tokens/秒", "k.mfu": "MFU / HFU",
    "k.ttt": "训练时长", "k.gpuh": "GPU 小时", "k.energy": "能耗", "k.rent": "租用成本",
    "k.own": "自建成本（分摊）", "k.maxmb": "最大微批", "k.maxseq": "最长序列",
    "k.comm": "各并行维度通信", "k.notokens": "填写 token 数以计算时长与成本",
    "assumptions": "假设", "violations": "违反约束",
    "c.gpus": "GPU", "c.purchase": "方式", "c.layout": "切分", "c.time": "时长", "c.cost": "成本",
    "c.mfu": "MFU", "c.mem": "每卡显存", "c.why": "理由", "c.provider": "供应商", "c.pricing": "计价",
    "c.pergpuh": "每 GPU 时", "c.cheaper": "更便宜", "c.months": "回本时间", "c.util": "自建占优的利用率",
    "c.winner": "胜出",
    "ax.time": "训练时长（天，对数）", "ax.cost": "成本（对数）", "ax.months": "月",
    "ax.cumcost": "累计成本",
    "l.cand": "候选", "l.pareto": "帕累托前沿", "l.ranked": "推荐", "l.out": "超预算或超期限",
    "l.owned": "自建（资本支出扣除残值，加运行成本）", "l.breakeven": "回本点",
    "buy": "购买", "rent": "租用", "never": "永不", "after": "超出折旧期",
    "evaluated": "评估 {e} 种切分，{f} 种放得下，{c} 个计价方案，{g} 个满足约束；{s}",
    "tco.capex": "资本支出（GPU + 服务器 + 网络）", "tco.residual": "残值抵扣", "tco.opex": "每年运行成本",
    "tco.lifetime": "折旧期总成本", "tco.useful": "每有效 GPU 小时", "tco.facility": "机房峰值",
    "err.json": "不是合法的 JSON", "err.object": "必须是 JSON 对象",
    "err.status": "HTTP {s}", "none": "无",
    "lint.none": "没有发现问题", "lint.run": "检查配置",
    "params": "参数", "active": "激活", "layers": "层", "ctx": "上下文",
    "row.time_to_train_s": "训练时长", "row.wall_time_s": "含故障的实际时长", "row.tokens_per_s": "tokens/秒",
    "row.mfu": "MFU", "row.memory_per_gpu_bytes": "每卡显存", "row.headroom_bytes": "显存余量",
    "row.cloud_cost_usd": "租用成本（最便宜报价）", "row.onprem_cost_usd": "购买成本", "row.power_w": "功率（GPU + 主机）",
    "row.energy_kwh": "能耗", "row.layout": "切分",
  },
};

// ---------------------------------------------------------------------------------------------- form spec
// name: form field; api: request field (default name); group: fieldset; sub: collapsible sub-section;
// views: where it shows (default: the group's views, when the view's request schema has the field).
const GROUP_VIEWS = {
  model: ["job", "plan", "compare"], recipe: ["job", "plan", "compare"], layout: ["job"],
  cluster: ["job", "plan", "compare", "tco"], plan: ["plan"], compare: ["compare"], tco: ["tco"], lint: ["lint"],
};
const FIELDS = [
  {name: "model", group: "model", type: "text", def: "llama-3.1-8b", list: "model-ids", hint: "h.model"},
  {name: "hf_config", group: "model", type: "json", sub: "sub.config"},
  ...["layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "top_k"].map(
    (n) => ({name: n, group: "model", type: "int", sub: "sub.shape", grid: true})),
  {name: "method", group: "recipe", type: "select"},
  {name: "precision", group: "recipe", type: "select", empty: "h.auto"},
  {name: "optimizer", group: "recipe", type: "select"},
  {name: "seq", group: "recipe", type: "int", placeholder: "h.auto"},
  {name: "micro_batch", group: "recipe", type: "int"},
  {name: "global_batch", group: "recipe", type: "int", def: "", placeholder: "h.auto"},
  {name: "recompute", group: "recipe", type: "select"},
  {name: "zero", group: "recipe", type: "select", def: "3"},
  {name: "attention", group: "recipe", type: "select"},
  {name: "offload", group: "recipe", type: "select"},
  {name: "loss", group: "recipe", type: "select"},
  {name: "kernels", group: "recipe", type: "select"},
  {name: "lora_rank", group: "recipe", type: "int"},
  ...["tp", "pp", "vpp", "cp", "ep", "dp"].map((n) => ({name: n, group: "layout", type: "int", grid: true})),
  {name: "sequence_parallel", group: "layout", type: "bool"},
  {name: "gpu", group: "cluster", type: "gpu", views: ["job", "tco"]},
  {name: "gpus", group: "cluster", type: "int", def: "8", views: ["job", "tco"]},
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
const VIEW_SCHEMAS = {
  job: ["MemoryBody", "EstimateBody"], plan: ["PlanBody"], compare: ["CompareBody"], tco: ["TcoBody"],
  lint: ["LintBody"],
};
const ENDPOINT_SCHEMA = {
  memory: "MemoryBody", estimate: "EstimateBody", plan: "PlanBody", compare: "CompareBody", tco: "TcoBody",
  lint: "LintBody",
};
const MEMORY_PARTS = [
  ["weights_bytes", "#4e79a7"], ["gradients_bytes", "#f28e2b"], ["optimizer_bytes", "#e15759"],
  ["activations_bytes", "#76b7b2"], ["logits_bytes", "#59a14f"], ["transient_bytes", "#edc948"],
  ["cuda_context_bytes", "#b07aa1"], ["nccl_bytes", "#ff9da7"], ["fragmentation_bytes", "#9c755f"],
];
const STEP_PARTS = [["compute_s", "#4e79a7"], ["exposed_comm_s", "#e15759"], ["bubble_s", "#edc948"],
  ["optimizer_s", "#59a14f"]];
const LINE_COLORS = ["#e15759", "#f28e2b", "#76b7b2", "#b07aa1", "#9c755f", "#ff9da7", "#59a14f", "#edc948"];
const HOURS_PER_MONTH = 730;
const SVGNS = "http://www.w3.org/2000/svg";

const state = {
  lang: "en", currency: "usd", fx: 7.1, view: "job", schemas: {}, models: [], gpus: [], seq: 0, timer: null,
  last: {}, configSummary: null, endpoints: new Set(), servers: [],
};

// ---------------------------------------------------------------------------------------------- helpers
const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
function t(key, vars) {
  let s = (STRINGS[state.lang] && STRINGS[state.lang][key]) || STRINGS.en[key] || key;
  for (const [k, v] of Object.entries(vars || {})) s = s.replace(`{${k}}`, v);
  return s;
}
function el(tag, attrs = {}, ...children) {
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
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}
function svgTitle(text) { const n = svg("title"); n.textContent = text; return n; }
function svgText(x, y, text, attrs = {}) { const n = svg("text", {x, y, ...attrs}); n.textContent = text; return n; }

const GiB = 2 ** 30, MiB = 2 ** 20;
function fmtBytes(b) {
  if (b === null || b === undefined) return "–";
  return Math.abs(b) >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / MiB).toFixed(0)} MiB`;
}
function fmtNum(x, digits = 3) {
  if (x === null || x === undefined || !isFinite(x)) return "–";
  return new Intl.NumberFormat(state.lang === "zh" ? "zh-CN" : "en-US",
    {notation: "compact", maximumSignificantDigits: digits}).format(x);
}
function fmtInt(x) {
  if (x === null || x === undefined) return "–";
  return new Intl.NumberFormat(state.lang === "zh" ? "zh-CN" : "en-US", {maximumFractionDigits: 0}).format(x);
}
function fmtPct(x) { return x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`; }
function fmtDuration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  const zh = state.lang === "zh";
  if (s < 1) return `${(s * 1000).toFixed(1)} ${zh ? "毫秒" : "ms"}`;
  if (s < 120) return `${s.toFixed(2)} ${zh ? "秒" : "s"}`;
  if (s < 7200) return `${(s / 60).toFixed(1)} ${zh ? "分钟" : "min"}`;
  if (s < 2 * 86400) return `${(s / 3600).toFixed(1)} ${zh ? "小时" : "h"}`;
  return `${(s / 86400).toFixed(1)} ${zh ? "天" : "days"}`;
}
function sig3(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
/** A USD amount in the chosen currency: $1.23M, or ¥123万 / ¥1.23亿 in CNY. */
function fmtMoney(usd, rate = false) {
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
function money(usd) { return usd === null || usd === undefined ? null : usd * (state.currency === "cny" ? state.fx : 1); }
function fmtLayout(l) {
  if (!l) return "–";
  let s = `tp${l.tp} pp${l.pp}` + (l.vpp > 1 ? `x${l.vpp}` : "") + ` dp${l.dp}`;
  if (l.cp > 1) s += ` cp${l.cp}`;
  if (l.ep > 1) s += ` ep${l.ep}`;
  return s + ` z${l.zero} mb${l.micro_batch} ${l.recompute}`;
}
function modeText(m) {
  return m.kind === "cloud" ? `${t("rent")}: ${m.provider} ${m.pricing}` : `${t("buy")} (${m.pricing})`;
}

// ---------------------------------------------------------------------------------------------- schema
function schemaProp(schemaName, prop) {
  const s = state.schemas[schemaName];
  return s && s.properties ? s.properties[prop] : undefined;
}
function enumOf(p) {
  if (!p) return null;
  if (p.enum) return p.enum;
  if (p.$ref) return enumOf(state.refs[p.$ref]);
  for (const alt of p.anyOf || []) { const e = enumOf(alt); if (e) return e; }
  if (p.items) return enumOf(p.items);
  return null;
}
/** The request schemas of the views a field shows in that have the field. */
function fieldSchemas(f) {
  const api = f.api || f.name;
  const names = (f.views || GROUP_VIEWS[f.group] || []).flatMap((v) => VIEW_SCHEMAS[v] || []);
  return [...new Set(names)].filter((s) => schemaProp(s, api) !== undefined);
}
function defaultOf(f) {
  if (f.def !== undefined) return f.def;
  for (const s of fieldSchemas(f)) {
    const d = schemaProp(s, f.api || f.name).default;
    if (d !== undefined && d !== null && typeof d !== "object") return String(d);
  }
  return "";
}
function visibleIn(f, view) {
  const views = f.views || GROUP_VIEWS[f.group] || [];
  if (!views.includes(view)) return false;
  const api = f.api || f.name;
  return (VIEW_SCHEMAS[view] || []).some((s) => schemaProp(s, api) !== undefined);
}

// ---------------------------------------------------------------------------------------------- form
function buildForm() {
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

function fillOptions() {
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

function setSelect(f, value) {
  if (f.type !== "select") { f.el.value = value; return; }
  const i = f.values.findIndex((v) => String(v) === String(value));
  if (i >= 0) f.el.value = String(i);
}

/** The value of a form field as the API wants it; `undefined` when empty; throws {field, message} when unreadable. */
function readField(f) {
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
function bodyFor(endpoint, view, extra = {}) {
  const schema = ENDPOINT_SCHEMA[endpoint];
  const body = {};
  for (const f of FIELDS) {
    const api = f.api || f.name;
    if (!visibleIn(f, view) || schemaProp(schema, api) === undefined) continue;
    const v = readField(f);
    if (v !== undefined) body[api] = v;
  }
  if (body.hf_config) delete body.model;
  if (schemaProp(schema, "currency") !== undefined) body.currency = state.currency;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && schemaProp(schema, k) !== undefined) body[k] = v;
  return body;
}

function showView(view) {
  state.view = view;
  for (const b of $$("#tabs button")) b.classList.toggle("active", b.dataset.view === view);
  for (const v of $$(".view")) v.classList.toggle("active", v.id === `view-${view}`);
  for (const f of FIELDS) f.row.hidden = !visibleIn(f, view);
  for (const fs of $$("fieldset")) fs.hidden = !$$(".row", fs).some((r) => !r.hidden);
  for (const det of $$("details[data-sub]")) det.hidden = !$$(".row", det).some((r) => !r.hidden);
  clearErrors();
  schedule(0);
}

// ---------------------------------------------------------------------------------------------- errors
function clearErrors() {
  for (const f of FIELDS) { f.el.classList.remove("invalid"); $(`#err-${f.name}`).textContent = ""; }
  $("#error").hidden = true;
}
function formFieldFor(apiField) {
  if (!apiField) return null;
  return FIELDS.find((f) => (f.api || f.name) === apiField && visibleIn(f, state.view))
    || FIELDS.find((f) => f.name === apiField && visibleIn(f, state.view)) || null;
}
function showError(err) {
  const problems = err.errors && err.errors.length
    ? err.errors.map((e) => ({field: (e.loc || []).filter((p) => !["body", "query", "path"].includes(p))[0],
      message: e.msg}))
    : [{field: err.field, message: err.detail}];
  let placed = false;
  for (const p of problems) {
    const f = formFieldFor(p.field);
    if (!f) continue;
    f.el.classList.add("invalid");
    const box = $(`#err-${f.name}`);
    if (!box.textContent) box.textContent = p.message;
    placed = true;
  }
  const banner = $("#error");
  banner.textContent = (err.status ? `${t("err.status", {s: err.status})}: ` : "") + (err.detail || "");
  banner.hidden = placed && err.status === 422;
}

// ---------------------------------------------------------------------------------------------- API
async function api(method, path, body) {
  const opts = {method, headers: {}};
  if (body !== undefined) { opts.headers["content-type"] = "application/json"; opts.body = JSON.stringify(body); }
  let res;
  try { res = await fetch(path, opts); } catch (e) { throw {status: 0, detail: String(e), field: null}; }
  let data = null;
  try { data = await res.json(); } catch (e) { data = {detail: res.statusText}; }
  if (!res.ok) throw {status: res.status, detail: data.detail, field: data.field, errors: data.errors};
  if (data && typeof data.cny_per_usd === "number") state.fx = data.cny_per_usd;
  return data;
}

function schedule(delay) {
  clearTimeout(state.timer);
  const d = delay !== undefined ? delay : ["plan", "compare"].includes(state.view) ? 700 : 300;
  state.timer = setTimeout(refresh, d);
}

async function refresh() {
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

async function compute(view) {
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

function render(view) {
  const data = state.last[view];
  if (!data) return;
  ({job: renderJob, plan: renderPlan, compare: renderCompare, tco: renderTco, lint: renderLint})[view](data);
}

// ---------------------------------------------------------------------------------------------- charts
/** A horizontal stacked bar: parts [{key,label,value,color}], a capacity marker, labels under it. */
function stackedBar(parts, capacity, fmt, capLabel) {
  const W = 760, H = 64, x0 = 4, barY = 8, barH = 28;
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
    root.append(svgText(Math.min(cx, W - 4), H - 6, capLabel, {"text-anchor": "end"}));
  }
  root.append(svgText(x0, H - 6, `${fmt(total)}`));
  const legend = el("div", {class: "legend"}, parts.filter((p) => p.value > 0).map((p) => {
    const s = el("span", {text: `${p.label} ${fmt(p.value)}`});
    s.style.setProperty("--c", p.color);
    return s;
  }));
  return el("div", {}, root, legend);
}

function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) { const v = m * 10 ** e; if (v >= lo && v <= hi) ticks.push(v); }
  }
  return ticks;
}
function linTicks(lo, hi, n = 6) {
  const step0 = (hi - lo) / n, mag = 10 ** Math.floor(Math.log10(step0 || 1));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) ticks.push(v);
  return ticks;
}

function showTip(evt, text) {
  const tip = $("#tooltip");
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = `${Math.min(evt.clientX + 14, window.innerWidth - 330)}px`;
  tip.style.top = `${evt.clientY + 14}px`;
}
function hideTip() { $("#tooltip").hidden = true; }

/** Frame with axes: returns {root, x, y, plot} for a chart of size W x H. */
function frame({W, H, xDomain, yDomain, xLog, yLog, xLabel, yLabel, xFmt, yFmt}) {
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

// ---------------------------------------------------------------------------------------------- views
function kpi(label, value, attrs = {}) {
  return el("div", {class: "kpi", ...attrs}, el("div", {class: "v", text: value}), el("div", {class: "k", text: label}));
}
function notes(title, items) {
  if (!items || !items.length) return null;
  return el("details", {}, el("summary", {text: `${title} (${items.length})`}),
    el("ul", {class: "notes"}, items.map((a) => el("li", {text: typeof a === "string" ? a : a.message || JSON.stringify(a)}))));
}

function renderJob({mem, est, cost}) {
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
  if (est.time_to_train_s) {
    kpis.push(kpi(t("k.ttt"), fmtDuration(est.time_to_train_s), {id: "kpi-ttt"}),
      kpi(t("k.gpuh"), fmtInt(est.gpu_hours)), kpi(t("k.energy"), `${fmtInt(est.energy_kwh)} kWh`));
    if (cheapest) kpis.push(kpi(`${t("k.rent")} (${cheapest.provider} ${cheapest.pricing})`, fmtMoney(cheapest.total_usd), {id: "kpi-rent"}));
    if (cost && cost.job) kpis.push(kpi(t("k.own"), fmtMoney(cost.job.onprem_usd), {id: "kpi-own"}));
    if (costError) kpis.push(kpi(`${t("k.rent")} / ${t("k.own")}: ${costError}`, "–", {id: "kpi-cost-missing"}));
  } else {
    kpis.push(kpi(t("k.ttt"), "–", {title: t("k.notokens")}));
  }
  const comm = Object.entries(b.comm || {}).filter(([, v]) => v > 0)
    .map(([key, v]) => `${key.replace("_s", "")} ${fmtDuration(v)}`).join(", ");
  $("#speed-out").replaceChildren(...[
    el("div", {class: "kpis"}, kpis),
    el("h3", {text: `${t("k.step")}: ${fmtDuration(est.step_time_s)}`}),
    stackedBar(steps, null, fmtDuration, ""),
    comm ? el("p", {class: "muted", text: `${t("k.comm")}: ${comm}`}) : null,
    notes(t("assumptions"), est.assumptions),
  ].filter(Boolean));
}

function candKey(c) { return `${c.gpu}|${c.gpus}|${c.mode.provider}|${c.mode.pricing}`; }

function renderPlan(data) {
  const all = data.candidates || [];
  const paretoKeys = new Set((data.pareto || []).map(candKey));
  const rankedKeys = new Set((data.ranked || []).map(candKey));
  const box = $("#plan-chart");
  if (!all.length) {
    box.replaceChildren(el("p", {class: "muted", text: t("none")}));
  } else {
    const days = all.map((c) => c.time_to_train_s / 86400), costs = all.map((c) => money(c.cost_usd));
    const pad = (lo, hi) => [lo / 1.25, hi * 1.25];
    const f = frame({W: 760, H: 380, xDomain: pad(Math.min(...days), Math.max(...days)),
      yDomain: pad(Math.min(...costs), Math.max(...costs)), xLog: true, yLog: true,
      xLabel: t("ax.time"), yLabel: t("ax.cost"), xFmt: (v) => fmtNum(v, 2), yFmt: (v) => fmtMoney(v / (state.currency === "cny" ? state.fx : 1))});
    if (data.deadline_s) {
      const dx = f.x(data.deadline_s / 86400);
      f.plot.append(svg("line", {x1: dx, x2: dx, y1: f.m.t, y2: 380 - f.m.b, stroke: "#c0392b", "stroke-dasharray": "5 4"}));
    }
    if (data.budget_usd) {
      const by = f.y(money(data.budget_usd));
      f.plot.append(svg("line", {x1: f.m.l, x2: 760 - f.m.r, y1: by, y2: by, stroke: "#c0392b", "stroke-dasharray": "5 4"}));
    }
    const front = (data.pareto || []).slice().sort((a, b) => a.time_to_train_s - b.time_to_train_s);
    if (front.length > 1) {
      f.plot.append(svg("polyline", {fill: "none", stroke: "#2f5fd0", "stroke-width": 1.5, "stroke-opacity": 0.6,
        points: front.map((c) => `${f.x(c.time_to_train_s / 86400)},${f.y(money(c.cost_usd))}`).join(" ")}));
    }
    // Full candidates first, then the front and the ranked ones on top (their numbers are the re-estimated ones).
    const shown = [...all.map((c) => ({c, kind: "cand"})), ...front.map((c) => ({c, kind: "pareto"})),
      ...(data.ranked || []).map((c) => ({c, kind: "ranked"}))];
    for (const {c, kind} of shown) {
      const key = candKey(c);
      const inLimits = c.meets_deadline && c.meets_budget;
      const cls = kind === "cand" ? `cand${inLimits ? "" : " out"}` : kind === "pareto"
        ? `pareto${rankedKeys.has(key) ? " ranked" : ""}` : `pareto ranked`;
      if (kind === "ranked" && paretoKeys.has(key)) continue;
      const text = `${c.gpus} × ${c.gpu}\n${modeText(c.mode)}\n${t("c.time")}: ${fmtDuration(c.time_to_train_s)}\n`
        + `${t("c.cost")}: ${fmtMoney(c.cost_usd)}` + (c.layout ? `\n${fmtLayout(c.layout)}` : "")
        + (c.mfu ? `\nMFU ${fmtPct(c.mfu)}` : "");
      const dot = svg("circle", {cx: f.x(c.time_to_train_s / 86400), cy: f.y(money(c.cost_usd)),
        r: kind === "cand" ? 4 : 6, class: cls, "data-key": key, tabindex: kind === "cand" ? undefined : 0},
      svgTitle(text.replace(/\n/g, " · ")));
      dot.addEventListener("mousemove", (e) => showTip(e, text));
      dot.addEventListener("mouseleave", hideTip);
      f.plot.append(dot);
    }
    const legend = el("div", {class: "legend"}, [["l.cand", "#98a2b3"], ["l.out", "#d0d5dd"], ["l.pareto", "#2f5fd0"],
      ["l.ranked", "#f79009"]].map(([k, c]) => { const s = el("span", {text: t(k)}); s.style.setProperty("--c", c); return s; }));
    f.root.id = "pareto-svg";
    box.replaceChildren(f.root, legend);
  }
  const s = data.stats || {};
  $("#plan-stats").textContent = t("evaluated", {e: fmtInt(s.evaluated), f: fmtInt(s.feasible),
    c: fmtInt(s.candidates), g: fmtInt(s.eligible), s: fmtDuration(s.elapsed_s)});
  const cols = ["c.gpus", "c.purchase", "c.layout", "c.time", "c.cost", "c.mfu", "c.mem", "c.why"];
  const rows = (data.ranked || []).map((c) => el("tr", {"data-key": candKey(c)},
    el("td", {text: `${c.gpus} × ${c.gpu}`}), el("td", {text: modeText(c.mode)}), el("td", {text: fmtLayout(c.layout)}),
    el("td", {class: "num", text: fmtDuration(c.time_to_train_s)}), el("td", {class: "num", text: fmtMoney(c.cost_usd)}),
    el("td", {class: "num", text: fmtPct(c.mfu)}), el("td", {class: "num", text: fmtBytes(c.memory.total_bytes)}),
    el("td", {text: (c.reasons || []).join("; ")})));
  $("#plan-table").replaceChildren(el("table", {id: "ranked-table"},
    el("thead", {}, el("tr", {}, cols.map((k) => el("th", {class: ["c.time", "c.cost", "c.mfu", "c.mem"].includes(k) ? "num" : null, text: t(k)})))),
    el("tbody", {}, rows)), notes(t("assumptions"), data.assumptions) || "");
}

const COMPARE_FORMAT = {
  time_to_train_s: fmtDuration, tokens_per_s: (v) => fmtNum(v), mfu: fmtPct, memory_per_gpu_bytes: fmtBytes,
  headroom_bytes: fmtBytes, cloud_cost_usd: (v) => fmtMoney(v), onprem_cost_usd: (v) => fmtMoney(v),
  power_w: (v) => `${(v / 1000).toFixed(1)} kW`, energy_kwh: (v) => `${fmtInt(v)} kWh`, layout: fmtLayout,
};
/** A value of a compare row, by its key's unit suffix when the page does not know the key. */
function formatByKey(key, v) {
  if (COMPARE_FORMAT[key]) return COMPARE_FORMAT[key](v);
  if (typeof v !== "number") return typeof v === "object" ? JSON.stringify(v) : String(v);
  if (key.endsWith("_s")) return fmtDuration(v);
  if (key.endsWith("_bytes")) return fmtBytes(v);
  if (key.endsWith("_usd")) return fmtMoney(v);
  if (key.endsWith("_w")) return `${(v / 1000).toFixed(1)} kW`;
  if (key.endsWith("_kwh")) return `${fmtInt(v)} kWh`;
  return fmtNum(v);
}
function renderCompare(data) {
  const head = el("tr", {}, el("th", {text: ""}), data.options.map((o) => el("th", {class: "num", text: o})),
    el("th", {text: t("c.winner")}));
  const rows = data.rows.map((r) => el("tr", {"data-row": r.key},
    el("td", {text: STRINGS[state.lang][`row.${r.key}`] || r.label}),
    r.values.map((v, i) => el("td", {class: "num" + (r.winner === data.options[i] ? " win" : ""),
      text: v === null || v === undefined ? "–" : formatByKey(r.key, v)})),
    el("td", {text: r.winner || ""})));
  $("#compare-out").replaceChildren(el("table", {id: "compare-table"}, el("thead", {}, head), el("tbody", {}, rows)));
}

function renderTco(data) {
  const own = data.onprem;
  const n = data.num_gpus, u = own.utilisation, months = Math.max(own.years * 12, 1);
  // The break-even model of rigplan.cost.breakeven, drawn from the API's numbers: owning costs the net capex
  // up front and its yearly running cost spread over months; renting costs the same busy GPU-hours.
  const ownAt = (m) => own.net_capex_usd + own.opex_usd_per_year / 12 * m;
  const lines = [{label: t("l.owned"), color: "#2f5fd0", at: ownAt, width: 3, id: "owned"}];
  (data.cloud || []).forEach((c, i) => lines.push({label: `${c.provider} (${c.pricing})`, color: LINE_COLORS[i % LINE_COLORS.length],
    at: (m) => n * c.usd_per_gpu_hour * u * HOURS_PER_MONTH * m, width: 2, id: `cloud-${i}`}));
  const top = Math.max(...lines.map((l) => l.at(months))) * 1.05;
  const conv = state.currency === "cny" ? state.fx : 1;
  const f = frame({W: 760, H: 360, xDomain: [0, months], yDomain: [0, money(top)], xLabel: t("ax.months"),
    yLabel: t("ax.cumcost"), xFmt: (v) => String(Math.round(v)), yFmt: (v) => fmtMoney(v / conv)});
  for (const l of lines) {
    const pts = [];
    for (let i = 0; i <= 60; i++) { const m = months * i / 60; pts.push(`${f.x(m)},${f.y(money(l.at(m)))}`); }
    f.plot.append(svg("polyline", {points: pts.join(" "), fill: "none", stroke: l.color, "stroke-width": l.width,
      class: "tco-line", "data-line": l.id}, svgTitle(l.label)));
  }
  (data.breakeven || []).forEach((b) => {
    if (b.months === null || b.months > months) return;
    const cx = f.x(b.months), cy = f.y(money(ownAt(b.months)));
    const text = `${t("l.breakeven")}: ${b.provider} (${b.pricing})\n${b.months.toFixed(1)} ${t("ax.months")} · ${fmtMoney(ownAt(b.months))}`;
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
    el("td", {text: b.provider}), el("td", {text: b.pricing}), el("td", {class: "num", text: fmtMoney(b.usd_per_gpu_hour, true)}),
    el("td", {text: b.cheaper}),
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

function renderLint(data) {
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

// ---------------------------------------------------------------------------------------------- i18n
function applyLanguage() {
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

function updateModelHint() {
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
function onConfigInput() {
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
async function start() {
  const [openapi, models, gpus] = await Promise.all([api("GET", "/openapi.json"), api("GET", "/api/models"),
    api("GET", "/api/gpus")]);
  state.schemas = openapi.components.schemas;
  state.refs = Object.fromEntries(Object.entries(state.schemas).map(([k, v]) => [`#/components/schemas/${k}`, v]));
  state.models = models;
  state.gpus = gpus;
  state.endpoints = new Set(Object.keys(openapi.paths));
  const lintTab = $('#tabs button[data-view="lint"]');
  lintTab.hidden = !state.endpoints.has("/api/lint");
  if (state.endpoints.has("/api/servers")) state.servers = await api("GET", "/api/servers");
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
  $("#form").addEventListener("change", () => schedule());
  $("#form").addEventListener("submit", (e) => { e.preventDefault(); schedule(0); });
  for (const b of $$("#tabs button")) b.addEventListener("click", () => showView(b.dataset.view));
  $("#lang").addEventListener("change", (e) => { state.lang = e.target.value; applyLanguage(); });
  $("#currency").addEventListener("change", (e) => { state.currency = e.target.value; render(state.view); schedule(0); });
  applyLanguage();
  showView(params.get("view") || "job");
}

start().catch((err) => {
  const banner = $("#error");
  banner.textContent = `rigplan: ${err && err.detail ? err.detail : err}`;
  banner.hidden = false;
});
