//! Progress on stderr: only on a terminal, never with `--json` or `-q`, and only after a moment.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const SHOW_AFTER: Duration = Duration::from_millis(300);

/// How long work runs before its progress shows: `A3S_ISO_PROGRESS_DELAY_MS`, else 300 ms.
fn show_after() -> Duration {
    std::env::var("A3S_ISO_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(SHOW_AFTER, Duration::from_millis)
}

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

impl a3s_iso::ops::sweep::Progress for Bar {
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
            if bar.is_hidden() && self.started.elapsed() >= show_after() {
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

/// A spinner for one long step (a checkout, a snapshot), shown only after a moment.
pub struct Spinner {
    bar: Option<ProgressBar>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Spinner {
    pub fn start(enabled: bool, message: &'static str) -> Spinner {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        if !(enabled && std::io::stderr().is_terminal()) {
            return Spinner { bar: None, done };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(message);
        let after = show_after();
        if after.is_zero() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(100));
            bar.tick();
        } else {
            let (shown, finished) = (bar.clone(), done.clone());
            std::thread::spawn(move || {
                std::thread::sleep(after);
                if !finished.load(std::sync::atomic::Ordering::SeqCst) {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                    shown.enable_steady_tick(Duration::from_millis(100));
                }
            });
        }
        Spinner {
            bar: Some(bar),
            done,
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
