"""The request flow: a request validated once, resolved once into a training setup, then estimated, fitted,
planned or compared.

Its modules, in the order a request travels them:

    request.py       what the CLI flags and the HTTP API accept (pydantic models, validated once)
    fields.py        the same checks from a table of those models' fields, without pydantic (CLI start-up)
    framework.py     a --framework preset applied to a request, once
    model_source.py  MODEL as typed (catalog id, config.json, size, shape flags) -> Architecture
    resolve.py       a request -> one TrainingSetup (architecture, job, layout, GPU, assumptions)
    estimate.py      a setup -> step time, time to train, cost of one configuration
    plan.py          a plan request -> candidates evaluated in bulk -> ranking and Pareto front

    memory.py        a setup -> per-GPU peak memory, whether it fits, the largest batch/sequence
    fit.py           the fit verdict with its uncertainty, and remedies re-estimated and ranked

May import: cost, servers, catalog, calibration, search, estimate, reliab, domain, bounds, files, units, errors.
Must not import: lint, api, report, cli, web, validation (those sit above it).
"""
