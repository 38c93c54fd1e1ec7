"""Measurements on this machine with torch (the optional `rigplan[torch]` extra, imported lazily).

probe.py       microbenchmarks (GEMM, SDPA, bandwidth, collectives) -> a calibration file
check.py       a few training steps of a small local model, measured next to rigplan's estimate
tiny_model.py  that model: a Llama-style decoder in plain torch built from an Architecture
calibrate.py   fits the efficiency and overhead parameters to a user's measured run

May import: flow, calibration, catalog, estimate, domain, units, errors.
"""
