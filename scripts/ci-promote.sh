#!/usr/bin/env bash
# A CI step that lands an agent's change set in the job's checkout, and fails the job when it
# cannot land cleanly.
#
#   scripts/ci-promote.sh CHANGE_SET.json [CHECKOUT]
#
# The change set was produced elsewhere (`a3s-iso capture -s ID -o CHANGE_SET.json`). This step:
#   1. verifies the document rule by rule (`verify --json`); a broken rule is annotated with the
#      rule and the field, and fails the job;
#   2. when the checkout's history already holds a commit with the trailer
#      `A3s-Iso-Change-Set: <digest>` (a re-run of the job on a fresh runner, after the first run
#      pushed its commit), records the digest as promoted (`promote --note`), so that it is not
#      applied again;
#   3. promotes it exactly once and reports *this* run's outcome, read from this run's
#      `promote --json` document: `applied`, `idempotent` (a re-run) and `empty` pass;
#      `conflict` and `partial` fail the job;
#   4. when that is `conflict` with reason `base_differs` (the branch moved since the agent
#      started), promotes it once more with `--onto-head`: onto the moved HEAD, when the patch
#      applies there cleanly. Landed that way it is reported as rebased (a notice, and
#      A3S_ISO_REBASED=true); still a conflict, the job fails as in 3, with the paths;
#   5. leaves the applied changes uncommitted for the next step (commit, push).
#
# It reads a3s-iso's JSON documents with jq, which must be on PATH (the recipes install it).
#
# Environment:
#   A3S_ISO_BIN            the binary (default: a3s-iso on PATH)
#   A3S_ISO_ARTIFACTS      where promote's artifacts go; default, outside the checkout:
#                          ${RUNNER_TEMP:-${TMPDIR:-/tmp}}/a3s-iso-artifacts-<digest hex>
#   A3S_ISO_CI             github | gitlab | plain: the annotation format (default: github when
#                          GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true, else plain)
#   A3S_ISO_PROMOTE_FLAGS  more promote flags, split on spaces (e.g. --reapply, to land the change
#                          set again in a checkout reset after this script applied it)
#   A3S_ISO_RETRY_ONTO_HEAD  false: a `base_differs` conflict fails the job without the retry
#                          with --onto-head (default: true)
#   A3S_ISO_LAND_PUSH      REMOTE/BRANCH: instead of steps 2 to 5, land the change set onto that
#                          branch of that remote with `land --push --change-set` (merged onto
#                          the branch's tip, tested with A3S_ISO_LAND_TEST when set, pushed with a
#                          lease, a lost race fetched and tried again, exactly once by its
#                          A3S-Change-Set trailer), the checkout untouched; land.json and, in
#                          outcome.env, A3S_ISO_PUSHED (the commit on the branch) and
#                          A3S_ISO_ATTEMPTS (pushes attempted). Outcomes: applied (landed),
#                          idempotent, empty pass; conflict and test_failed exit 3; a refused
#                          push, an unreachable remote or any error: a3s-iso's exit status
#   A3S_ISO_LAND_TEST      with A3S_ISO_LAND_PUSH: the test command (land --test)
#   A3S_ISO_LAND_FLAGS     with A3S_ISO_LAND_PUSH: more land flags, split on spaces
#                          (--no-sandbox, --attempts N)
#
# Written to the artifacts directory on every run, over what an earlier run left:
#   verify.json, promote.json (this run's documents: the last promote's, after a retry) and
#   outcome.env (shell-sourceable: A3S_ISO_OUTCOME, promote's outcome or `error`; A3S_ISO_DIGEST;
#   A3S_ISO_REBASED, true when the change set was applied onto a HEAD whose tree is not its base;
#   A3S_ISO_ARTIFACTS). A document that breaks a rule has no digest to name a directory by: it is
#   recorded (verify.json, A3S_ISO_OUTCOME=invalid) only in an A3S_ISO_ARTIFACTS set explicitly.
#   summary.json and the patch are promote's own, written by the run that applied the change
#   set. On GitHub the same values go to $GITHUB_OUTPUT (outcome, digest, rebased, artifacts),
#   and each annotation to $GITHUB_STEP_SUMMARY.
#
# Exit status: 0 landed (applied, idempotent, empty); 2 usage, or jq missing; 3 conflict or
# partial (a conflict applied nothing); 5 the document is invalid; otherwise a3s-iso's own exit
# status (1 error, 4 unavailable, 6 busy, ...), annotated with its error code.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: ci-promote.sh CHANGE_SET.json [CHECKOUT]" >&2
  exit 2
