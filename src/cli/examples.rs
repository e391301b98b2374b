//! Each command's EXAMPLES (long help, man page) and the exit-status wording they all share.

/// The exit statuses, as the README states them.
pub const EXIT_STATUS: &str = "0 success; 1 error; 2 usage; 3 conflict; 4 unavailable; \
5 invalid input; 6 busy (lock timeout, session busy); 75 pending (changes: the run has not \
ended yet); 130 interrupted. run exits with its \
command's status (128+signal for a signal, 124 on timeout; 125 when a3s-iso itself fails, \
126 not executable, 127 not found).";

/// Each command's examples (`""` for the top level), one per line with a comment.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "",
        "  a3s-iso bind -s task-42                  # an isolation next to the repository
  a3s-iso run -s task-42 -- make test       # run a command in it, sandboxed
  a3s-iso promote -s task-42                # land its work in your checkout, once",
    ),
    (
        "bind",
        "  a3s-iso bind -s task-42                  # isolate at HEAD; prints the path
  a3s-iso bind -s task-42 --carry-wip       # start from your uncommitted work too
  a3s-iso bind -s ci-7 --owner none         # a session with no owner process (CI)
  a3s-iso bind -s task-42 --resume          # rebuild a swept session with its work
  a3s-iso bind -s task-42 --no-setup        # skip the configuration's setup commands",
    ),
    (
        "list",
        "  a3s-iso list                             # the sessions of this repository
  a3s-iso list --all                        # of every repository you bound from
  a3s-iso list --json | jq '.sessions[].session_id'
  a3s-iso list --remote origin              # the change sets pushed to origin",
    ),
    (
        "run",
        "  a3s-iso run -s task-42 -- make test
  a3s-iso run -s task-42 --timeout 10m -- ./agent --task fix-bug
  a3s-iso run -s task-42 --allow-network -- cargo fetch
  a3s-iso run -s task-42 --no-sandbox -- sh -c 'echo hi > hi.txt'",
    ),
    (
        "capture",
        "  a3s-iso capture -s task-42                # snapshot and print the change set
  a3s-iso capture -s task-42 -o change.json # also write the document to a file
  a3s-iso --json capture -s task-42         # the document itself on stdout",
    ),
    (
        "promote",
        "  a3s-iso promote -s task-42                # apply as uncommitted changes
  a3s-iso promote -s task-42 --mode branch  # replay the session's commits onto your branch
  a3s-iso promote -s task-42 --no-apply     # write the patch and summary only
  a3s-iso promote --change-set change.json  # promote a change-set document
  a3s-iso promote --note sha256:…           # record a digest as promoted by other means
  a3s-iso promote --from origin --digest sha256:…  # fetch, verify and promote a pushed one
  a3s-iso promote -s task-42 --reapply      # land again what you undid in your checkout
  a3s-iso promote --reapply --digest 1a2b3c4d  # the same, by a digest prefix (a3s-iso log)",
    ),
    (
        "rebase",
        "  a3s-iso rebase -s task-42                 # onto the source's HEAD, inside the isolation
  a3s-iso rebase -s task-42 --onto main     # onto another commit
  a3s-iso rebase -s task-42 --continue      # after resolving its conflicts in the isolation
  a3s-iso rebase -s task-42 --abort         # put the isolation back as it was",
    ),
    (
        "overlaps",
        "  a3s-iso overlaps                          # which live sessions would conflict, and where
  a3s-iso overlaps --json | jq '.pairs[] | select(.prediction == \"conflict\")'",
    ),
    (
        "land",
        "  a3s-iso land --all                        # every live session, oldest first, one commit each
  a3s-iso land -s a -s b --test 'make test' # in this order; each must pass its test first
  a3s-iso land --all --keep-going --json    # land what can land; the report says which did not
  a3s-iso land                              # continue a queue that stopped",
    ),
    (
        "push",
        "  a3s-iso push -s task-42                   # to the upstream remote (else origin)
  a3s-iso push -s task-42 origin --json     # prints the digest, the ref and the remote
  a3s-iso push --change-set change.json     # a document's change set
  a3s-iso push --delete --digest sha256:… origin     # remove one from the remote",
    ),
    (
        "fetch",
        "  a3s-iso fetch origin --digest sha256:…    # fetch and verify one change set
  a3s-iso fetch origin                      # every change set the remote holds",
    ),
    (
        "sweep",
        "  a3s-iso sweep --dry-run                   # what would be reclaimed
  a3s-iso sweep                             # reclaim dead isolations of this repository
  a3s-iso sweep --all --grace 1h            # of every repository, sparing the last hour
  a3s-iso sweep --retained-older-than 7d    # also retained ones older than a week",
    ),
    (
        "retain",
        "  a3s-iso retain -s task-42 --reason 'flaky test to inspect'",
    ),
    (
        "discard",
        "  a3s-iso discard -s task-42                # remove the isolation, keep its evidence
  a3s-iso discard -s task-42 --purge        # also its record, refs and change sets",
    ),
    (
        "gc",
        "  a3s-iso gc --dry-run                      # what would go, changing nothing
  a3s-iso gc                                # what no session needs, older than 30 days
  a3s-iso gc --older-than 0s                # everything no session needs
  a3s-iso gc --all                          # uninstall: all a3s-iso stored here",
    ),
    (
        "pool",
        "  a3s-iso pool --size 4                     # keep four spare isolations ready
  a3s-iso pool --size 4 --keep-ignored target  # returned trees keep their target/
  a3s-iso pool --status                     # what is ready, and whether reflink works
  a3s-iso pool --size 0                     # remove the spares",
    ),
    (
        "config",
        "  a3s-iso config                           # the settings in effect and their origins
  a3s-iso config trust                     # approve the repository's .a3s-iso.toml
  a3s-iso config --json | jq '.settings'",
    ),
    (
        "profile",
        "  a3s-iso profile diff                     # what runs changed in hooks, MCP servers, instructions
  a3s-iso profile accept claude            # make them live for this repository's next runs
  a3s-iso profile reject claude            # drop them
  a3s-iso --json profile diff | jq '.profiles[].changes[].path'",
    ),
    (
        "verify",
        "  a3s-iso verify change.json
  a3s-iso --json verify change.json",
    ),
    (
        "changes",
        "  a3s-iso changes --request request.json    # the stored change set of the run it names
  a3s-iso changes --request - < request.json  # the request from standard input",
    ),
    (
        "path",
        "  cd \"$(a3s-iso path -s task-42)\"
  a3s-iso path                              # inside an isolation: its own path",
    ),
    (
        "diff",
        "  a3s-iso diff -s task-42                   # what promote would apply now
  a3s-iso diff -s task-42 --stat            # the files, with added and deleted lines
  a3s-iso diff -s task-42 --cumulative      # everything since the session's base
  a3s-iso diff --digest sha256:…            # a promoted change set, from its artifacts",
    ),
    (
        "show",
        "  a3s-iso show -s task-42                   # the session in full: runs, promotions
  a3s-iso --json show -s task-42",
    ),
    (
        "log",
        "  a3s-iso log                               # every promotion, newest first
  a3s-iso log -s task-42 --limit 5
  a3s-iso log --runs -s task-42             # its runs: the command each ran, and how",
    ),
    (
        "mcp",
        "  a3s-iso mcp                               # the tools for an agent's MCP client, on stdio
  a3s-iso mcp --allow-promote               # with promote and land too
  claude mcp add a3s-iso -- a3s-iso mcp     # register it with Claude Code",
    ),
    (
        "doctor",
        "  a3s-iso doctor
  a3s-iso doctor --landlock-optional        # the read-only mounts alone are enough here",
    ),
    (
        "version",
        "  a3s-iso version
  a3s-iso --json version",
    ),
    (
        "hook",
        "  a3s-iso init claude                       # configures Claude Code to run these
  echo '{\"hook_event_name\":\"WorktreeCreate\",\"name\":\"agent-1\"}' | a3s-iso hook claude worktree-create",
    ),
    (
        "init",
        "  a3s-iso init claude                       # Claude Code's worktrees become isolations",
    ),
    (
        "shell-init",
        "  eval \"$(a3s-iso shell-init bash)\"        # in ~/.bashrc; then: a3s-iso cd task-42",
    ),
    (
        "completions",
        "  a3s-iso completions bash > ~/.local/share/bash-completion/completions/a3s-iso
  a3s-iso completions zsh > ~/.zfunc/_a3s-iso",
    ),
];

/// A command's examples (`""` for the top level); none for a command without any.
pub fn text(command: &str) -> &'static str {
    EXAMPLES
        .iter()
        .find(|(name, _)| *name == command)
        .map_or("", |(_, text)| text)
}

/// The long help's closing section of a command: its examples.
pub fn long(command: &str) -> String {
    format!("Examples:\n{}", text(command))
}

/// The top level's closing section: examples and exit statuses.
pub fn top_long() -> String {
    format!("{}\n\nExit status: {EXIT_STATUS}", long(""))
}

/// The top level's short closing line (`-h`).
pub fn top_short() -> String {
    format!("Exit status: {EXIT_STATUS}")
}
