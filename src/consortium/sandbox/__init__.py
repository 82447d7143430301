"""Untrusted generated code: the runner (isolation, limits, collection), the resource limits and
the machine-wide uid pool."""
