#!/usr/bin/env bash
# The whole a3s-iso lifecycle on a throwaway repository: bind, run, capture, verify, promote
# (applied, then idempotent), the conflict case, a change set promoted into another clone, retain,
# sweep and resume. Nothing outside a temporary directory is touched.
#
#   scripts/demo.sh            (uses a3s-iso on PATH, or A3S_ISO_BIN)
set -euo pipefail

iso="${A3S_ISO_BIN:-$(command -v a3s-iso || true)}"
[ -x "$iso" ] || { echo "a3s-iso not found: run 'cargo install --locked --path .' or set A3S_ISO_BIN" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A git of our own: no user configuration, pinned identity.
export HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="Demo User" GIT_AUTHOR_EMAIL=demo@example.com
export GIT_COMMITTER_NAME="Demo User" GIT_COMMITTER_EMAIL=demo@example.com
mkdir -p "$HOME"

if [ -t 1 ]; then bold=$'\e[1m'; off=$'\e[0m'; else bold=""; off=""; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
# A command as it can be pasted into a shell: words that need it in single quotes.
quoted() {
  local word out=()
  for word in "$@"; do
    if [[ $word =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
      out+=("$word")
    else
      out+=("'${word//\'/\'\\\'\'}'")
    fi
  done
  printf '%s' "${out[*]}"
}
show() { printf '$ %s\n' "$(quoted "$@")"; "$@"; }
a3s() { show "$iso" "$@"; }

step "a repository"
git init -q -b main "$work/demo"
cd "$work/demo"
printf 'hello\n' > README.md
mkdir -p src && printf 'fn main() {}\n' > src/main.rs
git add -A && git commit -q -m "initial commit"
git log --oneline

step "bind: the agent gets its own detached worktree next to the repository"
a3s bind -s agent-1

step "run: a command inside the isolation (network denied, writes confined)"
sandbox=()
if ! "$iso" run -s agent-1 -q -- true 2>/dev/null; then
  echo "(this kernel cannot give the sandbox here; the demo runs with --no-sandbox)"
  sandbox=(--no-sandbox)
fi
a3s run -s agent-1 "${sandbox[@]}" -- sh -c 'printf "hello\nfrom the agent\n" > README.md; printf "notes\n" > NOTES.md'

step "the repository itself is untouched"
show git status --short
echo "(clean)"

step "capture: the session's work as a pinned tree and a verifiable change set"
a3s capture -s agent-1 -o "$work/agent-1.json"
a3s verify "$work/agent-1.json"

step "promote: applied exactly once"
a3s promote -s agent-1
show git status --short
a3s promote -s agent-1
git add -A && git commit -q -m "take the agent's work"

step "the conflict case: the repository moved on after bind"
a3s bind -s agent-2
# The isolation is named .<repository>.a3s-isolate-<id>, beside the repository.
printf 'agent two\n' > "$work/.demo.a3s-isolate-agent-2/TWO.md"
printf 'a commit of my own\n' >> README.md && git commit -q -am "my own change"
status=0
a3s promote -s agent-2 || status=$?
echo "(exit status $status: conflict, nothing applied)"
[ "$status" -eq 3 ]

step "a change set travels: promote the document into another clone"
git clone -q "$work/demo" "$work/elsewhere"
git -C "$work/elsewhere" reset -q --hard HEAD~2
(cd "$work/elsewhere" && show "$iso" promote --change-set "$work/agent-1.json")

step "retain one isolation for inspection, then sweep the dead ones"
a3s retain -s agent-2 --reason "look at the conflict later"
sleep 60 & agent=$!                               # an agent process that owns agent-3
"$iso" bind -q -s agent-3 --owner-pid "$agent" >/dev/null
kill "$agent"; wait "$agent" 2>/dev/null || true   # its owner is gone now
a3s sweep --dry-run
a3s sweep
a3s list

step "a swept session is not lost: bind --resume brings its last state back"
a3s bind -s agent-3 --resume

step "done"
