"""Coordinators: one protocol, many policies."""

from consortium.coord.base import Coordinator, Outcome

__all__ = ["Coordinator", "Outcome"]
