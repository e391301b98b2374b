//! `log`: the promotions the journal records, newest first; with `--runs`, the runs of the
//! sessions and what each ran.

use std::cmp::Reverse;
use std::path::Path;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::ids::SessionId;
use crate::context::Context;
use crate::services::runs::RunView;
use crate::store::state::{JournalEntry, Landing, PromoteMode};

/// One promotion, as `log` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Promotion {
    /// When it landed, in milliseconds since the epoch.
    pub promoted_at_ms: u64,
    /// The session it came from (`None` for a document or a noted digest).
    pub session_id: Option<String>,
    /// The patch digest that landed.
    pub digest: crate::base::ids::Digest,
    /// How it landed: `applied`, `recovered` or `noted`.
    pub landing: Landing,
    /// The promote mode that landed it.
    pub mode: PromoteMode,
    /// How many files it changed, from the artifacts' `summary.json` where there is one.
    pub files_changed: Option<u64>,
    /// The patch's size in bytes.
    pub patch_bytes: u64,
    /// The source's HEAD when it landed.
    pub source_head: Option<crate::base::ids::CommitId>,
    /// When it landed before (oldest first): a landing undone and reapplied since.
    pub earlier_landings: Vec<u64>,
}

/// One landing of a change set as the human `log` lists it (earlier landings of a reapply too).
#[derive(Debug, Clone, Copy)]
pub struct LandingRow<'a> {
    /// The change set's entry.
    pub promotion: &'a Promotion,
    /// When this landing was.
    pub at_ms: u64,
    /// Whether it is an earlier landing (undone since, then reapplied).
    pub earlier: bool,
}

impl LogOutcome {
    /// Every landing of the promotions, newest first (the digest breaking ties).
    pub fn landings(&self) -> Vec<LandingRow<'_>> {
        let mut rows: Vec<LandingRow<'_>> = Vec::new();
        for promotion in &self.promotions {
            rows.push(LandingRow {
                promotion,
                at_ms: promotion.promoted_at_ms,
                earlier: false,
            });
            rows.extend(promotion.earlier_landings.iter().map(|&at_ms| LandingRow {
                promotion,
                at_ms,
                earlier: true,
            }));
        }
        rows.sort_by_key(|row| (Reverse(row.at_ms), &row.promotion.digest));
        rows
    }
}

/// What `log` found.
#[derive(Debug, Clone, Serialize)]
pub struct LogOutcome {
    /// The promotions, newest first (at most `--limit`).
    pub promotions: Vec<Promotion>,
    /// Journal entries that could not be read (by file name), left out of `promotions`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// Every promotion (of `session`), newest first, at most `limit`. Reads only.
pub fn log(ctx: &Context, session: Option<&str>, limit: Option<usize>) -> Result<LogOutcome> {
    if let Some(id) = session {
        crate::base::ids::validate(id)?;
    }
    let located = crate::recovery::locate(ctx)?;
    let store = &located.store;
    let mut unreadable = Vec::new();
    let mut entries: Vec<JournalEntry> = Vec::new();
    for entry in store.journal_entries_checked()? {
        match entry {
            Ok(entry) if session.is_none_or(|id| entry.session_id.as_deref() == Some(id)) => {
                entries.push(entry);
            }
            Ok(_) => {}
            Err(name) => unreadable.push(name),
        }
    }
    // Newest first; the digest breaks ties so the order never depends on the directory's.
    entries.sort_by_key(|e| (Reverse(e.promoted_at_ms), e.digest.clone()));
    entries.truncate(limit.unwrap_or(usize::MAX));
    let artifacts = store.artifacts_dir();
    let promotions = entries
        .into_iter()
        .map(|e| Promotion {
            files_changed: files_changed(&artifacts, &e.digest),
            promoted_at_ms: e.promoted_at_ms,
            session_id: e.session_id,
            digest: e.digest,
            landing: e.how,
            mode: e.mode,
            patch_bytes: e.patch_bytes,
            source_head: e.source_head,
            earlier_landings: e.earlier_landings,
        })
        .collect();
    Ok(LogOutcome {
        promotions,
        unreadable,
    })
}

/// One run, as `log --runs` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct LoggedRun {
    /// The session it ran in.
    pub session_id: SessionId,
    /// The run, as `show` gives it.
    #[serde(flatten)]
    pub run: RunView,
}

/// What `log --runs` found.
#[derive(Debug, Clone, Serialize)]
pub struct RunLog {
    /// The runs (and captures), newest first (at most `--limit`).
    pub runs: Vec<LoggedRun>,
}

/// The runs with documents (of `session`) and what each ran, newest first. Reads only.
pub fn runs(ctx: &Context, session: Option<&str>, limit: Option<usize>) -> Result<RunLog> {
    let session = session.map(SessionId::new).transpose()?;
    let located = crate::recovery::locate(ctx)?;
    let store = &located.store;
    let sessions = match session {
        Some(id) => vec![id],
        None => store.run_session_ids()?,
    };
    let mut runs = Vec::new();
    for session_id in sessions {
        for run in crate::services::runs::runs(store, &session_id)? {
            runs.push(LoggedRun {
                session_id: session_id.clone(),
                run,
            });
        }
    }
    // Newest first; the ids break ties so the order never depends on the directory's.
    runs.sort_by_key(|r| {
        let run = &r.run;
        (
            Reverse(run.observed_at_ms),
            r.session_id.clone(),
            run.run_id.clone(),
        )
    });
    runs.truncate(limit.unwrap_or(usize::MAX));
    Ok(RunLog { runs })
}

/// `files_changed` of the promote's summary in the default artifacts dir, if it is there.
fn files_changed(artifacts: &Path, digest: &str) -> Option<u64> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    let summary = artifacts.join(hex).join("summary.json");
    let bytes = crate::base::fsutil::read_small_regular_file(&summary, 16 << 20).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("files_changed")?.as_u64()
}

/// `2026-11-30 18:03:30Z`: a time in milliseconds since the epoch, in UTC, to the second.
pub fn format_utc(ms: u64) -> String {
    let [year, month, day, hour, minute, second] = crate::base::fsutil::utc_parts(ms);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}Z")
}

#[cfg(test)]
mod tests {
    use crate::ops::log::format_utc;

    #[test]
    fn utc_times() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(format_utc(1_796_061_810_999), "2026-11-30 18:03:30Z");
    }
}
