"""The local web app and HTTP API (`rigplan serve`): FastAPI routes that call rigplan's facades.

Needs the `web` extra (`pip install 'rigplan[web]'`). Nothing here estimates anything: every number
comes from `rigplan.api`, `rigplan.flow.estimate`, `rigplan.flow.plan`, `rigplan.cost.tco`, `rigplan.lint`
and the catalog, and the JSON of each endpoint is the `--json` object of the matching command.
"""
