"""The FastAPI app of the web monitor (no rclpy): the static page, a websocket pushing the state
snapshot on every change, the control endpoints (through a `Controls` port) and the history.

    GET  /                      the page (static/index.html; everything served from here, no CDN)
    WS   /ws                    JSON snapshots of MonitorState, one per change
    GET  /api/state             the current snapshot
    GET  /api/config            {read_only, needs_token}
    POST /api/instruction       {"text", "strategy"}     send an ExecuteInstruction goal
    POST /api/cancel            cancel the goal sent from the page
    POST /api/interject         {"text"}                 an interjection on human/input
    POST /api/answer            {"text"}                 answer the robot's open question
    POST /api/approval          {"approve": bool}        approve or deny the skills node's pending request
    POST /api/estop             publish true on `estop` (latches the skills node)
    POST /api/estop_reset       call `estop_reset`
    GET  /api/history           past transcripts of transcript_dir
    GET  /api/history/{name}    one transcript as JSON; /download: the JSONL file
    GET  /api/bags              recorded bags in bag_dirs with their statistics
    GET  /api/camera.jpg        the current camera frame (detections drawn when perception publishes them)

    GET  /api/session           a new CSRF value for the page (also set as its SameSite=Strict cookie)
    POST /api/login             X-Monologue-Token header -> a session cookie (non-loopback binds)

Every request passes Guard: the Host/Origin allow-list, then the rules of access.Access by the kind of
request (`KINDS`); every response carries headers that forbid framing the page (clickjacking).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import anyio
from fastapi import FastAPI, HTTPException, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from .access import TOKEN_HEADER, Access, Kind, Refusal, parse_cookies
from .history import episode_file, list_episodes, read_episode
from .media import list_bags
from .state import MonitorState

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"
KINDS: dict[str, Kind] = {
    "/api/config": Kind.PUBLIC, "/api/session": Kind.PUBLIC, "/api/login": Kind.LOGIN, "/api/estop": Kind.ESTOP,
    **{f"/api/{p}": Kind.CONTROL for p in ("instruction", "cancel", "interject", "answer", "approval", "estop_reset")},
    "/": Kind.PUBLIC, **{"/" + f.name: Kind.PUBLIC for f in STATIC_DIR.iterdir() if f.is_file()},
}  # any other path: READ
SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; connect-src 'self'; "
                                 b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
]
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Any], Callable[[Scope], Any]], Any]


class Guard:
    """ASGI middleware: every HTTP request and websocket handshake is checked by Access before the app
    sees it; refused requests get their status and reason (a websocket: HTTP 403 at the handshake)."""

    def __init__(self, app: ASGIApp, access: Access, logger: logging.Logger) -> None:
        self.app, self.access, self.logger = app, access, logger

    async def __call__(self, scope: Scope, receive: Callable[[], Any], send: Callable[[Scope], Any]) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        repeated = False
        for raw_name, raw_value in scope.get("headers", []):
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            if name in headers:
                if name in ("host", "origin", "x-monologue-csrf", "x-monologue-token"):
                    repeated = True
                value = headers[name] + ("; " if name == "cookie" else ", ") + value
            headers[name] = value
        client = scope.get("client")
        address = str(client[0]) if client else "?"
        path = str(scope.get("path", ""))
        kind = KINDS.get(path, Kind.READ)
        navigation = (scope["type"] == "http" and scope.get("method") == "GET"
                      and headers.get("sec-fetch-mode") == "navigate")
        refusal = (Refusal(400, "repeated Host, Origin, CSRF or token header") if repeated else
                   self.access.check(kind, address, headers, parse_cookies(headers.get("cookie", "")), navigation))
        if refusal is not None:
            self.logger.warning("refused %s %s from %s: %s", scope.get("method", "WS"), path, address,
                                refusal.reason)
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            body = json.dumps({"detail": refusal.reason}).encode()
            extra = [(b"retry-after", str(int(self.access.limiter.window_s)).encode())] \
                if refusal.status == 429 else []
            await send({"type": "http.response.start", "status": refusal.status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS, *extra]})
            await send({"type": "http.response.body", "body": body})
            return

        async def send_secured(message: Scope) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
                if path.startswith("/api/") and not any(k.lower() == b"cache-control" for k, _ in message["headers"]):
                    message["headers"].append((b"cache-control", b"no-store"))
            await send(message)

        await self.app(scope, receive, send_secured)


class ControlError(Exception):
    """A control action could not be carried out (no server, no open question, ...)."""


class Controls(Protocol):
    """What the page can make the robot do (the node implements it over ROS). Each returns a short
    message for the page and raises ControlError when it cannot act."""

    def send_instruction(self, text: str, strategy: str) -> str: ...
    def cancel(self) -> str: ...
    def interject(self, text: str) -> str: ...
    def answer(self, text: str) -> str: ...
    def approve(self, approved: bool) -> str: ...
    def estop(self) -> str: ...
    def estop_reset(self) -> str: ...


class Instruction(BaseModel):
    text: str
    strategy: str = ""


class Text(BaseModel):
    text: str


class Verdict(BaseModel):
    approve: bool


def _nonempty(text: str, empty: str) -> str:
    """`text` with its white space folded; HTTP 422 `empty` when nothing is left."""
    folded = " ".join(text.split())
    if not folded:
        raise HTTPException(status_code=422, detail=empty)
    return folded


def create_app(state: MonitorState, controls: Controls, access: Access, transcript_dir: Path,
               logger: logging.Logger, poll_s: float = 1.0, bag_dirs: Sequence[Path] = (),
               camera: Callable[[], bytes | None] = lambda: None) -> FastAPI:
    """The app; `poll_s` (s) bounds how long a websocket waits before it checks its connection;
    `camera` gives the current frame as a JPEG (None without one)."""
    app = FastAPI(title="monologue-web", docs_url=None, redoc_url=None, openapi_url=None)

    def control(what: str, act: Any) -> dict[str, Any]:
        """Carry out a control that Guard let through."""
        try:
            message = act()
        except ControlError as e:
            raise HTTPException(status_code=409, detail=str(e)) from e
        logger.info("%s: %s", what, message)
        return {"ok": True, "message": message}

    @app.get("/api/state")
    def get_state() -> dict[str, Any]:
        return state.snapshot()

    @app.get("/api/config")
    def get_config(request: Request) -> dict[str, Any]:
        return {"read_only": access.read_only, "needs_token": access.needs_token, "token_env": access.token_env,
                "authenticated": access.authenticated(request.cookies), "tls": access.tls}

    @app.get("/api/session")
    def get_session() -> JSONResponse:
        """A new CSRF value for this page: in the body for the page, and as the cookie it must match."""
        value = access.issue_csrf()
        return JSONResponse({"csrf": value, "cookie": access.csrf_cookie},
                            headers={"set-cookie": access.cookie_header(access.csrf_cookie, value, http_only=False)})

    @app.post("/api/login")
    def post_login(request: Request) -> JSONResponse:
        if not access.needs_token:
            return JSONResponse({"ok": True, "message": "bound to loopback: no token needed"})
        client = request.client.host if request.client else "?"
        refusal = access.try_token(client, request.headers.get(TOKEN_HEADER))
        if refusal is not None:
            logger.warning("refused login from %s: %s", client, refusal.reason)
            raise HTTPException(status_code=refusal.status, detail=refusal.reason)
        logger.info("login from %s", client)
        return JSONResponse({"ok": True, "message": "logged in"}, headers={
            "set-cookie": access.cookie_header(access.session_cookie, access.issue_session(), http_only=True)})

    @app.post("/api/instruction")
    def post_instruction(body: Instruction) -> dict[str, Any]:
        text = _nonempty(body.text, "empty instruction")
        return control("instruction",
                       lambda: controls.send_instruction(text, body.strategy.strip()))

    @app.post("/api/cancel")
    def post_cancel() -> dict[str, Any]:
        return control("cancel", controls.cancel)

    @app.post("/api/interject")
    def post_interject(body: Text) -> dict[str, Any]:
        text = _nonempty(body.text, "empty text")
        return control("interjection", lambda: controls.interject(text))

    @app.post("/api/answer")
    def post_answer(body: Text) -> dict[str, Any]:
        text = _nonempty(body.text, "empty answer")
        return control("answer", lambda: controls.answer(text))

    @app.post("/api/approval")
    def post_approval(body: Verdict) -> dict[str, Any]:
        return control("approval", lambda: controls.approve(body.approve))

    @app.post("/api/estop")
    def post_estop() -> dict[str, Any]:
        return control("e-stop", controls.estop)

    @app.post("/api/estop_reset")
    def post_estop_reset() -> dict[str, Any]:
        return control("e-stop reset", controls.estop_reset)

    @app.get("/api/history")
    def get_history() -> list[dict[str, Any]]:
        return list_episodes(transcript_dir)

    def _file(name: str) -> Path:
        path = episode_file(transcript_dir, name)
        if path is None:
            raise HTTPException(status_code=404, detail=f"no transcript {name!r}")
        return path

    @app.get("/api/history/{name}")
    def get_episode(name: str) -> JSONResponse:
        return JSONResponse(read_episode(_file(name)))

    @app.get("/api/history/{name}/download")
    def download_episode(name: str) -> FileResponse:
        return FileResponse(_file(name), media_type="application/x-ndjson", filename=name)

    @app.get("/api/bags")
    def get_bags() -> list[dict[str, Any]]:
        return list_bags(list(bag_dirs))

    @app.get("/api/camera.jpg")
    def get_camera() -> Response:
        data = camera()
        if data is None:
            raise HTTPException(status_code=404, detail="no camera frame yet")
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    @app.websocket("/ws")
    async def ws(socket: WebSocket) -> None:
        await socket.accept()
        state.viewer_joined()
        version = -1
        try:
            while True:
                current = await anyio.to_thread.run_sync(state.wait_change, version, poll_s)
                if current != version:
                    version = current
                    await socket.send_json(state.snapshot())
                else:  # a keep-alive, which also finds a client that went away
                    await socket.send_json({"ping": current})
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            state.viewer_left()

    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    app.add_middleware(Guard, access=access, logger=logger)
    return app
