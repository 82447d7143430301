"""Names the TRINITY router's encoders go by, and the one a new training uses (no imports, so the
command line reads its defaults without loading a model library)."""

from __future__ import annotations

STATIC_MINILM_NAME = "all-MiniLM-L6-v2-static"

ENCODER = STATIC_MINILM_NAME
"""The encoder of a new TRINITY training (`train trinity`, `train router`, `TrinityRequest`):
all-MiniLM-L6-v2's static distillation, a lookup of well under a millisecond per decision, whose
head scored as the contextual encoder's on RouterDC (docs/performance.md). A policy records its
encoder in policy.json and `load_policy` builds that one, so a policy trained on another keeps
it."""
