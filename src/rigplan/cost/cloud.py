"""Cloud rental: dated $/GPU-hour offers from the catalog or the user, and the cost of a job."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigplan.bounds import located_message
from rigplan.catalog.schema import CloudPriceRecord, GpuRecord
from rigplan.cost.money import CNY_PER_USD_DEFAULT
from rigplan.cost.onprem import FloatOrArray
from rigplan.cost.power import HOURS_PER_MONTH
from rigplan.errors import InvalidSpec
from rigplan.files import load_yaml, read_text, user_path

PRICING_KINDS = ("on-demand", "reserved", "spot", "community", "serverless")
INTERRUPTIBLE_KINDS = ("spot", "community", "serverless")
"""Capacity that can be taken back or does not hold a gang of ranks: spot is reclaimed (AWS gives a
two-minute notice), community hosts leave, serverless workers scale per request with an execution
time limit. One lost rank stops a synchronous multi-node job."""
LONG_JOB_HOURS = 336.0
"""Two weeks: a "multi-week" job (rigplan threshold)."""
LARGE_JOB_GPUS = 8
"""More than one server: a part's own node size where known, else an 8-GPU server (rigplan threshold)."""


DEFAULT_CAPACITY_GPUS = {"on-demand": 512, "reserved": 512, "spot": 64, "community": 64, "serverless": 8}
"""Most GPUs one customer gets at once under an offer that states no capacity (CloudPriceRecord.
capacity_gpus): AWS EC2 Capacity Blocks sell 1 to 64 instances (up to 512 GPUs) per block, taken for
on-demand and reserved; spot and community pools, and serverless worker quotas, far smaller
(rigplan ASSUMPTION: 64, 64 and 8). A provider cannot rent 4,096 B200 as spot instances."""


def interruptible_pricing_unsuitable(num_gpus: int, hours: float, gpus_per_node: int = LARGE_JOB_GPUS) -> bool:
    """Large multi-week jobs (more than one server, more than two weeks) are not priced at spot, community or
    serverless rates unless asked: a reclaimed host stops every rank of the job."""
    return num_gpus > gpus_per_node and hours > LONG_JOB_HOURS


@dataclass(frozen=True, kw_only=True, slots=True)
class CloudOffer:
    """One provider's price for one GPU-hour, as a dated snapshot."""

    provider: str
    pricing: str
    """on-demand, reserved (committed / capacity blocks), spot, community, serverless, or user."""
    usd_per_gpu_hour: float
    as_of: dt.date | None
    source: str
    cny_per_gpu_hour: float | None = None
    """The provider's own CNY quote, where it bills in CNY (usd_per_gpu_hour is its conversion)."""

    @property
    def label(self) -> str:
        return f"{self.provider} ({self.pricing})"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["as_of"] = self.as_of.isoformat() if self.as_of else None
        return data


def _offer(record: CloudPriceRecord, cny_per_usd: float = CNY_PER_USD_DEFAULT) -> CloudOffer:
    return CloudOffer(provider=record.provider, pricing=record.pricing,
                      usd_per_gpu_hour=record.usd_per_hour(cny_per_usd), as_of=record.as_of, source=record.source,
                      cny_per_gpu_hour=record.cny_per_gpu_hour)


def offers_for(gpu: GpuRecord, *, latest_only: bool = True, pricing: tuple[str, ...] = (),
               cny_per_usd: float = CNY_PER_USD_DEFAULT) -> list[CloudOffer]:
    """The catalog's cloud offers for a GPU, cheapest first.

    `latest_only` keeps the newest snapshot per (provider, pricing) - e.g. AWS p5 on-demand after
    the June-2025 cut rather than before it. `pricing` keeps only those kinds. Offers quoted in CNY
    are converted at `cny_per_usd`.
    """
    offers = [_offer(r, cny_per_usd) for r in gpu.cloud_prices if not pricing or r.pricing in pricing]
    if latest_only:
        newest: dict[tuple[str, str], CloudOffer] = {}
        for offer in offers:
            key = (offer.provider, offer.pricing)
            kept = newest.get(key)
            if kept is None or (offer.as_of or dt.date.min) > (kept.as_of or dt.date.min):
                newest[key] = offer
        offers = list(newest.values())
    return sorted(offers, key=lambda o: (o.usd_per_gpu_hour, o.provider))


