"""Calibration files: what `rigplan probe` and `rigplan calibrate` write and `--calibration FILE` reads.

file.py is the schema (pydantic), reading, writing and the device record built from measurements; the
overrides it yields are estimate.calibration.Calibration values, applied by the pure estimators.

May import: domain, estimate, files, units, errors.
"""
