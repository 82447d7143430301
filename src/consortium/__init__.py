"""Consortium: a coordinated team of language models used like one model."""

from consortium.errors import ConsortiumError
from consortium.types import Completion, Message, Usage

__version__ = "0.1.0"

__all__ = ["Completion", "ConsortiumError", "Message", "Usage", "__version__"]
