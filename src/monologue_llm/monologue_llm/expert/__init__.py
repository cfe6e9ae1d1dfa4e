"""The expert LLM stand-in (`llm:=expert`): answers each planner query as a capable model following the
prompt would, from privileged simulator truth (monologue_domain.expert). For ceiling runs and tests only;
it refuses to run without a simulated world's truth (docs/llm.md, "The expert stand-in")."""
