"""Domain values: frozen dataclasses in base units (model architecture, hardware, job, parallel layout).

What the estimators take. Validity checks with messages that show every factor (layout.py).

May import: errors.
"""
