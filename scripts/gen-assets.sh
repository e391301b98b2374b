#!/usr/bin/env bash
# Regenerates the committed shell completions (completions/) and man pages (man/) from the
# command-line definition. A test fails when the committed copies are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --locked -- generate-assets .
echo "regenerated completions/ and man/"
