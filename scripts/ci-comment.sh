#!/usr/bin/env bash
# Writes the pull-request (merge-request) comment that reports what became of an agent's change
# set, as Markdown on stdout; the CI recipes post it (`gh pr comment --body-file`, GitLab's notes
# API).
#
#   scripts/ci-comment.sh DOCUMENT [CHANGE_SET.json]
#
# DOCUMENT is one of the documents ci-promote.sh leaves in its artifacts directory:
#   promote.json (a3s-iso.promote.v1)  applied or idempotent: the files changed and the digest
#                                      (and that it was rebased onto the moved branch, when it
#                                      was); conflict: the reason and the conflicting paths;
#                                      empty, partial: said so
#   land.json (a3s-iso.land.v1)        with A3S_ISO_LAND_PUSH (land --push): landed, with the
#                                      commit pushed and the push attempts; idempotent,
#                                      empty, conflict (paths), test_failed, failed (the
#                                      error's code and message: push_refused, …)
#   verify.json (a3s-iso.verify.v1)    a document that breaks a rule: the rule and the field
#   an a3s-iso error document          (a3s-iso.error.v1) the error's code and message
# CHANGE_SET.json, the promoted document, lists the changed files by name (read from its patch
# with `git apply --numstat`); without it the comment gives their number only.
#
# It reads the documents with jq, which must be on PATH.
#
# Environment:
#   A3S_ISO_REBASED with land.json: `true` says the change set was rebased onto a moved branch
#   A3S_ISO_PUSHED  the commit the job pushed to the branch (named in the comment), or `none`
#                   when an applied change set was not pushed (the job failed after promote);
#                   unset: nothing is said about a push
#
# Exit status: 0 the comment was written; 2 usage, jq missing, or DOCUMENT (or CHANGE_SET.json)
# unreadable or not one of these documents.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: ci-comment.sh DOCUMENT [CHANGE_SET.json]" >&2
  exit 2
fi
doc=$1
change_set=${2:-}

fail() {
  echo "ci-comment.sh: $1" >&2
  exit 2
}

command -v jq >/dev/null 2>&1 || fail "jq is missing: this script reads a3s-iso's JSON documents with it"
jq -e 'type == "object"' "$doc" >/dev/null 2>&1 || fail "$doc is not a JSON document"

# field FILTER: a string or number of the document, or nothing.
field() {
  jq -r "($1) | select(type == \"string\" or type == \"number\")" "$doc"
}

