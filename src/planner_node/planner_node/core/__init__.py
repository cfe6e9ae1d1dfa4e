"""The planner's ROS-free core.

- strategy.py: the Strategy interface (EpisodeContext, Ports, StepChooser, EpisodeState, typed
  StrategySettings and SettingsBlock, Publication); strategies/: the strategy registry and one
  package per family (inner_monologue, saycan, cape, statler, multitalk), each with its loop,
  prompts, parsing, grammar and settings.
- runner.py: EpisodeRunner (goal -> options, resume, transcript header, human inbox, cancel, result)
  and run_episode (what escapes a strategy -> the episode's outcome, in one place).
- settings.py: PlannerSettings and settings_from_parameters (the node's parameters, validated once).
- episode.py: EpisodeOptions, EpisodeError, StepRecord, EpisodeResult, finish.
- Pieces strategies are built from: loop.py (the closed loop), scoring.py (with calibration.py,
  goal_check.py, goal_examples.py), feedback.py, scene_feedback.py, human.py, role_llm.py;
  prompts.py and parsing.py; ports.py (what the planner needs from the graph).
"""
