"""Budgets, the response cache, the trace store, and the one way coordinators call models."""
