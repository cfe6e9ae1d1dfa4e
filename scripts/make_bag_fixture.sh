#!/usr/bin/env bash
# scripts/make_bag_fixture.sh - regenerate the bag fixture that test/test_replay_system.py replays.
#
#   bash scripts/make_bag_fixture.sh [output dir]    (default: test/fixtures/bags/sim_demo)
#
# Records the simulator demo (embedded LLM, fixed scene seed 11 with 2 blocks) with record:=, so the
# directory holds the rosbag2 MCAP files, the planner's LLM cassette and its transcript file. Takes
# a few minutes (the LLM runs for real); the result is about 0.3 MB. Re-run it after a change that
# intentionally changes the transcript (prompt profile, planner logic, scene generation) and commit
# the new fixture together with that change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/test/fixtures/bags/sim_demo}"
cd "$ROOT"
# shellcheck disable=SC1091
. scripts/env.sh
export ROS_DOMAIN_ID="${MONOLOGUE_FIXTURE_DOMAIN:-$(( 200 + RANDOM % 30 ))}"  # isolated from other graphs
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
# The physics sim with a small, slow camera keeps the bag small (IM scenes are 2-4 blocks).
monologue-demo seed:=11 blocks:=2 record:="$OUT" \
    --param tabletop_sim:camera.width=160 --param tabletop_sim:camera.height=120 \
    --param tabletop_sim:camera.rate=1.0
monologue-bag-info "$OUT"
