
use builtin;
use str;

set edit:completion:arg-completer[a3s-iso] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'a3s-iso'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'a3s-iso'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand bind 'Create (or reuse) a session''s isolation: a detached worktree next to the source'
            cand list 'List sessions with their state, owner liveness and whether HEAD moved'
            cand run 'Run a command inside a session''s isolation (sandboxed) and record its change set'
            cand capture 'Snapshot a session into a pinned tree and a change-set document'
            cand diff 'Show the change set a promote would apply now (or a document''s, or a promoted one''s)'
            cand show 'Show one session in full: its isolation, owner, runs and promotions'
            cand promote 'Apply a session''s (or a document''s) change set to the source, exactly once'
            cand rebase 'Move a session onto a new base (default: the source''s HEAD) inside its isolation'
            cand land 'Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once'
            cand overlaps 'Predict which live sessions'' work would conflict, and where (no tree is touched)'
            cand push 'Publish a change set on a git remote as refs/a3s-iso/changes/<digest>'
            cand fetch 'Fetch change sets from a git remote and verify them, without promoting'
            cand sweep 'Reclaim dead isolations; never live, foreign, unknown or retained ones'
            cand retain 'Pin a session''s isolation for inspection, safe from sweep and git worktree prune'
            cand discard 'Remove a session''s isolation; never touches the source'
            cand gc 'Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch'
            cand pool 'Keep spare isolations ready, so that bind takes one instead of checking out'
            cand config 'Show the configuration in effect and where each value came from (config trust: approve the repository''s file)'
            cand profile 'Review what runs changed in a profile''s hooks, MCP servers and instructions for this repository: diff, accept, reject'
            cand verify 'Check a change-set document against every rule of the format'
            cand changes 'Answer a change-set request: print the stored change-set document of the run it names'
            cand path 'Print a session''s isolation path (for cd)'
            cand log 'List promotions from the journal, newest first'
            cand mcp 'Serve the commands as tools of an MCP server on stdin and stdout, for agents'
            cand doctor 'Check whether a3s-iso can work here: git, the run sandbox, file system, state'
            cand version 'Print the version of a3s-iso and git, and the kernel features the sandbox relies on'
            cand hook 'Run an agent harness''s hook: Claude Code''s WorktreeCreate and WorktreeRemove'
            cand init 'Configure an agent harness to work in a3s-iso isolations (Claude Code''s worktree hooks)'
            cand shell-init 'Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell''s rc file)'
            cand completions 'Print shell completions'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'a3s-iso;bind'= {
            cand --base-dir 'Create the isolation in DIR instead of next to the source'
            cand --owner 'Who owns the session: `none` (no owner process: for scripts and CI; sweep keeps it unless --include-ownerless) or `pid:N` (default: the parent of a3s-iso, e.g. your shell)'
            cand --copy-ignored 'Copy the source''s ignored files that the gitignore PATTERNs match (build caches such as target, node_modules/) into the new isolation, cloned where the file system can; the session then builds on them. The ignored files the source''s .worktreeinclude names are copied too, without this option'
            cand --owner-pid 'The process that owns the session (the same as --owner pid:PID)'
            cand -s 'The session id (generated when omitted); letters, digits, ''.'', ''_'' and ''-'''
            cand --session 'The session id (generated when omitted); letters, digits, ''.'', ''_'' and ''-'''
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --allow-dirty 'Bind at HEAD even though the source has local changes (they stay out of the isolation)'
            cand --carry-wip 'Start from the source''s working state: HEAD plus staged, unstaged and untracked changes (that state becomes the session''s base, so change sets hold only the session''s own work)'
            cand --submodules 'Initialise submodules (recursively) in the isolation, each cloned from the source''s own copy of it (no network)'
            cand --read-only 'Record a session without an isolation tree; writing commands then refuse it'
            cand --resume 'Rebuild a swept, discarded or missing isolation at the bound revision and restore its work into it as uncommitted changes (a swept session''s snapshot, else the latest capture)'
            cand --no-setup 'Do not run the configuration''s setup commands in the new isolation'
            cand --ignore-config 'Bind without reading the repository''s .a3s-iso.toml at all (trusted or not)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;list'= {
            cand --remote 'List the change sets pushed to REMOTE instead (refs/a3s-iso/changes/*)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --all 'Every session: discarded ones too, and those of every source this user has bound from'
            cand -z 'For scripts: one record per session ended by NUL, its fields (SESSION, STATE, REVISION, HEAD, OWNER, LAST RUN, PATH) separated by TAB, the path as its exact bytes; no header'
            cand --allow-url 'With --remote: accept a URL or path that is not a configured remote'
            cand --disk 'Measure each isolation''s disk use: its apparent size and the bytes it holds alone (blocks copy-on-write clones share with the pristine tree are not counted), and the total with the pristine trees'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;run'= {
            cand --run-id 'Name the run (generated when omitted); a run id is never reused'
            cand --timeout 'Stop the command after DUR (SIGTERM to its process group, SIGKILL 2 s later)'
            cand --allow-write 'Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)'
            cand --allow-read 'Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)'
            cand --profile 'Run under the profile NAME: claude, codex, aider, generic or one of your configuration''s (its home paths writable, kept apart by a3s-iso; its variables; its hosts)'
            cand --env 'Pass the variable NAME to the command, or set NAME=VALUE (repeatable)'
            cand --allow-host 'Let the command reach HOST[:PORT] through a3s-iso''s HTTP proxy (repeatable)'
            cand --publish 'Publish PORT inside on the host''s 127.0.0.1:HOST_PORT while the run lives (repeatable; HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)'
            cand --cache 'The cache of a preset''s package manager (@npm: npm, @pypi: pip, @crates: cargo): private (a3s-iso''s own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip, ~/.cargo/registry and ~/.cargo/git, made writable) or none'
            cand --release-identity 'The agent_release_identity recorded in the run''s change set (sha256:<64 hex>)'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --allow-network 'Let the command reach the network (it is denied by default)'
            cand --no-sandbox 'Run the command as a plain host process, without the sandbox'
            cand --ignore-config 'Run without reading the repository''s .a3s-iso.toml at all (trusted or not)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;capture'= {
            cand --run-id 'Name the capture; capturing the same run id again returns the stored document'
            cand -o 'Also write the change-set document to FILE'
            cand --output 'Also write the change-set document to FILE'
            cand --release-identity 'The agent_release_identity recorded in the document (sha256:<64 hex>)'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;diff'= {
            cand --change-set 'Show a change-set document''s patch (verified first) instead of a session''s'
            cand --digest 'Show a promoted change set from its artifacts (<state>/artifacts/<hex>/change.patch): sha256:<hex>, or a unique prefix of at least 8 hex digits'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --stat 'Only the files, with lines added and removed'
            cand --name-only 'Only the paths, one a line (quoted as git quotes unusual names)'
            cand -z 'With --name-only: each path exactly as its bytes, ended by NUL, never quoted'
            cand --since-promote 'What promote would apply now: the delta since the session''s last promoted step (the default)'
            cand --cumulative 'The session''s whole work since its base tree, promoted steps included'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;show'= {
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand -z 'For scripts: `key<TAB>value` records ended by NUL, paths as their exact bytes, no colour and no quoting (runs and promotions are in --json)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;promote'= {
            cand --change-set 'Promote a change-set document instead of a session (validated completely first)'
            cand --from 'Promote a change set pushed to this remote (with --digest), fetched and verified first'
            cand --digest 'With --from: the change set''s digest; with --reapply: the promoted change set to land again (sha256:<hex>, or a unique prefix of at least 8 hex digits)'
            cand --max-bytes 'With --from: the largest patch to read, in bytes (K, M, G suffixes)'
            cand --mode 'How the work lands in the source'
            cand --artifacts 'Where to write the patch and summary.json (default: under the state dir)'
            cand --note 'Record DIGEST as promoted by other means, so that promoting it later is idempotent'
            cand -m 'Branch mode: the message of the commit that holds the session''s uncommitted changes (default: one that names the session)'
            cand --message 'Branch mode: the message of the commit that holds the session''s uncommitted changes (default: one that names the session)'
            cand -F 'Branch mode: take that commit''s message from FILE (`-` reads standard input)'
            cand --file 'Branch mode: take that commit''s message from FILE (`-` reads standard input)'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --allow-url 'With --from: accept a URL or path that is not a configured remote'
            cand --no-apply 'Write the artifacts (patch, summary.json) and stop: the source is left untouched'
            cand --rebase 'When the source''s HEAD moved since the bind (or the last step): rebase the session onto it first, and promote only if that was clean'
            cand --reapply 'Land again a promoted change set whose landing is no longer in the checkout (you undid it): the session''s last step, --digest''s, or --change-set''s; recorded as a new landing'
            cand --onto-head 'Apply a change-set document onto the checkout even though its base tree is not HEAD''s (when it applies cleanly)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;rebase'= {
            cand --onto 'The commit to move the session onto (default: the source''s current HEAD)'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --continue 'Go on after the conflicts were resolved in the isolation'
            cand --abort 'Put the isolation back exactly as it was before the rebase'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;land'= {
            cand -s 'A session to land, in this order (repeatable)'
            cand --session 'A session to land, in this order (repeatable)'
            cand --test 'A shell command that must exit 0 in each session''s sandbox on its rebased tree, run by `bash -e -o pipefail -c` as CI runs a step (a failure anywhere in a pipeline fails it)'
            cand --mode 'How each session lands'
            cand -m 'The message of the squashed commit (branch mode: of the commit of uncommitted changes)'
            cand --message 'The message of the squashed commit (branch mode: of the commit of uncommitted changes)'
            cand --push 'Land onto BRANCH of the configured remote REMOTE through the server, not onto your checkout: each landing commit is pushed with a lease on the tip it was built on and carries its change set''s digest (A3S-Change-Set), so that it lands once from any machine'
            cand --attempts 'With --push: the most pushes of one landing; a push another machine''s beat is fetched, merged, tested and pushed again, up to this many times'
            cand --change-set 'With --push: a change-set document to land after the sessions (repeatable), as `capture -o` wrote it; verified first, its test run in a scratch isolation'
            cand --from 'With --push: land the change sets pushed to this configured remote (`a3s-iso push`) that --digest names, after the documents; each fetched and verified first, its test run in a scratch isolation'
            cand --digest 'With --from: a change set''s digest (repeatable; sha256:<hex>, or a unique prefix of at least 8 hex digits)'
            cand --max-bytes 'With --from: the largest patch to read, in bytes (K, M, G suffixes)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --all 'Every live session of the source, oldest bind first'
            cand --keep-going 'Go on with the rest after a session that does not land'
            cand --no-sandbox 'Run the test command as a plain host process, without the sandbox'
            cand --keep 'Keep each landed session''s isolation (to go on working in steps); by default it goes back to the pool, or is discarded with its evidence kept'
            cand --abort 'Drop the stopped queue; no session is touched'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;overlaps'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;push'= {
            cand --change-set 'Push a change-set document instead of the session''s change set'
            cand --run 'Push the stored change set of this run of the session'
            cand --digest 'With --delete: the change set to delete, or a unique prefix of at least 8 hex digits (repeatable)'
            cand --older-than 'With --delete: every change set dated more than DUR ago'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --allow-url 'Accept a URL or path that is not a configured remote'
            cand --delete 'Delete change sets from the remote instead (with --digest or --older-than)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;fetch'= {
            cand --digest 'Only this change set: sha256:<hex> or a unique prefix of at least 8 hex digits (default: every change set on the remote)'
            cand --max-bytes 'The largest patch to read, in bytes (K, M, G suffixes: powers of 1024)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --allow-url 'Accept a URL or path that is not a configured remote'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;sweep'= {
            cand --grace 'Keep in-flight, malformed and unrecorded isolations younger than DUR'
            cand --retained-older-than 'Also reclaim retained isolations retained longer than DUR ago'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --all 'Sweep every source this user has bound from, not only this repository'
            cand --dry-run 'Report what a sweep would do, and change nothing'
            cand --no-capture 'Do not snapshot an isolation into its swept ref (refs/a3s-iso/swept/<id>) before removing it'
            cand --include-ownerless 'Also reclaim ownerless sessions (bind --owner none) idle for longer than the grace'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;retain'= {
            cand --reason 'Why the isolation is kept (recorded, and shown by git worktree list)'
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;discard'= {
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --all 'Every session bound from this checkout in this store, one after the other'
            cand --purge 'Also delete everything of the session: record, refs, retained branch, change sets, artifacts (its journal entries stay)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;gc'= {
            cand --older-than 'Remove only what is older than DUR (default: 30d; 0s: everything no session needs)'
            cand --remote 'Also delete the change sets on REMOTE dated before the window (with --all: every one)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --dry-run 'List what would be removed, and change nothing'
            cand --all 'Remove everything stored for this source and state dir that no live or retained session needs, whatever its age, pool spares included (the uninstall path)'
            cand --allow-url 'With --remote: accept a URL or path that is not a configured remote'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;pool'= {
            cand --size 'How many spare isolations to keep ready (0 removes them all); default: as set before'
            cand --keep-ignored 'Ignored paths that a returned isolation keeps for the next session, as gitignore patterns (e.g. target, node_modules/); replaces the list set before. Shares build outputs between sessions. The ignored files the source''s .worktreeinclude names are kept too'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --status 'Only report the pool; build and remove nothing'
            cand --no-fill 'Record the settings but check nothing out now: spares come only from the trees that discard returns'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;config'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;profile'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;verify'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;changes'= {
            cand --request 'The change-set request (a3s.code.agent-change-set-request.v1) to answer (- for standard input)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;path'= {
            cand -s 'The session (default: the isolation you are in, or the source''s only live session)'
            cand --session 'The session (default: the isolation you are in, or the source''s only live session)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;log'= {
            cand --limit 'At most N entries (the newest)'
            cand -s 'Only the promotions (or runs) of this session'
            cand --session 'Only the promotions (or runs) of this session'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --runs 'List the runs instead, with the command each ran, its working directory and sandbox settings'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;mcp'= {
            cand -s 'Act also on this session of yours (repeatable; by default the server acts only on the sessions it binds, and on the one whose isolation it was started in)'
            cand --session 'Act also on this session of yours (repeatable; by default the server acts only on the sessions it binds, and on the one whose isolation it was started in)'
            cand --allow-write 'Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)'
            cand --allow-read 'Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)'
            cand --profile 'Run under the profile NAME: claude, codex, aider, generic or one of your configuration''s (its home paths writable, kept apart by a3s-iso; its variables; its hosts)'
            cand --env 'Pass the variable NAME to the command, or set NAME=VALUE (repeatable)'
            cand --allow-host 'Let the command reach HOST[:PORT] through a3s-iso''s HTTP proxy (repeatable)'
            cand --publish 'Publish PORT inside on the host''s 127.0.0.1:HOST_PORT while the run lives (repeatable; HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)'
            cand --cache 'The cache of a preset''s package manager (@npm: npm, @pypi: pip, @crates: cargo): private (a3s-iso''s own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip, ~/.cargo/registry and ~/.cargo/git, made writable) or none'
            cand --timeout 'Stop each run after DUR at the latest (a call may ask for less)'
            cand --allow-output 'Let calls write files (run''s and capture''s output, promote''s artifacts) beneath DIR (repeatable)'
            cand --allow-input 'Let calls read change-set documents (diff''s and promote''s change_set) beneath DIR (repeatable)'
            cand --allow-base-dir 'Let bind make isolations beneath DIR (its base_dir) (repeatable)'
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --allow-promote 'Also offer the promote and land tools, which write to your checkout'
            cand --all-sessions 'Act on every session of the repository, yours included (list, diff, discard, ...)'
            cand --allow-network 'Let the command reach the network (it is denied by default)'
            cand --allow-no-sandbox 'Let a call run its command (or land''s test) without the sandbox, as a host process'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;doctor'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --landlock-optional 'Accept a kernel without Landlock (ABI 3 or later) as a warning: run''s read-only mounts still confine writes. By default both layers are required (exit 4 without Landlock)'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;version'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;hook'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;init'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;shell-init'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;completions'= {
            cand -C 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --repo 'Run as if started in PATH (the source checkout or any directory in it)'
            cand --state-dir 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso'
            cand --color 'When to colour human output'
            cand --git 'The git binary to run (default: git on PATH)'
            cand --lock-timeout 'How long to wait for the repository lock held by another a3s-iso command'
            cand --json 'Print exactly one JSON document on stdout (success or failure)'
            cand -q 'Print no narration or warnings on stderr'
            cand --quiet 'Print no narration or warnings on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'a3s-iso;help'= {
            cand bind 'Create (or reuse) a session''s isolation: a detached worktree next to the source'
            cand list 'List sessions with their state, owner liveness and whether HEAD moved'
            cand run 'Run a command inside a session''s isolation (sandboxed) and record its change set'
            cand capture 'Snapshot a session into a pinned tree and a change-set document'
            cand diff 'Show the change set a promote would apply now (or a document''s, or a promoted one''s)'
            cand show 'Show one session in full: its isolation, owner, runs and promotions'
            cand promote 'Apply a session''s (or a document''s) change set to the source, exactly once'
            cand rebase 'Move a session onto a new base (default: the source''s HEAD) inside its isolation'
            cand land 'Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once'
            cand overlaps 'Predict which live sessions'' work would conflict, and where (no tree is touched)'
            cand push 'Publish a change set on a git remote as refs/a3s-iso/changes/<digest>'
            cand fetch 'Fetch change sets from a git remote and verify them, without promoting'
            cand sweep 'Reclaim dead isolations; never live, foreign, unknown or retained ones'
            cand retain 'Pin a session''s isolation for inspection, safe from sweep and git worktree prune'
            cand discard 'Remove a session''s isolation; never touches the source'
            cand gc 'Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch'
            cand pool 'Keep spare isolations ready, so that bind takes one instead of checking out'
            cand config 'Show the configuration in effect and where each value came from (config trust: approve the repository''s file)'
            cand profile 'Review what runs changed in a profile''s hooks, MCP servers and instructions for this repository: diff, accept, reject'
            cand verify 'Check a change-set document against every rule of the format'
            cand changes 'Answer a change-set request: print the stored change-set document of the run it names'
            cand path 'Print a session''s isolation path (for cd)'
            cand log 'List promotions from the journal, newest first'
            cand mcp 'Serve the commands as tools of an MCP server on stdin and stdout, for agents'
            cand doctor 'Check whether a3s-iso can work here: git, the run sandbox, file system, state'
            cand version 'Print the version of a3s-iso and git, and the kernel features the sandbox relies on'
            cand hook 'Run an agent harness''s hook: Claude Code''s WorktreeCreate and WorktreeRemove'
            cand init 'Configure an agent harness to work in a3s-iso isolations (Claude Code''s worktree hooks)'
            cand shell-init 'Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell''s rc file)'
            cand completions 'Print shell completions'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'a3s-iso;help;bind'= {
        }
        &'a3s-iso;help;list'= {
        }
        &'a3s-iso;help;run'= {
        }
        &'a3s-iso;help;capture'= {
        }
        &'a3s-iso;help;diff'= {
        }
        &'a3s-iso;help;show'= {
        }
        &'a3s-iso;help;promote'= {
        }
        &'a3s-iso;help;rebase'= {
        }
        &'a3s-iso;help;land'= {
        }
        &'a3s-iso;help;overlaps'= {
        }
        &'a3s-iso;help;push'= {
        }
        &'a3s-iso;help;fetch'= {
        }
        &'a3s-iso;help;sweep'= {
        }
        &'a3s-iso;help;retain'= {
        }
        &'a3s-iso;help;discard'= {
        }
        &'a3s-iso;help;gc'= {
        }
        &'a3s-iso;help;pool'= {
        }
        &'a3s-iso;help;config'= {
        }
        &'a3s-iso;help;profile'= {
        }
        &'a3s-iso;help;verify'= {
        }
        &'a3s-iso;help;changes'= {
        }
        &'a3s-iso;help;path'= {
        }
        &'a3s-iso;help;log'= {
        }
        &'a3s-iso;help;mcp'= {
        }
        &'a3s-iso;help;doctor'= {
        }
        &'a3s-iso;help;version'= {
        }
        &'a3s-iso;help;hook'= {
        }
        &'a3s-iso;help;init'= {
        }
        &'a3s-iso;help;shell-init'= {
        }
        &'a3s-iso;help;completions'= {
        }
        &'a3s-iso;help;help'= {
        }
    ]
    $completions[$command]
}