fi
change_set=$1
checkout=${2:-.}
iso=${A3S_ISO_BIN:-a3s-iso}

flavour=${A3S_ISO_CI:-}
if [ -z "$flavour" ]; then
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    flavour=github
  elif [ "${GITLAB_CI:-}" = true ]; then
    flavour=gitlab
  else
    flavour=plain
  fi
fi
case "$flavour" in
  github | gitlab | plain) ;;
  *) echo "ci-promote.sh: A3S_ISO_CI=$flavour: expected github, gitlab or plain" >&2; exit 2 ;;
esac
retry=${A3S_ISO_RETRY_ONTO_HEAD:-true}
case "$retry" in
  true | false) ;;
  *) echo "ci-promote.sh: A3S_ISO_RETRY_ONTO_HEAD=$retry: expected true or false" >&2; exit 2 ;;
esac

# GitHub reads workflow commands from stdout; data in them is %-escaped.
gh_escape() {
  local s=${1//'%'/%25}
  s=${s//$'\r'/%0D}
  printf '%s' "${s//$'\n'/%0A}"
}

# annotate LEVEL MESSAGE: LEVEL is error, warning or notice.
annotate() {
  local level=$1 message=$2
  case "$flavour" in
    github)
      printf '::%s title=a3s-iso promote::%s\n' "$level" "$(gh_escape "$message")"
      if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        printf -- '- a3s-iso promote %s: %s\n' "$level" "$message" >>"$GITHUB_STEP_SUMMARY"
      fi
      ;;
    gitlab)
      # GitLab has no annotations: a bold coloured line with a level word stands out in the log
      # (and still reads right with NO_COLOR).
      local colour
      case "$level" in
        error) colour='31;1' ;;
        warning) colour='33;1' ;;
        *) colour='32;1' ;;
      esac
      if [ -n "${NO_COLOR:-}" ]; then
        printf '%s: a3s-iso promote: %s\n' "${level^^}" "$message"
      else
        printf '\e[%sm%s: a3s-iso promote: %s\e[0m\n' "$colour" "${level^^}" "$message"
      fi
      ;;
    plain)
      if [ "$level" = notice ]; then
        printf 'a3s-iso promote: %s\n' "$message"
      else
        printf 'a3s-iso promote: %s: %s\n' "$level" "$message" >&2
      fi
      ;;
  esac
}

# GitLab folds the step's own narration into a section of the job log.
section() {
  [ "$flavour" = gitlab ] || return 0
  local which=$1
  if [ "$which" = start ]; then
    printf '\e[0Ksection_start:%s:a3s_iso_promote\r\e[0Ka3s-iso promote %s\n' "$(date +%s)" "$change_set"
  else
    printf '\e[0Ksection_end:%s:a3s_iso_promote\r\e[0K\n' "$(date +%s)"
  fi
}

# field FILE FILTER: a string or number of an a3s-iso document, read with jq (`.outcome`,
# `.error.code`). Prints nothing when it is absent, null or of another type, or when FILE is
# not JSON (a3s-iso printed no document).
field() {
  jq -r "($2) | select(type == \"string\" or type == \"number\")" "$1" 2>/dev/null || true
}

# paths FILE: a promote document's conflicting paths, comma-separated.
paths() {
  jq -r '.conflicting_paths | select(type == "array") | join(", ")' "$1" 2>/dev/null || true
}

if ! command -v jq >/dev/null 2>&1; then
  annotate error "jq is missing: this step reads a3s-iso's JSON documents with it (apt-get install jq, apk add jq)"
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/a3s-iso-ci.XXXXXX")
trap 'rm -rf "$work"' EXIT
section start
trap 'section end; rm -rf "$work"' EXIT

# failed_with STATUS DOCUMENT WHAT: annotate an error document (or a missing one) and exit.
failed_with() {
  local status=$1 doc=$2 what=$3 code message
  code=$(field "$doc" .error.code)
  message=$(field "$doc" .error.message)
  if [ -n "$code" ]; then
    annotate error "$what failed ($code, exit $status): $message"
  else
    annotate error "$what failed with exit status $status"
  fi
  exit "$status"
}

