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
# A CI cache may restore the install root: a binary found there is kept (nothing downloaded or
# built) when $A3S_ISO_INSTALL_ROOT/share/a3s-iso/installed, which this script writes, says it
# came from the same tarball (URL and sha256) or the same repository and revision, and the
# binary's own sha256 recorded there still matches. Anything else is installed again. Either
# way the binary must run (`a3s-iso --version`).
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

install_release() {
  local tmp got found
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-install.XXXXXX")
  # shellcheck disable=SC2064 # expand now: tmp is local
  trap "rm -rf '$tmp'" EXIT
  fetch "$url" "$tmp/release.tar.gz" || fail 1 "could not download $url"
  got=$(sha256sum "$tmp/release.tar.gz" | cut -d' ' -f1)
  [ "$got" = "$want" ] || fail 5 "sha256 mismatch for $url: expected $want, got $got"
  mkdir "$tmp/x"
  tar -xzf "$tmp/release.tar.gz" -C "$tmp/x" || fail 1 "$url is not a .tar.gz"
  found=$(find "$tmp/x" -type f -name a3s-iso)
  if [ -z "$found" ] || [ "$(printf '%s\n' "$found" | wc -l)" -ne 1 ]; then
    fail 1 "$url holds no single a3s-iso binary"
  fi
  mkdir -p "$bin_dir"
  install -m 0755 "$found" "$bin_dir/a3s-iso.new"
  mv -f "$bin_dir/a3s-iso.new" "$bin_dir/a3s-iso"
}

source_settings() {
  git=${A3S_ISO_INSTALL_GIT:-}
  rev=${A3S_ISO_INSTALL_REV:-}
  [ -n "$git" ] || fail 2 "set A3S_ISO_RELEASE_BASE, or A3S_ISO_RELEASE_URL and A3S_ISO_RELEASE_SHA256, or A3S_ISO_INSTALL_GIT and A3S_ISO_INSTALL_REV"
  [ -n "$rev" ] || fail 2 "A3S_ISO_INSTALL_GIT is set but A3S_ISO_INSTALL_REV is not: name the commit to build"
}

install_source() {
  command -v cargo >/dev/null || fail 1 "cargo is not installed (needed to build from $git)"
  cargo install --locked --git "$git" --rev "$rev" --root "$root" a3s-iso ||
    fail 1 "cargo install from $git at $rev failed"
}

# What the binary was installed from, and its own sha256: a cached install root is kept only
# when both still hold.
stamp=$root/share/a3s-iso/installed
binary_sum() {
  sha256sum "$bin_dir/a3s-iso" | cut -d' ' -f1
}
installed_from() {
  [ -f "$stamp" ] && [ -x "$bin_dir/a3s-iso" ] || return 1
  [ "$(cat "$stamp")" = "$(printf '%s\nbinary sha256:%s' "$1" "$(binary_sum)")" ] || return 1
  "$bin_dir/a3s-iso" --version >/dev/null 2>&1
}
record_origin() {
  mkdir -p "$(dirname "$stamp")"
  printf '%s\nbinary sha256:%s\n' "$1" "$(binary_sum)" >"$stamp.new"
  mv -f "$stamp.new" "$stamp"
}

if [ -n "$base" ]; then
  from_base
fi
if [ -n "$url" ]; then
  release_sum
  origin="release $url sha256:$want"
else
  source_settings
  origin="source $git $rev"
fi
if installed_from "$origin"; then
  echo "install.sh: $bin_dir/a3s-iso is installed from ${origin#* } already: kept" >&2
else
  rm -f "$stamp"
  if [ -n "$url" ]; then
    install_release
  else
    install_source
  fi
  "$bin_dir/a3s-iso" --version >/dev/null || fail 1 "the installed $bin_dir/a3s-iso does not run"
  record_origin "$origin"
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
