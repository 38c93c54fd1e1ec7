"""On-premises cost of ownership: capex, residual value, power at PUE, colocation, licence, staff.

Everything is per GPU first and then scaled; amounts are USD, power W, energy kWh, time hours.
"utilisation" u is the fraction of owned wall-clock hours the GPUs do useful work.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat

from rigplan.bounds import check
from rigplan.catalog.schema import GpuRecord
from rigplan.cost.power import HOURS_PER_YEAR, TimeOfUseTariff, airflow_cfm, heat_btu_per_h
from rigplan.errors import InvalidSpec

FloatOrArray: TypeAlias = "float | npt.NDArray[np.float64]"

# Defaults, each with its source (hardware-facts.md = shared/reference/hardware-facts.md, compiled 2026-12-02).
SERVER_SHARE_FRACTION_DEFAULT = 0.5
FABRIC_FRACTION_DEFAULT = 0.2
SHARE_SOURCE = (
    "server share 50% and network fabric 20% of the GPU price: hardware-facts.md Part C row 8 puts 64 H100 at "
    "$1.6-1.9M for GPUs and $2.5-3.5M with servers, InfiniBand fabric and storage, i.e. about 0.7x the GPU price "
    "on top (midpoints); the 0.5/0.2 split is our assumption. DGX A100 ($199k with 8 A100 40GB, A4) carries "
    "more. For PCIe/consumer cards a server costs far more than 50% of a cheap GPU: set --server-share"
)
DEPRECIATION_YEARS_DEFAULT = 3.0
DEPRECIATION_SOURCE = (
    "3 years as in the seed article; hyperscalers depreciate servers over 5-6 years (hardware-facts B8)"
)
RESIDUAL_FRACTION_DEFAULT = 0.3
RESIDUAL_SOURCE = (
    "30% after the depreciation period, the seed's figure; a scenario input: used H100 fetched 50-70% of new "
    "after 2-3 years in 2025-26, older generations far less (hardware-facts B8, Part C row 9)"
)
UTILISATION_DEFAULT = 0.7
UTILISATION_SOURCE = "70% of owned hours busy (hardware-facts Part C row 9); the seed's 2,000 h/yr is 23%"
PUE_DEFAULT = 1.4
PUE_SOURCE = "PUE 1.4 (Equinix 1.42 in 2023; Uptime Institute global average 1.56-1.58, hyperscale 1.1-1.2; B3)"
USD_PER_KWH_DEFAULT = 0.08
USD_PER_KWH_SOURCE = "$0.08/kWh, US industrial regional averages 7.7-8.3 ¢ (EIA Electric Power Monthly 5.6.B; B4)"
HOST_W_PER_GPU_DEFAULT = 250.0
HOST_W_SOURCE = (
    "host 250 W per GPU under load: DGX H100 draws 6.5-8.5 kW typical with 5.6 kW of GPUs, i.e. 110-360 W per "
    "GPU for CPUs, NICs, NVSwitch, DRAM, fans (hardware-facts B2)"
)
DELTA_T_F_DEFAULT = 20.0
COLO_USD_PER_KW_MONTH_DEFAULT = 184.06
COLO_SOURCE = (
    "colocation $184.06 per provisioned IT kW-month: CBRE North America Data Center Trends H2 2024 (2025-02-26), "
    "average asking rate for a 250-500 kW requirement in primary markets (space, power distribution, cooling; "
    "energy billed on top, as here). Set --colo-per-kw-month 0 only for a building already owned and paid for"
)
STAFF_GPUS_PER_FTE = 250.0
STAFF_USD_PER_FTE_YEAR = 136_000.0
STAFF_USD_PER_GPU_YEAR_DEFAULT = STAFF_USD_PER_FTE_YEAR / STAFF_GPUS_PER_FTE
STAFF_SOURCE = (
    "staff $544 per GPU-year: one operator per 250 accelerators (Roskies & Zacharia, CTWatch Quarterly 2(2), "
    "May 2006: sites add one FTE per ~250 processors; GPUs counted as processors) at $136,000 loaded, the BLS "
    "median pay of network and computer systems administrators ($95,360, May 2023) over wages' ~70% share of "
    "private-industry compensation (BLS Employer Costs for Employee Compensation). --staff-per-year sets the "
    "cluster's total instead"
)
CAPITAL_RATE_DEFAULT = 0.075
CAPITAL_SOURCE = (
    "cost of capital 7.5% a year: the US bank prime loan rate after the 2024-12-19 cut (Federal Reserve H.15); the "
    "capex is financed over the period as an annuity and the resale value discounted. Use your own rate "
    "(--capital-rate; 0 for idle cash with no other use)"
)
LEFT_OUT = "spares and repairs, support contracts, failure downtime, taxes, delivery and installation lead time"
LICENCE_PRESETS_USD_PER_GPU_YEAR = {"none": 0.0, "open": 0.0, "nvaie": 4500.0}
LICENCE_SOURCE = (
    "NVIDIA AI Enterprise $4,500 per GPU per year (Q3 FY2024 earnings call; B5); 5 years bundled with H100 PCIe, "
    "H100 NVL and H200 NVL; $0 for open stacks (CUDA itself needs no licence)"
)


class OnPremScenario(BaseModel):
    """Inputs of an owned cluster, per GPU unless the name says otherwise. Amounts in USD."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_price_usd: PositiveFloat
    gpu_tdp_w: PositiveFloat
    server_share_fraction: Annotated[float, Field(ge=0, le=20)] = SERVER_SHARE_FRACTION_DEFAULT
    """Chassis, baseboard, CPUs, RAM, NICs, local storage and PSUs, as a fraction of the GPU price."""
    server_share_usd_per_gpu: Annotated[float, Field(ge=0)] | None = None
    """Absolute non-GPU server cost per GPU; replaces the fraction when given."""
    fabric_fraction: Annotated[float, Field(ge=0, le=20)] = FABRIC_FRACTION_DEFAULT
    """Scale-out network (switches, cables, optics) as a fraction of the GPU price."""
    fabric_usd_per_gpu: Annotated[float, Field(ge=0)] | None = None
    """Absolute fabric cost per GPU (a node's share / GPUs per node); replaces the fraction when given."""
    depreciation_years: Annotated[float, Field(gt=0, le=20)] = DEPRECIATION_YEARS_DEFAULT
    residual_fraction: Annotated[float, Field(ge=0, le=1)] = RESIDUAL_FRACTION_DEFAULT
    """Resale value at the end of the period, as a fraction of capex (all hardware)."""
    utilisation: Annotated[float, Field(gt=0, le=1)] = UTILISATION_DEFAULT
    pue: Annotated[float, Field(ge=1, le=3)] = PUE_DEFAULT
    host_w_per_gpu: Annotated[float, Field(ge=0, le=10_000)] = HOST_W_PER_GPU_DEFAULT
    usd_per_kwh: Annotated[float, Field(ge=0, le=10)] = USD_PER_KWH_DEFAULT
    tariff: TimeOfUseTariff | None = None
    """Time-of-use tariff; replaces usd_per_kwh when given."""
    colo_usd_per_kw_month: Annotated[float, Field(ge=0)] = COLO_USD_PER_KW_MONTH_DEFAULT
    """Colocation / datacentre space and cooling per provisioned IT kW (energy billed separately)."""
    licence_usd_per_gpu_year: Annotated[float, Field(ge=0)] = 0.0
    staff_usd_per_year: Annotated[float, Field(ge=0)] = 0.0
    """Operations staff for the whole cluster (spread over its GPUs), on top of the per-GPU figure."""
    staff_usd_per_gpu_year: Annotated[float, Field(ge=0)] = STAFF_USD_PER_GPU_YEAR_DEFAULT
    """Operations staff that grows with the cluster (STAFF_SOURCE); 0 when the total is given instead."""
    capital_rate: Annotated[float, Field(ge=0, le=1)] = CAPITAL_RATE_DEFAULT
    """Yearly cost of the money tied up in the hardware (interest or the return given up)."""
    delta_t_f: Annotated[float, Field(gt=0, le=100)] = DELTA_T_F_DEFAULT
    """Air temperature rise through the servers, °F, for the airflow figure."""

    @property
    def owned_hours(self) -> float:
        return self.depreciation_years * HOURS_PER_YEAR


