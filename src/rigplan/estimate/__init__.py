"""The pure estimators: parameters, FLOPs, memory, communication, step time (no I/O, no look-ups).

Each function's docstring gives its formula, its source and what it leaves out
(docs/methodology/). They take domain values and never read the catalog.

May import: domain, units, errors.
"""
