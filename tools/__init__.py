"""Maintenance scripts of the repository (not shipped in any package)."""
