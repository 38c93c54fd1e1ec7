"""The allowed range of every quantity a user gives: one table shared by the CLI, the HTTP API and
the readers of config.json files.

A bound is named by its request field (`hidden`, `global_batch`) and knows the CLI flag the user
typed (`--hidden`), so every message says which flag is wrong and what range is allowed:
`--hidden must be <= 262,144 (allowed 1 to 262,144); got 1e30`.

Adding a request field: add a row to `BOUNDS`, then annotate the field
    my_field: Annotated[int, Bounded("my_field")] | None = None
(pydantic checks it, the JSON schema shows minimum/maximum). Values that are not pydantic fields
(a parsed "2T", a config.json key) go through `check(name, value, label=...)`.

The ranges are wide: they stop nonsense (0 GPUs, 10^30 tokens, NaN), not unusual jobs. Each
upper limit is at least 10x beyond the largest published training run it could describe
(Llama 3 405B: 16,384 GPUs, 15.6 T tokens, 126 layers, hidden 16,384, FFN 53,248, vocab 128,256;
Dubey et al. 2024, Tables 3-4; Gemma 3's vocabulary of 262,144 is the largest in the catalog).
A positive amount that rigplan divides by (a price, a rate, a duration) has a smallest value that
still means something (one second, a tenth of a cent, 0.1% utilisation), not just "above 0": 5e-324
hours or years made the cost formulas divide by zero or overflow to infinity.

May import: units, errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rigplan import units
from rigplan.errors import InvalidSpec

if TYPE_CHECKING:  # pydantic is imported when a model is built, not for the table (rigplan's start-up path)
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import core_schema

BOUND_ERROR_TYPE = "rigplan_bound"
"""The pydantic error type of a value outside its bound: its message is the whole line, starting with the
CLI flag (context key `flag`), which the HTTP API replaces by the field name."""


@dataclass(frozen=True)
class Bound:
    """`low <= value <= high` (`low < value` when `low_open`), shown as `flag`; its limits are written as
    `shown` says: a plain number, a count ("1,000T"), an amount of USD ("$10T") or days (a duration held
    in seconds)."""

    flag: str
    low: float
    high: float
    low_open: bool = False
    integer: bool = False
    shown: Literal["number", "count", "usd", "days"] = "number"

    def limit(self, value: float) -> str:
        """A limit of this bound as people write it."""
        if self.shown == "count" and value >= 1000:
            return units.format_count(value).replace(" ", "")
        if self.shown == "usd":
            return "$" + units.format_count(value).replace(" ", "")
        if self.shown == "days":  # a duration held in seconds
            return f"{units.format_number(value / 86400)} days" if value >= 86400 else f"{units.format_number(value)} s"
        return units.format_number(value)

    def allowed(self) -> str:
        low = f"above {self.limit(self.low)}" if self.low_open else self.limit(self.low)
        return f"{low} to {self.limit(self.high)}"

    def problem(self, value: float) -> str | None:
        """What is wrong with `value`, or None when it is allowed."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number ({self.allowed()})"
        if not math.isfinite(value):
            return f"must be a finite number ({self.allowed()})"
        if self.integer and value != int(value):
            return f"must be a whole number ({self.allowed()})"
        if value < self.low or (self.low_open and value == self.low):
            return f"must be {'>' if self.low_open else '>='} {self.limit(self.low)} (allowed {self.allowed()})"
        if value > self.high:
            return f"must be <= {self.limit(self.high)} (allowed {self.allowed()})"
        return None


