#!/usr/bin/env bash
# Container entrypoint: ROS 2 Jazzy + the workspace overlay + the venv, then the command.
set -e
# ROS's setup scripts are not `set -u` clean.
# shellcheck disable=SC1090,SC1091
source "/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash"
# shellcheck disable=SC1091
source /ws/install/setup.bash
export VIRTUAL_ENV=/opt/venv
export PATH="/opt/venv/bin:/ws/install/monologue_bringup/lib/monologue_bringup:/ws/install/monologue_eval/lib/monologue_eval:${PATH}"
if [ -d /ws/runs ] && [ ! -w /ws/runs ]; then
  echo "monologue-entrypoint: /ws/runs is not writable by uid $(id -u) (a bind mount owned by another user?);" \
       "see docker/README.md" >&2
fi
exec "$@"