# record DIR OUTCOME DIGEST REBASED: this run's documents and outcome, over any earlier run's.
record() {
  mkdir -p "$1"
  rm -f "$1/verify.json" "$1/note.json" "$1/promote.json" "$1/land.json"
  cp "$work"/*.json "$1/"
  printf 'A3S_ISO_OUTCOME=%s\nA3S_ISO_DIGEST=%s\nA3S_ISO_REBASED=%s\nA3S_ISO_ARTIFACTS=%q\n' \
    "$2" "$3" "$4" "$1" >"$1/outcome.env"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'outcome=%s\ndigest=%s\nrebased=%s\nartifacts=%s\n' "$2" "$3" "$4" "$1" >>"$GITHUB_OUTPUT"
  fi
}

# land_push: the change set onto $A3S_ISO_LAND_PUSH through the server (land --push), reported
# and recorded; exits.
land_push() {
  local artifacts=${A3S_ISO_ARTIFACTS:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/a3s-iso-artifacts-${digest#sha256:}}
  local test=() outcome commit attempts reason code message rebased=false
  [ -z "${A3S_ISO_LAND_TEST:-}" ] || test=(--test "$A3S_ISO_LAND_TEST")
  status=0
  # shellcheck disable=SC2086 # the extra flags are split on purpose
  "$iso" --json -C "$checkout" land --push "$A3S_ISO_LAND_PUSH" --change-set "$change_set" \
    "${test[@]}" ${A3S_ISO_LAND_FLAGS:-} >"$work/land.json" || status=$?
  outcome=$(field "$work/land.json" '.sessions[0].outcome')
  commit=$(field "$work/land.json" '.sessions[0].commit')
  attempts=$(field "$work/land.json" '.sessions[0].push.attempts')
  reason=$(field "$work/land.json" '.sessions[0].reason')
  code=$(field "$work/land.json" '.sessions[0].error.code')
  message=$(field "$work/land.json" '.sessions[0].error.message')
  # Rebased: landed on a tip whose tree is not the one the agent started from.
  local built_on base
  built_on=$(field "$work/land.json" '.sessions[0].push.built_on')
  base=$(field "$change_set" .base_tree)
  if [ "$outcome" = landed ] && [ -n "$built_on" ] &&
    [ "$(git -C "$checkout" rev-parse -q --verify "$built_on^{tree}" 2>/dev/null)" != "${base#git-tree:}" ]; then
    rebased=true
  fi
  local recorded=${outcome:-error}
  [ "$recorded" != landed ] || recorded=applied
  [ "$recorded" != failed ] || recorded=error
  record "$artifacts" "$recorded" "$digest" "$rebased"
  printf 'A3S_ISO_PUSHED=%s\nA3S_ISO_ATTEMPTS=%s\n' "${commit:-}" "${attempts:-0}" >>"$artifacts/outcome.env"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'pushed=%s\nattempts=%s\n' "${commit:-}" "${attempts:-0}" >>"$GITHUB_OUTPUT"
  fi
  case "$outcome" in
    landed) annotate notice "landed $digest: pushed $commit to ${A3S_ISO_LAND_PUSH#*/} in $attempts push attempt(s) (artifacts: $artifacts)" ;;
    idempotent) annotate notice "idempotent: $digest landed before, as $commit; nothing was pushed" ;;
    empty) annotate notice "empty: the change set changes nothing on ${A3S_ISO_LAND_PUSH#*/}" ;;
    conflict)
      annotate error "conflict ($reason): the change set does not fit ${A3S_ISO_LAND_PUSH#*/}; nothing was pushed; conflicting paths: $(jq -r '.sessions[0].conflicting_paths | join(", ")' "$work/land.json")"
      exit 3 ;;
    test_failed)
      annotate error "the test failed (exit $(field "$work/land.json" '.sessions[0].test_exit_code // "by a signal"')) on ${A3S_ISO_LAND_PUSH#*/} with the change set; nothing was pushed"
      exit 3 ;;
    failed)
      annotate error "land --push failed ($code, exit $status, after ${attempts:-0} push attempt(s)): $message"
      exit "$status" ;;
    *) failed_with "$status" "$work/land.json" "land --push" ;;
  esac
  exit "$status"
}

