"""The built-in success judges, one module per judge named as the judge (each defines `PLUGIN`, a
judging.JudgePlugin); judging.JUDGES imports them the first time a judge is looked up."""
