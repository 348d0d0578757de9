"""Harvester's settings: the spec (one row per setting), the value types, and the checks."""
