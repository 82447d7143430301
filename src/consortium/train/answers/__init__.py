"""Fitting the answer-aware kinds (votes, cascades, scorers, program filters, TRINITY on turns)
on a records folder's train split into policy folders, and `--kind auto`: the best kind."""
