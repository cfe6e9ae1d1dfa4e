"""monologue_eval: the evaluation tools (benchmark, demo, replay comparison, bag info) on top of the bring-up."""
