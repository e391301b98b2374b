#!/usr/bin/env bash
# Measures a3s-iso against the raw git plumbing that does the same job, on generated
# repositories, and prints medians and ratios (a3s-iso / raw). The two sides alternate run by
# run, so drift on the machine affects both alike.
#
#   scripts/bench.sh [--quick] [--runs N] [--sizes "1000 10000 100000"] [--cache-mib M]
#                    [--only core|pool|rebase|overlaps|land|include|proxy|fleet|remote-land]
#                    [--fleet "N F J"]
#
#   --quick       1,000 and 10,000 files only (a few minutes on 2 cores)
#   --runs N      timed runs per side and case (default 5)
#   --sizes S     the repository sizes (up to 1000000); without it (or --quick) rebase runs on
#                 100,000 files only and overlaps on 10,000 only, with it they run on every size
#                 named. On 1,000,000 files the cases that write a whole checkout per run (bind,
#                 discard, the pool, rebase, overlaps, land) are skipped, with the reason printed
#   --cache-mib M size of the ignored build cache that bind --copy-ignored copies (default 64;
#                 1024 for the 1 GiB case). The work directory is under $TMPDIR: point it at a
#                 file system with reflink (XFS, btrfs) to measure clones instead of copies
#   --only core   only bind, discard, capture, run and promote on each size: the per-size
#                 table (e.g. --only core --sizes "1000 10000 100000 1000000")
#   --only pool   only the pool's cases (warm bind, recycling discard, --copy-ignored)
#   --only rebase   only rebase of ten changed files against git cherry-pick (100,000 files)
#   --only overlaps only overlaps --json over 50 sessions (10,000 files; no raw side)
#   --only land     only land of ten sessions against rebase + promote of each (10,000 files)
#   --only include  only bind with a 200 MiB .worktreeinclude set of 10,000 files against
#                   worktree add + cp -a --reflink=auto of the same files (10,000 files)
#   --only fleet    only the fleet: N sessions of F files bound J at a time, each changing three
#                   files of its own, adding one, deleting one and its own region of a file all
#                   share; the user commits meanwhile; `land --all --test CMD`. Each phase (bind,
#                   run, land, land --keep + discard --all --purge) against raw git: worktree add,
#                   the edits + a commit in each, per session rebase + the test + merge --ff-only,
#                   worktree remove. One run per side unless --runs; --fleet "N F J" (default
#                   "20 10000 8"). The landed trees of both sides are compared. Also what
#                   the isolations take on disk once the sessions made their edits: data
#                   (list --disk: the pristine tree plus what each holds alone, against du of
#                   the raw worktrees) and the file system's growth while each side bound
#   --only remote-land  only the landing queue across machines: a bare repository as the git
#                   server, 4 clones as machines, each landing 5 sessions at the same time with
#                   `land --push origin/main --test CMD`, against the CI recipes' former loop on
#                   each machine (per change set: promote --change-set, the test, commit, push;
#                   a refused push fetches, resets and promotes again with --reapply, at most
#                   3 attempts). Wall time, pushes attempted and change sets landed per side;
#                   one run per side unless --runs
#   --only proxy    only the network allowlist: a 256 MiB download from a loopback server
#                   through run --allow-host's proxy (plain HTTP and CONNECT) against curl
#                   straight to it (throughput ratio, goal >= 0.8), and run --allow-host
#                   against run (added ms, goal <= 20) (1,000 files; needs curl)
#
# Each size's repository is generated once (with git fast-import, no file written) and kept as a
# bare repository under ${XDG_CACHE_HOME:-~/.cache}/a3s-iso-bench/, named by the generator's
# version and the size; every invocation clones it (the pack is hard-linked) and checks it out.
# Remove that directory to reclaim the space (a 1,000,000-file repository: about 94 MB;
# generating it took 8.5 minutes on 2 busy cores).
#
# Uses the a3s-iso on PATH (cargo install --locked --path .), or A3S_ISO_BIN. Needs python3 (to
# generate repositories and read peak memory).
set -euo pipefail

runs=5
runs_given=""
sizes="1000 10000 100000"
sizes_given=""
cache_mib=64
only=""
fleet="20 10000 8"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) sizes="1000 10000"; sizes_given=1 ;;
    --runs) runs="$2"; runs_given=1; shift ;;
    --sizes) sizes="$2"; sizes_given=1; shift ;;
    --cache-mib) cache_mib="$2"; shift ;;
    --only) only="$2"; shift ;;
    --fleet) fleet="$2"; shift ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
case "$only" in
  ""|pool|core) ;;
  rebase) [ -n "$sizes_given" ] || sizes=100000 ;;
  overlaps|land|include) [ -n "$sizes_given" ] || sizes=10000 ;;
  proxy) [ -n "$sizes_given" ] || sizes=1000 ;;
  fleet) read -r _ sizes _ <<<"$fleet"; sizes_given=1 ;;
  remote-land) [ -n "$sizes_given" ] || sizes=1000 ;;
  *) echo "unknown case for --only: $only (core, pool, rebase, overlaps, land, include, proxy, fleet or remote-land)" >&2; exit 2 ;;
esac

# runs_at SIZE DEFAULT: whether a case whose own size is DEFAULT runs on SIZE files (on every
# size when --sizes or --quick named them).
runs_at() { [ -n "$sizes_given" ] || [ "$1" = "$2" ]; }

