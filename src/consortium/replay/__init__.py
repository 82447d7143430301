"""The replay pool: recorded outcomes of real models, served over a real OpenAI-compatible API."""

from consortium.answers import register_token
from consortium.replay.behaviour import ANSWER_TOKEN
from consortium.replay.data import ReplayData, ReplayRecord, load_replay

# Importing any part of the replay plug-in declares its answer token, so agreement between replayed
# answers compares the tokens as written.
register_token(ANSWER_TOKEN)

__all__ = ["ReplayData", "ReplayRecord", "load_replay"]
