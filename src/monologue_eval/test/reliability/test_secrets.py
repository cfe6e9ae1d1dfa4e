"""R6 (docs/reliability.md): a fake API key and Spot password in the environment appear in no log record,
exception text, repr, transcript, cassette or web monitor state (monologue_eval/reliability/r6_secrets.py)."""
from __future__ import annotations

from monologue_eval.reliability import r6_secrets


def test_no_secret_in_any_output() -> None:
    findings, hits, _ = r6_secrets.measure()
    assert hits == []
    assert findings.errors == []
    searched = set(findings.outputs)
    # the paths that log and raise did run and were searched
    assert {"openai generate error", "openai score error", "spot auth failure", "web monitor state JSON",
            "planner settings repr", "captured logs"} <= searched
    assert any(w.startswith("file transcripts/") for w in searched)
    assert "file recorded.json" in searched
    assert "Connection" in findings.outputs["openai generate error"]  # the error is there, without the key
    assert "INVALID_LOGIN" in findings.outputs["spot auth failure"].upper().replace(" ", "_") or \
        "login" in findings.outputs["spot auth failure"].lower()
