#!/usr/bin/env bash
# The test command: installs what the suite drives besides the binary where it is missing, then
# runs the whole suite (crash tests included) on SHA-1 and on SHA-256 repositories.
#
#   scripts/test.sh              # everything, as CI runs it
#   scripts/test.sh --thorough   # the same, with every stress test at its full count
#   scripts/test.sh -- FILTER    # only the tests whose name holds FILTER, both object formats
#
# The stress tests (random SIGKILLs, races, generated cases) repeat as often as their variables
# say. CI's counts keep the suite within its time; `--thorough` leaves the variables unset, so
# each runs its own full count (50 kills, 256 state-machine sequences …: minutes more), and a
# variable set by hand wins over both.
#
# A tool that cannot be installed stops the script at once, naming it and the variable that
# lets the tests needing it skip: A3S_ISO_TEST_ALLOW_MISSING (comma-separated tool names,
# `sandbox` and `root` for the kernel's sandbox and root-only tests, or `all`).
set -euo pipefail
cd "$(dirname "$0")/.."

# tool:package. git, chattr (an unwritable directory even for root), man, the shells whose
# completion scripts are checked, python3 (servers and pty helpers of tests), setpriv (the
# sandbox as an unprivileged user), jq (the documentation's examples and the CI step read
# a3s-iso's JSON with it), curl (the client the network allowlist's tests run inside) and
# strace (what a promote syncs); npm, pip and cargo (the package managers whose caches the
# presets bring, run against registries the tests serve, and which must fail at once with the
# network denied), node (an npm-installed tool kept under /var/tmp), and mkfs.xfs and
# mkfs.btrfs (the copy-on-write file systems the clone tests make and mount as root; let them
# skip with the names `xfs` and `btrfs`).
tools=(git:git chattr:e2fsprogs man:man-db bash:bash zsh:zsh fish:fish python3:python3
  setpriv:util-linux jq:jq curl:curl strace:strace npm:npm pip:python3-pip cargo:cargo
  node:nodejs mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs)

allowed() {
  local allow=",${A3S_ISO_TEST_ALLOW_MISSING:-},"
  [[ $allow == *",all,"* || $allow == *",$1,"* ]]
}

missing_tools() {
  local entry
  for entry in "${tools[@]}"; do
    command -v "${entry%%:*}" >/dev/null 2>&1 || allowed "${entry%%:*}" || echo "$entry"
  done
}

install_missing() {
  local -a missing packages=()
  mapfile -t missing < <(missing_tools)
  [ "${#missing[@]}" -eq 0 ] && return 0
  local entry
  for entry in "${missing[@]}"; do packages+=("${entry##*:}"); done
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
  if command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: installing ${packages[*]}" >&2
    "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${packages[@]}" \
      >/dev/null 2>&1 || true
  fi
  mapfile -t missing < <(missing_tools)
  if [ "${#missing[@]}" -gt 0 ]; then
    local names=()
    for entry in "${missing[@]}"; do names+=("${entry%%:*}"); done
    echo "scripts/test.sh: missing ${names[*]} and could not install them (packages:" \
      "${packages[*]}); install them, or let the tests that need them skip with" \
      "A3S_ISO_TEST_ALLOW_MISSING=$(IFS=,; echo "${names[*]}")" >&2
    exit 1
  fi
}

# The official MCP Python SDK, which tests/mcp_sdk/ drives the MCP server with, in a virtual
# environment of the build's own (the version pinned: the test speaks its API).
MCP_SDK_VERSION=2.3.0
install_mcp_sdk() {
  allowed mcp-sdk && return 0
  local venv="${CARGO_TARGET_DIR:-target}/mcp-sdk"
  local have
  have=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' \
    2>/dev/null || true)
  if [ "$have" != "$MCP_SDK_VERSION" ]; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      local sudo=()
      [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq python3-venv \
        >/dev/null 2>&1 || true
      rm -rf "$venv"
      python3 -m venv "$venv" >/dev/null 2>&1 || true
    fi
    "$venv/bin/pip" install -q "mcp==$MCP_SDK_VERSION" >/dev/null 2>&1 || true
  fi
  if ! "$venv/bin/python" -c 'import mcp' >/dev/null 2>&1; then
    echo "scripts/test.sh: could not install the MCP Python SDK (mcp==$MCP_SDK_VERSION) in" \
      "$venv; install it, or let the test that needs it skip with" \
      "A3S_ISO_TEST_ALLOW_MISSING=mcp-sdk" >&2
    exit 1
  fi
  A3S_ISO_TEST_MCP_PYTHON="$(cd "$venv" && pwd)/bin/python"
  export A3S_ISO_TEST_MCP_PYTHON
}

install_missing
install_mcp_sdk
# Every locked package, for every platform: the test of the claimed Rust version reads the
# whole graph with `cargo metadata --offline`, which a build alone does not download.
cargo fetch --locked >/dev/null 2>&1 || cargo fetch --locked
thorough=false
if [ "${1:-}" = "--thorough" ]; then
  thorough=true
  shift
fi
filter=()
if [ "${1:-}" = "--" ]; then
  shift
  filter=("$@")
fi

# with_counts NAME=VALUE… -- COMMAND: runs COMMAND with each stress count that is not already
# set (and none under --thorough).
with_counts() {
  local -a counts=()
  while [ "$1" != "--" ]; do
    local name=${1%%=*}
    if ! $thorough && [ -z "${!name:-}" ]; then counts+=("$1"); fi
    shift
  done
  shift
  env "${counts[@]}" "$@"
}

# SHA-1: every stress test kills, races and generates enough to find what its full count finds
# in most runs.
with_counts A3S_ISO_KILLS_WANTED=12 A3S_ISO_CRASH_ITERATIONS=16 A3S_ISO_LAND_CRASH_KILLS=15 \
  A3S_ISO_LAND_CLEANUP_KILLS=15 A3S_ISO_OVERLAPS_CASES=20 A3S_ISO_REBASE_CRASH_ROUNDS=15 \
  A3S_ISO_STATE_MACHINE_CASES=64 A3S_ISO_SWEEP_RACE_ROUNDS=15 A3S_ISO_RACE_ROUNDS=2 -- \
  cargo test --locked --workspace --features fault-injection -- "${filter[@]}"
# The same suite on SHA-256 repositories: every repository a test makes uses that format. What
# the object format can change is ids, lengths and hashing, not timing: the stress tests run a
# few rounds each here.
A3S_ISO_TEST_OBJECT_FORMAT=sha256 with_counts A3S_ISO_KILLS_WANTED=4 \
  A3S_ISO_CRASH_ITERATIONS=4 A3S_ISO_LAND_CRASH_KILLS=4 A3S_ISO_LAND_CLEANUP_KILLS=4 \
  A3S_ISO_OVERLAPS_CASES=5 A3S_ISO_REBASE_CRASH_ROUNDS=4 A3S_ISO_STATE_MACHINE_CASES=16 \
  A3S_ISO_SWEEP_RACE_ROUNDS=4 A3S_ISO_RACE_ROUNDS=1 -- \
  cargo test --locked --workspace --features fault-injection -- "${filter[@]}"
