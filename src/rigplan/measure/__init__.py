"""Measurements on this machine with torch (the optional `rigplan[torch]` extra, imported lazily).

probe.py       microbenchmarks (GEMM, SDPA, bandwidth, collectives) -> a calibration file
check.py       a few training steps of a small local model, measured next to rigplan's estimate
tiny_model.py  that model: a Llama-style decoder in plain torch built from an Architecture
calibrate.py   fits the efficiency and overhead parameters to a user's measured run
saved_tensors.py  bytes autograd saves per decoder layer of a Hugging Face model (the exact check of
               estimate/activations.py)
allocator_replay.py  a port of the CUDA caching allocator's block rules, replaying recorded allocation
               traces of training steps (benchmarks/allocator_replay.py; estimate/allocator.py's fractions)

May import: flow, calibration, catalog, estimate, domain, units, errors.
"""
