"""The planner's ROS-free core.

- strategy.py: the Strategy interface (EpisodeContext, Ports, StepChooser); strategies/: the registry
  (register, get, names) and one module per strategy (inner_monologue, inner_monologue_generative, saycan).
- runner.py: EpisodeRunner (goal -> options, resume, transcript header, human inbox, cancel, result).
- settings.py: PlannerSettings and settings_from_parameters (the node's parameters, validated once).
- episode.py: EpisodeOptions, EpisodeError, StepRecord, EpisodeResult, finish.
- Pieces strategies are built from: loop.py (the closed loop), scoring.py, generation.py,
  feedback.py, scene_feedback.py, human.py; prompts.py and parsing.py; ports.py (what the planner
  needs from the graph). monologue.py: InnerMonologue, the loop as one object for direct callers.
"""
