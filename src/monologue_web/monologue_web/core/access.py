"""Who may control the robot from the page (no rclpy).

Safe by default: read-only mode refuses every control; bound to loopback, control is open to the
machine's own users; bound to any other address, every control request must carry the token held
in the environment variable `token_env` (refused when that variable is unset or empty)."""
from __future__ import annotations

import hmac
from collections.abc import Mapping

from .settings import WebSettings


class Access:
    def __init__(self, settings: WebSettings, environ: Mapping[str, str]) -> None:
        self.read_only = settings.read_only
        self.local = settings.local
        self.token_env = settings.token_env
        self._token = environ.get(settings.token_env, "")

    @property
    def needs_token(self) -> bool:
        return not self.read_only and not self.local

    def refusal(self, token: str | None) -> str | None:
        """Why a control request with `token` is refused, or None if it is allowed."""
        if self.read_only:
            return "read-only mode: control is off"
        if self.local:
            return None
        if not self._token:
            return f"bound to a non-local address and ${self.token_env} is unset: control is off"
        if not token or not hmac.compare_digest(token.encode(), self._token.encode()):
            return "control needs the token (bound to a non-local address)"
        return None
