"""What a server build says about cost and power, in the terms of the TCO model (per GPU, USD, W)."""

from __future__ import annotations

from dataclasses import dataclass

from rigplan.catalog.load import Catalog
from rigplan.catalog.schema import as_of_text
from rigplan.cost.money import CNY_PER_USD_DEFAULT
from rigplan.servers.power import gpu_power_w
from rigplan.servers.schema import ServerRecord


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildCosts:
    gpu_id: str
    gpus_per_node: int
    server_share_usd_per_gpu: float | None
    """Build price per node minus its GPUs at catalog price, per GPU; None when the build has no
    usable price (no price, or a price of the GPUs only)."""
    host_w_per_gpu: float | None
    """Maximum system power minus the GPUs' board power, per GPU; None without a published maximum."""
    notes: tuple[str, ...]


def build_costs(build: ServerRecord, catalog: Catalog, cny_per_usd: float = CNY_PER_USD_DEFAULT) -> BuildCosts:
    """Per-GPU server share and host power from a build record.

    Host power from the vendor's maximum system power is an upper bound (a DGX H100 runs 6.5-8.5 kW
    under load against its 10.2 kW maximum), so owned running costs come out conservative.
    """
    gpu = catalog.gpu(build.gpus.id)
    count = build.gpus.count
    board_w = gpu_power_w(build, gpu.tdp_w)
    notes: list[str] = []
    host_w = None
    if build.max_power_w:
        host_w = max(build.max_power_w - board_w * count, 0.0) / count
        notes.append(f"host power {host_w:.0f} W per GPU from {build.id}'s maximum system power "
                     f"{build.max_power_w:,.0f} W (an upper bound)")
    share = None
    price = build.price
    if price is not None and gpu.price is not None and "gpu" not in price.scope.lower():
        usd = price.amount / cny_per_usd if price.currency == "CNY" else price.amount
        per_node = usd / build.nodes if "whole" in price.scope.lower() else usd
        share = max(per_node / count - gpu.price.usd, 0.0)
        dated = as_of_text(price.as_of)
        notes.append(f"server share ${share:,.0f} per GPU from {build.id}'s price ({price.kind}, {dated}) "
                     f"less {count} x {gpu.id} at the catalog's ${gpu.price.usd:,.0f}")
    elif price is None:
        notes.append(f"{build.id} records no price: the default server share applies")
    return BuildCosts(gpu_id=gpu.id, gpus_per_node=count, server_share_usd_per_gpu=share, host_w_per_gpu=host_w,
                      notes=tuple(notes))