bin="${A3S_ISO_BIN:-$(command -v a3s-iso || true)}"
[ -x "$bin" ] || { echo "a3s-iso not found: run 'cargo install --locked --path .' or set A3S_ISO_BIN" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to generate repositories" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The generated repositories outlive the run (before HOME is pointed into the work directory).
cache="${XDG_CACHE_HOME:-$HOME/.cache}/a3s-iso-bench"

# git isolated from the machine's configuration, with pinned identities.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 HOME="$work/home" XDG_DATA_HOME="$work/home/share"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z TZ=UTC
mkdir -p "$HOME"

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%d\n", (a[NR/2]+a[NR/2+1])/2}'; }
ms() { awk -v n="$1" 'BEGIN {printf "%.1f", n/1000000}'; }
secs() { awk -v n="$1" 'BEGIN {printf "%.3f", n/1000000000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a/b; else print "-"}'; }

# The generator's version: part of the cached repositories' names, bumped whenever what it
# generates changes.
gen_version=2

# cached_repo FILES: the bare repository of FILES generated files (text files in nested
# directories plus a few binaries, deterministic), generated once into the cache.
cached_repo() {
  local files=$1 repo="$cache/v$gen_version-$1.git"
  if [ ! -d "$repo" ]; then
    echo "generating $files files into $repo (once)…" >&2
    mkdir -p "$cache"
    local tmp="$cache/.building-v$gen_version-$files.$$"
    rm -rf "$tmp"
    git init -q --bare -b main "$tmp"
    python3 - "$files" <<'PY' | git -C "$tmp" fast-import --quiet
import sys, random
n = int(sys.argv[1])
rng = random.Random(42)
out = sys.stdout.buffer
paths = []
for i in range(n):
    d = f"m{i % 37:02d}/p{(i // 37) % 53:02d}"
    if i % 500 == 0:
        data, name = rng.randbytes(4096), f"{d}/blob{i}.bin"
    else:
        data = (f"file {i}\n" + "lorem ipsum dolor sit amet\n" * (1 + i % 7)).encode()
        name = f"{d}/file{i}.txt"
    out.write(b"blob\nmark :%d\ndata %d\n" % (i + 1, len(data)) + data + b"\n")
    paths.append(name)
msg = f"generated {n} files".encode()
out.write(b"commit refs/heads/main\n")
out.write(b"author bench <bench@example.com> 1767225600 +0000\n")
out.write(b"committer bench <bench@example.com> 1767225600 +0000\n")
out.write(b"data %d\n%s\n" % (len(msg), msg))
for i, name in enumerate(paths):
    out.write(b"M 100644 :%d %s\n" % (i + 1, name.encode()))
PY
    mv "$tmp" "$repo"
  fi
  echo "$repo"
}

# generate DIR FILES: a checkout of the cached repository of FILES files at DIR (a local clone:
# its pack is hard-linked, only the files are written).
generate() {
  local dir=$1 files=$2 repo
  repo=$(cached_repo "$files")
  git clone -q --no-checkout "$repo" "$dir"
  git -C "$dir" remote remove origin
  git -C "$dir" -c checkout.workers=0 reset -q --hard
  # As after any `git status` a user runs: the index's stat data is fresh, not racy.
  sleep 1
  git -C "$dir" status --porcelain >/dev/null
}

# huge SIZE: whether SIZE is too large for the cases that write a whole checkout per run.
huge() { [ "$1" -ge 1000000 ]; }

results=()
skipped=()
notes=()
# The per-size table: each case's ratio (or value) by size, cases in the order first measured.
declare -A cell
cases=()
row() {
  results+=("$(printf '%-9s %-42s %11s %10s %7s' "$@")")
  # Each row as it is measured too: a run cut short still leaves what it measured.
  echo "  ${results[-1]}" >&2
  local key="$2"
  [ -n "${cell["$key|seen"]:-}" ] || { cases+=("$key"); cell["$key|seen"]=1; }
  if [ "$5" != "-" ]; then cell["$key|$1"]="$5 ($3)"; else cell["$key|$1"]="$3"; fi
}
# skip SIZE CASE WHY: a case left out on SIZE files, and why.
skip() { skipped+=("$(printf '%-9s %-42s skipped: %s' "$1" "$2" "$3")"); }

# print_results: the flat table, the per-size table, what was skipped.
print_results() {
  printf '%-9s %-42s %11s %10s %7s\n' files case "a3s-iso ms" "raw ms" ratio
  printf '%s\n' "${results[@]}"
  [ ${#skipped[@]} -eq 0 ] || printf '%s\n' "${skipped[@]}"
  [ ${#notes[@]} -eq 0 ] || printf '%s\n' "${notes[@]}"
  echo
  local line size c
  line=$(printf '%-42s' "case (ratio, a3s-iso ms)")
  for size in $sizes; do line+=$(printf ' | %18s' "$size"); done
  echo "$line"
  for c in "${cases[@]}"; do
    line=$(printf '%-42s' "$c")
    for size in $sizes; do line+=$(printf ' | %18s' "${cell["$c|$size"]:--}"); done
    echo "$line"
  done
  local medians="medians of $runs alternating runs"
  [ "$only" != fleet ] || medians="the fleet: medians of ${fleet_runs:-1} run(s) per side"
  [ "$only" != remote-land ] || medians="remote land: medians of ${fleet_runs:-1} run(s) per side"
  echo "$medians; $(nproc) cores; $(git --version); $("$bin" --version)"
}

# measure SIZE NAME OURS RAW PREP: PREP runs (untimed) before every timed run of either side.
measure() {
  local size=$1 name=$2 ours=$3 raw=$4 prep=$5
  local o=() r=() i t
  for i in $(seq "$runs"); do
    eval "$prep"; t=$(now_ns); eval "$raw" >/dev/null 2>&1; r+=($(( $(now_ns) - t )))
    eval "$prep"; t=$(now_ns); eval "$ours" >/dev/null 2>&1; o+=($(( $(now_ns) - t )))
  done
  local mo mr
  mo=$(printf '%s\n' "${o[@]}" | median); mr=$(printf '%s\n' "${r[@]}" | median)
  row "$size" "$name" "$(ms "$mo")" "$(ms "$mr")" "$(ratio "$mo" "$mr")"
}

# peak RSS (KiB) of a command: the largest of its process and the processes it waited for.
peak_kib() {
  python3 -c 'import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, _, usage = os.wait4(p.pid, 0)
print(usage.ru_maxrss)' "$@"
}

# peak RSS (KiB) of a3s-iso's own process, without the git processes it runs (sampled).
own_peak_kib() {
  python3 -c 'import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0
while p.poll() is None:
    try:
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.002)
print(peak)' "$@"
}


# The pool: a warm bind (a spare moved into place) against a checkout; a discard that returns
# the tree to the pool (cleaned) against a removal; bind --copy-ignored of a build cache
# against a checkout plus `cp -a --reflink=auto`.
pool_cases() {
  local size=$1
  echo "warm bind and recycling discard…" >&2
  "$bin" pool -q --size 1 >/dev/null
  w=0
  measure "$size" "warm bind vs worktree add --detach" \
    '"$bin" bind -q -s "w$w"' \
    'git worktree add -q --detach "../rawb$w" HEAD' \
    'w=$((w+1)); "$bin" pool -q >/dev/null; sync'
  # Each returned tree had ten files changed and a build output written by its session, which
  # captured them (so a3s-iso's index of the tree holds the changes too).
  p=0
  measure "$size" "recycling discard vs worktree remove" \
    '"$bin" discard -q -s "w$((2*d+2))"' \
    'git worktree remove --force "../rawb$((2*d+1))"' \
    'p=$((p+1)); d=$(((p-1)/2)); "$bin" pool -q --size 0 >/dev/null; "$bin" pool -q --size 1 --no-fill >/dev/null; dirty "../.src.a3s-isolate-w$((2*d+2))"; "$bin" capture -q -s "w$((2*d+2))" >/dev/null; dirty "../rawb$((2*d+1))"; sync'
  "$bin" pool -q --size 0 >/dev/null
  echo "bind --copy-ignored of a ${cache_mib} MiB cache…" >&2
  python3 - "$cache_mib" <<'PY'
import os, sys, random
mib = int(sys.argv[1])
rng = random.Random(5)
os.makedirs("target/debug/deps", exist_ok=True)
for i in range(mib):
    with open(f"target/debug/deps/obj{i:05d}.rlib", "wb") as f:
        f.write(rng.randbytes(1 << 20))
PY
  printf 'target/\n' > .git/info/exclude
  local fs reflink
  fs=$(stat -f -c %T .)
  reflink=$("$bin" --json pool --status | python3 -c 'import json,sys; print("reflink" if json.load(sys.stdin)["reflink"] else "copy")')
  c=0
  measure "$size" "bind --copy-ignored ${cache_mib}MiB ($fs, $reflink)" \
    '"$bin" bind -q -s "c$c" --copy-ignored target' \
    'git worktree add -q --detach "../rawc$c" HEAD && cp -a --reflink=auto target "../rawc$c/"' \
    'c=$((c+1)); sync'
  for i in $(seq "$c"); do "$bin" discard -q -s "c$i" >/dev/null 2>&1 || true; rm -rf "../rawc$i"; done
  rm -rf target .git/info/exclude
  git worktree prune
}

# include: `.worktreeinclude` names an ignored set of 10,000 files, 200 MiB in all (20 KiB
# each, in 100 directories: a node_modules-like tree), which bind copies into the new
# isolation; the raw side is a checkout plus `cp -a --reflink=auto` of the same directory.
include_case() {
  local size=$1 fs reflink
  echo "bind with a 200 MiB .worktreeinclude set…" >&2
  python3 - <<'PY'
import os, random
rng = random.Random(7)
for d in range(100):
    os.makedirs(f"node_modules/pkg{d:03d}", exist_ok=True)
    for f in range(100):
        with open(f"node_modules/pkg{d:03d}/mod{f:03d}.js", "wb") as out:
            out.write(rng.randbytes(20 * 1024))
PY
  printf 'node_modules/\n' > .git/info/exclude
  printf 'node_modules/\n' > .worktreeinclude
  git add .worktreeinclude && git commit -q -m "include node_modules"
  fs=$(stat -f -c %T .)
  reflink=$("$bin" --json pool --status | python3 -c 'import json,sys; print("reflink" if json.load(sys.stdin)["reflink"] else "copy")')
  n=0
  measure "$size" "bind, .worktreeinclude 200MiB ($fs, $reflink)" \
    '"$bin" bind -q -s "inc$n"' \
    'git worktree add -q --detach "../rawi$n" HEAD && cp -a --reflink=auto node_modules "../rawi$n/"' \
    'n=$((n+1)); sync'
  # Both sides hold the whole set, byte for byte.
  if ! diff -r -q node_modules "../.src.a3s-isolate-inc$n/node_modules" >/dev/null ||
     ! diff -r -q node_modules "../rawi$((n - 1))/node_modules" >/dev/null; then
    echo "include case: a side lacks the .worktreeinclude set" >&2; exit 1
  fi
  for i in $(seq "$n"); do "$bin" discard -q -s "inc$i" >/dev/null 2>&1 || true; rm -rf "../rawi$i"; done
  rm -rf node_modules .git/info/exclude
  git rm -q .worktreeinclude && git commit -q -m "drop .worktreeinclude"
  git worktree prune
}

# proxy: a loopback server (python3, sendfile) serves a 256 MiB file; curl downloads it
# straight on the host, and inside `run --allow-host 127.0.0.1:PORT` through the proxy (plain
# HTTP, then a CONNECT tunnel). The throughput is curl's own (speed_download), so run's start
# and capture are not in it. Then the start-up cost of the proxy: run --allow-host of `true`
# against run of `true`.
proxy_case() {
  local size=$1 port served speeds direct plain tunnel i
  command -v curl >/dev/null || { echo "the proxy case needs curl" >&2; exit 2; }
  echo "downloads through the proxy…" >&2
  served="$work/served"
  mkdir -p "$served"
  head -c $((256 * 1024 * 1024)) /dev/urandom > "$served/blob"
  python3 - "$served/blob" > "$work/port" <<'PY' &
import os, socket, sys, threading
path = sys.argv[1]
size = os.path.getsize(path)
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
def serve(conn):
    with conn, open(path, "rb") as f:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n".encode())
        conn.sendfile(f)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
PY
  local server=$!
  while [ ! -s "$work/port" ]; do sleep 0.05; done
  port=$(cat "$work/port")
  "$bin" bind -q -s px >/dev/null
  local url="http://127.0.0.1:$port/blob" fetch="curl -s --noproxy '' -o /dev/null -w '%{speed_download}\n'"
  speeds() { printf '%s\n' "$@" | median; }
  direct=(); plain=(); tunnel=()
  for i in $(seq "$runs"); do
    direct+=("$(eval "$fetch" "$url")")
    plain+=("$("$bin" run -q -s px --allow-host "127.0.0.1:$port" -- sh -c "$fetch $url")")
    tunnel+=("$("$bin" run -q -s px --allow-host "127.0.0.1:$port" -- sh -c "$fetch -p $url")")
  done
  local d p t
  d=$(speeds "${direct[@]%.*}"); p=$(speeds "${plain[@]%.*}"); t=$(speeds "${tunnel[@]%.*}")
  mib() { awk -v n="$1" 'BEGIN {printf "%.0f MiB/s", n/1048576}'; }
  row "$size" "256MiB via proxy, plain HTTP vs direct" "$(mib "$p")" "$(mib "$d")" "$(ratio "$p" "$d")"
  row "$size" "256MiB via proxy, CONNECT vs direct" "$(mib "$t")" "$(mib "$d")" "$(ratio "$t" "$d")"
  kill "$server" 2>/dev/null || true
  rm -rf "$served"
  echo "run --allow-host against run…" >&2
  local o=() r=() tm
  for i in $(seq "$runs"); do
    tm=$(now_ns); "$bin" run -q -s px -- true >/dev/null 2>&1; r+=($(( $(now_ns) - tm )))
    tm=$(now_ns); "$bin" run -q -s px --allow-host 127.0.0.1:1 -- true >/dev/null 2>&1; o+=($(( $(now_ns) - tm )))
  done
  local mo mr
  mo=$(printf '%s\n' "${o[@]}" | median); mr=$(printf '%s\n' "${r[@]}" | median)
  row "$size" "run --allow-host vs run (-- true)" "$(ms "$mo")" "$(ms "$mr")" "$(ratio "$mo" "$mr")"
  row "$size" "  added by --allow-host" "$(ms $((mo - mr)))" "-" "-"
  "$bin" discard -q --purge -s px >/dev/null 2>&1 || true
}

# rebase: a session that changed ten files, after the source's HEAD moved by one unrelated
# commit (one other file changed), against `git cherry-pick` of a commit of the same ten
# changes onto the moved HEAD in a plain worktree. Between runs (untimed) the session goes
# back with `rebase --onto` the old HEAD and the worktree is reset to the moved HEAD.
rebase_case() {
  local size=$1
  echo "rebase…" >&2
  rb_old=$(git rev-parse HEAD)
  rb_raw="$work/r$size/rawrb"
  "$bin" bind -q -s rb --owner none >/dev/null
  rb_iso="$work/r$size/.src.a3s-isolate-rb"
  git worktree add -q --detach "$rb_raw" "$rb_old"
  for f in $(git ls-files | awk 'NR % 97 == 1 && n++ < 10'); do
    echo "changed" >> "$rb_iso/$f"; echo "changed" >> "$rb_raw/$f"
  done
  git -C "$rb_raw" commit -q -am "ten files changed"
  rb_change=$(git -C "$rb_raw" rev-parse HEAD)
  echo "unrelated" >> "$(git ls-files | awk 'NR % 97 == 50 && n++ < 1')"
  git commit -q -am "an unrelated commit"
  rb_new=$(git rev-parse HEAD)
  measure "$size" "rebase (10 files) vs cherry-pick" \
    '"$bin" rebase -q -s rb' \
    'git -C "$rb_raw" cherry-pick "$rb_change"' \
    '"$bin" rebase -q -s rb --onto "$rb_old" >/dev/null; git -C "$rb_raw" reset -q --hard "$rb_new"; sync'
  # Both sides do the job: the session ends on the moved HEAD with its ten changes (its last
  # timed run), the cherry-pick (once more, untimed, as the last prep reset it) on top of it.
  # The same move by hand in a plain worktree holding the ten changes uncommitted: stash them,
  # check out the moved HEAD, pop them (a user's way to carry uncommitted work across).
  rb_stash="$work/r$size/rawst"
  git worktree add -q --detach "$rb_stash" "$rb_old"
  for f in $(git ls-files | awk 'NR % 97 == 1 && n++ < 10'); do echo "changed" >> "$rb_stash/$f"; done
  git -C "$rb_stash" status --porcelain >/dev/null
  measure "$size" "rebase (10 files) vs stash, checkout, pop" \
    '"$bin" rebase -q -s rb' \
    'git -C "$rb_stash" stash -q && git -C "$rb_stash" checkout -q --detach "$rb_new" && git -C "$rb_stash" stash pop -q' \
    '"$bin" rebase -q -s rb --onto "$rb_old" >/dev/null; git -C "$rb_stash" stash -q; git -C "$rb_stash" checkout -q --detach "$rb_old"; git -C "$rb_stash" stash pop -q; sync'
  if [ "$(git -C "$rb_stash" status --porcelain | wc -l)" -ne 10 ]; then
    echo "rebase case: the stash side lost its ten changes" >&2; exit 1
  fi
  git worktree remove --force "$rb_stash"
  if [ "$(git -C "$rb_iso" rev-parse HEAD)" != "$rb_new" ] || [ "$(git -C "$rb_iso" status --porcelain | wc -l)" -ne 10 ] ||
     ! git -C "$rb_raw" cherry-pick "$rb_change" >/dev/null || [ "$(git -C "$rb_raw" rev-parse HEAD^)" != "$rb_new" ]; then
    echo "rebase case: a side did not end on the moved HEAD with the ten changes" >&2; exit 1
  fi
  "$bin" discard -q --purge -s rb >/dev/null
  git worktree remove --force "$rb_raw"
}

# snapshot_sessions DIR PREFIX N: the raw snapshot of the isolations of sessions PREFIX1..PREFIXN
# beside DIR/src (each one's index
# copied, then `git add -A` and `git write-tree` on the copy), `nproc` at a time.
snapshot_sessions() {
  seq "$3" | xargs -P "$(nproc)" -I{} sh -c '
    tree="$1/.src.a3s-isolate-$2{}"; index=$(git -C "$tree" rev-parse --git-path index)
    case $index in /*) ;; *) index="$tree/$index" ;; esac
    cp -p "$index" "$1/raw-index-{}" &&
      GIT_INDEX_FILE="$1/raw-index-{}" git -C "$tree" -c core.untrackedCache=false add -A &&
      GIT_INDEX_FILE="$1/raw-index-{}" git -C "$tree" write-tree >/dev/null
    rm -f "$1/raw-index-{}"' sh "$1" "$2"
}

# overlaps: 50 live sessions, each with two files changed: one of its own and one of ten that
# five sessions each change (so 100 of the 1,225 pairs conflict). `overlaps --json` has no raw
# git equivalent: its row gives seconds (goal: under 1 s) and no ratio.
overlaps_case() {
  local size=$1 i f
  echo "binding 50 sessions for overlaps…" >&2
  local files=($(git ls-files | awk 'NR % 13 == 1 && n++ < 60'))
  for i in $(seq 50); do
    "$bin" bind -q -s "ov$i" --owner none >/dev/null
    for f in "${files[$((i + 9))]}" "${files[$((i % 10))]}"; do
      echo "changed by ov$i" >> "$work/r$size/.src.a3s-isolate-ov$i/$f"
    done
  done
  "$bin" overlaps --json | python3 -c 'import json, sys
d = json.load(sys.stdin)
n = sum(p["prediction"] == "conflict" for p in d["pairs"])
print("(%d sessions; %d of %d pairs conflict)" % (len(d["sessions"]), n, len(d["pairs"])), file=sys.stderr)
sys.exit(len(d["sessions"]) != 50 or len(d["pairs"]) != 1225)' || { echo "overlaps case: not 50 live sessions" >&2; exit 1; }
  # The floor under it: a snapshot of each session's work by hand (its index copied, `add -A`,
  # `write-tree`), as many at once as there are cores. No prediction, only the reading.
  local o=() r=() t
  for i in $(seq "$runs"); do
    t=$(now_ns); snapshot_sessions "$work/r$size" ov 50; r+=($(( $(now_ns) - t )))
    t=$(now_ns); "$bin" overlaps --json >/dev/null; o+=($(( $(now_ns) - t )))
  done
  local mo mr
  mo=$(printf '%s\n' "${o[@]}" | median); mr=$(printf '%s\n' "${r[@]}" | median)
  row "$size" "overlaps, 50 sessions vs their snapshots" "$(ms "$mo")" "$(ms "$mr")" "$(ratio "$mo" "$mr")"
  for i in $(seq 50); do "$bin" discard -q --purge -s "ov$i" >/dev/null 2>&1 || true; done
  git worktree prune
}

# land: ten sessions, each with two files of its own changed, bound before the source's HEAD
# moved by one unrelated commit, so each is rebased; `land` of all ten (squash: one commit each)
# against `a3s-iso rebase` + `a3s-iso promote --mode branch` of each in turn. Every run (either
# side) gets ten fresh sessions from the same HEAD (untimed), and the last run's are discarded.
land_case() {
  local size=$1
  echo "land…" >&2
  ld_base=$(git rev-parse HEAD)
  ld_files=($(git ls-files | awk 'NR % 11 == 3 && n++ < 20'))
  ld_n=0; ld_ids=(); ld_args=()
  ld_prep='land_prep'
  measure "$size" "land of 10 sessions vs rebase+promote" \
    '"$bin" land -q "${ld_args[@]}"' \
    'for id in "${ld_ids[@]}"; do "$bin" rebase -q -s "$id" && "$bin" promote -q -s "$id" --mode branch || exit 1; done' \
    "$ld_prep"
  [ "$(git rev-list --count "$ld_base..HEAD")" -eq 11 ] || { echo "land case: not ten landings" >&2; exit 1; }
  land_discard
  git reset -q --hard "$ld_base"
}

# Ten fresh sessions from the base, the source's HEAD moved past them; the previous ten gone.
land_prep() {
  land_discard
  git reset -q --hard "$ld_base"
  ld_n=$((ld_n + 1)); ld_ids=(); ld_args=()
  local i f
  for i in $(seq 10); do
    local id="ld$ld_n-$i"
    "$bin" bind -q -s "$id" --owner none >/dev/null
    for f in "${ld_files[$((2 * i - 2))]}" "${ld_files[$((2 * i - 1))]}"; do
      echo "changed by $id" >> "$work/r$size/.src.a3s-isolate-$id/$f"
    done
    ld_ids+=("$id"); ld_args+=(-s "$id")
  done
  echo "unrelated $ld_n" > unrelated-by-the-user.txt
  git add unrelated-by-the-user.txt && git commit -q -m "the user moves on"
  sync
}

land_discard() {
  local id
  for id in "${ld_ids[@]}"; do "$bin" discard -q --purge -s "$id" >/dev/null 2>&1 || true; done
  ld_ids=()
}

# fleet: N sessions (F files, the size) bound J at a time by both sides, in two sources cloned
# from the same repository: `src` for a3s-iso, `rawsrc` for raw git. Each phase is timed as a
# whole, a3s-iso's side and raw git's side alternating run by run; every run starts from fresh
# clones, so runs of the fleet case are few (default 1 unless --runs names more).
fleet_case() {
  local size=$1 n j fr=$runs
  read -r n _ j <<<"$fleet"
  [ "$runs_given" ] || fr=1
  fleet_runs=$fr
  local -a ob=() rb=() orun=() rrun=() ol=() rl=() ok=() rk=() od=() rd=()
  local i
  for i in $(seq "$fr"); do
    fleet_round "$size" "$n" "$j" land
    ob+=("$fl_bind_o"); rb+=("$fl_bind_r"); orun+=("$fl_run_o"); rrun+=("$fl_run_r")
    ol+=("$fl_land_o"); rl+=("$fl_land_r")
    fleet_round "$size" "$n" "$j" keep
    ok+=("$fl_land_o"); rk+=("$fl_land_r"); od+=("$fl_clean_o"); rd+=("$fl_clean_r")
  done
  fleet_row() {
    local name=$1; shift
    local half=$(($# / 2)) mo mr
    mo=$(printf '%s\n' "${@:1:$half}" | median); mr=$(printf '%s\n' "${@:$((half + 1))}" | median)
    row "$size" "$name" "$(ms "$mo")" "$(ms "$mr")" "$(ratio "$mo" "$mr")"
  }
  fleet_row "fleet $n: bind, $j at a time" "${ob[@]}" "${rb[@]}"
  fleet_row "fleet $n: run (edits) vs edits+commit" "${orun[@]}" "${rrun[@]}"
  fleet_row "fleet $n: land --all --test (cleans up)" "${ol[@]}" "${rl[@]}"
  fleet_row "fleet $n: land --all --test --keep" "${ok[@]}" "${rk[@]}"
  fleet_row "fleet $n: discard --all --purge" "${od[@]}" "${rd[@]}"
  notes+=("fleet $n of $size files, disk: $fl_disk_note")
}

# fleet_round SIZE N J land|keep: one run of the fleet on fresh clones. With `land`, land
# cleans up and the raw side removes each worktree after merging it (timed in the land phase);
# with `keep`, land keeps the isolations and the clean-up is timed on its own.
fleet_round() {
  local size=$1 n=$2 j=$3 how=$4 root="$work/f$size" i
  rm -rf "$root"; mkdir -p "$root"
  echo "fleet of $n sessions ($how): cloning $size files twice…" >&2
  generate "$root/src" "$size"; generate "$root/rawsrc" "$size"
  local s
  for s in src rawsrc; do
    seq $((4 * n + 4)) | sed 's/^/line /' > "$root/$s/shared.txt"
    git -C "$root/$s" add shared.txt && git -C "$root/$s" commit -q -m "a file every session changes"
  done
  export FL_ROOT=$root FL_FILES="$root/files"
  git -C "$root/src" ls-files | awk -v m=$((5 * n)) 'NR % 7 == 2 && c++ < m' > "$FL_FILES"
  local test_cmd='wc -l < shared.txt > test-output.log && grep -q "region of" shared.txt'
  sync
  local t u0 u1 u2
  u0=$(used_bytes "$root")
  t=$(now_ns)
  seq "$n" | xargs -P "$j" -I{} "$bin" -C "$root/src" bind -q -s "fl{}" --owner none >/dev/null
  fl_bind_o=$(( $(now_ns) - t )); sync; u1=$(used_bytes "$root"); t=$(now_ns)
  seq "$n" | xargs -P "$j" -I{} git -C "$root/rawsrc" worktree add -q --detach "$root/raw{}" HEAD
  fl_bind_r=$(( $(now_ns) - t )); sync; u2=$(used_bytes "$root"); t=$(now_ns)
  echo "  fleet $n ($how): bind $(ms "$fl_bind_o") ms, worktree add $(ms "$fl_bind_r") ms" >&2
  seq "$n" | xargs -P "$j" -I{} bash -c 'cd "$FL_ROOT/src" && "$0" run -q -s "fl$1" -- sh -c "$(fleet_edit "$1")"' "$bin" {} >/dev/null
  fl_run_o=$(( $(now_ns) - t )); t=$(now_ns)
  seq "$n" | xargs -P "$j" -I{} bash -c 'cd "$FL_ROOT/raw$1" && sh -c "$(fleet_edit "$1")" && git add -A && git commit -q -m "session $1"' sh {}
  fl_run_r=$(( $(now_ns) - t ))
  [ "$how" = land ] && fleet_disk "$root" "$n" $((u1 - u0)) $((u2 - u1))
  for s in src rawsrc; do
    echo "the user's own work" > "$root/$s/by-the-user.txt"
    git -C "$root/$s" add by-the-user.txt && git -C "$root/$s" commit -q -m "the user moves on"
  done
  sync; t=$(now_ns)
  local keep=(); [ "$how" = keep ] && keep=(--keep)
  (cd "$root/src" && "$bin" land -q --all "${keep[@]}" --test "$test_cmd" >/dev/null) ||
    { echo "fleet: land --all failed" >&2; exit 1; }
  fl_land_o=$(( $(now_ns) - t )); t=$(now_ns)
  for i in $(seq "$n"); do
    git -C "$root/raw$i" rebase -q main && (cd "$root/raw$i" && bash -e -o pipefail -c "$test_cmd") &&
      git -C "$root/rawsrc" merge -q --ff-only "$(git -C "$root/raw$i" rev-parse HEAD)" ||
      { echo "fleet: raw landing of $i failed" >&2; exit 1; }
    [ "$how" = keep ] || git -C "$root/rawsrc" worktree remove --force "$root/raw$i"
  done
  fl_land_r=$(( $(now_ns) - t ))
  fleet_check "$root" "$n" "$how"
  if [ "$how" = keep ]; then
    sync; t=$(now_ns)
    (cd "$root/src" && "$bin" discard -q --all --purge >/dev/null)
    fl_clean_o=$(( $(now_ns) - t )); t=$(now_ns)
    for i in $(seq "$n"); do git -C "$root/rawsrc" worktree remove --force "$root/raw$i"; done
    fl_clean_r=$(( $(now_ns) - t ))
  fi
  [ "$(git -C "$root/src" worktree list | wc -l)" -eq 1 ] || { echo "fleet: worktrees left after the clean-up" >&2; exit 1; }
  cd "$work"; rm -rf "$root"
}

# used_bytes DIR: the bytes in use on DIR's file system, data and metadata (`df`).
used_bytes() { sync; df --output=used -B1 "$1" | tail -1 | tr -d ' '; }

# fleet_disk ROOT N OURS_DF RAW_DF: what the fleet's isolations take once every session made
# its edits. Data: a3s-iso's `list --disk` total (the pristine tree's blocks plus what each
# isolation holds alone, from the file system's extent map) against the raw worktrees' blocks
# (`du`: they share nothing), and both against one checkout plus what the sessions changed
# (each isolation's own bytes). All: the growth of the file system's used bytes while each
# side bound its N sessions, metadata (inodes, directories) included.
fleet_disk() {
  local root=$1 n=$2 ours_df=$3 raw_df=$4
  local doc ours own pristine checkout raw changed
  doc=$("$bin" -C "$root/src" --json list --disk)
  read -r ours pristine changed < <(python3 -c 'import json, sys
d = json.load(sys.stdin)
own = sum((s["disk"] or {}).get("own_bytes", 0) for s in d["sessions"])
print(d["disk"]["total"]["own_bytes"], d["disk"]["pristine"]["allocated_bytes"], own)' <<<"$doc")
  checkout=$(du -s -B1 --exclude=.git "$root/rawsrc" | cut -f1)
  raw=$(du -s -B1 -c "$root"/raw[0-9]* | tail -1 | cut -f1)
  mib() { awk -v n="$1" 'BEGIN {printf "%.1f MiB", n/1048576}'; }
  row "$size" "fleet $n: isolations' data on disk" "$(mib "$ours")" "$(mib "$raw")" "$(ratio "$ours" "$raw")"
  row "$size" "fleet $n: bind, file system growth" "$(mib "$ours_df")" "$(mib "$raw_df")" "$(ratio "$ours_df" "$raw_df")"
  fl_disk_note="one checkout $(mib "$checkout") (pristine tree $(mib "$pristine")); sessions' own $(mib "$changed"); a3s-iso's data / (one checkout + changes) = $(ratio "$ours" $((checkout + changed))); file system growth / (one checkout + changes) = $(ratio "$ours_df" $((checkout + changed)))"
  echo "  $fl_disk_note" >&2
}

# fleet_edit I: session I's edits, as a shell script run in its tree: three files of its own
# changed, one added, one deleted, and its own line of shared.txt.
fleet_edit() {
  local i=$1 base=$((5 * ($1 - 1)))
  local own
  own=$(sed -n "$((base + 1)),$((base + 3))p" "$FL_FILES" | tr '\n' ' ')
  printf 'for f in %s; do echo "changed by %s" >> "$f"; done; ' "$own" "$i"
  printf 'echo "added by %s" > added-by-%s.txt; rm -f %s; ' "$i" "$i" "$(sed -n "$((base + 4))p" "$FL_FILES")"
  printf 'sed -i "%ds/.*/region of %s/" shared.txt\n' "$((4 * i))" "$i"
}
export -f fleet_edit

# fleet_check ROOT N HOW: both sides landed the same tree, nothing the test wrote landed, a
# second land --all lands nothing, no session has work to land.
fleet_check() {
  local root=$1 n=$2
  [ "$(git -C "$root/src" rev-parse 'HEAD^{tree}')" = "$(git -C "$root/rawsrc" rev-parse 'HEAD^{tree}')" ] ||
    { echo "fleet: the landed trees differ" >&2; exit 1; }
  [ "$(git -C "$root/src" rev-list --count HEAD~"$n"..HEAD)" -eq "$n" ] || { echo "fleet: not $n landings" >&2; exit 1; }
  if git -C "$root/src" log --name-only --format= HEAD~"$n"..HEAD | grep -q test-output.log; then
    echo "fleet: the test's log landed" >&2; exit 1
  fi
  (cd "$root/src" && "$bin" land -q --all >/dev/null) || { echo "fleet: a second land --all failed" >&2; exit 1; }
  [ "$(git -C "$root/src" rev-list --count HEAD~"$n"..HEAD)" -eq "$n" ] || { echo "fleet: the second land --all landed" >&2; exit 1; }
}

# dirty TREE: ten tracked files changed and a build output written, as a session leaves it.
dirty() {
  [ -d "$1" ] || return 0
  for f in $(git -C "$1" ls-files | awk 'NR % 97 == 1 && n++ < 10'); do echo "changed" >> "$1/$f"; done
  mkdir -p "$1/target" && echo out > "$1/target/out"
}

# bind_cases SIZE: bind and discard against git worktree add and remove, and ten binds at once.
bind_cases() {
  local size=$1
  echo "bind and discard…" >&2
  n=0
  measure "$size" "bind vs worktree add --detach" \
    '"$bin" bind -q -s "b$n"' \
    'git worktree add -q --detach "../raw$n" HEAD' \
    'n=$((n+1)); sync'
  k=0
  measure "$size" "discard vs worktree remove --force" \
    '"$bin" discard -q -s "b$k"' \
    'git worktree remove --force "../raw$k"' \
    'k=$((k+1)); sync'
  if [ "$only" = core ]; then return; fi
  # Ten agents started at once: their binds run side by side (only git's short registration of
  # each worktree is serialised), so together they take no longer than one after the other.
  echo "10 parallel binds…" >&2
  pb=0
  measure "$size" "10 parallel binds vs 10 sequential" \
    'for i in $(seq 10); do "$bin" bind -q -s "par$pb-$i" --owner none >/dev/null & done; wait' \
    'for i in $(seq 10); do "$bin" bind -q -s "seq$pb-$i" --owner none >/dev/null; done' \
    'for i in $(seq 10); do "$bin" discard -q --purge -s "par$pb-$i" >/dev/null 2>&1 || true; "$bin" discard -q --purge -s "seq$pb-$i" >/dev/null 2>&1 || true; done; pb=$((pb+1)); sync'
  for i in $(seq 10); do "$bin" discard -q --purge -s "par$pb-$i" >/dev/null 2>&1 || true; "$bin" discard -q --purge -s "seq$pb-$i" >/dev/null 2>&1 || true; done
}

# core_cases SIZE: capture, run (doing nothing, and changing ten files) and promote of a
# session with ten changed files, against the raw snapshots and git apply.
core_cases() {
  local size=$1
  echo "capture, run, promote…" >&2
  "$bin" bind -q -s cap >/dev/null
  if [ ${#sandbox[@]} -eq 0 ] && ! "$bin" run -q -s cap -- true >/dev/null 2>&1; then
    echo "(no sandbox on this machine: run is measured with --no-sandbox)" >&2
    sandbox=(--no-sandbox)
  fi
  iso="$work/r$size/.src.a3s-isolate-cap"
  admin=$(git -C "$iso" rev-parse --absolute-git-dir)
  base=$(git rev-parse 'HEAD^{tree}')
  local ten
  ten=$(git ls-files | awk 'NR % 97 == 1 && n++ < 10' | tr '\n' ' ')
  for f in $ten; do echo "changed" >> "$iso/$f"; done
  tmpidx="$work/tmp-index"
  snap='cp "$admin/index" "$tmpidx" && tree=$(cd "$iso" && GIT_INDEX_FILE="$tmpidx" git add -A && GIT_INDEX_FILE="$tmpidx" git write-tree)'
  measure "$size" "capture (10 files) vs seeded-index floor" \
    '"$bin" capture -q -s cap' \
    "$snap"' && git diff --binary "$base" "$tree" >/dev/null' \
    'rm -f "$tmpidx"'
  measure "$size" "capture (10 files) vs from-scratch index" \
    '"$bin" capture -q -s cap' \
    'tree=$(cd "$iso" && GIT_INDEX_FILE="$tmpidx" git add -A && GIT_INDEX_FILE="$tmpidx" git write-tree) && git diff --binary "$base" "$tree" >/dev/null' \
    'rm -f "$tmpidx"'
  measure "$size" "run -- true vs two raw snapshots" \
    '"$bin" run -q -s cap "${sandbox[@]}" -- true' \
    "$snap && $snap" \
    'rm -f "$tmpidx"'
  # A command that changes ten files (an append to each), against the same appends by hand
  # and one seeded snapshot: what run adds to what the command changed.
  append="for f in $ten; do echo more >> \"\$f\"; done"
  measure "$size" "run changing 10 files vs appends+snapshot" \
    '"$bin" run -q -s cap "${sandbox[@]}" -- sh -c "$append"' \
    '(cd "$iso" && eval "$append") && '"$snap" \
    'rm -f "$tmpidx"'
  reset_source='git checkout -q -- . && git clean -fdq && rm -rf .git/a3s-iso/promoted'
  patch="$work/p.patch"
  measure "$size" "promote (10 files) vs floor+apply+sha256" \
    '"$bin" promote -q -s cap' \
    "$snap"' && git diff --binary "$base" "$tree" > "$patch" && git apply --check "$patch" && git apply "$patch" && sha256sum "$patch"' \
    "rm -f \"\$tmpidx\"; $reset_source"
  eval "$reset_source"
  "$bin" discard -q --purge -s cap >/dev/null
  git worktree prune
}

# remote_land_case SIZE: 4 machines x 5 sessions landing into one server's main at once, with
# land --push against the recipes' former promote/commit/push loop.
remote_land_case() {
  local size=$1 rr=$runs i
  [ "$runs_given" ] || rr=1
  command -v jq >/dev/null || { echo "the remote-land case needs jq" >&2; exit 2; }
  local -a ow=() rw=() op=() rp=() ol=() rl=()
  for i in $(seq "$rr"); do
    remote_land_round "$size" "$i"
    ow+=("$rl_wall_o"); rw+=("$rl_wall_r"); op+=("$rl_push_o"); rp+=("$rl_push_r")
    ol+=("$rl_landed_o"); rl+=("$rl_landed_r")
  done
  local mo mr
  mo=$(printf '%s\n' "${ow[@]}" | median); mr=$(printf '%s\n' "${rw[@]}" | median)
  row "$size" "remote land 4x5 wall vs recipe loop" "$(ms "$mo")" "$(ms "$mr")" "$(ratio "$mo" "$mr")"
  row "$size" "remote land 4x5 pushes attempted" "$(printf '%s\n' "${op[@]}" | median)" "$(printf '%s\n' "${rp[@]}" | median)" "-"
  row "$size" "remote land 4x5 change sets landed" "$(printf '%s\n' "${ol[@]}" | median)" "$(printf '%s\n' "${rl[@]}" | median)" "-"
  fleet_runs=$rr
}

# remote_land_round SIZE N: a fresh server and 8 clones (4 per side) of the generated
# repository, 5 sessions bound in each; both sides timed, one after the other.
remote_land_round() {
  local size=$1 n=$2 m k t dir side
  local root="$work/remote-land-$n" test='test -f .gitattributes || true'
  rm -rf "$root"; mkdir -p "$root"
  git clone -q --bare "$work/r$size/src" "$root/server.git"
  for side in o r; do
    for m in 1 2 3 4; do
      dir="$root/$side$m"
      git clone -q "$root/server.git" "$dir"
      for k in 1 2 3 4 5; do
        (cd "$dir" && "$bin" bind -q -s "m$m-s$k" --owner none >/dev/null)
        echo "machine $m session $k" > "$root/.$side$m.a3s-isolate-m$m-s$k/landed-m$m-s$k.txt"
        if [ "$side" = r ]; then
          (cd "$dir" && "$bin" --json capture -q -s "m$m-s$k" -o "$root/$side$m-s$k.json" >/dev/null)
        fi
      done
    done
  done
  sync
  # a3s-iso: each machine one land --push of its five sessions, all four at once.
  t=$(now_ns)
  for m in 1 2 3 4; do
    (cd "$root/o$m" && "$bin" --json land --push origin/main --test "$test" --no-sandbox --attempts 100 \
      -s "m$m-s1" -s "m$m-s2" -s "m$m-s3" -s "m$m-s4" -s "m$m-s5" > "$root/o$m.json" || true) &
  done
  wait
  rl_wall_o=$(( $(now_ns) - t ))
  rl_push_o=$(cat "$root"/o?.json | jq -s '[.[].sessions[].push.attempts] | add')
  rl_landed_o=$(cat "$root"/o?.json | jq -s '[.[].sessions[] | select(.outcome == "landed")] | length')
  # The recipes' loop: the same on four more clones of the server, then reset to the first commit.
  git -C "$root/server.git" update-ref refs/heads/main "$(git -C "$root/r1" rev-parse HEAD)"
  t=$(now_ns)
  for m in 1 2 3 4; do
    (cd "$root/r$m" && for k in 1 2 3 4 5; do recipe_loop "$root/r$m-s$k.json" "$test" "$root/r$m.pushes" "$root/r$m.landed"; done) &
  done
  wait
  rl_wall_r=$(( $(now_ns) - t ))
  rl_push_r=$(cat "$root"/r?.pushes 2>/dev/null | wc -l)
  rl_landed_r=$(cat "$root"/r?.landed 2>/dev/null | wc -l)
  [ "$rl_landed_o" -eq 20 ] || echo "remote land: land --push landed $rl_landed_o of 20" >&2
  rm -rf "$root"
}

# recipe_loop DOC TEST PUSHES LANDED: what the CI recipes did for one change set before
# land --push: promote, test, commit, push; a refused push fetches, resets onto the branch's
# tip and promotes again (--reapply), 3 attempts in all. A line per push and per landing.
recipe_loop() {
  local doc=$1 test=$2 pushes=$3 landed=$4 attempt=1 flags="--onto-head" outcome
  git fetch -q origin main && git reset -q --hard FETCH_HEAD
  while :; do
    outcome=$("$bin" --json promote --change-set "$doc" $flags 2>/dev/null | jq -r .outcome || true)
    [ "$outcome" = applied ] || return 0
    sh -c "$test" || return 0
    git add -A
    git commit -q -m "Apply the agent's change set" -m "A3s-Iso-Change-Set: $(jq -r .patch_digest "$doc")"
    echo push >> "$pushes"
    if git push -q origin HEAD:main 2>/dev/null; then echo landed >> "$landed"; return 0; fi
    [ "$attempt" -lt 3 ] || return 0
    attempt=$((attempt + 1)); flags="--onto-head --reapply"
    git fetch -q origin main && git reset -q --hard FETCH_HEAD
  done
}

sandbox=()
largest=""
for size in $sizes; do
  # The fleet clones its own two sources.
  if [ "$only" = fleet ]; then fleet_case "$size"; continue; fi
  src="$work/r$size/src"
  echo "generating $size files…" >&2
  generate "$src" "$size"
  cd "$src"
  case "$only" in
    pool) pool_cases "$size"; continue ;;
    rebase) rebase_case "$size"; continue ;;
    overlaps) overlaps_case "$size"; continue ;;
    land) land_case "$size"; continue ;;
    include) include_case "$size"; continue ;;
    proxy) proxy_case "$size"; continue ;;
    remote-land) remote_land_case "$size"; continue ;;
  esac
  if huge "$size"; then
    why="each run writes a checkout of $size files (minutes, GBs)"
    for c in "bind vs worktree add --detach" "discard vs worktree remove --force" \
      "10 parallel binds vs 10 sequential"; do skip "$size" "$c" "$why"; done
  else
    bind_cases "$size"
  fi
  core_cases "$size"
  if huge "$size"; then
    [ "$only" = core ] || skip "$size" "pool, rebase, overlaps, land" "each writes checkouts of $size files per run"
    # Its checkout is no longer needed: the space goes back before the next size.
    cd "$work"; rm -rf "$work/r$size"
    continue
  fi
  if [ "$only" = core ]; then continue; fi
  largest=$size
  pool_cases "$size"
  if runs_at "$size" 100000; then rebase_case "$size"; fi
  if runs_at "$size" 10000; then overlaps_case "$size"; land_case "$size"; fi
