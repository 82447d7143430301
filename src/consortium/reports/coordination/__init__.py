"""The answer-aware coordination report on records folders (`consortium coordinate`): every
policy family fitted or selected on each data set's train split, reported on its test split."""