def shown(value: Any) -> str:
    """A value a user gave, for a message: text as typed (quoted), a number as people write it."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return units.format_number(value)
    return repr(value)


def _int(flag: str, low: float, high: float) -> Bound:
    return Bound(flag, low, high, integer=True)


def _pos(flag: str, high: float, shown: Literal["number", "count", "usd", "days"] = "number") -> Bound:
    """A positive real amount (> 0)."""
    return Bound(flag, 0.0, high, low_open=True, shown=shown)


def _amount(flag: str, high: float, shown: Literal["number", "count", "usd", "days"] = "number") -> Bound:
    """A non-negative real amount (>= 0), e.g. money or a rate that may be zero."""
    return Bound(flag, 0.0, high, shown=shown)


MAX_GPUS = 1_000_000
"""60x the 16,384 GPUs of Llama 3 405B."""
MAX_USD = 1e13
"""Ten trillion USD: no budget, price or share of one is larger."""

BOUNDS: dict[str, Bound] = {
    # model shape (flags and config.json)
    "layers": _int("--layers", 1, 10_000),
    "hidden": _int("--hidden", 1, 1 << 18),
    "heads": _int("--heads", 1, 1 << 14),
    "kv_heads": _int("--kv-heads", 1, 1 << 14),
    "head_dim": _int("--head-dim", 1, 1 << 14),
    "ffn": _int("--ffn", 1, 1 << 21),
    "vocab": _int("--vocab", 1, 1 << 22),
    "experts": _int("--experts", 1, 1 << 16),
    "top_k": _int("--top-k", 1, 1 << 16),
    "expert_ffn": _int("--expert-ffn", 1, 1 << 21),
    "shared_experts": _int("--shared-experts", 0, 1_000),
    "mtp_layers": _int("--mtp-layers (multi-token-prediction modules)", 0, 64),  # DeepSeek-V3 has 1
    "dense_layers": _int("--dense-layers (leading dense layers of an MoE)", 0, 10_000),  # DeepSeek-V3 has 3
    "expert_groups": _int("--expert-groups", 1, 1 << 16),
    "group_top_k": _int("--group-top-k", 1, 1 << 16),
    "moe_latent_size": _int("--moe-latent-size", 0, 1_000_000),
    "context": _int("context length", 1, 1 << 30),
    "params": _pos("the model's parameter count", 1e14, "count"),
    # recipe and layout
    "lora_rank": _int("--lora-rank", 1, 65_536),
    "seq": _int("--seq", 1, 1 << 24),
    "micro_batch": _int("--micro-batch", 1, 65_536),
    "global_batch": _int("--global-batch", 1, 100_000_000),
    "tp": _int("--tp", 1, 65_536),
    "pp": _int("--pp", 1, 65_536),
    "vpp": _int("--vpp", 1, 65_536),
    "dp": _int("--dp", 1, MAX_GPUS),
    "cp": _int("--cp", 1, 65_536),
    "ep": _int("--ep", 1, 65_536),
    "etp": _int("--etp", 0, 65_536),
    "stage_layers": _int("--stage-layers (each count)", 0, 10_000),
    "first_stage_layers": _int("--first-stage-layers", 0, 10_000),
    "last_stage_layers": _int("--last-stage-layers", 0, 10_000),
    "embedding_layer_weight": _int("--embedding-layer-weight", 0, 64),
    "head_layer_weight": _int("--head-layer-weight", 0, 64),
    "recompute_num_layers": _int("--recompute-num-layers", 1, 10_000),
    "recompute_every": _int("--recompute-every", 1, 10_000),
    "fsdp_prefetch": _int("--fsdp-prefetch", 0, 64),
    "moe_imbalance": Bound("--moe-imbalance", 1.0, 1000.0),
    "step_overhead_ms": _amount("--step-overhead-ms", 600_000.0),
    "grad_bucket_params": _amount("--grad-bucket-params", 1e13, shown="count"),
    "capacity_factor": _amount("--capacity-factor", 1000.0),
    "moe_rank_capacity_factor": Bound("--moe-rank-capacity-factor", 1.0, 1000.0),
    "gpus": _int("--gpus", 1, MAX_GPUS),
    # cluster and training length
    "tokens": Bound("--tokens", 1.0, 1e15, shown="count"),
    "gpus_per_node": _int("--gpus-per-node", 1, 65_536),  # 10x a TPU v5p slice (6,144 chips), one node in the catalog
    "nic_gbit": Bound("--nic", 0.1, 100_000),  # from 100 Mbit/s (Fast Ethernet) up
    "nics_per_node": _int("--nics-per-node", 1, 1024),
    "host_power_w": _amount("--host-power-w", 100_000),
    "restart_s": _amount("--restart-s", 10 * 86400),
    "checkpoint_interval_s": Bound("--checkpoint-interval-s", 1, 365 * 86400),
    "preemptions_per_node_month": _amount("--preemptions-per-node-month", 1000),
    # plan and compare
    "budget": Bound("--budget", 1, MAX_USD, shown="usd"),  # from one dollar
    "deadline": Bound("--deadline", 1, 100 * 365 * 86400, shown="days"),  # from one second
    "gpus_max": _int("--gpus-max", 1, MAX_GPUS),
    "gpus_min": _int("--gpus-min", 1, MAX_GPUS),
    "gpu_counts": _int("GPU count", 1, MAX_GPUS),
    "option_gpus": _int("the GPU count of an option", 1, MAX_GPUS),
    "compare_options": _int("compare's number of options", 2, 32),  # each a plan search: 50 took 4.5 s
    "fx_cny_per_usd": Bound("--fx", 0.001, 1000),
    "top": _int("--top", 1, 100),
    # the server
    "time_cap_s": Bound("--time-cap", 0.1, 3600),
    "workers": _int("--workers", 1, 256),
    # tco
    "hours": Bound("--hours", 0.001, 1e7),  # from 3.6 s
    "months": Bound("--months", 0.001, 1200),  # from 44 min
    "utilisation": Bound("--utilisation", 0.001, 1),  # from 0.1%
    "price_per_kwh": _amount("--price-per-kwh", 100),
    "pue": Bound("--pue", 1, 3),
    "years": Bound("--years", 0.001, 20),  # from 8.8 h
    "residual": _amount("--residual", 1),
    "colo_per_kw_month": _amount("--colo-per-kw-month", 1e6, "usd"),
    "gpu_price": Bound("--gpu-price", 1, 1e9, shown="usd"),  # from one dollar
    "server_share": _amount("--server-share", 1e9, "usd"),
    "fabric_share": _amount("--fabric-share", 1e9, "usd"),
    "host_w": _amount("--host-w", 10_000),
    "staff_per_year": _amount("--staff-per-year", 1e10, "usd"),
    "licence": _amount("--licence", 1e9, "usd"),  # per GPU-year
    "capital_rate": _amount("--capital-rate", 1),
    "delta_t_f": Bound("--delta-t-f", 0.1, 100),
    "cloud_price": Bound("--cloud-price", 0.0001, 1e6, shown="usd"),  # from a hundredth of a cent per GPU-hour
    "cloud_price_cny": Bound("cny_per_gpu_hour", 0.001, 1e7),
    "storage_tb": _amount("--storage-tb", 1e7),
    "storage_per_gb_month": _amount("--storage-per-gb-month", 1e3),
    "egress_tb": _amount("--egress-tb", 1e7),
    "egress_per_gb": _amount("--egress-per-gb", 1e3),
    "fx": Bound("--fx", 0.001, 1000),
    # catalog records and server builds (a user's overlay or BUILD.yaml): at least 10x the largest real part
    # (B300: 288 GB, 8 TB/s; fp4 ~15 PFLOP/s dense; GB300 1,400 W; NVLink 5 1,800 GB/s; a TPU pod's 8,960 chips)
    "memory_gib": Bound("memory (GiB)", 1, 10_000),
    "usable_memory_mib": Bound("usable memory (MiB)", 1024, 10_000 * 1024),
    "memory_bandwidth_gb_per_s": Bound("memory bandwidth (GB/s)", 1, 1e6),
    "dense_tflops": Bound("dense TFLOP/s", 0.01, 1e6),
    "exp_tera_per_s": Bound("exponentials per second (tera)", 0.01, 1000),
    "power_w": Bound("power (W)", 1, 1e6),  # up to a 72-GPU rack-scale node (GB200 NVL72: ~120 kW)
    "gemm_power_fraction": Bound("sustained GEMM fraction", 0.05, 1.0),
    "link_gb_per_s": Bound("link bandwidth (GB/s)", 0.1, 1e6),
    "link_domain_size": _int("link domain size", 1, MAX_GPUS),
    "devices_per_package": _int("devices per package", 1, 64),
    "part_count": _int("count", 1, 10_000),  # CPUs, cores, DIMMs, drives, NICs, ports, PSUs, slots of one node
    "nodes": _int("nodes", 1, MAX_GPUS),
    "pcie_lanes": _int("PCIe lanes", 1, 10_000),
    "host_memory_gib": Bound("host memory (GiB)", 1, 1e6),
    "drive_tb": Bound("capacity (TB)", 0.001, 1e5),
    "storage_gb_per_s": Bound("write bandwidth (GB/s)", 0.001, 1e6),
    "money": Bound("amount", 1, MAX_USD),
}


def bound(name: str) -> Bound:
    return BOUNDS[name]


def check(name: str, value: Any, *, label: str | None = None) -> Any:
    """`value` when it is inside the bound `name`; otherwise InvalidSpec naming `label` (default: the flag)."""
    b = BOUNDS[name]
    problem = b.problem(value)
    if problem:
        raise InvalidSpec(f"{label or b.flag} {problem}; got {shown(value)}")
    return value


def located_message(error: Any, where: str) -> str:
    """A pydantic error (one item of `errors()`) as "WHERE: message"; a bound's message says WHERE in place of
    its flag ("price.usd must be >= 1 (allowed ...)", not "price.usd: --gpu-price must be ...")."""
    msg = str(error.get("msg", "invalid"))
    flag = (error.get("ctx") or {}).get("flag")
    if error.get("type") == BOUND_ERROR_TYPE and isinstance(flag, str) and msg.startswith(flag):
        return where + msg[len(flag):]
    return f"{where}: {msg}"


def _signed_count(text: str | float, what: str) -> float:
    """A count whose sign its bound checks, so that -1 and 0 get the same message (the allowed range)."""
    return units.parse_count(text, what, allow_negative=True)


PARSERS: dict[str, Callable[[str | float, str], float]] = {
    "count": _signed_count, "duration": units.parse_duration, "bytes": units.parse_bytes}


def parse(name: str, text: str | float, kind: str = "count") -> float:
    """Parse human text ("2T", "30d", "80GiB") with the unit parser `kind`, then check the bound `name`."""
    b = BOUNDS[name]
    return float(check(name, PARSERS[kind](text, b.flag)))


@dataclass(frozen=True)
class Bounded:
    """pydantic marker: `Annotated[int, Bounded("hidden")]` checks the bound after the type check and puts
    minimum/maximum into the JSON schema. With `parse="count"` (or "duration", "bytes") the field holds
    human text such as "2T": it is parsed to check it, and kept as given."""

    name: str
    parse: str | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        from pydantic_core import PydanticCustomError, core_schema

        b = BOUNDS[self.name]
        parser = PARSERS[self.parse] if self.parse else None

        def validate(value: Any) -> Any:
            try:
                number = parser(value, b.flag) if parser is not None and isinstance(value, str | int | float) \
                    else value
            except InvalidSpec as err:
                raise PydanticCustomError(BOUND_ERROR_TYPE, "{line}", {"line": str(err), "flag": b.flag}) from None
            problem = b.problem(number)
            if problem:
                raise PydanticCustomError(BOUND_ERROR_TYPE, "{line}",
                                          {"line": f"{b.flag} {problem}; got {shown(value)}", "flag": b.flag})
            return value

        return core_schema.no_info_after_validator_function(validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        b = BOUNDS[self.name]
        result = dict(handler(schema))
        if self.parse:
            return result
        result["exclusiveMinimum" if b.low_open else "minimum"] = int(b.low) if b.integer else b.low
        result["maximum"] = int(b.high) if b.integer else b.high
        return result
