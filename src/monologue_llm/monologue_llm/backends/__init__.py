"""The built-in LLM backend plug-ins, one module per backend named as the backend (each defines
`PLUGIN`, a monologue_llm.plugin.BackendPlugin); they import the heavy backend code only to build one."""
