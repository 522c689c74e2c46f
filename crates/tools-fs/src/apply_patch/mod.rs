//! apply_patch: codex's file-editing tool over this crate's engine. One patch adds,
//! deletes, updates and moves files (see [`APPLY_PATCH_GRAMMAR`]); it is parsed and matched
//! as codex does it (`grammar`, `seek`, `apply`), every file's new content is computed
//! before anything is written (`plan`), and then every file is written or none is
//! (`commit`). An update of a file over 64 MiB whose lines are all found exactly is
//! streamed and spliced, never loaded (`stream`).
//!
//! Unlike Edit, apply_patch does not need the file to have been Read first: codex's models
//! read files through the shell, and a patch's context and removed lines are its freshness
//! check (a file that changed no longer matches them). After writing, the new state of each
//! file is recorded in the read ledger, so a later Edit or Write of it works; a deleted
//! file is forgotten.

mod apply;
mod commit;
mod grammar;
mod plan;
mod seek;
mod stream;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
};

use crate::common;

/// codex's Lark grammar of a patch, for the Responses API's custom (freeform) tool form
/// (`{"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax":
/// "lark", "definition": APPLY_PATCH_GRAMMAR}}`).
pub const APPLY_PATCH_GRAMMAR: &str = r#"start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"#;

/// The description of the freeform (custom) form, whose input is the patch itself.
pub const APPLY_PATCH_FREEFORM_DESCRIPTION: &str = "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.";

/// The description of the function form (one `input` string holding the patch): codex's
/// instructions for the patch language.
pub const APPLY_PATCH_DESCRIPTION: &str = r#"Use the `apply_patch` tool to edit files.
Your patch language is a stripped‑down, file‑oriented diff format designed to be easy to parse and safe to apply. You can think of it as a high‑level envelope:

*** Begin Patch
[ one or more file sections ]
*** End Patch

Within that envelope, you get a sequence of file operations.
You MUST include a header to specify the action you are taking.
Each operation starts with one of three headers:

*** Add File: <path> - create a new file. Every following line is a + line (the initial contents).
*** Delete File: <path> - remove an existing file. Nothing follows.
*** Update File: <path> - patch an existing file in place (optionally with a rename).

May be immediately followed by *** Move to: <new path> if you want to rename the file.
Then one or more “hunks”, each introduced by @@ (optionally followed by a hunk header).
Within a hunk each line starts with:

For instructions on [context_before] and [context_after]:
- By default, show 3 lines of code immediately above and 3 lines immediately below each change. If a change is within 3 lines of a previous change, do NOT duplicate the first change’s [context_after] lines in the second change’s [context_before] lines.
- If 3 lines of context is insufficient to uniquely identify the snippet of code within the file, use the @@ operator to indicate the class or function to which the snippet belongs. For instance, we might have:
@@ class BaseClass
[3 lines of pre-context]
- [old_code]
+ [new_code]
[3 lines of post-context]

- If a code block is repeated so many times in a class or function such that even a single `@@` statement and 3 lines of context cannot uniquely identify the snippet of code, you can use multiple `@@` statements to jump to the right context. For instance:

@@ class BaseClass
@@ 	 def method():
[3 lines of pre-context]
- [old_code]
+ [new_code]
[3 lines of post-context]

The full grammar definition is below:
Patch := Begin { FileOp } End
Begin := "*** Begin Patch" NEWLINE
End := "*** End Patch" NEWLINE
FileOp := AddFile | DeleteFile | UpdateFile
AddFile := "*** Add File: " path NEWLINE { "+" line NEWLINE }
DeleteFile := "*** Delete File: " path NEWLINE
UpdateFile := "*** Update File: " path NEWLINE [ MoveTo ] { Hunk }
MoveTo := "*** Move to: " newPath NEWLINE
Hunk := "@@" [ header ] NEWLINE { HunkLine } [ "*** End of File" NEWLINE ]
HunkLine := (" " | "-" | "+") text NEWLINE

A full patch can combine several operations:

*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch

It is important to remember:

- You must include a header with your intended action (Add/Delete/Update)
- You must prefix new lines with `+` even when creating a new file
- File references can only be relative, NEVER ABSOLUTE.
"#;

/// The paths a permission check judged: each path as given (absolute) and the path it
/// resolved to, carried to the call in its own input.
#[derive(Debug, Default)]
struct CheckedPaths(Mutex<Vec<(PathBuf, PathBuf)>>);

impl Clone for CheckedPaths {
    fn clone(&self) -> Self {
        CheckedPaths(Mutex::new(
            self.0.lock().map(|g| g.clone()).unwrap_or_default(),
        ))
    }
}

impl CheckedPaths {
    fn target_for(&self, given: &Path) -> Result<PathBuf, ToolError> {
        let judged = self
            .0
            .lock()
            .ok()
            .and_then(|g| g.iter().find(|(p, _)| p == given).map(|(_, r)| r.clone()));
        match judged {
            Some(resolved) => Ok(resolved),
            None => common::write_target(given),
        }
    }
}

/// Input of apply_patch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchInput {
    /// The entire contents of the apply_patch command
    pub input: String,
    /// The paths the permission check judged
    #[serde(skip)]
    #[schemars(skip)]
    checked: CheckedPaths,
}

impl ApplyPatchInput {
    /// An input applying `patch`.
    pub fn new(patch: impl Into<String>) -> Self {
        ApplyPatchInput {
            input: patch.into(),
            checked: CheckedPaths::default(),
        }
    }
}

