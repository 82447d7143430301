"""Training the TRINITY head: the optimizers behind one ask/tell interface (sep-CMA-ES, REINFORCE,
random search, imitation), the one fit loop every setting uses, and the settings that drive it:
online rollouts on a pool, recorded outcomes (routing), recorded turns (the replay simulation),
with the question-only routers it is compared with."""
