#!/usr/bin/env bash
# A CI step that lands an agent's change set in the job's checkout, and fails the job when it
# cannot land cleanly.
#
#   scripts/ci-promote.sh CHANGE_SET.json [CHECKOUT]
#
# The change set was produced elsewhere (`a3s-iso capture -s ID -o CHANGE_SET.json`, or the
# document `a3s-iso capture --json` prints). This step:
#   1. verifies the document, rule by rule (exit 5 on a broken rule: the job fails);
#   2. promotes it exactly once: `applied` or `idempotent` (a re-run of the job) pass;
#      `conflict` (the checkout moved in a way the patch does not fit) fails the job, and nothing
#      was applied;
#   3. leaves the applied changes uncommitted for the next step (commit, push, open a PR).
# The promote summary is written to $A3S_ISO_ARTIFACTS (default: ./a3s-iso-artifacts).
set -euo pipefail

change_set=${1:?usage: ci-promote.sh CHANGE_SET.json [CHECKOUT]}
checkout=${2:-.}
iso="${A3S_ISO_BIN:-a3s-iso}"
artifacts="${A3S_ISO_ARTIFACTS:-$PWD/a3s-iso-artifacts}"

"$iso" verify "$change_set"

status=0
"$iso" -C "$checkout" promote --change-set "$change_set" --artifacts "$artifacts" || status=$?
case "$status" in
  0) echo "change set landed (see $artifacts/summary.json)" ;;
  3) echo "::error::the change set conflicts with this checkout; nothing was applied (see $artifacts/summary.json)" >&2
     exit 1 ;;
  *) echo "::error::a3s-iso promote failed with exit status $status" >&2
     exit 1 ;;
esac
