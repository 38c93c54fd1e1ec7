"""Command-line interface: one module per command, all calling rigplan.api."""
