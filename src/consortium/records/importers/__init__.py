"""One reader per source layout of recorded outputs; each yields `SourceOutput`s."""
