"""`make serve-learns`: a records set's train split as traffic through a real `serve --learn` over
the HTTP replay, labels from the records' verdicts, and the report of what the server adopted."""
