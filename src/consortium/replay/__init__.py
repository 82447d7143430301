"""The replay pool: recorded outcomes of real models, served over a real OpenAI-compatible API."""

from consortium.replay.data import ReplayData, ReplayRecord, load_replay

__all__ = ["ReplayData", "ReplayRecord", "load_replay"]
