#!/usr/bin/env bash
# Measures a3s-iso against the raw git plumbing that does the same job, on generated
# repositories, and prints medians and ratios (a3s-iso / raw). Runs alternate between the two
# sides so that drift on the machine affects both alike.
#
#   scripts/bench.sh [--quick] [--runs N] [--sizes "1000 10000 100000"]
#
# Uses the a3s-iso on PATH (cargo install --locked --path .), or A3S_ISO_BIN.
set -euo pipefail

runs=5
sizes="1000 10000 100000"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) sizes="1000 10000" ;;
    --runs) runs="$2"; shift ;;
    --sizes) sizes="$2"; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

bin="${A3S_ISO_BIN:-$(command -v a3s-iso || true)}"
[ -x "$bin" ] || { echo "a3s-iso not found: run 'cargo install --locked --path .' or set A3S_ISO_BIN" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-bench.XXXXXX")
trap 'chattr -R -i "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

# git isolated from the machine's configuration, with pinned identities.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 HOME="$work/home" XDG_DATA_HOME="$work/home/share"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z TZ=UTC
mkdir -p "$HOME"

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%d\n", (a[NR/2]+a[NR/2+1])/2}'; }
ms() { awk -v n="$1" 'BEGIN {printf "%.1f", n/1000000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a/b; else print "-"}'; }

# generate DIR FILES: text files in nested directories plus a few binaries, deterministic.
generate() {
  local dir=$1 files=$2
  mkdir -p "$dir"
  git -C "$dir" init -q -b main
  python3 - "$dir" "$files" <<'PY'
import os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
for i in range(n):
    d = os.path.join(root, f"m{i % 37:02d}", f"p{(i // 37) % 53:02d}")
    os.makedirs(d, exist_ok=True)
    if i % 500 == 0:
        with open(os.path.join(d, f"blob{i}.bin"), "wb") as f:
            f.write(rng.randbytes(4096))
    else:
        with open(os.path.join(d, f"file{i}.txt"), "w") as f:
            f.write(f"file {i}\n" + "lorem ipsum dolor sit amet\n" * (1 + i % 7))
PY
  git -C "$dir" add -A
  git -C "$dir" commit -q -m "generated $files files"
}

results=()
row() { results+=("$(printf '%-9s %-34s %10s %10s %7s' "$@")"); }

# measure SIZE NAME OURS RAW PREP: runs PREP before every timed run of each side.
measure() {
  local size=$1 name=$2 ours=$3 raw=$4 prep=$5
  local o=() r=() i t
  for i in $(seq "$runs"); do
    eval "$prep"; t=$(now_ns); eval "$raw" >/dev/null 2>&1; r+=($(( $(now_ns) - t )))
    eval "$prep"; t=$(now_ns); eval "$ours" >/dev/null; o+=($(( $(now_ns) - t )))
  done
  local mo mr
  mo=$(printf '%s\n' "${o[@]}" | median); mr=$(printf '%s\n' "${r[@]}" | median)
  row "$size" "$name" "$(ms "$mo")" "$(ms "$mr")" "$(ratio "$mo" "$mr")"
}

for size in $sizes; do
  src="$work/r$size/src"
  echo "generating $size files…" >&2
  generate "$src" "$size"
  cd "$src"
  n=0

  # bind vs git worktree add --detach
  measure "$size" "bind vs worktree add" \
    '"$bin" bind -q -s "b$n"' \
    'git worktree add -q --detach "../raw$n" HEAD' \
    'n=$((n+1))'

  # discard vs git worktree remove --force
  k=0
  measure "$size" "discard vs worktree remove" \
    '"$bin" discard -q -s "b$k"' \
    'git worktree remove --force "../raw$k"' \
    'k=$((k+1))'
  git worktree prune

  # capture with 10 changed files, against the seeded-index floor and a from-scratch index
  "$bin" bind -q -s cap >/dev/null
  iso="$work/r$size/.a3s-isolate-cap"
  admin=$(git -C "$iso" rev-parse --absolute-git-dir)
  base=$(git rev-parse 'HEAD^{tree}')
  for f in $(git ls-files | awk 'NR % 97 == 1' | head -10); do echo "changed" >> "$iso/$f"; done
  tmpidx="$work/tmp-index"
  measure "$size" "capture vs seeded floor" \
    '"$bin" capture -q -s cap' \
    'cp "$admin/index" "$tmpidx" && (cd "$iso" && GIT_INDEX_FILE="$tmpidx" git add -A && t=$(GIT_INDEX_FILE="$tmpidx" git write-tree) && git diff --binary "$base" "$t" >/dev/null)' \
    'rm -f "$tmpidx"'
  measure "$size" "capture vs from-scratch index" \
    '"$bin" capture -q -s cap' \
    '(cd "$iso" && GIT_INDEX_FILE="$tmpidx" git add -A && t=$(GIT_INDEX_FILE="$tmpidx" git write-tree) && git diff --binary "$base" "$t" >/dev/null)' \
    'rm -f "$tmpidx"'
done

printf '%-9s %-34s %10s %10s %7s\n' files case "a3s-iso ms" "raw ms" ratio
printf '%s\n' "${results[@]}"
echo "medians of $runs alternating runs; $(nproc) cores; $(git --version)"
