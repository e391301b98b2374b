#!/usr/bin/env bash
# Installs a3s-iso on a CI runner (or anywhere), from a release tarball checked against its
# sha256, or else built from source with cargo at a pinned revision.
#
#   scripts/install.sh
#
# Environment (the project has no public URL: a CI variable names where it lives):
#   A3S_ISO_RELEASE_BASE    where a release's files are (a release page's download URL, a
#                           file:// URL or a directory, as scripts/package.sh writes them):
#                           the tarball for this machine, a3s-iso-<arch>-unknown-linux-musl.tar.gz
#                           (x86_64 or aarch64), is taken from there, and its sum from the
#                           .sha256 file beside it unless A3S_ISO_RELEASE_SHA256 pins it (a sum
#                           from the same place guards against a broken download, a pinned one
#                           against a replaced release too)
#   A3S_ISO_RELEASE_URL     a release tarball (.tar.gz) holding an `a3s-iso` binary: an
#                           https:// or file:// URL, or a path
#   A3S_ISO_RELEASE_SHA256  the tarball's sha256 (64 hex digits); required with the URL
#   A3S_ISO_INSTALL_GIT     without a release URL: the git repository to build from
#   A3S_ISO_INSTALL_REV     ... and the revision to build (a commit id; required: builds are pinned)
#   (not A3S_ISO_GIT: a3s-iso reads that one as the path of the git it runs)
#   A3S_ISO_INSTALL_ROOT    the binary goes to $A3S_ISO_INSTALL_ROOT/bin (default: ~/.local)
#
# A CI cache may restore the install root. Whoever writes that cache writes everything in it,
# so nothing in it vouches for itself: the release's tarball is kept there
# ($A3S_ISO_INSTALL_ROOT/share/a3s-iso/release.tar.gz), and a restored binary is kept (nothing
# downloaded) only when that tarball's sha256 is the release's (pinned, or published beside it)
# and the binary's own sha256 is that of the binary the tarball holds. Nothing restored is run
# before that; anything else is installed again. A build from source has no published sum: it
# is built again every time.
#
# Prints the installed binary's path on stdout. On GitHub Actions the bin directory is added to
# $GITHUB_PATH for the next steps; elsewhere put it on PATH yourself (the script prints how).
#
# Exit status: 0 installed, or kept; 1 download, build or install failed, or the binary does not
# run; 2 missing or bad settings; 5 the tarball's sha256 does not match.
set -euo pipefail

root=${A3S_ISO_INSTALL_ROOT:-$HOME/.local}
bin_dir=$root/bin
url=${A3S_ISO_RELEASE_URL:-}
base=${A3S_ISO_RELEASE_BASE:-}

fail() {
  echo "install.sh: $2" >&2
  exit "$1"
}

# fetch URL FILE: an https:// or file:// URL, or a path, to FILE.
fetch() {
  case "$1" in
    http://* | https://* | file://*)
      curl --fail --silent --show-error --location --retry 3 --output "$2" "$1" ;;
    *) cp -- "$1" "$2" ;;
  esac
}

# The tarball of this machine's architecture under A3S_ISO_RELEASE_BASE, and its sum.
from_base() {
  local arch sums
  arch=$(uname -m)
  case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) fail 1 "no release binary for $arch (x86_64 and aarch64 only): build from source" ;;
  esac
  url="${base%/}/a3s-iso-$arch-unknown-linux-musl.tar.gz"
  if [ -z "${A3S_ISO_RELEASE_SHA256:-}" ]; then
    sums=$(mktemp "${TMPDIR:-/tmp}/a3s-iso-sum.XXXXXX")
    fetch "$url.sha256" "$sums" || { rm -f "$sums"; fail 1 "could not download $url.sha256"; }
    A3S_ISO_RELEASE_SHA256=$(cut -d' ' -f1 "$sums")
    rm -f "$sums"
  fi
}