def scenario_for_gpu(record: GpuRecord, **overrides: Any) -> OnPremScenario:
    """A scenario for a catalog GPU: its price (unless `gpu_price_usd` is given) and its TDP."""
    values = {k: v for k, v in overrides.items() if v is not None}
    if "gpu_price_usd" not in values:
        if record.price is None:
            raise InvalidSpec(f"gpu '{record.id}' has no purchase price in the catalog; pass --gpu-price")
        values["gpu_price_usd"] = record.price.usd
    if "gpu_tdp_w" not in values:
        if record.tdp_w is None:
            raise InvalidSpec(f"{record.name} has no published power figure, so owning it (energy, colocation) "
                              "cannot be priced; rent it instead")
        values["gpu_tdp_w"] = record.tdp_w
    return OnPremScenario.model_validate(values)


def licence_usd_per_gpu_year(text: str | float, usd_per_unit: float = 1.0) -> float:
    """'nvaie' → 4,500, 'none'/'open' → 0, or a number in a currency worth `usd_per_unit` USD."""
    if isinstance(text, int | float):
        value = float(text) * usd_per_unit
    else:
        key = text.strip().lower()
        if key in LICENCE_PRESETS_USD_PER_GPU_YEAR:
            return LICENCE_PRESETS_USD_PER_GPU_YEAR[key]
        try:
            value = float(key.replace(",", "")) * usd_per_unit
        except ValueError:
            raise InvalidSpec(f"--licence must be nvaie, none or an amount per GPU-year, got '{text}'") from None
    if not (math.isfinite(value) and value >= 0):
        raise InvalidSpec(f"--licence must be a non-negative amount per GPU-year, got '{text}'")
    return float(check("licence", value))


