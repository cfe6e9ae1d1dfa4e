"""Component benchmarks: in-process timing of one package's internals (simulator, perception, planner), and
how the planner's goal grounding reads lists of wordings (goal_grounding.py).

They print numbers and assert nothing. Unlike the rest of monologue_eval they import node packages'
internals (that is what they measure), so they run only as their own processes
(`python -m monologue_eval.benchmarks.<name>` or their console scripts); nothing else imports them.
"""
