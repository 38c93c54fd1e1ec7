"""Time-vs-cost scatter with the Pareto front marked (matplotlib, an optional dependency)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigplan.errors import InvalidSpec
from rigplan.units import format_tokens


def plan_plot(data: dict[str, Any], candidates: list[dict[str, Any]], path: str | Path) -> Path:
    """Write a PNG or SVG: every priced candidate as a point, the Pareto front as a line, constraints dashed (an
    unpriced option, --unpriced or --cluster on a part rigplan has no price for, has no cost to plot)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise InvalidSpec("--plot needs matplotlib: pip install 'rigplan[plot]'") from err
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg"):
        raise InvalidSpec(f"--plot {path}: use a .png or .svg file name")
    candidates = [c for c in candidates if c["cost_usd"] is not None]
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    markers = {"cloud": "o", "onprem": "s"}
    gpus = sorted({c["gpu"] for c in candidates})
    colours = {g: plt.get_cmap("tab20")(i % 20) for i, g in enumerate(gpus)}
    for c in candidates:
        ax.scatter(c["wall_time_s"] / 86400, c["cost_usd"], marker=markers.get(c["mode"]["kind"], "o"),
                   color=colours[c["gpu"]], alpha=0.45, s=22, edgecolors="none")
    front = sorted((c for c in data["pareto"] if c["cost_usd"] is not None), key=lambda c: c["wall_time_s"])
    ax.plot([c["wall_time_s"] / 86400 for c in front], [c["cost_usd"] for c in front], "-", color="black",
            lw=1.2, label="Pareto front (time vs cost)")
    for c in front:
        label = f"{c['gpus']}x {c['gpu']} ({c['mode']['pricing']})"
        ax.annotate(label, (c["wall_time_s"] / 86400, c["cost_usd"]), fontsize=7, xytext=(4, 3),
                    textcoords="offset points")
    if data.get("deadline_s"):
        ax.axvline(data["deadline_s"] / 86400, ls="--", color="tab:red", lw=1, label="deadline")
    if data.get("budget_usd"):
        ax.axhline(data["budget_usd"], ls="--", color="tab:green", lw=1, label="budget")
    for g in gpus:
        ax.scatter([], [], color=colours[g], label=g, s=22)
    if candidates:
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:  # nothing priced (an infeasible plan, or unpriced options only): no log scale, the axes say why
        ax.text(0.5, 0.5, f"no priced option to plot: {data.get('infeasible') or 'every option is unpriced'}",
                ha="center", va="center", wrap=True, transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
    ax.set_xlabel("wall-clock time to train, failures and checkpoints included (days)")
    ax.set_ylabel("cost (USD)")
    ax.set_title(f"{data['model']}: {format_tokens(data['tokens'])} - circles: cloud, squares: owned")
    ax.grid(True, which="both", alpha=0.25)
    if candidates:
        ax.legend(fontsize=7, ncol=2, loc="upper right")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out
