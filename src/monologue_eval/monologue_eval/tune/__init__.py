"""Tuning the embedded planner on the expert's transcripts (issue 30): the data (examples, wording, data,
heldout) and the training (train, export). `python -m monologue_eval.tune --help`."""
