//! Progress bars on stderr: only on a terminal, never with `--json` or `-q`, and only once the
//! work has taken longer than a moment.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const SHOW_AFTER: Duration = Duration::from_millis(300);

pub struct Bar {
    bar: Option<ProgressBar>,
    started: Instant,
    message: &'static str,
}

impl Bar {
    pub fn new(enabled: bool, message: &'static str) -> Bar {
        let shown = enabled && std::io::stderr().is_terminal();
        Bar {
            bar: shown.then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())),
            started: Instant::now(),
            message,
        }
    }
}

impl a3s_iso::sweep::Progress for Bar {
    fn start(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(0);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(self.message);
        }
    }

    fn advance(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
            if bar.is_hidden() && self.started.elapsed() >= SHOW_AFTER {
                bar.set_draw_target(ProgressDrawTarget::stderr());
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
