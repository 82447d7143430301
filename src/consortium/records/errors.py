"""The one error a records folder raises: a ConsortiumError with one clear line."""

from consortium.core.errors import ConsortiumError


class RecordsError(ConsortiumError):
    """A records folder or a source file cannot be read as asked (missing, corrupt, unknown
    schema version, malformed source row)."""


class SamplesExhausted(RecordsError):
    """A (question, model) has fewer recorded samples than the index asked for."""

    def __init__(self, model: str, question_id: str, index: int, recorded: int) -> None:
        super().__init__(
            f"model {model!r} has {recorded} recorded sample(s) of question {question_id!r}; "
            f"sample {index} was asked for (0-based)"
        )
        self.model = model
        self.question_id = question_id
        self.index = index
        self.recorded = recorded
