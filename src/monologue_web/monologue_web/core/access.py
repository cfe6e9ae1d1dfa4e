"""Who may read and control the robot from the page (no rclpy).

Every request, the websocket included, first passes the Host and Origin allow-list (origins.HostPolicy;
cross-site requests and DNS rebinding) and is refused when the browser marks it as coming from another
site (Sec-Fetch-Site). Then, by what it does (`Kind`):

- PUBLIC (the static page, /api/config, /api/session): nothing more.
- ESTOP: nothing more, so that E-STOP is one click from the page; refused only in read-only mode.
- LOGIN: the CSRF check; the endpoint then checks the token (rate-limited per client address).
- READ (the websocket, state, history, bags, camera; anything not listed): bound to loopback, nothing
  more; bound to any other address, a session cookie from /api/login or the token in the
  `X-Monologue-Token` header.
- CONTROL (instruction, cancel, interjection, answer, approval, e-stop reset): refused in read-only mode;
  the CSRF check (the `X-Monologue-CSRF` header equal to this console's SameSite=Strict CSRF cookie,
  both signed by this process), also on loopback; and off loopback the session or token as for READ.

Refusals are (HTTP status, reason): 403 refused, 401 not logged in, 429 too many failed tokens."""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from http.cookies import CookieError, SimpleCookie

from .origins import HostPolicy
from .settings import WebSettings

TOKEN_HEADER = "x-monologue-token"
CSRF_HEADER = "x-monologue-csrf"


class Kind(Enum):
    PUBLIC = "public"
    ESTOP = "estop"
    LOGIN = "login"
    READ = "read"
    CONTROL = "control"


@dataclass(frozen=True)
class Refusal:
    status: int      # HTTP status: 401, 403 or 429
    reason: str