# code TEXT: TEXT as a Markdown code span, whatever backticks it holds; a line break becomes a
# space (a code span cannot hold one).
code() {
  local text=${1//$'\n'/ } fence='`'
  while [[ "$text" == *"$fence"* ]]; do
    fence+='`'
  done
  if [[ "$text" == '`'* || "$text" == *'`' ]]; then
    printf '%s %s %s' "$fence" "$text" "$fence"
  else
    printf '%s%s%s' "$fence" "$text" "$fence"
  fi
}

# items: each NUL-terminated name on stdin as a list item.
items() {
  local name
  while IFS= read -r -d '' name; do
    printf -- '- %s\n' "$(code "$name")"
  done
}

# changed_files: the names the change set's patch touches, NUL-terminated (a rename gives its
# new name).
changed_files() {
  local patch fields=() i=0
  patch=$(mktemp "${TMPDIR:-/tmp}/a3s-iso-comment.XXXXXX")
  # shellcheck disable=SC2064 # expand now
  trap "rm -f '$patch'" EXIT
  jq -r '.patch_base64' "$change_set" | base64 -d >"$patch" ||
    fail "$change_set holds no readable patch"
  # --numstat -z: "ADDED\tDELETED\tPATH\0", or "ADDED\tDELETED\t\0FROM\0TO\0" for a rename.
  mapfile -d '' fields < <(git apply --numstat -z "$patch")
  while [ "$i" -lt "${#fields[@]}" ]; do
    local name=${fields[i]#*$'\t'}
    name=${name#*$'\t'}
    if [ -z "$name" ]; then
      name=${fields[i + 2]}
      i=$((i + 3))
    else
      i=$((i + 1))
    fi
    printf '%s\0' "$name"
  done
}

if [ -n "$change_set" ]; then
  jq -e '.patch_base64 | type == "string"' "$change_set" >/dev/null 2>&1 ||
    fail "$change_set is not a change-set document"
fi

schema=$(field .schema)
case "$schema" in
  a3s-iso.promote.v1 | a3s-iso.land.v1 | a3s-iso.verify.v1 | a3s-iso.error.v1) ;;
  *) fail "$doc is not a promote, land, verify or error document of a3s-iso (schema '$schema')" ;;
esac
digest=$(field '.digest // .patch_digest // .sessions[0].digest')
pushed=${A3S_ISO_PUSHED:-}

echo "### a3s-iso: the agent's change set"
echo
case "$schema" in
  a3s-iso.promote.v1)
    outcome=$(field .outcome)
    files=$(field .files_changed)
    case "$outcome" in
      applied | idempotent)
        if [ "$outcome" = applied ]; then
          line="**Applied**: $files file(s) changed"
          if jq -e '.base_matches_head == false' "$doc" >/dev/null; then
            line+=", rebased onto the moved branch (it moved since the agent started; the change applied cleanly onto it)"
          fi
          case "$pushed" in
            "") line+="." ;;
            none) line+=", but **not pushed**: the job failed before the commit reached the branch; see the job's log." ;;
            *) line+=", committed and pushed to the branch as $(code "$pushed")." ;;
          esac
        else
          line="**Landed before** (idempotent): nothing was applied this time ($files file(s) in the change set)."
        fi
        echo "$line"
        if [ -n "$change_set" ]; then
          echo
          changed_files | items
        fi
        ;;
      empty)
        echo "**Empty**: the agent changed nothing; there is nothing to commit."
        ;;
      conflict)
        echo "**Conflict** ($(code "$(field .reason)")): the change set does not fit the branch; nothing was applied or pushed."
        if jq -e '.conflicting_paths | length > 0' "$doc" >/dev/null; then
          echo
          echo "Conflicting paths:"
          echo
          jq -j '.conflicting_paths[] | . + "\u0000"' "$doc" | items
        fi
        detail=$(field .detail)
        if [ -n "$detail" ]; then
          echo
          echo '<details><summary>What promote said</summary>'
          echo
          fence='```'
          while [[ "$detail" == *"$fence"* ]]; do
            fence+='`'
          done
          printf '%stext\n%s\n%s\n' "$fence" "$detail" "$fence"
          echo
          echo '</details>'
        fi
        ;;
      partial)
        echo "**Partial**: the change set landed, but a nested repository's did not; see the job's a3s-iso-artifacts (promote.json)."
        ;;
      *)
        echo "**$outcome**: see the job's log."
        ;;
    esac
    ;;
  a3s-iso.land.v1)
    # land --push of the change set: .sessions[0] is its entry.
    outcome=$(field '.sessions[0].outcome')
    attempts=$(field '.sessions[0].push.attempts')
    commit=$(field '.sessions[0].commit')
    case "$outcome" in
      landed)
        line="**Landed**: merged onto the branch's tip"
        if jq -e '.sessions[0].push.tested_tree != null' "$doc" >/dev/null; then
          line+=", tested there (exit 0)"
        fi
        line+=" and pushed as $(code "$commit"), in $attempts push attempt(s)"
        if [ "${attempts:-1}" -gt 1 ]; then
          line+=" (the branch moved under the earlier ones: merged, tested and pushed again onto its new tip)"
        fi
        if [ "${A3S_ISO_REBASED:-}" = true ]; then
          line+="; rebased onto the moved branch (it moved since the agent started; the change merged cleanly onto it)"
        fi
        echo "$line."
        if [ -n "$change_set" ]; then
          echo
          changed_files | items
        fi
        ;;
      idempotent)
        echo "**Landed before** (idempotent): the branch holds this change set already, as $(code "$commit"); nothing was pushed."
        if [ -n "$change_set" ]; then
          echo
          changed_files | items
        fi
        ;;
      empty)
        echo "**Empty**: the change set changes nothing on the branch; nothing was pushed."
        ;;
      conflict)
        echo "**Conflict** ($(code "$(field '.sessions[0].reason')")): the change set does not fit the branch's tip; nothing was pushed."
        if jq -e '.sessions[0].conflicting_paths | length > 0' "$doc" >/dev/null; then
          echo
          echo "Conflicting paths:"
          echo
          jq -j '.sessions[0].conflicting_paths[] | . + "\u0000"' "$doc" | items
        fi
        ;;
      test_failed)
        echo "**Test failed** (exit $(field '.sessions[0].test_exit_code // "by a signal"')) on the branch's tip with the change set; nothing was pushed."
        ;;
      failed)
        echo "**Failed**: $(code "$(field '.sessions[0].error.code')"), after $attempts push attempt(s); nothing was pushed: $(code "$(field '.sessions[0].error.message')")"
        ;;
      *)
        echo "**$outcome**: see the job's log."
        ;;
    esac
    ;;
  a3s-iso.verify.v1)
    if jq -e '.valid == false' "$doc" >/dev/null; then
      echo "**Invalid**: the change-set document breaks rule $(code "$(field .rule)") at field $(code "$(field .field)"); nothing was applied: $(code "$(field .message)")"
    else
      echo "**Valid**: the change-set document was verified; it was not promoted (see the job's log)."
    fi
    ;;
  a3s-iso.error.v1)
    echo "**Failed**: a3s-iso stopped with $(code "$(field .error.code)"); nothing was applied: $(code "$(field .error.message)")"
    ;;
esac
if [ -n "$digest" ]; then
  echo
  echo "Change set $(code "$digest")"
fi
