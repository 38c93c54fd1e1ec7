"""Command-line interface: one module per command, all calling rigplan.api.

May import: any package below it (web only for `rigplan serve`, validation for `rigplan validate`):
api, web, validation, report, lint, measure, export, flow, calibration, cost, servers, catalog, search,
reliab, estimate, domain, bounds, files, units, errors, i18n.
"""