class FailureLimiter:
    """At most `max_failures` failed token attempts per client address in `window_s` (s) counted from
    its first failure; after that the address is locked out until the window ends. Bounded memory: at
    most `capacity` addresses are tracked, the least recently failing one is forgotten first."""

    def __init__(self, max_failures: int, window_s: float, capacity: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures, self.window_s, self.capacity, self._clock = max_failures, window_s, capacity, clock
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # address -> count, first s

    def __len__(self) -> int:
        return len(self._failures)

    def _current(self, client: str, now: float) -> tuple[int, float] | None:
        entry = self._failures.get(client)
        if entry is not None and now - entry[1] >= self.window_s:
            del self._failures[client]
            return None
        return entry

    def locked_for(self, client: str) -> float:
        """s until `client` may try a token again (0: it may now)."""
        now = self._clock()
        entry = self._current(client, now)
        if entry is None or entry[0] < self.max_failures:
            return 0.0
        return self.window_s - (now - entry[1])

    def failed(self, client: str) -> None:
        now = self._clock()
        entry = self._current(client, now)
        self._failures[client] = (1, now) if entry is None else (entry[0] + 1, entry[1])
        self._failures.move_to_end(client)
        while len(self._failures) > self.capacity:
            self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Access:
    """The access rules of one console (one process, one port). Session and CSRF values are signed
    with a key of this process: they end when the node restarts."""

    def __init__(self, settings: WebSettings, environ: Mapping[str, str], policy: HostPolicy,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.read_only = settings.read_only
        self.local = settings.local
        self.token_env = settings.token_env
        self.policy = policy
        self.tls = settings.tls
        self._token = environ.get(settings.token_env, "")
        self._key = secrets.token_bytes(32)
        self.limiter = FailureLimiter(settings.token_max_failures, settings.token_lockout_s, clock=clock)
        # cookies are shared by every port of a host: the port in the name keeps consoles apart
        self.csrf_cookie = f"monologue_csrf_{policy.port}"
        self.session_cookie = f"monologue_session_{policy.port}"

    @property
    def token_set(self) -> bool:
        """The token's environment variable is set (off loopback, nobody can log in without it)."""
        return bool(self._token)

    @property
    def needs_token(self) -> bool:
        """Reads and control need the token (bound to a non-loopback address)."""
        return not self.local

    # ---- signed values -------------------------------------------------------------------------------
    def _issue(self, purpose: bytes) -> str:
        nonce = secrets.token_bytes(16)
        return _b64(nonce) + "." + _b64(hmac.new(self._key, purpose + nonce, hashlib.sha256).digest())

    def _valid(self, purpose: bytes, value: str | None) -> bool:
        if not value or value.count(".") != 1:
            return False
        nonce_text, mac = value.split(".")
        try:
            nonce = base64.urlsafe_b64decode(nonce_text + "=" * (-len(nonce_text) % 4))
        except ValueError:
            return False
        expected = _b64(hmac.new(self._key, purpose + nonce, hashlib.sha256).digest())
        return hmac.compare_digest(mac.encode(), expected.encode())

    def issue_csrf(self) -> str:
        """A new CSRF value for a page (set as the cookie and sent back in the header)."""
        return self._issue(b"csrf:")

    def issue_session(self) -> str:
        """A new session value (HttpOnly cookie) after a correct token."""
        return self._issue(b"session:")

    def cookie_header(self, name: str, value: str, http_only: bool) -> str:
        """A Set-Cookie value: this console only (path /), same site only, Secure under TLS."""
        parts = [f"{name}={value}", "Path=/", "SameSite=Strict"]
        if http_only:
            parts.append("HttpOnly")
        if self.tls:
            parts.append("Secure")
        return "; ".join(parts)

    # ---- the token -------------------------------------------------------------------------------------
    def try_token(self, client: str, token: str | None) -> Refusal | None:
        """Check a token offered by `client` (counted against it when wrong)."""
        if not self._token:
            return Refusal(403, f"bound to a non-loopback address and ${self.token_env} is unset: "
                                "reading and control are off")
        wait = self.limiter.locked_for(client)
        if wait > 0:
            return Refusal(429, f"too many wrong tokens from {client}: try again in {wait:.0f} s")
        if not token or not hmac.compare_digest(token.encode(), self._token.encode()):
            self.limiter.failed(client)
            return Refusal(401, "wrong token" if token else "this console needs the token (log in)")
        self.limiter.succeeded(client)
        return None

    def authenticated(self, cookies: Mapping[str, str]) -> bool:
        """Whether the request carries a session of this console (no token is tried)."""
        return self.local or self._valid(b"session:", cookies.get(self.session_cookie))

    def _auth_refusal(self, client: str, headers: Mapping[str, str], cookies: Mapping[str, str]) -> Refusal | None:
        if self.authenticated(cookies):
            return None
        if TOKEN_HEADER in headers:
            return self.try_token(client, headers[TOKEN_HEADER])
        if not self._token:
            return self.try_token(client, None)
        return Refusal(401, "this console needs the token (log in)")

    # ---- the check of every request -----------------------------------------------------------------------
    def check(self, kind: Kind, client: str, headers: Mapping[str, str], cookies: Mapping[str, str],
              navigation: bool = False) -> Refusal | None:
        """Why a request of `kind` from `client` is refused (None: allowed). `headers` with lowercase
        names; `navigation`: a top-level GET of the page (a link followed from another site)."""
        host = headers.get("host")
        why = self.policy.host_refusal(host) or self.policy.origin_refusal(headers.get("origin"), host)
        if why is not None:
            return Refusal(403, why)
        site = headers.get("sec-fetch-site", "")
        if site in ("cross-site", "same-site") and not (kind is Kind.PUBLIC and navigation):
            return Refusal(403, f"request from another site refused (Sec-Fetch-Site: {site})")
        if kind is Kind.PUBLIC:
            return None
        if kind in (Kind.ESTOP, Kind.CONTROL) and self.read_only:
            return Refusal(403, "read-only mode: control is off")
        if kind is Kind.ESTOP:
            return None
        if kind in (Kind.CONTROL, Kind.LOGIN):
            cookie = cookies.get(self.csrf_cookie)
            header = headers.get(CSRF_HEADER)
            if not (cookie and header and hmac.compare_digest(cookie.encode(), header.encode())
                    and self._valid(b"csrf:", cookie)):
                return Refusal(403, "CSRF check failed: reload the page")
        if kind is Kind.LOGIN or not self.needs_token:
            return None
        return self._auth_refusal(client, headers, cookies)


def parse_cookies(header: str) -> dict[str, str]:
    """The cookies of a Cookie header (a malformed header gives none)."""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}
    return {k: m.value for k, m in jar.items()}
