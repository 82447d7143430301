"""Silence the progress bars third-party loaders draw on stderr: commands show their own."""

from __future__ import annotations


def quiet_transformers() -> None:
    """transformers draws a "Loading weights" bar each time a model loads (sentence-transformers
    and GGUF loading included); no environment setting is needed after this call."""
    from transformers.utils import logging

    logging.disable_progress_bar()


def quiet_datasets() -> None:
    """`datasets` draws a bar for every map (TRL tokenizes its training set with one)."""
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
