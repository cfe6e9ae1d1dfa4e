"""A scripted OpenAI-compatible completions server, run as a process of its own (so a test can SIGKILL it):
`python test/scripted_llm_server.py --port N`.

It answers `/v1/completions` with `echo` + `logprobs` as vLLM and llama.cpp do (the planner's
`llm:=openai` scoring): the echoed text is split into two tokens, everything up to the last line, and the
last line (the candidate), whose log-probability follows a rule for the instruction (the last `Human:`
line): for "... matching bowls." a block-to-bowl action of matching colours, for "Put all the blocks in the
<colour> bowl." an action into that bowl, not yet reported successful in the current episode, scores 0,
`Robot thought: None.` -3, anything else -8. The embedded model through llama_cpp.server would
need minutes per step here (it computes full-vocabulary logits for every prompt token).
"""
from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def wanted(line: str, instruction: str) -> bool:
    """Whether the candidate `line` does what `instruction` asks (a block into the right bowl)."""
    words = line.split()
    if not line.startswith("Robot action: Pick the") or "bowl." not in line or len(words) < 6:
        return False
    if "matching bowls" in instruction:
        return words[4] == words[-2]
    return instruction.startswith("Human: Put all the blocks in the ") and line.endswith(
        instruction.removeprefix("Human: Put all the blocks in the "))


def score(text: str) -> tuple[list[str], list[int], list[float]]:
    """Tokens, their offsets and log-probabilities of one echoed text."""
    cut = text.rfind("\n") + 1
    line = text[cut:]
    start = text.rfind("\nHuman: ", 0, cut) + 1
    instruction = text[start:text.find("\n", start)]
    episode = text[start:cut]
    if wanted(line, instruction) and line + "\nSuccess: True" not in episode:
        lp = 0.0
    elif line.strip() == "Robot thought: None.":
        lp = -3.0
    else:
        lp = -8.0
    if cut == 0:
        return [line], [0], [lp]
    return [text[:cut], line], [0, cut], [-1.0, lp]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "test"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        choices = []
        for i, prompt in enumerate(prompts):
            if body.get("echo"):
                tokens, offsets, lps = score(str(prompt))
                choices.append({"text": prompt, "index": i, "finish_reason": "length",
                                "logprobs": {"tokens": tokens, "text_offset": offsets, "token_logprobs": lps,
                                             "top_logprobs": None}})
            else:
                choices.append({"text": "Robot thought: None.", "index": i, "finish_reason": "stop", "logprobs": None})
        n = sum(len(str(p)) // 4 for p in prompts)
        self._send({"id": "scripted", "object": "text_completion", "created": 0, "model": body.get("model", ""),
                    "choices": choices, "usage": {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1}})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    port = ap.parse_args().port
    ThreadingHTTPServer(("127.0.0.1", port), _Handler).serve_forever()


if __name__ == "__main__":
    main()
