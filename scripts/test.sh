#!/usr/bin/env bash
# The test command: installs what the suite drives besides the binary where it is missing, then
# runs the whole suite (crash tests included) on SHA-1 and on SHA-256 repositories.
#
#   scripts/test.sh              # everything, as CI runs it
#   scripts/test.sh -- FILTER    # only the tests whose name holds FILTER, both object formats
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
# strace (what a promote syncs).
tools=(git:git chattr:e2fsprogs man:man-db bash:bash zsh:zsh fish:fish python3:python3
  setpriv:util-linux jq:jq curl:curl strace:strace)

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

install_missing
filter=()
if [ "${1:-}" = "--" ]; then
  shift
  filter=("$@")
fi
cargo test --locked --workspace --features fault-injection -- "${filter[@]}"
# The same suite on SHA-256 repositories: every repository a test makes uses that format. The
# random-kill, race and property tests ran their full counts above; here they run fewer
# (set the variables to run more), which keeps CI within its time.
A3S_ISO_TEST_OBJECT_FORMAT=sha256 \
  A3S_ISO_CRASH_ITERATIONS="${A3S_ISO_CRASH_ITERATIONS:-5}" \
  A3S_ISO_LAND_CRASH_KILLS="${A3S_ISO_LAND_CRASH_KILLS:-5}" \
  A3S_ISO_OVERLAPS_CASES="${A3S_ISO_OVERLAPS_CASES:-5}" \
  A3S_ISO_REBASE_CRASH_ROUNDS="${A3S_ISO_REBASE_CRASH_ROUNDS:-5}" \
  A3S_ISO_STATE_MACHINE_CASES="${A3S_ISO_STATE_MACHINE_CASES:-32}" \
  A3S_ISO_SWEEP_RACE_ROUNDS="${A3S_ISO_SWEEP_RACE_ROUNDS:-10}" \
  cargo test --locked --workspace --features fault-injection -- "${filter[@]}"
