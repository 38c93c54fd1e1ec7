"""The GPU and model catalog: sourced YAML records (built-in plus user overlays) read into domain values.

load.py reads and validates the records (pydantic, unknown keys are errors), schema.py defines them,
hf_config.py reads a local Hugging Face config.json into an Architecture (with hf_reader.py and
hf_families.py), cache.py keeps the built-in records' domain values between runs, views.py builds the listings
`rigplan models|gpus --json` print (with parameter counts from the pure estimators).

May import: domain, estimate, bounds, files, units, errors.
"""
