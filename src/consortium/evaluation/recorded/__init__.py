"""Evaluation on recorded outputs: the records simulation of every policy family (answer
tables, rule runs, baselines, the learned scorer, TRINITY episodes), split, selection and
cost measures, and the HTTP replay check."""
