"""The report builders, one per claim: each trains and measures what its claim is about, so this
room sits above `train/` and `evaluation/` (whose runners and tables it uses)."""
