#!/usr/bin/env bash
# Installs the committed man pages (man/*.1) for the current user, into
# ${MANDIR:-~/.local/share/man}/man1, where man finds them without configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${MANDIR:-$HOME/.local/share/man}/man1"
mkdir -p "$dest"
install -m 0644 man/*.1 "$dest/"
echo "installed $(ls man/*.1 | wc -l) man pages into $dest (try: man a3s-iso)"
