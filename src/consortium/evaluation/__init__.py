"""Evaluation: the entry point (`EvalConfig` -> `run_evaluation`), the per-policy runner and the
report tables."""