@dataclass(frozen=True, kw_only=True, slots=True)
class UnitCosts:
    """One owned GPU over the scenario's depreciation period."""

    gpu_usd: float
    server_usd: float
    fabric_usd: float
    capex_usd: float
    residual_credit_usd: float
    net_capex_usd: float
    busy_usd_per_kwh: float
    """Electricity price the GPU's busy hours pay (the cheap bands first when shiftable)."""
    mean_usd_per_kwh: float
    energy_kwh_per_year: float
    power_usd_per_year: float
    colo_usd_per_year: float
    licence_usd_per_year: float
    staff_usd_per_year: float
    """The per-GPU staff figure (the cluster-level total is added where N is known)."""
    financing_usd: float
    """Cost of capital over the whole period: Y x annuity of (capex - PV(resale)) - (capex - resale)."""
    fixed_usd_per_year: float
    """Paid whether or not the GPU is busy: host power, colocation, licence, per-GPU staff, financing / Y."""
    energy_usd_per_busy_hour: float
    """GPU energy of one busy hour: TDP × PUE × busy price."""


def unit_costs(s: OnPremScenario) -> UnitCosts:
    """Per-GPU costs.

    capex = GPU + server share + fabric share; residual credit = residual_fraction × capex.
    financing = Y·A − (capex − resale), A = (capex − resale/(1+i)^Y) · i / (1 − (1+i)^−Y), the
    equivalent annual cost of buying with money costing i a year (0 when i = 0).
    energy/yr = (TDP × u + host) × PUE × 8760 h: the GPU draws its TDP when busy and nothing when
    idle; the host draws its loaded power at all hours (the two errors roughly offset; idle GPU draw
    of ~10-15% TDP and lower idle host draw are left out). GPU energy pays the busy price, host
    energy the mean price. colo/yr = colo_usd_per_kw_month × 12 × (TDP + host)/1000 (provisioned IT kW,
    not × PUE). Cooling energy is inside PUE.
    """
    server = s.server_share_usd_per_gpu if s.server_share_usd_per_gpu is not None else (
        s.server_share_fraction * s.gpu_price_usd)
    fabric = s.fabric_usd_per_gpu if s.fabric_usd_per_gpu is not None else s.fabric_fraction * s.gpu_price_usd
    capex = s.gpu_price_usd + server + fabric
    residual = s.residual_fraction * capex
    if s.tariff is not None:
        busy_price, mean_price = s.tariff.busy_usd_per_kwh(s.utilisation), s.tariff.mean_usd_per_kwh()
    else:
        busy_price = mean_price = s.usd_per_kwh
    gpu_kwh = s.gpu_tdp_w * s.utilisation * s.pue * HOURS_PER_YEAR / 1000
    host_kwh = s.host_w_per_gpu * s.pue * HOURS_PER_YEAR / 1000
    energy_per_busy_hour = s.gpu_tdp_w * s.pue * busy_price / 1000
    host_power = host_kwh * mean_price
    colo = s.colo_usd_per_kw_month * 12 * (s.gpu_tdp_w + s.host_w_per_gpu) / 1000
    financing = financing_usd(capex, residual, s.capital_rate, s.depreciation_years)
    return UnitCosts(
        gpu_usd=s.gpu_price_usd, server_usd=server, fabric_usd=fabric, capex_usd=capex,
        residual_credit_usd=residual, net_capex_usd=capex - residual,
        busy_usd_per_kwh=busy_price, mean_usd_per_kwh=mean_price,
        energy_kwh_per_year=gpu_kwh + host_kwh, power_usd_per_year=gpu_kwh * busy_price + host_power,
        colo_usd_per_year=colo, licence_usd_per_year=s.licence_usd_per_gpu_year,
        staff_usd_per_year=s.staff_usd_per_gpu_year, financing_usd=financing,
        fixed_usd_per_year=(host_power + colo + s.licence_usd_per_gpu_year + s.staff_usd_per_gpu_year
                            + financing / s.depreciation_years),
        energy_usd_per_busy_hour=energy_per_busy_hour,
    )


