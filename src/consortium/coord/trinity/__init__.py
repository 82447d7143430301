"""TRINITY-style coordinator: an encoder's feature of the transcript, a tiny linear head that picks
one model and one role per turn, and the Thinker / Worker / Verifier protocol."""
