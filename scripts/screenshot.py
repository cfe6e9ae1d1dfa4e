"""Regenerate docs/images/monitor.png: the web monitor during a successful MuJoCo episode (`make screenshot`).

    python scripts/screenshot.py [--out docs/images/monitor.png] [--seed 4] [--blocks 2] [--timeout 900]

Brings up the `robot:=sim` graph (MuJoCo, embedded LLM) with perception from the wrist camera (as
`monologue-demo perception:=camera`) and the web monitor, opens the page in headless Chromium (Playwright,
as test/test_web_system.py; nothing downloaded), sends the demo's instruction from the page, waits for the
episode to end, for the camera image with perception's detections and for the robot status, and saves the
screenshot. Exits 0 when the episode succeeded and the picture was saved, 1 otherwise (the picture is not
written then: try another --seed). Every wait is bounded; the graph's processes are stopped on every exit.
Run after `. scripts/env.sh`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
READY_S = 300.0  # s for the planner to load its LLM and the page to connect
SETTLE_MS = 1500  # ms for the last camera frame and scores to render after the episode ends


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _graph_params(seed: int, blocks: int, port: int, transcripts: Path) -> dict[str, dict[str, str]]:
    """The demo's scene and camera-perception parameters, the web port, a scratch transcript folder."""
    from monologue_bringup.graph import scene_node
    from monologue_eval.demo import CAMERA_PERCEPTION

    params: dict[str, dict[str, str]] = {
        scene_node("sim"): {"sim.seed": str(seed), "sim.num_blocks": str(blocks), "sim.num_bowls": "3",
                            "sim.matching_bowls": "true"},
        "web": {"port": str(port), "transcript_dir": str(transcripts)},
        "planner": {"transcript_dir": str(transcripts)},
    }
    for node, values in CAMERA_PERCEPTION.items():
        params.setdefault(node, {}).update(values)
    return params


def _wait_lines(lines: list[str], text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(text in x for x in list(lines)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {text!r} in the graph's log within {timeout_s:.0f} s")
        time.sleep(0.2)


def _wait_http(url: str, timeout_s: float) -> None:
    """Until `url` answers (connection refused while the web node starts)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not answer within {timeout_s:.0f} s") from None
            time.sleep(0.5)


def _shoot(page: Any, url: str, lines: list[str], out: Path, timeout_s: float) -> bool:
    """Run the episode from the page; save the screenshot if it succeeded. True on success."""
    from monologue_eval.demo import DEFAULT_INSTRUCTION

    deadline = time.monotonic() + READY_S
    _wait_http(url, READY_S)  # the web node comes up with the graph
    page.goto(url, timeout=30000)
    page.wait_for_selector("#conn.on", timeout=30000)
    _wait_lines(lines, "ready; strategy", max(1.0, deadline - time.monotonic()))
    page.fill("#instruction", DEFAULT_INSTRUCTION)
    page.click("#send")
    ms = int(timeout_s * 1000)
    page.wait_for_selector("#transcript li[data-kind=EPISODE_END]", timeout=ms)
    end = page.text_content("#transcript li[data-kind=EPISODE_END]") or ""
    print(f"screenshot: {end}", flush=True)
    # the camera frame (perception's detections drawn on it), the robot status and the step scores
    page.wait_for_function("document.querySelector('#camera') && !document.querySelector('#camera').hidden "
                           "&& document.querySelector('#camera').naturalWidth > 0", timeout=60000)
    page.wait_for_function("!document.querySelector('#status').classList.contains('unknown')", timeout=60000)
    page.wait_for_selector("#scores .row.chosen", timeout=60000)
    topic = page.text_content("#camera-topic") or ""
    print(f"screenshot: camera {topic}; {page.text_content('#status')}", flush=True)
    if "succeeded" not in end.lower():
        return False
    page.wait_for_timeout(SETTLE_MS)
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out), full_page=False)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "monitor.png")
    ap.add_argument("--seed", type=int, default=4, help="scene seed (one the embedded model solves)")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900.0, help="s for the episode")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).is_file():
        print("screenshot: Debian chromium is not installed (scripts/setup.sh installs it as root)", file=sys.stderr)
        return 2
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    from monologue_bringup.up import Supervisor

    port = _free_port()
    lines: list[str] = []
    lock = threading.Lock()

    def sink(line: str) -> None:
        with lock:
            lines.append(line)

    def stop_on_signal(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop_on_signal)
    ok = False
    with tempfile.TemporaryDirectory(prefix="monologue_screenshot_") as tmp:
        sup = Supervisor("sim", "embedded", sink=sink, web=True,
                         node_params=_graph_params(args.seed, args.blocks, port, Path(tmp) / "transcripts"))
        print(f"screenshot: robot=sim seed={args.seed} blocks={args.blocks} http://127.0.0.1:{port}/", flush=True)
        try:
            sup.start()
            with sync_playwright() as pw:
                context = pw.chromium.launch_persistent_context(
                    str(Path(tmp) / "chromium_profile"), executable_path=chromium, headless=True,
                    args=CHROMIUM_ARGS, viewport={"width": args.width, "height": args.height})
                try:
                    ok = _shoot(context.new_page(), f"http://127.0.0.1:{port}/", lines, args.out, args.timeout)
                finally:
                    context.close()
        except (TimeoutError, RuntimeError, KeyboardInterrupt) as e:
            print(f"screenshot: {e}\n" + "\n".join(lines[-40:]), file=sys.stderr)
        except Exception as e:  # Playwright's own timeout errors
            print(f"screenshot: {type(e).__name__}: {e}\n" + "\n".join(lines[-40:]), file=sys.stderr)
        finally:
            sup.stop()
    if ok:
        print(f"screenshot: saved {args.out}")
        return 0
    print("screenshot: the episode did not succeed; nothing saved (try another --seed)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