def financing_usd(capex_usd: float, resale_usd: float, rate: float, years: float) -> float:
    """Cost of capital over `years` of owning: the annuity that repays capex net of the discounted
    resale, times the years, less the undiscounted net capex. 0 at rate 0."""
    if rate < 1e-12:  # the limit at rate -> 0; below this the difference below is rounding noise
        return 0.0
    # 1 - 1/growth through expm1/log1p: exact for tiny rates, where (1 + rate) ** years rounds to 1.
    growth = float((1 + rate) ** years)
    repaid_fraction = -math.expm1(-years * math.log1p(rate))
    annuity = (capex_usd - resale_usd / growth) * rate / repaid_fraction
    return float(annuity * years - (capex_usd - resale_usd))


def resale_fraction_after(s: OnPremScenario, years_owned: float) -> float:
    """Resale value after `years_owned`, a fraction of capex: straight-line from 1 at purchase to
    `residual_fraction` at the end of the period (and no lower after it).

    Straight-line, not a constant yearly percentage, because the market evidence is gentle early:
    used H100 fetched 50-70% of new after 2-3 years (hardware-facts B8); a geometric curve to 30% at
    3 years would already be at 67% after one. A scenario input like the residual itself."""
    share = min(max(years_owned, 0.0) / s.depreciation_years, 1.0)
    return 1.0 - (1.0 - s.residual_fraction) * share


