//! `agent-tools trust`: shows the project's own settings and MCP servers, and records a
//! person's approval of them. The review and the approvals are the registry's; this module
//! prints and asks.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use tool_core::{Approval, TrustReport};

use crate::{SessionArgs, session_error, session_options, usage};

/// Runs `trust` with `--yes`, `--revoke` or `--show`.
pub fn run(args: &SessionArgs, yes: bool, revoke: bool, show: bool) -> Result<ExitCode> {
    let options = session_options(args)?;
    let mut out = std::io::stdout().lock();
    if revoke {
        let names = registry::revoke_project(&options).map_err(session_error)?;
        if names.is_empty() {
            writeln!(out, "No approvals were recorded for this project.")?;
        } else {
            writeln!(
                out,
                "Revoked the approval of {}; sessions ignore what they would widen again.",
                names.join(", ")
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = registry::review_project(&options).map_err(session_error)?;
    print_review(&mut out, &report)?;
    if show {
        return Ok(ExitCode::SUCCESS);
    }
    let pending = report
        .files
        .iter()
        .filter(|f| f.status != Approval::Approved)
        .count();
    if pending == 0 {
        writeln!(out, "Nothing to approve.")?;
        return Ok(ExitCode::SUCCESS);
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(usage(format!(
                "no terminal to ask whether to approve; review the files above and run `{} --yes` to approve them",
                report.approve_command()
            )));
        }
        drop(out);
        eprint!(
            "Approve {pending} file(s) with exactly this content for {}? [y/N] ",
            report.project.display()
        );
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .context("cannot read the answer")?;
        out = std::io::stdout().lock();
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") {
            writeln!(out, "Nothing approved.")?;
            return Ok(ExitCode::from(1));
        }
    }
    let state_dir = registry::session_state_dir(&options).map_err(session_error)?;
    let approved = registry::approve_project(&report, &state_dir).map_err(session_error)?;
    for path in approved {
        writeln!(out, "Approved {}", path.display())?;
    }
    writeln!(
        out,
        "Recorded in {}; a change to an approved file needs approval again.",
        tool_core::TrustStore::in_state_dir(&state_dir)
            .file()
            .display()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn print_review(out: &mut impl Write, report: &TrustReport) -> Result<()> {
    writeln!(out, "Project {}", report.project.display())?;
    if report.files.is_empty() {
        writeln!(
            out,
            "  no project files (.agent-tools/settings.json, .agent-tools/settings.local.json, .mcp.json, .agent-tools/skills/*/SKILL.md, .agent-tools/agents/*.md, .agent-tools/scheduled_tasks.json)"
        )?;
    }
    for file in &report.files {
        writeln!(
            out,
            "  {} ({}, sha256 {})",
            file.name,
            file.status.describe(),
            file.sha256
        )?;
        if let Some(problem) = &file.problem {
            writeln!(out, "    problem: {problem}")?;
        }
        if !file.named.is_empty() {
            writeln!(
                out,
                "    runs these files of the project (approved with it):"
            )?;
            for (name, sha256) in &file.named {
                let state = if sha256.is_empty() {
                    "missing".to_owned()
                } else {
                    format!("sha256 {sha256}")
                };
                let changed = if file.changed.contains(name) {
                    ", changed since the approval"
                } else {
                    ""
                };
                writeln!(out, "      {name} ({state}{changed})")?;
            }
        }
        if file.withheld.is_empty() {
            writeln!(out, "    adds nothing beyond what always applies")?;
            continue;
        }
        let applied = if file.status == Approval::Approved {
            "applied"
        } else {
            "ignored until approved"
        };
        writeln!(out, "    would add ({applied}):")?;
        for part in &file.withheld {
            writeln!(out, "      {} {}", part.key, part.value)?;
        }
    }
    Ok(())
}
