# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_a3s_iso_global_optspecs
    string join \n C/repo= json q/quiet state-dir= color= git= lock-timeout= h/help V/version
end

function __fish_a3s_iso_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_a3s_iso_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_a3s_iso_using_subcommand
    set -l cmd (__fish_a3s_iso_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -s h -l help -d 'Print help'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -s V -l version -d 'Print version'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "bind" -d 'Create (or reuse) a session\'s isolation: a detached worktree next to the source'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "list" -d 'List sessions with their state, owner liveness and whether HEAD moved'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "run" -d 'Run a command inside a session\'s isolation (sandboxed) and record its change set'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "capture" -d 'Snapshot a session into a pinned tree and a change-set document'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "diff" -d 'Show the change set a promote would apply now (or a document\'s, or a promoted one\'s)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "show" -d 'Show one session in full: its isolation, owner, runs and promotions'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "promote" -d 'Apply a session\'s (or a document\'s) change set to the source, exactly once'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "rebase" -d 'Move a session onto a new base (default: the source\'s HEAD) inside its isolation'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "land" -d 'Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "overlaps" -d 'Predict which live sessions\' work would conflict, and where (no tree is touched)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "push" -d 'Publish a change set on a git remote as refs/a3s-iso/changes/<digest>'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "fetch" -d 'Fetch change sets from a git remote and verify them, without promoting'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "sweep" -d 'Reclaim dead isolations; never live, foreign, unknown or retained ones'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "retain" -d 'Pin a session\'s isolation for inspection, safe from sweep and git worktree prune'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "discard" -d 'Remove a session\'s isolation; never touches the source'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "gc" -d 'Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "pool" -d 'Keep spare isolations ready, so that bind takes one instead of checking out'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "config" -d 'Show the configuration in effect and where each value came from (config trust: approve the repository\'s file)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "profile" -d 'Review what runs changed in a profile\'s hooks, MCP servers and instructions for this repository: diff, accept, reject'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "verify" -d 'Check a change-set document against every rule of the format'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "changes" -d 'Answer a change-set request: print the stored change-set document of the run it names'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "path" -d 'Print a session\'s isolation path (for cd)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "log" -d 'List promotions from the journal, newest first'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "mcp" -d 'Serve the commands as tools of an MCP server on stdin and stdout, for agents'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "doctor" -d 'Check whether a3s-iso can work here: git, the run sandbox, file system, state'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "version" -d 'Print the version of a3s-iso and git, and the kernel features the sandbox relies on'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "hook" -d 'Run an agent harness\'s hook: Claude Code\'s WorktreeCreate and WorktreeRemove'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "init" -d 'Configure an agent harness to work in a3s-iso isolations (Claude Code\'s worktree hooks)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "shell-init" -d 'Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell\'s rc file)'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "completions" -d 'Print shell completions'
complete -c a3s-iso -n "__fish_a3s_iso_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l base-dir -d 'Create the isolation in DIR instead of next to the source' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l owner -d 'Who owns the session: `none` (no owner process: for scripts and CI; sweep keeps it unless --include-ownerless) or `pid:N` (default: the parent of a3s-iso, e.g. your shell)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l copy-ignored -d 'Copy the source\'s ignored files that the gitignore PATTERNs match (build caches such as target, node_modules/) into the new isolation, cloned where the file system can; the session then builds on them. The ignored files the source\'s .worktreeinclude names are copied too, without this option' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l owner-pid -d 'The process that owns the session (the same as --owner pid:PID)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -s s -l session -d 'The session id (generated when omitted); letters, digits, \'.\', \'_\' and \'-\'' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l allow-dirty -d 'Bind at HEAD even though the source has local changes (they stay out of the isolation)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l carry-wip -d 'Start from the source\'s working state: HEAD plus staged, unstaged and untracked changes (that state becomes the session\'s base, so change sets hold only the session\'s own work)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l submodules -d 'Initialise submodules (recursively) in the isolation, each cloned from the source\'s own copy of it (no network)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l read-only -d 'Record a session without an isolation tree; writing commands then refuse it'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l resume -d 'Rebuild a swept, discarded or missing isolation at the bound revision and restore its work into it as uncommitted changes (a swept session\'s snapshot, else the latest capture)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l no-setup -d 'Do not run the configuration\'s setup commands in the new isolation'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l ignore-config -d 'Bind without reading the repository\'s .a3s-iso.toml at all (trusted or not)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand bind" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l remote -d 'List the change sets pushed to REMOTE instead (refs/a3s-iso/changes/*)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l all -d 'Every session: discarded ones too, and those of every source this user has bound from'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -s z -d 'For scripts: one record per session ended by NUL, its fields (SESSION, STATE, REVISION, HEAD, OWNER, LAST RUN, PATH) separated by TAB, the path as its exact bytes; no header'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l allow-url -d 'With --remote: accept a URL or path that is not a configured remote'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l disk -d 'Measure each isolation\'s disk use: its apparent size and the bytes it holds alone (blocks copy-on-write clones share with the pristine tree are not counted), and the total with the pristine trees'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l run-id -d 'Name the run (generated when omitted); a run id is never reused' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l timeout -d 'Stop the command after DUR (SIGTERM to its process group, SIGKILL 2 s later)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l allow-write -d 'Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l allow-read -d 'Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l profile -d 'Run under the profile NAME: claude, codex, aider, generic or one of your configuration\'s (its home paths writable, kept apart by a3s-iso; its variables; its hosts)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l env -d 'Pass the variable NAME to the command, or set NAME=VALUE (repeatable)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l allow-host -d 'Let the command reach HOST[:PORT] through a3s-iso\'s HTTP proxy (repeatable)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l publish -d 'Publish PORT inside on the host\'s 127.0.0.1:HOST_PORT while the run lives (repeatable; HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l cache -d 'The cache of a preset\'s package manager (@npm: npm, @pypi: pip, @crates: cargo): private (a3s-iso\'s own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip, ~/.cargo/registry and ~/.cargo/git, made writable) or none' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l release-identity -d 'The agent_release_identity recorded in the run\'s change set (sha256:<64 hex>)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l allow-network -d 'Let the command reach the network (it is denied by default)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l no-sandbox -d 'Run the command as a plain host process, without the sandbox'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l ignore-config -d 'Run without reading the repository\'s .a3s-iso.toml at all (trusted or not)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l run-id -d 'Name the capture; capturing the same run id again returns the stored document' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -s o -l output -d 'Also write the change-set document to FILE' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l release-identity -d 'The agent_release_identity recorded in the document (sha256:<64 hex>)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand capture" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l change-set -d 'Show a change-set document\'s patch (verified first) instead of a session\'s' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l digest -d 'Show a promoted change set from its artifacts (<state>/artifacts/<hex>/change.patch): sha256:<hex>, or a unique prefix of at least 8 hex digits' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l stat -d 'Only the files, with lines added and removed'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l name-only -d 'Only the paths, one a line (quoted as git quotes unusual names)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -s z -d 'With --name-only: each path exactly as its bytes, ended by NUL, never quoted'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l since-promote -d 'What promote would apply now: the delta since the session\'s last promoted step (the default)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l cumulative -d 'The session\'s whole work since its base tree, promoted steps included'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand diff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -s z -d 'For scripts: `key<TAB>value` records ended by NUL, paths as their exact bytes, no colour and no quoting (runs and promotions are in --json)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l change-set -d 'Promote a change-set document instead of a session (validated completely first)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l from -d 'Promote a change set pushed to this remote (with --digest), fetched and verified first' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l digest -d 'With --from: the change set\'s digest; with --reapply: the promoted change set to land again (sha256:<hex>, or a unique prefix of at least 8 hex digits)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l max-bytes -d 'With --from: the largest patch to read, in bytes (K, M, G suffixes)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l mode -d 'How the work lands in the source' -r -f -a "patch\t'Apply the session\'s change set as uncommitted changes'
branch\t'Replay the session\'s commits (plus one for uncommitted leftovers) onto the current branch'"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l artifacts -d 'Where to write the patch and summary.json (default: under the state dir)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l note -d 'Record DIGEST as promoted by other means, so that promoting it later is idempotent' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -s m -l message -d 'Branch mode: the message of the commit that holds the session\'s uncommitted changes (default: one that names the session)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -s F -l file -d 'Branch mode: take that commit\'s message from FILE (`-` reads standard input)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l allow-url -d 'With --from: accept a URL or path that is not a configured remote'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l no-apply -d 'Write the artifacts (patch, summary.json) and stop: the source is left untouched'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l rebase -d 'When the source\'s HEAD moved since the bind (or the last step): rebase the session onto it first, and promote only if that was clean'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l reapply -d 'Land again a promoted change set whose landing is no longer in the checkout (you undid it): the session\'s last step, --digest\'s, or --change-set\'s; recorded as a new landing'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l onto-head -d 'Apply a change-set document onto the checkout even though its base tree is not HEAD\'s (when it applies cleanly)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand promote" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l onto -d 'The commit to move the session onto (default: the source\'s current HEAD)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l continue -d 'Go on after the conflicts were resolved in the isolation'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l abort -d 'Put the isolation back exactly as it was before the rebase'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand rebase" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -s s -l session -d 'A session to land, in this order (repeatable)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l test -d 'A shell command that must exit 0 in each session\'s sandbox on its rebased tree, run by `bash -e -o pipefail -c` as CI runs a step (a failure anywhere in a pipeline fails it)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l mode -d 'How each session lands' -r -f -a "squash\t'One commit per session on the current branch, its message naming the session'
branch\t'The session\'s commits replayed, plus one for its uncommitted changes'
patch\t'Uncommitted changes in the checkout (one session only)'"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -s m -l message -d 'The message of the squashed commit (branch mode: of the commit of uncommitted changes)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l push -d 'Land onto BRANCH of the configured remote REMOTE through the server, not onto your checkout: each landing commit is pushed with a lease on the tip it was built on and carries its change set\'s digest (A3S-Change-Set), so that it lands once from any machine' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l attempts -d 'With --push: the most pushes of one landing; a push another machine\'s beat is fetched, merged, tested and pushed again, up to this many times' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l change-set -d 'With --push: a change-set document to land after the sessions (repeatable), as `capture -o` wrote it; verified first, its test run in a scratch isolation' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l from -d 'With --push: land the change sets pushed to this configured remote (`a3s-iso push`) that --digest names, after the documents; each fetched and verified first, its test run in a scratch isolation' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l digest -d 'With --from: a change set\'s digest (repeatable; sha256:<hex>, or a unique prefix of at least 8 hex digits)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l max-bytes -d 'With --from: the largest patch to read, in bytes (K, M, G suffixes)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l all -d 'Every live session of the source, oldest bind first'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l keep-going -d 'Go on with the rest after a session that does not land'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l no-sandbox -d 'Run the test command as a plain host process, without the sandbox'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l keep -d 'Keep each landed session\'s isolation (to go on working in steps); by default it goes back to the pool, or is discarded with its evidence kept'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l abort -d 'Drop the stopped queue; no session is touched'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand land" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand overlaps" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l change-set -d 'Push a change-set document instead of the session\'s change set' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l run -d 'Push the stored change set of this run of the session' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l digest -d 'With --delete: the change set to delete, or a unique prefix of at least 8 hex digits (repeatable)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l older-than -d 'With --delete: every change set dated more than DUR ago' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l allow-url -d 'Accept a URL or path that is not a configured remote'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l delete -d 'Delete change sets from the remote instead (with --digest or --older-than)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand push" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l digest -d 'Only this change set: sha256:<hex> or a unique prefix of at least 8 hex digits (default: every change set on the remote)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l max-bytes -d 'The largest patch to read, in bytes (K, M, G suffixes: powers of 1024)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l allow-url -d 'Accept a URL or path that is not a configured remote'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand fetch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l grace -d 'Keep in-flight, malformed and unrecorded isolations younger than DUR' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l retained-older-than -d 'Also reclaim retained isolations retained longer than DUR ago' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l all -d 'Sweep every source this user has bound from, not only this repository'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l dry-run -d 'Report what a sweep would do, and change nothing'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l no-capture -d 'Do not snapshot an isolation into its swept ref (refs/a3s-iso/swept/<id>) before removing it'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l include-ownerless -d 'Also reclaim ownerless sessions (bind --owner none) idle for longer than the grace'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand sweep" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -l reason -d 'Why the isolation is kept (recorded, and shown by git worktree list)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand retain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l all -d 'Every session bound from this checkout in this store, one after the other'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l purge -d 'Also delete everything of the session: record, refs, retained branch, change sets, artifacts (its journal entries stay)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand discard" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l older-than -d 'Remove only what is older than DUR (default: 30d; 0s: everything no session needs)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l remote -d 'Also delete the change sets on REMOTE dated before the window (with --all: every one)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l dry-run -d 'List what would be removed, and change nothing'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l all -d 'Remove everything stored for this source and state dir that no live or retained session needs, whatever its age, pool spares included (the uninstall path)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l allow-url -d 'With --remote: accept a URL or path that is not a configured remote'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand gc" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l size -d 'How many spare isolations to keep ready (0 removes them all); default: as set before' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l keep-ignored -d 'Ignored paths that a returned isolation keeps for the next session, as gitignore patterns (e.g. target, node_modules/); replaces the list set before. Shares build outputs between sessions. The ignored files the source\'s .worktreeinclude names are kept too' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l status -d 'Only report the pool; build and remove nothing'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l no-fill -d 'Record the settings but check nothing out now: spares come only from the trees that discard returns'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand pool" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand profile" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -l request -d 'The change-set request (a3s.code.agent-change-set-request.v1) to answer (- for standard input)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand changes" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -s s -l session -d 'The session (default: the isolation you are in, or the source\'s only live session)' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand path" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l limit -d 'At most N entries (the newest)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -s s -l session -d 'Only the promotions (or runs) of this session' -r -f -a "(command a3s-iso __complete sessions 2>/dev/null)"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l runs -d 'List the runs instead, with the command each ran, its working directory and sandbox settings'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand log" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -s s -l session -d 'Act also on this session of yours (repeatable; by default the server acts only on the sessions it binds, and on the one whose isolation it was started in)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-write -d 'Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-read -d 'Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l profile -d 'Run under the profile NAME: claude, codex, aider, generic or one of your configuration\'s (its home paths writable, kept apart by a3s-iso; its variables; its hosts)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l env -d 'Pass the variable NAME to the command, or set NAME=VALUE (repeatable)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-host -d 'Let the command reach HOST[:PORT] through a3s-iso\'s HTTP proxy (repeatable)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l publish -d 'Publish PORT inside on the host\'s 127.0.0.1:HOST_PORT while the run lives (repeatable; HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l cache -d 'The cache of a preset\'s package manager (@npm: npm, @pypi: pip, @crates: cargo): private (a3s-iso\'s own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip, ~/.cargo/registry and ~/.cargo/git, made writable) or none' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l timeout -d 'Stop each run after DUR at the latest (a call may ask for less)' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-output -d 'Let calls write files (run\'s and capture\'s output, promote\'s artifacts) beneath DIR (repeatable)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-input -d 'Let calls read change-set documents (diff\'s and promote\'s change_set) beneath DIR (repeatable)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-base-dir -d 'Let bind make isolations beneath DIR (its base_dir) (repeatable)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-promote -d 'Also offer the promote and land tools, which write to your checkout'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l all-sessions -d 'Act on every session of the repository, yours included (list, diff, discard, ...)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-network -d 'Let the command reach the network (it is denied by default)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l allow-no-sandbox -d 'Let a call run its command (or land\'s test) without the sandbox, as a host process'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand mcp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -l landlock-optional -d 'Accept a kernel without Landlock (ABI 3 or later) as a warning: run\'s read-only mounts still confine writes. By default both layers are required (exit 4 without Landlock)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand version" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand hook" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand init" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand shell-init" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -s C -l repo -d 'Run as if started in PATH (the source checkout or any directory in it)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -l state-dir -d 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -l color -d 'When to colour human output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -l git -d 'The git binary to run (default: git on PATH)' -r -F
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -l lock-timeout -d 'How long to wait for the repository lock held by another a3s-iso command' -r
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -l json -d 'Print exactly one JSON document on stdout (success or failure)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -s q -l quiet -d 'Print no narration or warnings on stderr'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "bind" -d 'Create (or reuse) a session\'s isolation: a detached worktree next to the source'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "list" -d 'List sessions with their state, owner liveness and whether HEAD moved'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "run" -d 'Run a command inside a session\'s isolation (sandboxed) and record its change set'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "capture" -d 'Snapshot a session into a pinned tree and a change-set document'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "diff" -d 'Show the change set a promote would apply now (or a document\'s, or a promoted one\'s)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "show" -d 'Show one session in full: its isolation, owner, runs and promotions'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "promote" -d 'Apply a session\'s (or a document\'s) change set to the source, exactly once'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "rebase" -d 'Move a session onto a new base (default: the source\'s HEAD) inside its isolation'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "land" -d 'Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "overlaps" -d 'Predict which live sessions\' work would conflict, and where (no tree is touched)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "push" -d 'Publish a change set on a git remote as refs/a3s-iso/changes/<digest>'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "fetch" -d 'Fetch change sets from a git remote and verify them, without promoting'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "sweep" -d 'Reclaim dead isolations; never live, foreign, unknown or retained ones'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "retain" -d 'Pin a session\'s isolation for inspection, safe from sweep and git worktree prune'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "discard" -d 'Remove a session\'s isolation; never touches the source'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "gc" -d 'Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "pool" -d 'Keep spare isolations ready, so that bind takes one instead of checking out'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "config" -d 'Show the configuration in effect and where each value came from (config trust: approve the repository\'s file)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "profile" -d 'Review what runs changed in a profile\'s hooks, MCP servers and instructions for this repository: diff, accept, reject'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "verify" -d 'Check a change-set document against every rule of the format'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "changes" -d 'Answer a change-set request: print the stored change-set document of the run it names'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "path" -d 'Print a session\'s isolation path (for cd)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "log" -d 'List promotions from the journal, newest first'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "mcp" -d 'Serve the commands as tools of an MCP server on stdin and stdout, for agents'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "doctor" -d 'Check whether a3s-iso can work here: git, the run sandbox, file system, state'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "version" -d 'Print the version of a3s-iso and git, and the kernel features the sandbox relies on'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "hook" -d 'Run an agent harness\'s hook: Claude Code\'s WorktreeCreate and WorktreeRemove'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "init" -d 'Configure an agent harness to work in a3s-iso isolations (Claude Code\'s worktree hooks)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "shell-init" -d 'Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell\'s rc file)'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "completions" -d 'Print shell completions'
complete -c a3s-iso -n "__fish_a3s_iso_using_subcommand help; and not __fish_seen_subcommand_from bind list run capture diff show promote rebase land overlaps push fetch sweep retain discard gc pool config profile verify changes path log mcp doctor version hook init shell-init completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