# The pinned or fetched sum, checked for shape: 64 hex digits, lower case.
release_sum() {
  want=${A3S_ISO_RELEASE_SHA256:-}
  [ -n "$want" ] || fail 2 "A3S_ISO_RELEASE_URL is set but A3S_ISO_RELEASE_SHA256 is not"
  want=${want#sha256:}
  [[ "$want" =~ ^[0-9a-fA-F]{64}$ ]] || fail 2 "A3S_ISO_RELEASE_SHA256 is not 64 hex digits"
  want=${want,,}
}

# plain_file PATH: a regular file, not a link; a link, FIFO or device a cache restored is never
# read or run.
plain_file() {
  [ -f "$1" ] && [ ! -L "$1" ]
}
sum_of() {
  sha256sum -- "$1" | cut -d' ' -f1
}

# unpack TARBALL DIR: extracts the tarball, whose sum was checked, under DIR and prints the
# path of the one a3s-iso binary in it.
unpack() {
  local found
  mkdir "$2"
  tar -xzf "$1" -C "$2" || fail 1 "$url is not a .tar.gz"
  found=$(find "$2" -type f -name a3s-iso)
  if [ -z "$found" ] || [ "$(printf '%s\n' "$found" | wc -l)" -ne 1 ]; then
    fail 1 "$url holds no single a3s-iso binary"
  fi
  printf '%s\n' "$found"
}

# The release's tarball: the one kept in the install root when its sha256 is the release's,
# else downloaded and checked (exit 5 on a mismatch) and kept there for the next time.
release_tarball() {
  local got
  # Checked and unpacked from a copy of its own, which nothing else can change in between.
  if plain_file "$kept_tarball" && cp -- "$kept_tarball" "$tmp/kept.tar.gz" &&
    [ "$(sum_of "$tmp/kept.tar.gz")" = "$want" ]; then
    tarball=$tmp/kept.tar.gz
    return
  fi
  tarball=$tmp/release.tar.gz
  fetch "$url" "$tarball" || fail 1 "could not download $url"
  got=$(sum_of "$tarball")
  [ "$got" = "$want" ] || fail 5 "sha256 mismatch for $url: expected $want, got $got"
}

install_release() {
  local found
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-install.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  release_tarball
  found=$(unpack "$tarball" "$tmp/x")
  if [ "$tarball" = "$tmp/kept.tar.gz" ] && plain_file "$bin_dir/a3s-iso" &&
    [ "$(sum_of "$bin_dir/a3s-iso")" = "$(sum_of "$found")" ]; then
    kept=1
    return
  fi
  mkdir -p "$bin_dir" "$(dirname "$kept_tarball")"
  # Removed first: a link a cache left there is never written through.
  rm -f "$bin_dir/a3s-iso.new" "$kept_tarball.new"
  install -m 0755 "$found" "$bin_dir/a3s-iso.new"
  mv -f "$bin_dir/a3s-iso.new" "$bin_dir/a3s-iso"
  if [ "$tarball" != "$tmp/kept.tar.gz" ]; then
    cp -- "$tarball" "$kept_tarball.new"
    mv -f "$kept_tarball.new" "$kept_tarball"
  fi
}

source_settings() {
  git=${A3S_ISO_INSTALL_GIT:-}
  rev=${A3S_ISO_INSTALL_REV:-}
  [ -n "$git" ] || fail 2 "set A3S_ISO_RELEASE_BASE, or A3S_ISO_RELEASE_URL and A3S_ISO_RELEASE_SHA256, or A3S_ISO_INSTALL_GIT and A3S_ISO_INSTALL_REV"
  [ -n "$rev" ] || fail 2 "A3S_ISO_INSTALL_GIT is set but A3S_ISO_INSTALL_REV is not: name the commit to build"
}

# --force: what cargo recorded in the root came from the cache too.
install_source() {
  command -v cargo >/dev/null || fail 1 "cargo is not installed (needed to build from $git)"
  cargo install --locked --force --git "$git" --rev "$rev" --root "$root" a3s-iso ||
    fail 1 "cargo install from $git at $rev failed"
}

kept_tarball=$root/share/a3s-iso/release.tar.gz
kept=0
# The record earlier versions of this script wrote vouched for itself: never read, removed.
rm -f "$root/share/a3s-iso/installed"

if [ -n "$base" ]; then
  from_base
fi
if [ -n "$url" ]; then
  release_sum
  install_release
else
  source_settings
  rm -f "$kept_tarball"
  install_source
fi
"$bin_dir/a3s-iso" --version >/dev/null || fail 1 "the installed $bin_dir/a3s-iso does not run"
if [ "$kept" = 1 ]; then
  echo "install.sh: $bin_dir/a3s-iso is installed from $url sha256:$want already: kept" >&2
fi
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$bin_dir" >>"$GITHUB_PATH"
else
  case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) echo "install.sh: add $bin_dir to PATH: export PATH=\"$bin_dir:\$PATH\"" >&2 ;;
  esac
fi
echo "$bin_dir/a3s-iso"