@dataclass(frozen=True, kw_only=True, slots=True)
class BuyUseSell:
    """Buy `num_gpus` GPUs, run one job continuously for `hours`, sell them at the resale value then."""

    num_gpus: int
    hours: float
    resale_fraction: float
    capex_usd: float
    resale_usd: float
    energy_usd: float
    fixed_usd: float
    """Host power, colocation, licence and staff over the job's months."""
    financing_usd: float
    """Cost of capital over the job, as the period view counts it (`financing_usd` over t years)."""
    total_usd: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def buy_use_sell(s: OnPremScenario, num_gpus: int, hours: float) -> BuyUseSell:
    """total = N·[capex − resale(t) + TDP·PUE·p_busy·H + t·(host power + colo + licence + staff_gpu)
    + financing(capex, resale(t), i, t)] + t·staff_cluster, t = H / 8760 years; the GPUs are busy all
    H hours. Financing is the annuity of `financing_usd` over the job's t years (capex·i for one year), so
    a job as long as the period costs what the period view costs at 100% utilisation; past the period the
    resale stays at the residual. Leaves out what `usd_per_useful_gpu_hour` leaves out, plus selling costs
    and the time to sell."""
    if num_gpus < 1 or hours < 0:
        raise InvalidSpec("buy-use-sell needs at least one GPU and non-negative hours")
    unit = unit_costs(s)
    years = hours / HOURS_PER_YEAR
    n = float(num_gpus)
    resale_fraction = resale_fraction_after(s, years)
    resale = unit.capex_usd * resale_fraction
    energy = unit.energy_usd_per_busy_hour * hours
    host_power = s.host_w_per_gpu * s.pue * hours / 1000 * unit.mean_usd_per_kwh
    fixed = host_power + years * (unit.colo_usd_per_year + unit.licence_usd_per_year + unit.staff_usd_per_year)
    financing = financing_usd(unit.capex_usd, resale, s.capital_rate, years) if years > 0 else 0.0
    total = n * (unit.capex_usd - resale + energy + fixed + financing) + years * s.staff_usd_per_year
    return BuyUseSell(num_gpus=num_gpus, hours=hours, resale_fraction=resale_fraction, capex_usd=n * unit.capex_usd,
                      resale_usd=n * resale, energy_usd=n * energy, fixed_usd=n * fixed + years * s.staff_usd_per_year,
                      financing_usd=n * financing, total_usd=float(total))


def _out(value: npt.NDArray[np.float64]) -> FloatOrArray:
    return float(value) if value.ndim == 0 else value


def usd_per_useful_gpu_hour(s: OnPremScenario, num_gpus: FloatOrArray = 1.0) -> FloatOrArray:
    """Owned cost of one busy GPU-hour over the depreciation period at the scenario's utilisation.

    c = [capex·(1 − r) + Y·(host power + colo + licence + staff_gpu + financing/Y + staff/N)] / (u · 8760 · Y)
        + TDP·PUE·p_busy

    Y years, r residual fraction, u utilisation, N GPUs in the cluster, p_busy the electricity price
    of busy hours. `num_gpus` may be a numpy array. Leaves out: spares and repairs, hardware support
    contracts, failed-GPU downtime, taxes, and facility build-out when colo is 0.
    """
    fixed, energy = _per_gpu_fixed_and_energy(s, num_gpus)
    return _out(fixed / (s.utilisation * s.owned_hours) + energy)


def _per_gpu_fixed_and_energy(s: OnPremScenario, num_gpus: FloatOrArray) -> tuple[Any, float]:
    """(one GPU's fixed cost over the depreciation period, the energy of one of its busy hours)."""
    n = np.asarray(num_gpus, dtype=np.float64)
    if np.any(n <= 0):
        raise InvalidSpec("number of GPUs must be positive")
    unit = unit_costs(s)
    years = s.depreciation_years
    return unit.net_capex_usd + years * (unit.fixed_usd_per_year + s.staff_usd_per_year / n), \
        unit.energy_usd_per_busy_hour


def onprem_cost_usd(num_gpus: FloatOrArray, hours: FloatOrArray, scenario: OnPremScenario) -> FloatOrArray:
    """Cost attributable to a job of `hours` wall-clock hours on `num_gpus` owned GPUs.

    cost = N · H · (F / max(u·L, min(H, L)) + e): each GPU's fixed cost F over the depreciation period (capex net
    of residual, Y years of host power, colo, licence, staff/N and financing) shared over its busy hours, plus the
    job's own GPU energy e per busy hour; L = 8760·Y owned hours. The job is one user of a cluster of N GPUs kept
    busy a fraction u of the time, so it bears its hours' share of u·L (N·H·c with c the cost per useful GPU-hour,
    `usd_per_useful_gpu_hour`). A job longer than u·L keeps the cluster busier than u: it bears the whole fixed cost
    (the buy-and-sell view), and beyond L that of the GPUs' replacement in proportion. A lone job on an otherwise
    idle cluster bears more (use utilisation = job hours / owned hours for that). Arrays broadcast.
    """
    n = np.asarray(num_gpus, dtype=np.float64)
    h = np.asarray(hours, dtype=np.float64)
    if np.any(h < 0):
        raise InvalidSpec("job hours must be non-negative")
    fixed, energy = _per_gpu_fixed_and_energy(scenario, n)
    owned = scenario.owned_hours
    busy = np.maximum(scenario.utilisation * owned, np.minimum(h, owned))
    return _out(np.asarray(n * h * (fixed / busy + energy), dtype=np.float64))