done

if [ -n "$only" ] || [ -z "$largest" ]; then
  print_results
  exit 0
fi

# sweep --dry-run over 200 isolations of one source (the smallest repository).
small=${sizes%% *}
cd "$work/r$small/src"
echo "binding 200 isolations for sweep…" >&2
for i in $(seq 200); do "$bin" bind -q -s "many$i" >/dev/null; done
s=()
for i in $(seq "$runs"); do t=$(now_ns); "$bin" sweep -q --dry-run >/dev/null; s+=($(( $(now_ns) - t ))); done
row "$small" "sweep --dry-run, 200 isolations" "$(ms "$(printf '%s\n' "${s[@]}" | median)")" "-" "-"

# peak memory of capture and promote with a patch just under 4 MiB, on the largest repository.
cd "$work/r$largest/src"
"$bin" bind -q -s mem >/dev/null
python3 - "$work/r$largest/.src.a3s-isolate-mem" <<'PY'
import os, sys, random
rng = random.Random(7)
with open(os.path.join(sys.argv[1], "big.txt"), "w") as f:
    for i in range(60000):
        f.write(f"{i:06d} " + "".join(rng.choice("abcdefghij") for _ in range(56)) + "\n")
PY
capture_kib=$(peak_kib "$bin" capture -q -s mem)
promote_kib=$(peak_kib "$bin" promote -q -s mem)
patch_bytes=$("$bin" capture -s mem --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["patch_bytes"])')
row "$largest" "peak RSS capture, ${patch_bytes}-byte patch" "$((capture_kib / 1024)) MiB" "-" "-"
row "$largest" "peak RSS promote, ${patch_bytes}-byte patch" "$((promote_kib / 1024)) MiB" "-" "-"

# a3s-iso's own memory promoting a 64 MiB patch: the patch streams from file to file.
"$bin" discard -q -s mem --purge >/dev/null 2>&1 || true
git checkout -q -- . && git clean -fdq
"$bin" bind -q -s huge >/dev/null
python3 - "$work/r$largest/.src.a3s-isolate-huge" <<'PY'
import os, sys, random
rng = random.Random(11)
with open(os.path.join(sys.argv[1], "huge.txt"), "w") as f:
    for i in range(1_050_000):
        f.write(f"{i:07d} " + "".join(rng.choice("klmnopqrst") for _ in range(55)) + "\n")
PY
huge_kib=$(own_peak_kib "$bin" promote -q -s huge)
huge_bytes=$(wc -c < "$(ls -td .git/a3s-iso/artifacts/*/ | head -1)change.patch" 2>/dev/null || echo 0)
row "$largest" "own peak RSS promote, ${huge_bytes}-byte patch" "$((huge_kib / 1024)) MiB" "-" "-"

print_results
