"""Declared public list prices (USD per million tokens) for the recorded models whose sources
record no cost, each with where it was published and the date it applies to. A cost computed from
these is an estimate (`cost_estimated`), and so are token counts the source did not record
(`tokens_estimated`: consortium.core.tokens, one token per 4 characters of the text we hold)."""

from __future__ import annotations

from consortium.core.tokens import estimate_tokens
from consortium.records.schema import Price

_OPENAI_2023 = "https://openai.com/pricing (list price of the model when the run was made)"

LIST_PRICES: dict[str, Price] = {
    "text-davinci-003": Price(
        input_per_mtok=20.0, output_per_mtok=20.0, source=_OPENAI_2023, date="2023-08-28"
    ),
    "gpt-3.5-turbo": Price(
        input_per_mtok=1.5,
        output_per_mtok=2.0,
        source=_OPENAI_2023 + "; gpt-3.5-turbo-0613 4K context, from the 2023-06-13 update",
        date="2023-07-18",
    ),
    "gpt-4": Price(
        input_per_mtok=30.0,
        output_per_mtok=60.0,
        source=_OPENAI_2023 + "; gpt-4 8K context",
        date="2023-07-18",
    ),
    "gpt-4o-mini-2024-07-18": Price(
        input_per_mtok=0.15,
        output_per_mtok=0.60,
        source="https://openai.com/api/pricing/ (gpt-4o-mini launch price, 2024-07-18)",
        date="2024-09-26",
    ),
    "gpt-4o": Price(
        input_per_mtok=2.50,
        output_per_mtok=10.0,
        source="https://openai.com/api/pricing/ (gpt-4o-2024-08-06, the default gpt-4o from "
        "2024-10-02; the run's snapshot is not recorded)",
        date="2025-03-01",
    ),
    "gemini-1.5-pro": Price(
        input_per_mtok=1.25,
        output_per_mtok=5.0,
        source="https://ai.google.dev/pricing (prompts up to 128K tokens, after the 2024-10-01 "
        "price cut)",
        date="2025-03-01",
    ),
    "Llama-3.1-70B-Instruct": Price(
        input_per_mtok=0.88,
        output_per_mtok=0.88,
        source="https://www.together.ai/pricing (Llama 3.1 70B Instruct Turbo, serverless; open "
        "weights, so a hosting price)",
        date="2024-07-23",
    ),
    "Llama-2-13B": Price(
        input_per_mtok=0.22,
        output_per_mtok=0.22,
        source="https://www.together.ai/pricing (Llama-2 13B chat, serverless, 2023; open weights, "
        "so a hosting price)",
        date="2023-11-01",
    ),
    "codellama-34b-instruct": Price(
        input_per_mtok=0.776,
        output_per_mtok=0.776,
        source="https://www.together.ai/pricing (Code Llama 34B Instruct, serverless, 2023; open "
        "weights, so a hosting price)",
        date="2023-09-01",
    ),
}
PRICE_NOTE = (
    "prices are public list prices as published by the provider at the date given, from memory of "
    "the pricing pages (not fetched during the import); costs computed from them are estimates"
)


def cost_of(price: Price, tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * price.input_per_mtok + tokens_out * price.output_per_mtok) / 1e6


def tokens_of(text: str | None) -> int:
    """The declared estimate for a text with no recorded count (0 for no text)."""
    return estimate_tokens(text) if text else 0
