#!/usr/bin/env bash
# Builds the static release binary of a3s-iso for one musl target and packs it as the release
# workflow publishes it: dist/a3s-iso-<target>.tar.gz (a directory a3s-iso-<target>/ holding
# the binary, README.md and LICENSE when present) and dist/a3s-iso-<target>.tar.gz.sha256
# (`sha256sum` format). `cargo binstall` and scripts/install.sh read that layout.
#
#   scripts/package.sh [TARGET]     (default: x86_64-unknown-linux-musl)
#
# Prints the tarball's path. Exit status: 0 packed; 1 the build failed; 2 bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-x86_64-unknown-linux-musl}
case "$target" in
  x86_64-unknown-linux-musl | aarch64-unknown-linux-musl) ;;
  *) echo "package.sh: unsupported target $target (x86_64- or aarch64-unknown-linux-musl)" >&2; exit 2 ;;
esac
# The target's standard library; rustup fetches it once.
rustup target add "$target" >/dev/null 2>&1 || {
  echo "package.sh: rustup cannot add the $target target" >&2
  exit 1
}
cargo build --locked --release --target "$target" >&2 || exit 1
binary="${CARGO_TARGET_DIR:-target}/$target/release/a3s-iso"
[ -x "$binary" ] || { echo "package.sh: the build left no $binary" >&2; exit 1; }
# Static, or it is not what the release promises: it must run on any Linux of that machine.
if ! ldd "$binary" 2>&1 | grep -qE 'statically linked|not a dynamic executable'; then
  echo "package.sh: $binary is dynamically linked" >&2
  exit 1
fi
name="a3s-iso-$target"
mkdir -p dist
stage=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-package.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
install -m 0755 "$binary" "$stage/$name/a3s-iso"
for doc in README.md LICENSE; do
  [ -f "$doc" ] && cp "$doc" "$stage/$name/"
done
# Reproducible metadata: the same build packs to the same bytes.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' \
  -C "$stage" -cf - "$name" | gzip -n -9 >"dist/$name.tar.gz"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$PWD/dist/$name.tar.gz"
