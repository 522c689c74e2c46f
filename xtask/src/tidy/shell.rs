//! Only tools-shell runs shell command lines, and the sandbox crate starts them for it.
//!
//! The rule is about shells, not processes: other crates start programs of their own —
//! tools-lsp its language servers (and `git`), tools-mcp its MCP servers, tools-agent `git`
//! for worktrees and a configured agent command — and that is fine. What only tools-shell
//! may do is start a shell (`sh`, `bash`, …) to run a command line, because only
//! tools-shell parses such a line for the permission engine; the sandbox crate, which runs
//! it contained (and puts small `sh` steps of its own in front of what it starts), is the
//! other crate that names shells.
//!
//! Checked: in `crates/*/src` except those two crates', and in the `src` of the members
//! outside `crates/` (`examples/src`), outside `#[cfg(test)]` items, no
//! `Command::new`, `Cmd::new` or `CommandWrap::with_new` whose first argument is a string
//! literal naming a shell (also as `/bin/sh`, `/usr/bin/env`-less absolute paths), and no
//! string literal that is a shell's absolute path (`"/bin/sh"`, `"/usr/bin/bash"`: a shell
//! put into an argument vector). A shell named through a variable is not seen; that is for
//! review. Tests (`crates/*/tests/`, `#[cfg(test)]`) and xtask may spawn shells.

use std::path::Path;

use anyhow::Result;

use super::{Problem, source, walk};

/// The crates allowed to start shells: tools-shell, which runs command lines, and the
/// sandbox crate, which starts them contained.
pub const SHELL_CRATES: [&str; 2] = ["tools-shell", "sandbox"];

/// Program names that are shells.
const SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"];

/// The constructors that take the program to run.
const SPAWNERS: [&str; 3] = ["Command::new(", "Cmd::new(", "CommandWrap::with_new("];

/// The shells `text` starts (after comments are blanked): (byte offset, shell).
fn shell_spawns(strings: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    // Literals already reported through a spawner, by their offset.
    let mut seen: Vec<usize> = Vec::new();
    for spawner in SPAWNERS {
        let mut from = 0;
        while let Some(at) = strings[from..].find(spawner) {
            let start = from + at;
            from = start + spawner.len();
            let rest = &strings[from..];
            let arg = rest.trim_start();
            let Some(literal) = arg.strip_prefix('"') else {
                continue;
            };
            let Some(end) = literal.find('"') else {
                continue;
            };
            let program = &literal[..end];
            let base = program.rsplit('/').next().unwrap_or(program);
            if SHELLS.contains(&base) {
                seen.push(from + (rest.len() - arg.len()));
                found.push((start, program.to_owned()));
            }
        }
    }
    // A shell's absolute path as a literal of its own, wherever it is used.
    for prefix in ["/bin/", "/usr/bin/", "/usr/local/bin/"] {
        for shell in SHELLS {
            let literal = format!("\"{prefix}{shell}\"");
            let mut from = 0;
            while let Some(at) = strings[from..].find(&literal) {
                let start = from + at;
                from = start + literal.len();
                if !seen.contains(&start) {
                    found.push((start, format!("{prefix}{shell}")));
                }
            }
        }
    }
    found.sort();
    found
}

/// Problems in one source file's text (`rel` is the path reported).
pub fn check_text(rel: &Path, text: &str, problems: &mut Vec<Problem>) {
    let masked = source::mask(text);
    let tests = source::test_lines(&masked.code);
    for (offset, program) in shell_spawns(&masked.strings) {
        let line = source::line_of(&masked.strings, offset);
        if tests.get(line - 1).copied().unwrap_or(false) {
            continue;
        }
        problems.push(Problem {
            path: rel.to_path_buf(),
            line,
            message: format!(
                "starts the shell `{program}`: rule: only tools-shell runs shell command \
                 lines, and the sandbox crate starts them (use the Bash tool's machinery \
                 through a tool-core trait, or run the program itself without a shell)"
            ),
        });
    }
}

/// Checks `crates/*/src` of every crate but [`SHELL_CRATES`], and the `src` of every
/// member outside `crates/`.
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let mut dirs: Vec<_> = match std::fs::read_dir(root.join("crates")) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    dirs.extend(super::TOP_LEVEL_PACKAGES.iter().map(|p| root.join(p)));
    for dir in dirs {
        if dir
            .file_name()
            .is_some_and(|n| SHELL_CRATES.iter().any(|c| n == *c))
        {
            continue;
        }
        let mut files = Vec::new();
        walk(&dir.join("src"), &mut files)?;
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            check_text(file.strip_prefix(root).unwrap_or(file), &text, problems);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<String> {
        let mut problems = Vec::new();
        check_text(Path::new("a.rs"), text, &mut problems);
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn shells_are_found_and_programs_are_not() {
        let shell = "//! D.\nfn f() { std::process::Command::new(\"sh\").arg(\"-c\"); }\n";
        assert_eq!(found(shell).len(), 1);
        assert!(found(shell)[0].starts_with("a.rs:2: starts the shell `sh`"));
        assert_eq!(found("fn f() { Command::new( \"/bin/bash\"); }").len(), 1);
        assert!(found("fn f() { Command::new(\"git\"); Command::new(program); }").is_empty());
        // A shell put into an argument vector.
        assert_eq!(found("fn f() { argv.push(\"/bin/sh\"); }").len(), 1);
        assert_eq!(
            found("fn f() { let a = [\"/usr/bin/bash\", \"-c\"]; }").len(),
            1
        );
        assert!(found("fn f() { let a = \"/bin/shell-tools\"; }").is_empty());
        // Comments and tests may mention or run shells.
        assert!(found("// Command::new(\"sh\")\n").is_empty());
        assert!(
            found("#[cfg(test)]\nmod tests {\n fn t() { Command::new(\"sh\"); }\n}\n").is_empty()
        );
    }
}
