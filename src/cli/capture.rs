pub use a3s_iso::interface::request::capture::CaptureArgs;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::capture::{CaptureOptions, capture, write_document};

use super::Output;

pub fn run(ctx: &Context, args: &CaptureArgs, out: &Output) -> Result<i32> {
    let options = CaptureOptions {
        session_id: args.session.session.clone(),
        run_id: args.run_id.clone(),
        release_identity: args.release_identity.clone(),
    };
    let outcome = out.spinning("capturing", || capture(ctx, &options))?;
    if let Some(path) = &args.output {
        write_document(path, &outcome.change_set)?;
    }
    for nested in &outcome.nested_repositories {
        out.warn(&format!(
            "nested repository {nested} is not part of the change set"
        ));
    }
    out.warnings(&outcome.warnings);
    if outcome.reused && out.json {
        // stdout is the document itself (strict format, no room for more); say it beside.
        out.note(&format!(
            "nothing changed since run {}: reused it (no new run, ref or record)",
            outcome.change_set.identity.run_id
        ));
    }
    if out.json {
        // The document itself, so it can be handed to any consumer.
        out.raw_json(&outcome.change_set);
        return Ok(0);
    }
    let cs = &outcome.change_set;
    out.headline(&format!(
        "{} file{} changed, {}{}",
        outcome.files_changed,
        super::plural(outcome.files_changed),
        super::human_bytes(cs.patch_bytes),
        if outcome.replayed {
            " (stored capture, unchanged)"
        } else if outcome.reused {
            " (unchanged since the last capture: its run is reused)"
        } else {
            ""
        }
    ));
    let mut fields = vec![
        ("session", cs.identity.session_id.clone()),
        ("run", cs.identity.run_id.clone()),
        ("patch digest", cs.patch_digest.to_string()),
        ("base", cs.base_tree.field()),
        ("result", cs.result_tree.field()),
        ("ref", outcome.result_ref.clone()),
    ];
    if let Some(path) = &args.output {
        fields.push(("written", path.display().to_string()));
    }
    // Nested change sets travel beside the document (which carries the root only).
    for nested in &outcome.nested {
        fields.push((
            "nested",
            format!(
                "{} ({}, {})",
                nested.path,
                super::human_bytes(nested.patch_bytes),
                nested.patch_digest
            ),
        ));
    }
    out.fields(&fields);
    out.path_list(&outcome.files, outcome.files_changed);
    Ok(0)
}
