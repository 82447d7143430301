"""A real instruct model learns the Conductor's format (`make real-conductor`; with a records
folder's replay as the workers, `conductor-records-DATASET.md`): the request and what a mode trains
on (`request`), the staged training and its summary (`run`), the report's text (`markdown`).
`scripts/conductor_report.py` parses the options; the records mode's setup imports the replay
plug-in, so it lives in `demo.conductor_records`."""
