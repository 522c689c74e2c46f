//! `agent-tools index`: the search index of the project (the session's working directory)
//! — show it (`--status`: the saved index validated with one walk, nothing built), build and
//! save it now (`--rebuild`), or remove it (`--drop`).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use crate::{SessionArgs, session_error, session_options};

/// What `index` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Status,
    Rebuild,
    Drop,
}

/// Runs the action and prints its outcome (one JSON object with `json`).
pub fn run(args: &SessionArgs, action: Action, as_json: bool) -> Result<ExitCode> {
    let options = session_options(args)?;
    let ctx = registry::build_context(&options).map_err(session_error)?;
    let root = ctx.cwd();
    let state_dir = ctx.state_dir().to_path_buf();
    let mut out = std::io::stdout().lock();
    if action == Action::Drop {
        let removed = registry::drop_index(&root, &state_dir)?;
        if as_json {
            writeln!(out, "{}", json!({"dropped": removed, "root": root}))?;
        } else if removed {
            writeln!(out, "removed the saved search index of {}", root.display())?;
        } else {
            writeln!(out, "{} has no saved search index", root.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let status = if action == Action::Rebuild {
        let layers = ctx
            .services()
            .get::<std::sync::Arc<Vec<tool_core::SettingsLayer>>>()
            .map(|l| l.as_ref().clone())
            .unwrap_or_default();
        let settings = registry::IndexSettings::from_layers(&layers)?;
        registry::rebuild_index(&root, &state_dir, settings)
    } else {
        registry::saved_index_status(&root, &state_dir)
    };
    if as_json {
        let value = json!({
            "root": root,
            "state": status.state,
            "detail": status.detail,
            "file": status.file,
            "notes": status.notes,
        });
        writeln!(out, "{value}")?;
    } else {
        writeln!(
            out,
            "search index of {}: {} — {}",
            root.display(),
            status.state,
            status.detail
        )?;
        writeln!(out, "file: {}", status.file.display())?;
        for note in &status.notes {
            writeln!(out, "note: {note}")?;
        }
    }
    out.flush()?;
    Ok(if status.state == "failed" {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
