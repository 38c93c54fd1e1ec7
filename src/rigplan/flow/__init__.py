"""The request flow, in the order a request travels it.

    request.py       what the CLI flags and the HTTP API accept (pydantic models, validated once)
    model_source.py  MODEL as typed (catalog id, config.json, size, shape flags) -> Architecture
    resolve.py       a request -> one TrainingSetup (architecture, job, layout, GPU, assumptions)
    estimate.py      a setup -> step time, time to train, cost of one configuration
    plan.py          a plan request -> candidates evaluated in bulk -> ranking and Pareto front

    memory.py        a setup -> per-GPU peak memory, whether it fits, the largest batch/sequence

May import: cost, servers, catalog, calibration, search, estimate, reliab, domain, bounds, files, units, errors.
Must not import: lint, api, report, cli, web, validation (those sit above it).
"""
