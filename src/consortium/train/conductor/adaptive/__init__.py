"""The adaptive conductor pipeline (`scripts/conductor_adaptive.py`) as a library request and run:
a conductor that learns how big a team each task needs, on a mixed pool of recorded answers.
`request.py` holds its options, `work.py` the work folder and the training stages (warm start,
sampled shapes, GRPO / RFT / distillation), `families.py` the fixed workflows picked on train per
data set, `evaluate.py` the evaluation stage and `run.py` the run; the report is built in
`consortium.reports.conductor_adaptive`."""
