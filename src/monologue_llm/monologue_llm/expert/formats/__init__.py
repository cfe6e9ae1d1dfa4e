"""The expert stand-in's prompt formats: one module per strategy's format, each defining `RESPONDER`
(monologue_llm.expert.format.Responder)."""
