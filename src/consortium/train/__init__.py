"""Training the coordinators, by what is trained: `trinity/` (the TRINITY head's optimizers and
the one fit loop), `conductor/` (the Conductor's SFT, GRPO, rejection sampling, distillation and
its records pool) and `answers/` (fitting the answer-aware kinds into policy folders)."""