@dataclass(frozen=True, kw_only=True, slots=True)
class OnPremTco:
    """Owning `num_gpus` GPUs for the depreciation period."""

    num_gpus: int
    years: float
    utilisation: float
    capex_gpus_usd: float
    capex_server_usd: float
    capex_fabric_usd: float
    capex_usd: float
    residual_credit_usd: float
    net_capex_usd: float
    energy_kwh_per_year: float
    power_usd_per_year: float
    colo_usd_per_year: float
    licence_usd_per_year: float
    staff_usd_per_year: float
    financing_usd_per_year: float
    """Cost of capital, spread evenly over the years."""
    opex_usd_per_year: float
    lifetime_usd: float
    busy_gpu_hours: float
    usd_per_useful_gpu_hour: float
    busy_usd_per_kwh: float
    mean_usd_per_kwh: float
    it_kw_peak: float
    """IT load with every GPU at TDP plus host power (what power, cooling and colo must provision)."""
    it_kw_mean: float
    heat_btu_per_h_peak: float
    airflow_cfm_peak: float
    delta_t_f: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def onprem_tco(s: OnPremScenario, num_gpus: int) -> OnPremTco:
    """Total cost of owning `num_gpus` GPUs for Y years:
    capex − residual + Y × (power + colo + licence + staff + financing/Y).

    Heat and airflow are at peak IT load, (TDP + host) × N: BTU/h = 3.412 × W; CFM = 3.16 × W / ΔT°F.
    """
    if num_gpus < 1:
        raise InvalidSpec(f"--gpus must be at least 1, got {num_gpus}")
    unit = unit_costs(s)
    n = float(num_gpus)
    staff = n * unit.staff_usd_per_year + s.staff_usd_per_year
    opex = (n * (unit.power_usd_per_year + unit.colo_usd_per_year + unit.licence_usd_per_year
                 + unit.financing_usd / s.depreciation_years) + staff)
    net_capex = n * unit.net_capex_usd
    it_w_peak = n * (s.gpu_tdp_w + s.host_w_per_gpu)
    return OnPremTco(
        num_gpus=num_gpus, years=s.depreciation_years, utilisation=s.utilisation,
        capex_gpus_usd=n * unit.gpu_usd, capex_server_usd=n * unit.server_usd, capex_fabric_usd=n * unit.fabric_usd,
        capex_usd=n * unit.capex_usd, residual_credit_usd=n * unit.residual_credit_usd, net_capex_usd=net_capex,
        energy_kwh_per_year=n * unit.energy_kwh_per_year, power_usd_per_year=n * unit.power_usd_per_year,
        colo_usd_per_year=n * unit.colo_usd_per_year, licence_usd_per_year=n * unit.licence_usd_per_year,
        staff_usd_per_year=staff, financing_usd_per_year=n * unit.financing_usd / s.depreciation_years,
        opex_usd_per_year=opex,
        lifetime_usd=net_capex + s.depreciation_years * opex,
        busy_gpu_hours=n * s.utilisation * s.owned_hours,
        usd_per_useful_gpu_hour=float(usd_per_useful_gpu_hour(s, n)),
        busy_usd_per_kwh=unit.busy_usd_per_kwh, mean_usd_per_kwh=unit.mean_usd_per_kwh,
        it_kw_peak=it_w_peak / 1000, it_kw_mean=n * (s.gpu_tdp_w * s.utilisation + s.host_w_per_gpu) / 1000,
        heat_btu_per_h_peak=heat_btu_per_h(it_w_peak), airflow_cfm_peak=airflow_cfm(it_w_peak, s.delta_t_f),
        delta_t_f=s.delta_t_f,
    )
