"""The local web app and HTTP API (`rigplan serve`): FastAPI routes that call rigplan's facades.

Needs the `web` extra (`pip install 'rigplan[web]'`). Nothing here estimates anything: every number
comes from `rigplan.api`, `rigplan.flow.estimate`, `rigplan.flow.plan`, `rigplan.cost.tco`, `rigplan.lint`
and the catalog, and the JSON of each endpoint is the `--json` object of the matching command.

Static page: static/app.js (entry ES module) and one module per view (view-*.js), no build step.

May import: api, lint, flow, cost, servers, catalog, estimate, domain, bounds, files, units, errors, i18n.
Never the CLI: what both need lives below them.
"""
