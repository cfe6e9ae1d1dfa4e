"""The expert planners behind the expert LLM stand-in (`llm:=expert`, monologue_llm.expert), and the
side channel they read privileged truth from (no rclpy).

The stand-in answers every planner query as a capable model following the prompt would. It decides
from what neither the planner nor perception can see: the simulated world's full state, written by the
simulator to a truth directory (`channel.write_world`), and the task's goal predicate, written by the
benchmark runner, demo or test that starts the episode (`channel.write_task`). One module per world
holds its expert planner: given the truth and a goal, the next correct action.
"""
