//! The tools the server offers, one per command.

/// A tool, named as its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// `bind`.
    Bind,
    /// `run`.
    Run,
    /// `diff`.
    Diff,
    /// `show`.
    Show,
    /// `list`.
    List,
    /// `overlaps`.
    Overlaps,
    /// `capture`.
    Capture,
    /// `discard`.
    Discard,
    /// `promote`: only with `--allow-promote`.
    Promote,
    /// `land`: only with `--allow-promote`.
    Land,
}

impl Tool {
    /// Every tool, in the order `tools/list` gives them.
    pub const ALL: [Tool; 10] = [
        Tool::Bind,
        Tool::Run,
        Tool::Diff,
        Tool::Show,
        Tool::List,
        Tool::Overlaps,
        Tool::Capture,
        Tool::Discard,
        Tool::Promote,
        Tool::Land,
    ];

    /// Its name: the command's.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Bind => "bind",
            Tool::Run => "run",
            Tool::Diff => "diff",
            Tool::Show => "show",
            Tool::List => "list",
            Tool::Overlaps => "overlaps",
            Tool::Capture => "capture",
            Tool::Discard => "discard",
            Tool::Promote => "promote",
            Tool::Land => "land",
        }
    }

    /// The tool of that name.
    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether it writes to the source checkout, and so is offered only with `--allow-promote`.
    pub fn writes_source(self) -> bool {
        matches!(self, Tool::Promote | Tool::Land)
    }
}
