#!/usr/bin/env bash
# Regenerates the committed shell completions (completions/), man pages (man/) and the
# options table (docs/options.md) from the
# command-line definition. A test fails when the committed copies are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --locked -- generate-assets .
echo "regenerated completions/, man/ and docs/options.md"
