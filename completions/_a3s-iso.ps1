
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'a3s-iso' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'a3s-iso'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'a3s-iso' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('bind', 'bind', [CompletionResultType]::ParameterValue, 'Create (or reuse) a session''s isolation: a detached worktree next to the source')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List sessions with their state, owner liveness and whether HEAD moved')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a command inside a session''s isolation (sandboxed) and record its change set')
            [CompletionResult]::new('capture', 'capture', [CompletionResultType]::ParameterValue, 'Snapshot a session into a pinned tree and a change-set document')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Show the change set a promote would apply now (or a document''s, or a promoted one''s)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one session in full: its isolation, owner, runs and promotions')
            [CompletionResult]::new('promote', 'promote', [CompletionResultType]::ParameterValue, 'Apply a session''s (or a document''s) change set to the source, exactly once')
            [CompletionResult]::new('rebase', 'rebase', [CompletionResultType]::ParameterValue, 'Move a session onto a new base (default: the source''s HEAD) inside its isolation')
            [CompletionResult]::new('land', 'land', [CompletionResultType]::ParameterValue, 'Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once')
            [CompletionResult]::new('overlaps', 'overlaps', [CompletionResultType]::ParameterValue, 'Predict which live sessions'' work would conflict, and where (no tree is touched)')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Publish a change set on a git remote as refs/a3s-iso/changes/<digest>')
            [CompletionResult]::new('fetch', 'fetch', [CompletionResultType]::ParameterValue, 'Fetch change sets from a git remote and verify them, without promoting')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Reclaim dead isolations; never live, foreign, unknown or retained ones')
            [CompletionResult]::new('retain', 'retain', [CompletionResultType]::ParameterValue, 'Pin a session''s isolation for inspection, safe from sweep and git worktree prune')
            [CompletionResult]::new('discard', 'discard', [CompletionResultType]::ParameterValue, 'Remove a session''s isolation; never touches the source')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch')
            [CompletionResult]::new('pool', 'pool', [CompletionResultType]::ParameterValue, 'Keep spare isolations ready, so that bind takes one instead of checking out')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show the configuration in effect and where each value came from (config trust: approve the repository''s file)')
            [CompletionResult]::new('profile', 'profile', [CompletionResultType]::ParameterValue, 'Review what runs changed in a profile''s hooks, MCP servers and instructions for this repository: diff, accept, reject')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a change-set document against every rule of the format')
            [CompletionResult]::new('changes', 'changes', [CompletionResultType]::ParameterValue, 'Answer a change-set request: print the stored change-set document of the run it names')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print a session''s isolation path (for cd)')
            [CompletionResult]::new('log', 'log', [CompletionResultType]::ParameterValue, 'List promotions from the journal, newest first')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve the commands as tools of an MCP server on stdin and stdout, for agents')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check whether a3s-iso can work here: git, the run sandbox, file system, state')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the version of a3s-iso and git, and the kernel features the sandbox relies on')
            [CompletionResult]::new('hook', 'hook', [CompletionResultType]::ParameterValue, 'Run an agent harness''s hook: Claude Code''s WorktreeCreate and WorktreeRemove')
            [CompletionResult]::new('init', 'init', [CompletionResultType]::ParameterValue, 'Configure an agent harness to work in a3s-iso isolations (Claude Code''s worktree hooks)')
            [CompletionResult]::new('shell-init', 'shell-init', [CompletionResultType]::ParameterValue, 'Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell''s rc file)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print shell completions')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'a3s-iso;bind' {
            [CompletionResult]::new('--base-dir', '--base-dir', [CompletionResultType]::ParameterName, 'Create the isolation in DIR instead of next to the source')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'Who owns the session: `none` (no owner process: for scripts and CI; sweep keeps it unless --include-ownerless) or `pid:N` (default: the parent of a3s-iso, e.g. your shell)')
            [CompletionResult]::new('--copy-ignored', '--copy-ignored', [CompletionResultType]::ParameterName, 'Copy the source''s ignored files that the gitignore PATTERNs match (build caches such as target, node_modules/) into the new isolation, cloned where the file system can; the session then builds on them. The ignored files the source''s .worktreeinclude names are copied too, without this option')
            [CompletionResult]::new('--owner-pid', '--owner-pid', [CompletionResultType]::ParameterName, 'The process that owns the session (the same as --owner pid:PID)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session id (generated when omitted); letters, digits, ''.'', ''_'' and ''-''')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session id (generated when omitted); letters, digits, ''.'', ''_'' and ''-''')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--allow-dirty', '--allow-dirty', [CompletionResultType]::ParameterName, 'Bind at HEAD even though the source has local changes (they stay out of the isolation)')
            [CompletionResult]::new('--carry-wip', '--carry-wip', [CompletionResultType]::ParameterName, 'Start from the source''s working state: HEAD plus staged, unstaged and untracked changes (that state becomes the session''s base, so change sets hold only the session''s own work)')
            [CompletionResult]::new('--submodules', '--submodules', [CompletionResultType]::ParameterName, 'Initialise submodules (recursively) in the isolation, each cloned from the source''s own copy of it (no network)')
            [CompletionResult]::new('--read-only', '--read-only', [CompletionResultType]::ParameterName, 'Record a session without an isolation tree; writing commands then refuse it')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Rebuild a swept, discarded or missing isolation at the bound revision and restore its work into it as uncommitted changes (a swept session''s snapshot, else the latest capture)')
            [CompletionResult]::new('--no-setup', '--no-setup', [CompletionResultType]::ParameterName, 'Do not run the configuration''s setup commands in the new isolation')
            [CompletionResult]::new('--ignore-config', '--ignore-config', [CompletionResultType]::ParameterName, 'Bind without reading the repository''s .a3s-iso.toml at all (trusted or not)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;list' {
            [CompletionResult]::new('--remote', '--remote', [CompletionResultType]::ParameterName, 'List the change sets pushed to REMOTE instead (refs/a3s-iso/changes/*)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Every session: discarded ones too, and those of every source this user has bound from')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'For scripts: one record per session ended by NUL, its fields (SESSION, STATE, REVISION, HEAD, OWNER, LAST RUN, PATH) separated by TAB, the path as its exact bytes; no header')
            [CompletionResult]::new('--allow-url', '--allow-url', [CompletionResultType]::ParameterName, 'With --remote: accept a URL or path that is not a configured remote')
            [CompletionResult]::new('--disk', '--disk', [CompletionResultType]::ParameterName, 'Measure each isolation''s disk use: its apparent size and the bytes it holds alone (blocks copy-on-write clones share with the pristine tree are not counted), and the total with the pristine trees')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;run' {
            [CompletionResult]::new('--run-id', '--run-id', [CompletionResultType]::ParameterName, 'Name the run (generated when omitted); a run id is never reused')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop the command after DUR (SIGTERM to its process group, SIGKILL 2 s later)')
            [CompletionResult]::new('--allow-write', '--allow-write', [CompletionResultType]::ParameterName, 'Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)')
            [CompletionResult]::new('--allow-read', '--allow-read', [CompletionResultType]::ParameterName, 'Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Run under the profile NAME: claude, codex, aider, generic or one of your configuration''s (its home paths writable, kept apart by a3s-iso; its variables; its hosts)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Pass the variable NAME to the command, or set NAME=VALUE (repeatable)')
            [CompletionResult]::new('--allow-host', '--allow-host', [CompletionResultType]::ParameterName, 'Let the command reach HOST[:PORT] through a3s-iso''s HTTP proxy (repeatable)')
            [CompletionResult]::new('--publish', '--publish', [CompletionResultType]::ParameterName, 'Publish PORT inside on the host''s 127.0.0.1:HOST_PORT while the run lives (repeatable; HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)')
            [CompletionResult]::new('--cache', '--cache', [CompletionResultType]::ParameterName, 'The cache of a preset''s package manager (@npm: npm, @pypi: pip, @crates: cargo): private (a3s-iso''s own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip, ~/.cargo/registry and ~/.cargo/git, made writable) or none')
            [CompletionResult]::new('--release-identity', '--release-identity', [CompletionResultType]::ParameterName, 'The agent_release_identity recorded in the run''s change set (sha256:<64 hex>)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--allow-network', '--allow-network', [CompletionResultType]::ParameterName, 'Let the command reach the network (it is denied by default)')
            [CompletionResult]::new('--no-sandbox', '--no-sandbox', [CompletionResultType]::ParameterName, 'Run the command as a plain host process, without the sandbox')
            [CompletionResult]::new('--ignore-config', '--ignore-config', [CompletionResultType]::ParameterName, 'Run without reading the repository''s .a3s-iso.toml at all (trusted or not)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;capture' {
            [CompletionResult]::new('--run-id', '--run-id', [CompletionResultType]::ParameterName, 'Name the capture; capturing the same run id again returns the stored document')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Also write the change-set document to FILE')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Also write the change-set document to FILE')
            [CompletionResult]::new('--release-identity', '--release-identity', [CompletionResultType]::ParameterName, 'The agent_release_identity recorded in the document (sha256:<64 hex>)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;diff' {
            [CompletionResult]::new('--change-set', '--change-set', [CompletionResultType]::ParameterName, 'Show a change-set document''s patch (verified first) instead of a session''s')
            [CompletionResult]::new('--digest', '--digest', [CompletionResultType]::ParameterName, 'Show a promoted change set from its artifacts (<state>/artifacts/<hex>/change.patch): sha256:<hex>, or a unique prefix of at least 8 hex digits')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--stat', '--stat', [CompletionResultType]::ParameterName, 'Only the files, with lines added and removed')
            [CompletionResult]::new('--name-only', '--name-only', [CompletionResultType]::ParameterName, 'Only the paths, one a line (quoted as git quotes unusual names)')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'With --name-only: each path exactly as its bytes, ended by NUL, never quoted')
            [CompletionResult]::new('--since-promote', '--since-promote', [CompletionResultType]::ParameterName, 'What promote would apply now: the delta since the session''s last promoted step (the default)')
            [CompletionResult]::new('--cumulative', '--cumulative', [CompletionResultType]::ParameterName, 'The session''s whole work since its base tree, promoted steps included')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;show' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'For scripts: `key<TAB>value` records ended by NUL, paths as their exact bytes, no colour and no quoting (runs and promotions are in --json)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;promote' {
            [CompletionResult]::new('--change-set', '--change-set', [CompletionResultType]::ParameterName, 'Promote a change-set document instead of a session (validated completely first)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Promote a change set pushed to this remote (with --digest), fetched and verified first')
            [CompletionResult]::new('--digest', '--digest', [CompletionResultType]::ParameterName, 'With --from: the change set''s digest; with --reapply: the promoted change set to land again (sha256:<hex>, or a unique prefix of at least 8 hex digits)')
            [CompletionResult]::new('--max-bytes', '--max-bytes', [CompletionResultType]::ParameterName, 'With --from: the largest patch to read, in bytes (K, M, G suffixes)')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'How the work lands in the source')
            [CompletionResult]::new('--artifacts', '--artifacts', [CompletionResultType]::ParameterName, 'Where to write the patch and summary.json (default: under the state dir)')
            [CompletionResult]::new('--note', '--note', [CompletionResultType]::ParameterName, 'Record DIGEST as promoted by other means, so that promoting it later is idempotent')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Branch mode: the message of the commit that holds the session''s uncommitted changes (default: one that names the session)')
            [CompletionResult]::new('--message', '--message', [CompletionResultType]::ParameterName, 'Branch mode: the message of the commit that holds the session''s uncommitted changes (default: one that names the session)')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'Branch mode: take that commit''s message from FILE (`-` reads standard input)')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Branch mode: take that commit''s message from FILE (`-` reads standard input)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--allow-url', '--allow-url', [CompletionResultType]::ParameterName, 'With --from: accept a URL or path that is not a configured remote')
            [CompletionResult]::new('--no-apply', '--no-apply', [CompletionResultType]::ParameterName, 'Write the artifacts (patch, summary.json) and stop: the source is left untouched')
            [CompletionResult]::new('--rebase', '--rebase', [CompletionResultType]::ParameterName, 'When the source''s HEAD moved since the bind (or the last step): rebase the session onto it first, and promote only if that was clean')
            [CompletionResult]::new('--reapply', '--reapply', [CompletionResultType]::ParameterName, 'Land again a promoted change set whose landing is no longer in the checkout (you undid it): the session''s last step, --digest''s, or --change-set''s; recorded as a new landing')
            [CompletionResult]::new('--onto-head', '--onto-head', [CompletionResultType]::ParameterName, 'Apply a change-set document onto the checkout even though its base tree is not HEAD''s (when it applies cleanly)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;rebase' {
            [CompletionResult]::new('--onto', '--onto', [CompletionResultType]::ParameterName, 'The commit to move the session onto (default: the source''s current HEAD)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--continue', '--continue', [CompletionResultType]::ParameterName, 'Go on after the conflicts were resolved in the isolation')
            [CompletionResult]::new('--abort', '--abort', [CompletionResultType]::ParameterName, 'Put the isolation back exactly as it was before the rebase')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;land' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'A session to land, in this order (repeatable)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'A session to land, in this order (repeatable)')
            [CompletionResult]::new('--test', '--test', [CompletionResultType]::ParameterName, 'A shell command that must exit 0 in each session''s sandbox on its rebased tree, run by `bash -e -o pipefail -c` as CI runs a step (a failure anywhere in a pipeline fails it)')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'How each session lands')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'The message of the squashed commit (branch mode: of the commit of uncommitted changes)')
            [CompletionResult]::new('--message', '--message', [CompletionResultType]::ParameterName, 'The message of the squashed commit (branch mode: of the commit of uncommitted changes)')
            [CompletionResult]::new('--push', '--push', [CompletionResultType]::ParameterName, 'Land onto BRANCH of the configured remote REMOTE through the server, not onto your checkout: each landing commit is pushed with a lease on the tip it was built on and carries its change set''s digest (A3S-Change-Set), so that it lands once from any machine')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'With --push: the most pushes of one landing; a push another machine''s beat is fetched, merged, tested and pushed again, up to this many times')
            [CompletionResult]::new('--change-set', '--change-set', [CompletionResultType]::ParameterName, 'With --push: a change-set document to land after the sessions (repeatable), as `capture -o` wrote it; verified first, its test run in a scratch isolation')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'With --push: land the change sets pushed to this configured remote (`a3s-iso push`) that --digest names, after the documents; each fetched and verified first, its test run in a scratch isolation')
            [CompletionResult]::new('--digest', '--digest', [CompletionResultType]::ParameterName, 'With --from: a change set''s digest (repeatable; sha256:<hex>, or a unique prefix of at least 8 hex digits)')
            [CompletionResult]::new('--max-bytes', '--max-bytes', [CompletionResultType]::ParameterName, 'With --from: the largest patch to read, in bytes (K, M, G suffixes)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Every live session of the source, oldest bind first')
            [CompletionResult]::new('--keep-going', '--keep-going', [CompletionResultType]::ParameterName, 'Go on with the rest after a session that does not land')
            [CompletionResult]::new('--no-sandbox', '--no-sandbox', [CompletionResultType]::ParameterName, 'Run the test command as a plain host process, without the sandbox')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Keep each landed session''s isolation (to go on working in steps); by default it goes back to the pool, or is discarded with its evidence kept')
            [CompletionResult]::new('--abort', '--abort', [CompletionResultType]::ParameterName, 'Drop the stopped queue; no session is touched')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;overlaps' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;push' {
            [CompletionResult]::new('--change-set', '--change-set', [CompletionResultType]::ParameterName, 'Push a change-set document instead of the session''s change set')
            [CompletionResult]::new('--run', '--run', [CompletionResultType]::ParameterName, 'Push the stored change set of this run of the session')
            [CompletionResult]::new('--digest', '--digest', [CompletionResultType]::ParameterName, 'With --delete: the change set to delete, or a unique prefix of at least 8 hex digits (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'With --delete: every change set dated more than DUR ago')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--allow-url', '--allow-url', [CompletionResultType]::ParameterName, 'Accept a URL or path that is not a configured remote')
            [CompletionResult]::new('--delete', '--delete', [CompletionResultType]::ParameterName, 'Delete change sets from the remote instead (with --digest or --older-than)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;fetch' {
            [CompletionResult]::new('--digest', '--digest', [CompletionResultType]::ParameterName, 'Only this change set: sha256:<hex> or a unique prefix of at least 8 hex digits (default: every change set on the remote)')
            [CompletionResult]::new('--max-bytes', '--max-bytes', [CompletionResultType]::ParameterName, 'The largest patch to read, in bytes (K, M, G suffixes: powers of 1024)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--allow-url', '--allow-url', [CompletionResultType]::ParameterName, 'Accept a URL or path that is not a configured remote')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;sweep' {
            [CompletionResult]::new('--grace', '--grace', [CompletionResultType]::ParameterName, 'Keep in-flight, malformed and unrecorded isolations younger than DUR')
            [CompletionResult]::new('--retained-older-than', '--retained-older-than', [CompletionResultType]::ParameterName, 'Also reclaim retained isolations retained longer than DUR ago')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Sweep every source this user has bound from, not only this repository')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Report what a sweep would do, and change nothing')
            [CompletionResult]::new('--no-capture', '--no-capture', [CompletionResultType]::ParameterName, 'Do not snapshot an isolation into its swept ref (refs/a3s-iso/swept/<id>) before removing it')
            [CompletionResult]::new('--include-ownerless', '--include-ownerless', [CompletionResultType]::ParameterName, 'Also reclaim ownerless sessions (bind --owner none) idle for longer than the grace')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;retain' {
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why the isolation is kept (recorded, and shown by git worktree list)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;discard' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Every session bound from this checkout in this store, one after the other')
            [CompletionResult]::new('--purge', '--purge', [CompletionResultType]::ParameterName, 'Also delete everything of the session: record, refs, retained branch, change sets, artifacts (its journal entries stay)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;gc' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Remove only what is older than DUR (default: 30d; 0s: everything no session needs)')
            [CompletionResult]::new('--remote', '--remote', [CompletionResultType]::ParameterName, 'Also delete the change sets on REMOTE dated before the window (with --all: every one)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'List what would be removed, and change nothing')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Remove everything stored for this source and state dir that no live or retained session needs, whatever its age, pool spares included (the uninstall path)')
            [CompletionResult]::new('--allow-url', '--allow-url', [CompletionResultType]::ParameterName, 'With --remote: accept a URL or path that is not a configured remote')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;pool' {
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'How many spare isolations to keep ready (0 removes them all); default: as set before')
            [CompletionResult]::new('--keep-ignored', '--keep-ignored', [CompletionResultType]::ParameterName, 'Ignored paths that a returned isolation keeps for the next session, as gitignore patterns (e.g. target, node_modules/); replaces the list set before. Shares build outputs between sessions. The ignored files the source''s .worktreeinclude names are kept too')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Only report the pool; build and remove nothing')
            [CompletionResult]::new('--no-fill', '--no-fill', [CompletionResultType]::ParameterName, 'Record the settings but check nothing out now: spares come only from the trees that discard returns')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;config' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;profile' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;verify' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;changes' {
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'The change-set request (a3s.code.agent-change-set-request.v1) to answer (- for standard input)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;path' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'The session (default: the isolation you are in, or the source''s only live session)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;log' {
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most N entries (the newest)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Only the promotions (or runs) of this session')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Only the promotions (or runs) of this session')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--runs', '--runs', [CompletionResultType]::ParameterName, 'List the runs instead, with the command each ran, its working directory and sandbox settings')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;mcp' {
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Act also on this session of yours (repeatable; by default the server acts only on the sessions it binds, and on the one whose isolation it was started in)')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Act also on this session of yours (repeatable; by default the server acts only on the sessions it binds, and on the one whose isolation it was started in)')
            [CompletionResult]::new('--allow-write', '--allow-write', [CompletionResultType]::ParameterName, 'Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)')
            [CompletionResult]::new('--allow-read', '--allow-read', [CompletionResultType]::ParameterName, 'Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Run under the profile NAME: claude, codex, aider, generic or one of your configuration''s (its home paths writable, kept apart by a3s-iso; its variables; its hosts)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Pass the variable NAME to the command, or set NAME=VALUE (repeatable)')
            [CompletionResult]::new('--allow-host', '--allow-host', [CompletionResultType]::ParameterName, 'Let the command reach HOST[:PORT] through a3s-iso''s HTTP proxy (repeatable)')
            [CompletionResult]::new('--publish', '--publish', [CompletionResultType]::ParameterName, 'Publish PORT inside on the host''s 127.0.0.1:HOST_PORT while the run lives (repeatable; HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)')
            [CompletionResult]::new('--cache', '--cache', [CompletionResultType]::ParameterName, 'The cache of a preset''s package manager (@npm: npm, @pypi: pip, @crates: cargo): private (a3s-iso''s own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip, ~/.cargo/registry and ~/.cargo/git, made writable) or none')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop each run after DUR at the latest (a call may ask for less)')
            [CompletionResult]::new('--allow-output', '--allow-output', [CompletionResultType]::ParameterName, 'Let calls write files (run''s and capture''s output, promote''s artifacts) beneath DIR (repeatable)')
            [CompletionResult]::new('--allow-input', '--allow-input', [CompletionResultType]::ParameterName, 'Let calls read change-set documents (diff''s and promote''s change_set) beneath DIR (repeatable)')
            [CompletionResult]::new('--allow-base-dir', '--allow-base-dir', [CompletionResultType]::ParameterName, 'Let bind make isolations beneath DIR (its base_dir) (repeatable)')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--allow-promote', '--allow-promote', [CompletionResultType]::ParameterName, 'Also offer the promote and land tools, which write to your checkout')
            [CompletionResult]::new('--all-sessions', '--all-sessions', [CompletionResultType]::ParameterName, 'Act on every session of the repository, yours included (list, diff, discard, ...)')
            [CompletionResult]::new('--allow-network', '--allow-network', [CompletionResultType]::ParameterName, 'Let the command reach the network (it is denied by default)')
            [CompletionResult]::new('--allow-no-sandbox', '--allow-no-sandbox', [CompletionResultType]::ParameterName, 'Let a call run its command (or land''s test) without the sandbox, as a host process')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;doctor' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--landlock-optional', '--landlock-optional', [CompletionResultType]::ParameterName, 'Accept a kernel without Landlock (ABI 3 or later) as a warning: run''s read-only mounts still confine writes. By default both layers are required (exit 4 without Landlock)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;version' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;hook' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;init' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;shell-init' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;completions' {
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--repo', '--repo', [CompletionResultType]::ParameterName, 'Run as if started in PATH (the source checkout or any directory in it)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour human output')
            [CompletionResult]::new('--git', '--git', [CompletionResultType]::ParameterName, 'The git binary to run (default: git on PATH)')
            [CompletionResult]::new('--lock-timeout', '--lock-timeout', [CompletionResultType]::ParameterName, 'How long to wait for the repository lock held by another a3s-iso command')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print exactly one JSON document on stdout (success or failure)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no narration or warnings on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'a3s-iso;help' {
            [CompletionResult]::new('bind', 'bind', [CompletionResultType]::ParameterValue, 'Create (or reuse) a session''s isolation: a detached worktree next to the source')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List sessions with their state, owner liveness and whether HEAD moved')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a command inside a session''s isolation (sandboxed) and record its change set')
            [CompletionResult]::new('capture', 'capture', [CompletionResultType]::ParameterValue, 'Snapshot a session into a pinned tree and a change-set document')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Show the change set a promote would apply now (or a document''s, or a promoted one''s)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one session in full: its isolation, owner, runs and promotions')
            [CompletionResult]::new('promote', 'promote', [CompletionResultType]::ParameterValue, 'Apply a session''s (or a document''s) change set to the source, exactly once')
            [CompletionResult]::new('rebase', 'rebase', [CompletionResultType]::ParameterValue, 'Move a session onto a new base (default: the source''s HEAD) inside its isolation')
            [CompletionResult]::new('land', 'land', [CompletionResultType]::ParameterValue, 'Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once')
            [CompletionResult]::new('overlaps', 'overlaps', [CompletionResultType]::ParameterValue, 'Predict which live sessions'' work would conflict, and where (no tree is touched)')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Publish a change set on a git remote as refs/a3s-iso/changes/<digest>')
            [CompletionResult]::new('fetch', 'fetch', [CompletionResultType]::ParameterValue, 'Fetch change sets from a git remote and verify them, without promoting')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Reclaim dead isolations; never live, foreign, unknown or retained ones')
            [CompletionResult]::new('retain', 'retain', [CompletionResultType]::ParameterValue, 'Pin a session''s isolation for inspection, safe from sweep and git worktree prune')
            [CompletionResult]::new('discard', 'discard', [CompletionResultType]::ParameterValue, 'Remove a session''s isolation; never touches the source')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch')
            [CompletionResult]::new('pool', 'pool', [CompletionResultType]::ParameterValue, 'Keep spare isolations ready, so that bind takes one instead of checking out')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show the configuration in effect and where each value came from (config trust: approve the repository''s file)')
            [CompletionResult]::new('profile', 'profile', [CompletionResultType]::ParameterValue, 'Review what runs changed in a profile''s hooks, MCP servers and instructions for this repository: diff, accept, reject')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check a change-set document against every rule of the format')
            [CompletionResult]::new('changes', 'changes', [CompletionResultType]::ParameterValue, 'Answer a change-set request: print the stored change-set document of the run it names')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print a session''s isolation path (for cd)')
            [CompletionResult]::new('log', 'log', [CompletionResultType]::ParameterValue, 'List promotions from the journal, newest first')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve the commands as tools of an MCP server on stdin and stdout, for agents')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check whether a3s-iso can work here: git, the run sandbox, file system, state')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the version of a3s-iso and git, and the kernel features the sandbox relies on')
            [CompletionResult]::new('hook', 'hook', [CompletionResultType]::ParameterValue, 'Run an agent harness''s hook: Claude Code''s WorktreeCreate and WorktreeRemove')
            [CompletionResult]::new('init', 'init', [CompletionResultType]::ParameterValue, 'Configure an agent harness to work in a3s-iso isolations (Claude Code''s worktree hooks)')
            [CompletionResult]::new('shell-init', 'shell-init', [CompletionResultType]::ParameterValue, 'Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell''s rc file)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print shell completions')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'a3s-iso;help;bind' {
            break
        }
        'a3s-iso;help;list' {
            break
        }
        'a3s-iso;help;run' {
            break
        }
        'a3s-iso;help;capture' {
            break
        }
        'a3s-iso;help;diff' {
            break
        }
        'a3s-iso;help;show' {
            break
        }
        'a3s-iso;help;promote' {
            break
        }
        'a3s-iso;help;rebase' {
            break
        }
        'a3s-iso;help;land' {
            break
        }
        'a3s-iso;help;overlaps' {
            break
        }
        'a3s-iso;help;push' {
            break
        }
        'a3s-iso;help;fetch' {
            break
        }
        'a3s-iso;help;sweep' {
            break
        }
        'a3s-iso;help;retain' {
            break
        }
        'a3s-iso;help;discard' {
            break
        }
        'a3s-iso;help;gc' {
            break
        }
        'a3s-iso;help;pool' {
            break
        }
        'a3s-iso;help;config' {
            break
        }
        'a3s-iso;help;profile' {
            break
        }
        'a3s-iso;help;verify' {
            break
        }
        'a3s-iso;help;changes' {
            break
        }
        'a3s-iso;help;path' {
            break
        }
        'a3s-iso;help;log' {
            break
        }
        'a3s-iso;help;mcp' {
            break
        }
        'a3s-iso;help;doctor' {
            break
        }
        'a3s-iso;help;version' {
            break
        }
        'a3s-iso;help;hook' {
            break
        }
        'a3s-iso;help;init' {
            break
        }
        'a3s-iso;help;shell-init' {
            break
        }
        'a3s-iso;help;completions' {
            break
        }
        'a3s-iso;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
