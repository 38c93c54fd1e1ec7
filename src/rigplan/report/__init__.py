"""Reports for people: rich tables, matplotlib plots, Markdown, from the results' `to_dict()`.

May import: api, lint, flow, cost, units, errors.
"""
