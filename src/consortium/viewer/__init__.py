"""`consortium traces view`: web pages over the trace store."""
