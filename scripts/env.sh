# shellcheck shell=bash
# scripts/env.sh - SOURCE this file (bash) to use the workspace:
#     . scripts/env.sh            (from any directory; works under `set -u`)
#
# It activates .venv, puts the venv prefix (the ROS 2 PyPI wheels) on
# AMENT_PREFIX_PATH and CMAKE_PREFIX_PATH, sources colcon's install/setup.bash
# when the workspace has been built, and sets a few ROS defaults:
#   ROS_DOMAIN_ID                   only when unset: a domain of this shell's own in 1-99 that no
#                                   running graph or test session uses (monologue_common.core.domain),
#                                   so two shells never cross-talk; to join another shell's graph, export
#                                   the ROS_DOMAIN_ID it printed (`echo $ROS_DOMAIN_ID`) before sourcing
#   FASTRTPS_DEFAULT_PROFILES_FILE  default config/fastdds.xml, only when unset
#   ROS_AUTOMATIC_DISCOVERY_RANGE   default LOCALHOST, only when unset (DDS
#                                   discovery stays on this machine's loopback)
#   RCUTILS_COLORIZED_OUTPUT=0      when stdout is not a terminal
# and puts install/monologue_bringup/lib/monologue_bringup (monologue-up, monologue-human)
# and install/monologue_eval/lib/monologue_eval (monologue-demo, monologue-bench, ...) on PATH.
# On a venv made by `MONOLOGUE_USE_SYSTEM_ROS=1 scripts/setup.sh` it sources
# /opt/ros/jazzy/setup.bash (or MONOLOGUE_ROS_SETUP) first instead of using the
# wheels' prefix.

if [ -z "${BASH_VERSION:-}" ]; then
  echo "scripts/env.sh: needs bash" >&2
  return 1 2>/dev/null || exit 1
fi
if [ "${BASH_SOURCE[0]}" = "${0}" ]; then
  echo "scripts/env.sh must be sourced: . scripts/env.sh" >&2
  exit 1
fi

_monologue_env() {
  local root venv mode restore_u=0
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  venv="$root/.venv"
  if [ ! -x "$venv/bin/python" ]; then
    echo "scripts/env.sh: $venv does not exist; run 'bash scripts/setup.sh' (or 'make setup') first" >&2
    return 1
  fi
  mode="wheels"
  [ -f "$venv/.monologue-mode" ] && mode="$(cat "$venv/.monologue-mode")"

  # ROS's, colcon's and venv's setup scripts are not all `set -u` clean.
  case "$-" in *u*) restore_u=1; set +u ;; esac

  if [ "$mode" = "system" ]; then
    local ros_setup=/opt/ros/jazzy/setup.bash
    [ -f "$venv/.monologue-ros-setup" ] && ros_setup="$(cat "$venv/.monologue-ros-setup")"
    # shellcheck disable=SC1090
    . "$ros_setup"
  fi

  # shellcheck disable=SC1091
  . "$venv/bin/activate"

  if [ "$mode" != "system" ]; then
    case ":${AMENT_PREFIX_PATH:-}:" in
      *":$venv:"*) ;;
      *) export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;;
    esac
    case ":${CMAKE_PREFIX_PATH:-}:" in
      *":$venv:"*) ;;
      *) export CMAKE_PREFIX_PATH="$venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" ;;
    esac
  fi

  if [ -f "$root/install/setup.bash" ]; then
    # colcon's setup.bash resolves its own location via BASH_SOURCE.
    # shellcheck disable=SC1091
    . "$root/install/setup.bash"
  else
    echo "scripts/env.sh: note: $root/install/setup.bash not found (workspace not built yet: 'make build')" >&2
  fi

  # User-facing console scripts of monologue_bringup (monologue-demo,
  # monologue-up) live in install/monologue_bringup/lib/monologue_bringup (the
  # ament_python layout `ros2 run` uses); put them on PATH too.
  local bringup_bin="$root/install/monologue_bringup/lib/monologue_bringup"
  if [ -d "$bringup_bin" ]; then
    case ":$PATH:" in *":$bringup_bin:"*) ;; *) export PATH="$bringup_bin:$PATH" ;; esac
  fi

  # monologue_eval's console scripts (monologue-demo, monologue-bench, monologue-replay, ...).
  local eval_bin="$root/install/monologue_eval/lib/monologue_eval"
  if [ -d "$eval_bin" ]; then
    case ":$PATH:" in *":$eval_bin:"*) ;; *) export PATH="$eval_bin:$PATH" ;; esac
  fi

  # monologue_web's console scripts (monologue-web-cert; docs/web.md).
  local web_bin="$root/install/monologue_web/lib/monologue_web"
  if [ -d "$web_bin" ]; then
    case ":$PATH:" in *":$web_bin:"*) ;; *) export PATH="$PATH:$web_bin" ;; esac
  fi

  [ "$restore_u" = 1 ] && set -u

  if [ ! -t 1 ]; then
    export RCUTILS_COLORIZED_OUTPUT=0
  fi
  if [ -z "${ROS_DOMAIN_ID:-}" ]; then
    ROS_DOMAIN_ID="$(python -m monologue_common.core.domain --seed "$$" 2>/dev/null)" ||
      ROS_DOMAIN_ID=$(( 1 + RANDOM % 99 ))  # workspace not built yet: a random shell domain
    export ROS_DOMAIN_ID
    if [ -t 2 ]; then
      echo "scripts/env.sh: ROS_DOMAIN_ID=$ROS_DOMAIN_ID (this shell's own; export it in another shell to join)" >&2
    fi
  fi
  # Fast DDS with a shared-memory segment big enough for camera images (config/fastdds.xml says why).
  export FASTRTPS_DEFAULT_PROFILES_FILE="${FASTRTPS_DEFAULT_PROFILES_FILE:-$root/config/fastdds.xml}"
  if [ -z "${ROS_AUTOMATIC_DISCOVERY_RANGE:-}" ] && [ -z "${ROS_LOCALHOST_ONLY:-}" ]; then
    export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
  fi
  export MONOLOGUE_ROOT="$root"
  return 0
}

_monologue_env
_monologue_env_rc=$?
unset -f _monologue_env
# Leave `$?` as the result for callers doing `. scripts/env.sh || exit 1`.
if [ "$_monologue_env_rc" -ne 0 ]; then
  unset _monologue_env_rc
  return 1
fi
unset _monologue_env_rc