/// Output of apply_patch: the paths as the patch names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchOutput {
    /// Files added
    pub added: Vec<String>,
    /// Files updated (a moved file by its new path)
    pub modified: Vec<String>,
    /// Files deleted
    pub deleted: Vec<String>,
}

impl ApplyPatchOutput {
    /// codex's summary: `Success. Updated the following files:` then `A`, `M` and `D` lines.
    pub fn summary(&self) -> String {
        let mut text = "Success. Updated the following files:".to_owned();
        let lines = [
            ("A", &self.added),
            ("M", &self.modified),
            ("D", &self.deleted),
        ];
        for (mark, paths) in lines {
            for p in paths {
                text.push_str(&format!("\n{mark} {p}"));
            }
        }
        text
    }
}

/// The apply_patch tool (codex's vocabulary; checked as Edit and Write).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyPatch;

/// Every path `hunks` writes: sources, move destinations, additions, deletions.
fn touched(hunks: &[grammar::Hunk]) -> Vec<&str> {
    let mut out = Vec::new();
    for h in hunks {
        out.push(h.path());
        if let grammar::Hunk::Update {
            move_to: Some(to), ..
        } = h
        {
            out.push(to.as_str());
        }
    }
    out
}

/// The one decision for all of a patch's paths: a denial of any refuses the patch; asks
/// become one ask naming every path that needs approval.
fn combine(decisions: Vec<(String, PermissionDecision)>) -> PermissionDecision {
    let denied: Vec<String> = decisions
        .iter()
        .filter_map(|(_, d)| match d {
            PermissionDecision::Deny { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    if !denied.is_empty() {
        return PermissionDecision::deny(format!(
            "{} The patch was not applied (it touches every file or none).",
            denied.join(" ")
        ));
    }
    let mut paths = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    let mut suggestions: Vec<tool_core::PermissionRule> = Vec::new();
    let mut strictest = PermissionDecision::Allow;
    for (path, decision) in decisions {
        if let PermissionDecision::Ask {
            reason,
            suggestions: more,
            ..
        } = &decision
        {
            paths.push(path);
            if !reasons.contains(reason) {
                reasons.push(reason.clone());
            }
            for s in more {
                if !suggestions.iter().any(|t| t.to_string() == s.to_string()) {
                    suggestions.push(s.clone());
                }
            }
            strictest = common::stricter(strictest, decision.clone());
        }
    }
    match strictest {
        PermissionDecision::Ask { kind, .. } => PermissionDecision::Ask {
            reason: format!(
                "apply_patch writes {}: {}",
                paths.join(", "),
                reasons.join("; ")
            ),
            suggestions,
            kind,
        },
        other => other,
    }
}

/// The body of a call (blocking: run it off the async runtime).
fn run(
    ctx: &ToolContext,
    input: &ApplyPatchInput,
) -> Result<(ApplyPatchOutput, Vec<commit::Written>), ToolError> {
    let hunks = grammar::parse(&input.input).map_err(|e| {
        ToolError::respond(format!(
            "{e}\nNothing was changed. A patch starts with '*** Begin Patch', ends with '*** End Patch', and holds '*** Add File: ', '*** Delete File: ' or '*** Update File: ' sections; fix the patch and send it again."
        ))
    })?;
    let resolve = |given: &Path| input.checked.target_for(given);
    let mut planned = plan::plan(ctx, &hunks, &resolve)?;
    let written = commit::commit(ctx, &mut planned)?;
    let output = ApplyPatchOutput {
        added: std::mem::take(&mut planned.added),
        modified: std::mem::take(&mut planned.modified),
        deleted: std::mem::take(&mut planned.deleted),
    };
    Ok((output, written))
}

#[async_trait]
impl TypedTool for ApplyPatch {
    type Input = ApplyPatchInput;
    type Output = ApplyPatchOutput;
    const META: ToolMeta = ToolMeta::new("apply_patch")
        .describe(APPLY_PATCH_DESCRIPTION)
        .hint("add, delete, update and move files with one patch")
        .category(ToolCategory::FileSystem)
        .checked_as(&["Edit", "Write"])
        .destructive_hint()
        .freeform_grammar(APPLY_PATCH_GRAMMAR)
        .freeform_description(APPLY_PATCH_FREEFORM_DESCRIPTION);

    async fn check_permission(
        &self,
        input: &ApplyPatchInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        // A patch that does not parse writes nothing; the call reports why.
        let Ok(hunks) = grammar::parse(&input.input) else {
            return PermissionDecision::Allow;
        };
        let mut decisions = Vec::new();
        let mut judged = Vec::new();
        for raw in touched(&hunks) {
            let given = common::resolve(ctx, raw);
            if judged.iter().any(|(g, _)| *g == given) {
                continue;
            }
            let (decision, resolved) = common::check_write_resolved(ctx, &given);
            decisions.push((given.display().to_string(), decision));
            if let Some(resolved) = resolved {
                judged.push((given, resolved));
            }
        }
        if let Ok(mut slot) = input.checked.0.lock() {
            *slot = judged;
        }
        combine(decisions)
    }
    async fn call(
        &self,
        input: ApplyPatchInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ApplyPatchOutput>, ToolError> {
        let ctx2 = ctx.clone();
        let (output, written) = tokio::task::spawn_blocking(move || run(&ctx2, &input))
            .await
            .map_err(|e| ToolError::fatal(format!("internal error: the patch failed: {e}")))??;
        let mut text = output.summary();
        for w in written {
            if let Some(new_text) = &w.text {
                text.push_str(&common::notify_lsp(ctx, &w.path, new_text).await);
            }
        }
        Ok(ToolResult::ok(output).with_text(text))
    }
}
