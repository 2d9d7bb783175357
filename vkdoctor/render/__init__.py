"""Renderers: Report -> str, nothing else."""
