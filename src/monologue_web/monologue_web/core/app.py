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

Control requests carry the token in the `X-Monologue-Token` header (see access.Access).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import anyio
from fastapi import FastAPI, Header, HTTPException, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from .access import Access
from .history import episode_file, list_episodes, read_episode
from .media import list_bags
from .state import MonitorState

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"
TOKEN_HEADER = "X-Monologue-Token"


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

    def control(token: str | None, what: str, act: Any) -> dict[str, Any]:
        refusal = access.refusal(token)
        if refusal is not None:
            logger.warning("refused %s: %s", what, refusal)
            raise HTTPException(status_code=403, detail=refusal)
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
    def get_config() -> dict[str, Any]:
        return {"read_only": access.read_only, "needs_token": access.needs_token, "token_env": access.token_env}

    @app.post("/api/instruction")
    def post_instruction(body: Instruction, x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        text = _nonempty(body.text, "empty instruction")
        return control(x_monologue_token, "instruction",
                       lambda: controls.send_instruction(text, body.strategy.strip()))

    @app.post("/api/cancel")
    def post_cancel(x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        return control(x_monologue_token, "cancel", controls.cancel)

    @app.post("/api/interject")
    def post_interject(body: Text, x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        text = _nonempty(body.text, "empty text")
        return control(x_monologue_token, "interjection", lambda: controls.interject(text))

    @app.post("/api/answer")
    def post_answer(body: Text, x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        text = _nonempty(body.text, "empty answer")
        return control(x_monologue_token, "answer", lambda: controls.answer(text))

    @app.post("/api/approval")
    def post_approval(body: Verdict, x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        return control(x_monologue_token, "approval", lambda: controls.approve(body.approve))

    @app.post("/api/estop")
    def post_estop(x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        return control(x_monologue_token, "e-stop", controls.estop)

    @app.post("/api/estop_reset")
    def post_estop_reset(x_monologue_token: str | None = Header(None)) -> dict[str, Any]:
        return control(x_monologue_token, "e-stop reset", controls.estop_reset)

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
    return app
