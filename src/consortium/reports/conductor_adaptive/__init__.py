"""The adaptive conductor report (reports/conductor-adaptive.md and .json): `summary.summary_of`
reads what the pipeline (`train.conductor.adaptive`) wrote in its work folder, and
`markdown.markdown` writes the report from that summary."""
