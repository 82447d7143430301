"""Real small language models in every collaboration pattern (`make real`;
`scripts/real_report.py` parses the options): the request and its rows (`request`), the run on
llama.cpp servers (`run`), the report's text and JSON (`markdown`) and its figure (`plot`)."""
