"""Policies that read the answers: a weighted vote, ModelSwitch's rule, a MoT-style cascade.

Each policy is one rule (`rules`): a function from the answers seen so far to the next decision
(whom to ask, or which answer to submit). The live coordinator (`live`) and the records runner
(`consortium.evaluation.recorded.rule_runs`) both call that one rule, so the report measures the
policy that `ask`, `eval` and `serve` run."""
