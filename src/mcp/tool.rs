//! The tools the server offers, one per command.

use serde::Serialize;

use crate::base::wire::wire_enum;

wire_enum! {
    /// A tool, named as its command (`ALL`: in the order `tools/list` gives them).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum Tool {
        /// `bind`.
        Bind = "bind",
        /// `run`.
        Run = "run",
        /// `diff`.
        Diff = "diff",
        /// `show`.
        Show = "show",
        /// `list`.
        List = "list",
        /// `overlaps`.
        Overlaps = "overlaps",
        /// `capture`.
        Capture = "capture",
        /// `discard`.
        Discard = "discard",
        /// `promote`: only with `--allow-promote`.
        Promote = "promote",
        /// `land`: only with `--allow-promote`.
        Land = "land",
    }
}

impl Tool {
    /// The tool of that name.
    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether it writes to the source checkout, and so is offered only with `--allow-promote`.
    pub fn writes_source(self) -> bool {
        matches!(self, Tool::Promote | Tool::Land)
    }
}
