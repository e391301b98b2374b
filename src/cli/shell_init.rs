use clap::ValueEnum;

/// The shells `shell-init` writes a function for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitShell {
    Bash,
    Zsh,
    Fish,
}

/// bash and zsh: `a3s-iso cd [ID]` enters the isolation; everything else goes to the binary.
const POSIX: &str = r#"# a3s-iso shell integration: `a3s-iso cd [ID]` enters a session's isolation.
a3s-iso() {
    if [ "$#" -ge 1 ] && [ "$1" = cd ]; then
        shift
        local __a3s_iso_dir
        if [ "$#" -ge 1 ]; then
            __a3s_iso_dir="$(command a3s-iso path -s "$1")" || return
        else
            __a3s_iso_dir="$(command a3s-iso path)" || return
        fi
        cd -- "$__a3s_iso_dir"
    else
        command a3s-iso "$@"
    fi
}
"#;

const FISH: &str = r#"# a3s-iso shell integration: `a3s-iso cd [ID]` enters a session's isolation.
function a3s-iso --description 'a3s-iso, with `a3s-iso cd [ID]` to enter an isolation'
    if test (count $argv) -ge 1; and test "$argv[1]" = cd
        set -l __a3s_iso_dir
        if test (count $argv) -ge 2
            set __a3s_iso_dir (command a3s-iso path -s $argv[2]); or return
        else
            set __a3s_iso_dir (command a3s-iso path); or return
        end
        cd $__a3s_iso_dir
    else
        command a3s-iso $argv
    end
end
"#;

/// The function for `shell`, to be `eval`ed (or `source`d) in the shell's startup file.
pub fn script(shell: InitShell) -> &'static str {
    match shell {
        InitShell::Bash | InitShell::Zsh => POSIX,
        InitShell::Fish => FISH,
    }
}