def user_offer(usd_per_gpu_hour: float, provider: str = "user") -> CloudOffer:
    """A price given on the command line."""
    if not (math.isfinite(usd_per_gpu_hour) and usd_per_gpu_hour > 0):
        raise InvalidSpec(f"--cloud-price must be a positive price per GPU-hour, got {usd_per_gpu_hour}")
    return CloudOffer(provider=provider, pricing="user", usd_per_gpu_hour=usd_per_gpu_hour, as_of=None,
                      source="--cloud-price")


def read_offers(path: str | Path, usd_per_unit: float = 1.0,
                cny_per_usd: float = CNY_PER_USD_DEFAULT) -> list[CloudOffer]:
    """Offers from a YAML file: a list of {provider, pricing, usd_per_gpu_hour, as_of, source}
    (the catalog's `cloud_prices` entries; the price is read in a currency worth `usd_per_unit` USD)."""
    file = user_path(path, "--offers", "send the offers as YAML text in offers_yaml")
    raw = load_yaml(read_text(file, "--offers"), f"--offers: '{file}'")
    if isinstance(raw, dict) and "cloud_prices" in raw:
        raw = raw["cloud_prices"]
    if not isinstance(raw, list) or not raw:
        raise InvalidSpec(f"--offers: '{file}' must hold a non-empty list of offers")
    offers = []
    for index, item in enumerate(raw):
        try:
            record = CloudPriceRecord.model_validate(item)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(entry)"
            raise InvalidSpec(f"--offers: '{file}' entry {index + 1}: {located_message(first, where)}") from err
        # a bare usd_per_gpu_hour is read in the request's currency (worth usd_per_unit USD);
        # cny_per_gpu_hour is CNY whatever the request's currency
        usd = (record.usd_per_gpu_hour * usd_per_unit if record.usd_per_gpu_hour is not None
               else record.usd_per_hour(cny_per_usd))
        offers.append(CloudOffer(provider=record.provider, pricing=record.pricing, usd_per_gpu_hour=usd,
                                 as_of=record.as_of, source=record.source, cny_per_gpu_hour=record.cny_per_gpu_hour))
    return sorted(offers, key=lambda o: o.usd_per_gpu_hour)


def cloud_cost_usd(gpu_hours: FloatOrArray, usd_per_gpu_hour: FloatOrArray) -> FloatOrArray:
    """Rental cost: GPU-hours × $/GPU-hour. Arrays broadcast (the planner passes one per candidate).

    Leaves out: minimum billing increments, instance granularity (8-GPU nodes bill whole), queueing
    for capacity, spot pre-emption (restarts cost extra GPU-hours), taxes and negotiated discounts.
    """
    hours = np.asarray(gpu_hours, dtype=np.float64)
    price = np.asarray(usd_per_gpu_hour, dtype=np.float64)
    if np.any(hours < 0) or np.any(price < 0):
        raise InvalidSpec("GPU-hours and prices must be non-negative")
    result = np.asarray(hours * price, dtype=np.float64)
    return float(result) if result.ndim == 0 else result


class CloudExtras(BaseModel):
    """Optional storage and data-transfer charges of a cloud job (no default prices: inputs only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    storage_gb: Annotated[float, Field(ge=0)] = 0.0
    storage_usd_per_gb_month: Annotated[float, Field(ge=0)] = 0.0
    egress_gb: Annotated[float, Field(ge=0)] = 0.0
    egress_usd_per_gb: Annotated[float, Field(ge=0)] = 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class CloudJobCost:
    offer: CloudOffer
    num_gpus: int
    hours: float
    compute_usd: float
    storage_usd: float
    egress_usd: float
    total_usd: float

    def to_dict(self) -> dict[str, Any]:
        data = self.offer.to_dict()
        data.update(num_gpus=self.num_gpus, hours=self.hours, compute_usd=self.compute_usd,
                    storage_usd=self.storage_usd, egress_usd=self.egress_usd, total_usd=self.total_usd)
        return data


def cloud_job_cost(offer: CloudOffer, num_gpus: int, hours: float, extras: CloudExtras | None = None) -> CloudJobCost:
    """compute = N × H × price; storage = GB × $/GB-month × H/730; egress = GB × $/GB."""
    extras = extras or CloudExtras()
    compute = float(cloud_cost_usd(num_gpus * hours, offer.usd_per_gpu_hour))
    storage = extras.storage_gb * extras.storage_usd_per_gb_month * hours / HOURS_PER_MONTH
    egress = extras.egress_gb * extras.egress_usd_per_gb
    return CloudJobCost(offer=offer, num_gpus=num_gpus, hours=hours, compute_usd=compute, storage_usd=storage,
                        egress_usd=egress, total_usd=compute + storage + egress)
