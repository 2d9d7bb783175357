"""Renderers: Report -> str, nothing else."""

#: the code prefix of the checks that turn the probe's result into a finding; the renderers show a
#: failed probe on its own only when no such check is in the report
PROBE_FAMILY_PREFIX = "VKR"