status=0
"$iso" --json verify "$change_set" >"$work/verify.json" || status=$?
if [ "$status" -ne 0 ]; then
  if jq -e '.valid == false' "$work/verify.json" >/dev/null 2>&1; then
    rule=$(field "$work/verify.json" .rule)
    bad=$(field "$work/verify.json" .field)
    # No digest to name a directory by: recorded only where A3S_ISO_ARTIFACTS says.
    [ -z "${A3S_ISO_ARTIFACTS:-}" ] || record "$A3S_ISO_ARTIFACTS" invalid "" false
    annotate error "the change set is invalid: rule $rule broken at field $bad ($(field "$work/verify.json" .message)); nothing was applied"
    exit "$status"
  fi
  failed_with "$status" "$work/verify.json" verify
fi
digest=$(field "$work/verify.json" .patch_digest)
if [ -n "${A3S_ISO_LAND_PUSH:-}" ]; then
  land_push
fi
artifacts=${A3S_ISO_ARTIFACTS:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/a3s-iso-artifacts-${digest#sha256:}}
mkdir -p "$artifacts"
top=$(cd "$checkout" && git rev-parse --show-toplevel) || {
  annotate error "$checkout is not a git checkout"
  exit 2
}
case "$(cd "$artifacts" && pwd -P)/" in
  "$(cd "$top" && pwd -P)"/*)
    annotate warning "the artifacts directory $artifacts is inside the checkout: a later 'git add -A' would commit it" ;;
esac

# A re-run after the first run's commit was pushed: the branch holds the change set already.
landed=$(git -C "$top" log -F --grep="A3s-Iso-Change-Set: $digest" --format=%H -n 1 HEAD 2>/dev/null || true)
if [ -n "$landed" ]; then
  status=0
  "$iso" --json -C "$top" promote --note "$digest" >"$work/note.json" || status=$?
  [ "$status" -eq 0 ] || failed_with "$status" "$work/note.json" "promote --note"
fi

# promote [FLAG]: this run's promote document to $work/promote.json, its exit status to $status.
promote() {
  status=0
  # shellcheck disable=SC2086 # the extra flags are split on purpose
  "$iso" --json -C "$checkout" promote --change-set "$change_set" --artifacts "$artifacts" \
    ${A3S_ISO_PROMOTE_FLAGS:-} "$@" >"$work/promote.json" || status=$?
  outcome=$(field "$work/promote.json" .outcome)
  reason=$(field "$work/promote.json" .reason)
}

promote
moved=""
if [ "$outcome" = conflict ] && [ "$reason" = base_differs ] && [ "$retry" = true ]; then
  # The branch moved since the agent started: once more, onto the moved HEAD, where the patch
  # lands only if it applies cleanly (nothing was applied by the first attempt).
  moved=" (the branch moved since the change set was taken: base_differs)"
  annotate notice "the branch moved since the change set was taken (base_differs): promoting $digest again onto the moved HEAD with --onto-head"
  promote --onto-head
fi
rebased=false
if jq -e '.outcome == "applied" and .base_matches_head == false' "$work/promote.json" >/dev/null 2>&1; then
  rebased=true
fi
record "$artifacts" "${outcome:-error}" "$digest" "$rebased"

detail=$(field "$work/promote.json" .detail)
conflicting=$(paths "$work/promote.json")
case "$outcome" in
  applied)
    if [ "$rebased" = true ]; then
      annotate notice "applied $digest: $(field "$work/promote.json" .files_changed) file(s) changed, rebased onto the moved HEAD $(field "$work/promote.json" .current_revision), uncommitted in $top (artifacts: $artifacts)"
    else
      annotate notice "applied $digest: $(field "$work/promote.json" .files_changed) file(s) changed, uncommitted in $top (artifacts: $artifacts)"
    fi
    ;;
  idempotent)
    annotate notice "idempotent: $digest landed before; nothing was applied this time"
    ;;
  empty)
    annotate notice "empty: the change set changes nothing"
    ;;
  conflict)
    annotate error "conflict ($reason)${moved:+ onto the moved HEAD$moved}: the change set does not fit this checkout; nothing was applied${conflicting:+; conflicting paths: $conflicting}${detail:+ ($detail)}"
    exit 3
    ;;
  partial)
    annotate error "partial: the change set landed but a nested one did not; see $artifacts/promote.json"
    exit 3
    ;;
  "")
    failed_with "$status" "$work/promote.json" promote
    ;;
  *)
    annotate notice "$outcome"
    ;;
esac
exit "$status"
