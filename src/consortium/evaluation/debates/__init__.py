"""Policies of when to talk, measured on records folders of recorded debates (`consortium debates
report`): the debate rule played on the recorded turns, the baselines on the first answers."""
