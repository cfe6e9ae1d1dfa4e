"""Bags as regression tests: the committed simulator bag replays through the real graph (perception,
success detector, planner from its LLM cassette, viz, bag player) to the identical transcript; a
changed prompt makes the replay fail at the first differing event. Regenerate the fixture with
scripts/make_bag_fixture.sh when a change is meant to alter the transcript."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "test" / "fixtures" / "bags" / "sim_demo"
RATE = 25.0  # the recording spent minutes in the LLM; the cassette answers at once


def _cli(name: str, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(name)  # on PATH after `. scripts/env.sh` (install/<pkg>/lib/<pkg>)
    assert exe, f"{name} is not on PATH; run `. scripts/env.sh`"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=dict(os.environ),
                          stdin=subprocess.DEVNULL)


def test_fixture_is_small_and_opens_with_rosbags_and_mcap() -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    from monologue_bag.core.bagio import Bag

    size = sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file())
    assert size < 20e6
    with Bag(FIXTURE) as bag:  # a type's RIHS01 hash is checked when it is first decoded
        counts = {t: i.count for t, i in bag.topics.items()}
        assert counts["/monologue/transcript"] >= 8 and counts["/sim/ground_truth"] > 100
        for m in bag.messages(["/monologue/transcript", "/skills/affordances", "/execute_skill/_action/status"]):
            bag.decode(m)
    with open(next(FIXTURE.glob("*.mcap")), "rb") as f:
        n = sum(1 for _ in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages())
    assert n == sum(counts.values())


def test_bag_info_prints_the_transcript_and_statistics() -> None:
    out = _cli("monologue-bag-info", str(FIXTURE), timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Human: Put the blocks in their matching bowls." in out.stdout
    assert "steps: 2; successes: 2/2; skill errors: 0; outcome: succeeded" in out.stdout
    assert "LLM: 3 calls (3 score, 0 generate)" in out.stdout and "prompt" in out.stdout
    assert _cli("monologue-bag-info", str(REPO / "config"), timeout=60).returncode == 1


@pytest.mark.system
@pytest.mark.slow
@pytest.mark.parametrize("container", [False, True], ids=["process_per_node", "in_process"])
def test_fixture_replays_to_the_identical_transcript_and_so_does_its_recorded_replay(
        ros_domain: int, tmp_path: Path, container: bool) -> None:
    """In both process modes: a process per node (the `replay` function with container=False), and the whole
    graph in one process (the default; run as the command, so the in-process graph ends with it)."""
    from monologue_eval.replay import replay

    again = tmp_path / "replayed"
    if container:
        out = _cli("monologue-replay", str(FIXTURE), f"rate:={RATE}", f"record:={again}", "container:=true",
                   "--config-dir", str(REPO / "config"))
        rc, text = out.returncode, out.stdout + out.stderr
    else:
        lines: list[str] = []
        rc = replay(FIXTURE, rate=RATE, config_dir=REPO / "config", record=again, sink=lines.append,
                    say=lines.append, container=False)
        text = "\n".join(lines)
    assert rc == 0, text[-6000:]
    assert "== episode 1: identical transcript (8 events)" in text
    assert (again / "metadata.yaml").is_file() and (again / "llm_cassette.jsonl").is_file()
    assert "had not written every transcript event" not in text  # the recorder confirmed all 8 before the stop
    if container:
        out = _cli("monologue-replay", str(again), "rate:=2", "container:=true", "--config-dir", str(REPO / "config"))
        assert out.returncode == 0, (out.stdout + out.stderr)[-6000:]
    else:
        lines = []
        rc = replay(again, rate=2.0, config_dir=REPO / "config", sink=lines.append, say=lines.append,
                    container=False)
        assert rc == 0, "\n".join(lines)[-6000:]


@pytest.mark.system
@pytest.mark.slow
def test_a_changed_prompt_fails_the_replay_at_the_first_differing_event(ros_domain: int, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "config" / "prompts", prompts)
    preamble = prompts / "im_sim_object_success.txt"
    text = preamble.read_text()
    assert "Human: Move all the blocks to the top left corner." in text
    preamble.write_text(text.replace("Human: Move all the blocks to the top left corner.",
                                     "Human: Move every block to the top left corner.", 1))
    out = _cli("monologue-replay", str(FIXTURE), f"rate:={RATE}", "--config-dir", str(REPO / "config"),
               "--param", f"planner:prompt_dir={prompts}")
    assert out.returncode == 1, out.stdout[-4000:] + out.stderr[-2000:]
    assert "transcripts diverge at event 2 (kind)" in out.stdout, out.stdout[-4000:]
    assert ("expected: [ROBOT_ACTION] 'Robot action: Pick the brown block and place it in the brown bowl.'"
            in out.stdout)
    assert "got:      [ERROR] " in out.stdout and "Episode ended: LLM failed: cassette miss" in out.stdout
    assert "Closest recorded score prompt diverges" in out.stdout  # the cassette says where the prompt changed
