"""Answer-aware coordination on recorded outputs: policies that read the answers
(agreement, a program's run on its own docstring examples) and decide whom to ask next, trained
for right − λ·cost on a data set's train split and reported on its test split."""
