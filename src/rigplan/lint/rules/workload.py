"""Stated workloads: does the model fit the build's GPUs at all, and how long would training take?"""

from __future__ import annotations

from rigplan.lint.context import LintContext
from rigplan.lint.findings import Finding, Severity, finding
from rigplan.lint.registry import rule
from rigplan.lint.workload import WorkloadEval
from rigplan.units import format_bytes, format_duration

LONG_RUN_S = 180 * 86400.0
"""A training run longer than about half a year is flagged (rigplan convention: hardware and models are
superseded on that scale)."""


def _what(ev: WorkloadEval) -> str:
    w = ev.workload
    origin = "claim" if w.origin == "claim" else "--for"
    return f"{w.method} training of {w.model} ({ev.params / 1e9:.1f}B params) on {ev.gpus} x {ev.gpu_name} [{origin}]"


@rule("workload.fit", "The stated workload fits the GPUs")
def workload_fit(ctx: LintContext) -> list[Finding]:
    """Per-GPU memory of the best of a few standard layouts (ZeRO-3/FSDP with recompute, TP in the node)
    from rigplan.flow.memory, against the GPU's usable memory. If none fits, ZeRO-3 with CPU offload and its
    host-RAM need against the build's RAM. Error: does not fit at all; warning: fits only with offload."""
    out: list[Finding] = []
    for ev in ctx.evals:
        best = ev.best
        values = {"model": ev.workload.model, "method": ev.workload.method, "gpus": ev.gpus, "params": ev.params,
                  "per_gpu_bytes": best.per_gpu_bytes, "usable_bytes": ev.usable_bytes, "layout": best.label,
                  "origin": ev.workload.origin, "text": ev.workload.text}
        head = _what(ev)
        if ev.fits_plain:
            # One report, one layout: when the workload is timed, the fit is told for the layout timed.
            fitting = [t for t in ev.plain if t.fits]
            fit = next((t for t in fitting if t.label == ev.time_layout), min(fitting, key=lambda t: t.per_gpu_bytes))
            values.update(per_gpu_bytes=fit.per_gpu_bytes, layout=fit.label)
            out.append(finding("workload.fit", "info", f"{head}: fits, {format_bytes(fit.per_gpu_bytes)} per GPU of "
                               f"{format_bytes(ev.usable_bytes)} with {fit.label}.", **values))
            continue
        lora = ""
        if ev.lora_try is not None:
            values["lora_per_gpu_bytes"] = ev.lora_try.per_gpu_bytes
            lora = (f" LoRA instead needs {format_bytes(ev.lora_try.per_gpu_bytes)} per GPU "
                    f"({'fits' if ev.lora_try.fits else 'does not fit either'}).")
        off = ev.offload_fit
        base = (f"{head}: does not fit; the best layout ({best.label}) needs {format_bytes(best.per_gpu_bytes)} "
                f"per GPU, the GPU has {format_bytes(ev.usable_bytes)}")
        if off is not None:
            values.update(offload_layout=off.label, offload_per_gpu_bytes=off.per_gpu_bytes,
                          host_bytes_needed=off.host_bytes_per_node, host_ram_bytes=ev.host_ram_bytes)
            ram = format_bytes(ev.host_ram_bytes) if ev.host_ram_bytes else "not stated"
            if ev.host_ok:
                out.append(finding("workload.fit", "warning", f"{base}. It fits only with {off.label}: "
                                   f"{format_bytes(off.per_gpu_bytes)} per GPU and "
                                   f"{format_bytes(off.host_bytes_per_node)} of host RAM per node (installed: {ram}), "
                                   f"and runs at PCIe speed.{lora}", **values))
            else:
                out.append(finding("workload.fit", "error", f"{base}. Even {off.label} needs "
                                   f"{format_bytes(off.host_bytes_per_node)} of host RAM per node (installed: {ram})."
                                   f"{lora}", **values))
            continue
        out.append(finding("workload.fit", "error", f"{base}, and CPU offload does not bring it under either.{lora}",
                           **values))
    return out


@rule("workload.time", "Time to train the stated workload")
def workload_time(ctx: LintContext) -> list[Finding]:
    """Time to train from rigplan.flow.estimate.estimate (6ND-based step model with efficiency data) on the fastest
    fitting layout; info, or warning above ~180 days. When nothing fits the time is for the lowest-memory
    layout, as if it fitted."""
    out: list[Finding] = []
    for ev in ctx.evals:
        if ev.workload.tokens is None or ev.time_s is None:
            continue
        fits = ev.fits_plain or ev.host_ok
        values = {"model": ev.workload.model, "tokens": ev.workload.tokens, "time_to_train_s": ev.time_s,
                  "layout": ev.time_layout, "mfu": ev.mfu, "gpus": ev.gpus, "fits": fits}
        cond = "" if ev.fits_plain else (" (with CPU offload, whose PCIe traffic is not modeled: longer in practice)"
                                         if fits else " (if it fitted, which it does not)")
        text = (f"{ev.workload.tokens} tokens of {ev.workload.model} on {ev.gpus} x {ev.gpu_name}: "
                f"~{format_duration(ev.time_s)} at {ev.mfu:.0%} MFU with {ev.time_layout}{cond}")
        severity: Severity = "warning" if ev.time_s > LONG_RUN_S else "info"
        tail = f"; over {LONG_RUN_S / 86400:.0f} days." if severity == "warning" else "."
        out.append(finding("workload.time", severity, text + tail, **values))
    return out


@rule("claim.unverifiable", "Claims without a checkable workload")
def claim_unverifiable(ctx: LintContext) -> list[Finding]:
    """Claims of the build record that name no model (e.g. '92% multi-GPU efficiency'): reported so they
    are not mistaken for checked facts. Scaling efficiency depends on model, layout and batch; rigplan's
    estimate computes it for a given job."""
    return [finding("claim.unverifiable", "info", f"Not checked (no model or numbers to compute): {text}", text=text)
            for text in ctx.unchecked_claims]
