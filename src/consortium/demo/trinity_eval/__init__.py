"""The TRINITY router on the replay pool, scored by RouterDC's protocol (`make train`,
`make compare`; `scripts/trinity_report.py` parses the options): the request (`request`), the
served policy beside its variants and baselines (`served`), the optimizers and encoders compared
(`compare`), the routers fitted in process (`variants`) and the two reports' text (`markdown`)."""
