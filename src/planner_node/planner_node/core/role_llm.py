"""An LLM of its own for one role of a strategy (Statler's writer, MultiTalk's analyzer): a `<section>.*`
block over the planner's `llm.*` block, built by monologue_llm's factory on first use and kept for the
process (loading a model takes seconds). No rclpy."""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping

from monologue_common.core.settings import ParamReader
from monologue_llm.base import LLMBackend, LLMError
from monologue_llm.factory import ALL_KEYS, backend_plugin, make_backend_from_params

_BACKENDS: dict[str, LLMBackend] = {}  # built once per configuration
_LOCK = threading.Lock()


def read_role_llm(r: ParamReader, section: str) -> dict[str, object]:
    """`<section>.*` (e.g. statler.writer_llm): with `backend` empty, {} (the planner's LLM); otherwise the
    planner's `llm.*` block with these keys over it (same keys as `llm.*`: backend, base_url, model,
    cassette_path, ...), for monologue_llm.factory.make_backend_from_params."""
    own = r.section(section)
    backend = own.get("backend", "")
    r.check(isinstance(backend, str), f"{section}.backend: must be a string, got {backend!r}")
    if not backend:
        return {}
    keys = ALL_KEYS
    try:  # a built-in, an entry point or a dotted module path (monologue_llm.plugin.LLM_BACKENDS)
        keys = keys | backend_plugin(str(backend)).key_names
    except ValueError as e:
        r.check(False, f"{section}.backend: {e} (or \"\" for the planner's LLM)")
    unknown = sorted(set(own) - keys)
    r.check(not unknown, f"{section}: unknown key(s) {unknown}; the keys of llm.* are {sorted(ALL_KEYS)}")
    base = {k[len("llm."):]: v for k, v in r.params.items() if k.startswith("llm.")}
    return {**base, **own}


def role_backend(default: LLMBackend, cfg: Mapping[str, object], role: str, log: logging.Logger) -> LLMBackend:
    """`default` (the planner's LLM) when `cfg` is empty, else the role's own backend (cached per
    configuration); LLMError naming the role when it cannot be built."""
    if not cfg:
        return default
    key = json.dumps(dict(cfg), sort_keys=True, default=str)
    with _LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            log.info("building the %s's LLM backend %s", role, cfg.get("backend"))
            try:
                backend = make_backend_from_params(cfg, logging.getLogger(f"planner.{role.replace(' ', '_')}"))
            except ValueError as e:
                raise LLMError(f"the {role}'s LLM ({cfg.get('backend')}) could not be built: {e}") from None
            _BACKENDS[key] = backend
        return backend


def close_role_backends() -> None:
    """Close every role backend built so far (the planner node's shutdown)."""
    with _LOCK:
        for backend in _BACKENDS.values():
            backend.close()
        _BACKENDS.clear()
