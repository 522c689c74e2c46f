//! Differential test of apply_patch against codex's own (`@openai/codex` 0.171, its
//! native binary run as `apply_patch`, which `cargo xtask peers` installs): each patch is
//! applied to two copies of a tree, one by codex, one by our tool, and both must succeed or
//! both fail; on success the trees must be identical (file set and bytes) and the summary
//! the same; on failure our tree must be untouched (codex may leave part of a patch
//! applied: ours is all or nothing on purpose) and our message must start with codex's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use tool_core::{PermissionMode, ToolContext, ToolPool, Typed};

/// codex's native binary, or `None` (with a note) unless `AGENT_TOOLS_REQUIRE_PEERS=1`.
fn codex() -> Option<PathBuf> {
    test_support::peers::path(
        "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    )
}

type Tree = BTreeMap<String, Option<Vec<u8>>>;

fn make(dir: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let path = dir.join(rel);
        if let Some(dir) = rel.strip_suffix('/') {
            std::fs::create_dir_all(path.parent().unwrap().join(dir)).unwrap();
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

fn snapshot(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"), None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

/// What one side did: success and its text.
struct Outcome {
    ok: bool,
    text: String,
    tree: Tree,
}

fn run_codex(link: &Path, files: &[(&str, &str)], patch: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path(), files);
    let out = Command::new(link)
        .arg(patch)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = if out.status.success() {
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    } else {
        String::from_utf8_lossy(&out.stderr).trim_end().to_owned()
    };
    // Absolute paths in messages name the tree: make them comparable.
    let root = dir.path().display().to_string();
    Outcome {
        ok: out.status.success(),
        text: text.replace(&root, "<root>"),
        tree: snapshot(dir.path()),
    }
}

fn run_ours(rt: &tokio::runtime::Runtime, files: &[(&str, &str)], patch: &str) -> (Outcome, Tree) {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    make(dir.path(), files);
    let before = snapshot(dir.path());
    let ctx = ToolContext::builder(dir.path())
        .state_dir(state.path())
        .mode(PermissionMode::BypassPermissions)
        .build();
    let pool = ToolPool::new(vec![Arc::new(Typed::new(tools_fs::ApplyPatch))]);
    let result = rt.block_on(pool.call("apply_patch", json!({ "input": patch }), &ctx));
    let root = dir.path().display().to_string();
    (
        Outcome {
            ok: !result.is_error,
            text: result
                .text()
                .trim_start_matches("<tool_use_error>")
                .trim_end_matches("</tool_use_error>")
                .replace(&root, "<root>"),
            tree: snapshot(dir.path()),
        },
        before,
    )
}

fn p(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch")
}

/// The cases: a tree and a patch.
fn cases() -> Vec<(Vec<(&'static str, &'static str)>, String)> {
    let base: Vec<(&str, &str)> = vec![
        ("a.txt", "alpha\nbeta\ngamma\ndelta\n"),
        ("crlf.txt", "one\r\ntwo\r\nthree\r\n"),
        ("nonl.txt", "first\nlast"),
        ("dup.txt", "x\ny\nx\ny\n"),
        ("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    1\n}\n"),
        ("uni.txt", "say “hi” — now\nnbsp\u{a0}here\nquote ‘x’\n"),
        ("ws.txt", "trail   \n\tindented\nplain\n"),
        ("empty.txt", ""),
        ("blank.txt", "x\n\n"),
        ("d/", ""),
        ("old/name.txt", "from\nold\n"),
        ("renamed/dir/name.txt", "existing dest\n"),
    ];
    let mut bodies: Vec<String> = vec![
        // Adds
        "*** Add File: new.txt\n+hello\n+world".into(),
        "*** Add File: nested/deep/new.txt\n+x".into(),
        "*** Add File: empty-new.txt".into(),
        "*** Add File: a.txt\n+overwritten".into(),
        "*** Add File: sp.txt\n+ leading space\n+\n+trailing  ".into(),
        "*** Add File: d\n+into a dir".into(),
        "*** Add File: a.txt/x\n+under a file".into(),
        // Deletes
        "*** Delete File: a.txt".into(),
        "*** Delete File: missing.txt".into(),
        "*** Delete File: d".into(),
        "*** Delete File: a.txt\n*** Delete File: a.txt".into(),
        "*** Delete File: old/name.txt\n*** Delete File: nonl.txt".into(),
        // Updates
        "*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n gamma".into(),
        "*** Update File: a.txt\n alpha\n-beta\n+BETA".into(),
        "*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n@@\n-delta\n+DELTA".into(),
        "*** Update File: a.txt\n@@\n-delta\n+DELTA\n@@\n-alpha\n+ALPHA".into(),
        "*** Update File: a.txt\n@@\n-nothere\n+x".into(),
        "*** Update File: a.txt\n@@ nothere\n-alpha\n+x".into(),
        "*** Update File: a.txt\n@@ beta\n-gamma\n+GAMMA".into(),
        "*** Update File: a.txt\n@@ beta\n-alpha\n+ALPHA".into(),
        "*** Update File: a.txt\n@@\n+appended".into(),
        "*** Update File: a.txt\n@@\n-alpha\n-beta\n-gamma\n-delta".into(),
        "*** Update File: a.txt\n@@\n-delta\n+DELTA\n*** End of File".into(),
        "*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** End of File".into(),
        "*** Update File: a.txt\n@@\n gamma\n delta\n+after\n*** End of File".into(),
        "*** Update File: a.txt\n@@\n-delta\n-\n+DELTA\n+".into(),
        "*** Update File: a.txt\n@@\n-beta\n+b1\n+b2\n+b3".into(),
        "*** Update File: missing.txt\n@@\n-x\n+y".into(),
        "*** Update File: d\n@@\n-x\n+y".into(),
        "*** Update File: dup.txt\n@@\n-x\n+X".into(),
        "*** Update File: dup.txt\n@@\n y\n-x\n+X".into(),
        "*** Update File: dup.txt\n@@\n-x\n-y\n+Z\n*** End of File".into(),
        "*** Update File: dup.txt\n@@\n-x\n+X\n@@\n-x\n+X2".into(),
        "*** Update File: src/lib.rs\n@@ fn b() {\n-    1\n+    2".into(),
        "*** Update File: src/lib.rs\n@@ fn a() {\n-    1\n+    0\n@@ fn b() {\n-    1\n+    2".into(),
        "*** Update File: src/lib.rs\n@@\n fn b() {\n-    1\n+    3\n }".into(),
        // CRLF and a missing final newline
        "*** Update File: crlf.txt\n@@\n one\n-two\n+TWO\n+TWO-B".into(),
        "*** Update File: crlf.txt\n@@\n+four".into(),
        "*** Update File: crlf.txt\n@@\n-three\n*** End of File".into(),
        "*** Update File: nonl.txt\n@@\n-first\n+FIRST".into(),
        "*** Update File: nonl.txt\n@@\n-last\n+LAST".into(),
        "*** Update File: nonl.txt\n@@\n-last\n+LAST\n*** End of File".into(),
        "*** Update File: nonl.txt\n@@\n+more".into(),
        "*** Update File: empty.txt\n@@\n+now full".into(),
        "*** Update File: blank.txt\n@@\n+added".into(),
        "*** Update File: blank.txt\n@@\n x\n-\n+y".into(),
        // Unicode punctuation and whitespace
        "*** Update File: uni.txt\n@@\n-say \"hi\" - now\n+said".into(),
        "*** Update File: uni.txt\n@@\n-nbsp here\n+NBSP".into(),
        "*** Update File: uni.txt\n@@\n-quote 'x'\n+Q".into(),
        "*** Update File: uni.txt\n@@\n-say “hi” — now\n+exact".into(),
        "*** Update File: ws.txt\n@@\n-trail\n+T".into(),
        "*** Update File: ws.txt\n@@\n-indented\n+I".into(),
        "*** Update File: ws.txt\n@@\n-  plain  \n+P".into(),
        "*** Update File: ws.txt\n@@\n trail\n-\tindented\n+\tINDENTED".into(),
        // Moves
        "*** Update File: old/name.txt\n*** Move to: renamed/new/name.txt\n@@\n-from\n+to".into(),
        "*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-from\n+to".into(),
        "*** Update File: old/name.txt\n*** Move to: top.txt\n@@\n from\n+more".into(),
        "*** Update File: a.txt\n*** Move to: d\n@@\n-alpha\n+x".into(),
        "*** Update File: missing.txt\n*** Move to: x.txt\n@@\n-a\n+b".into(),
        "*** Update File: crlf.txt\n*** Move to: moved/crlf.txt\n@@\n-one\n+ONE".into(),
        // Several files, in order
        "*** Add File: n.txt\n+q\n*** Update File: n.txt\n@@\n-q\n+r".into(),
        "*** Add File: n1.txt\n+1\n*** Delete File: a.txt\n*** Update File: nonl.txt\n@@\n-first\n+1st".into(),
        "*** Update File: a.txt\n@@\n-beta\n+B\n*** Delete File: nope.txt".into(),
        "*** Add File: made/x.txt\n+x\n*** Update File: a.txt\n@@\n-nothere\n+y".into(),
        "*** Delete File: a.txt\n*** Add File: a.txt\n+reborn".into(),
        "*** Delete File: a.txt\n*** Update File: a.txt\n@@\n-alpha\n+x".into(),
        "*** Update File: a.txt\n@@\n-alpha\n+A\n*** Update File: a.txt\n@@\n-beta\n+B".into(),
        "*** Update File: a.txt\n@@\n-alpha\n+A\n*** Update File: crlf.txt\n@@\n-two\n+2\n*** Update File: src/lib.rs\n@@ fn b() {\n-    1\n+    9".into(),
        "\n*** Update File: a.txt\n\n@@\n-alpha\n+A\n\n@@\n-gamma\n+G\n".into(),
        // Paths
        "*** Add File: ./dot/./x.txt\n+x".into(),
        "*** Update File: src/../a.txt\n@@\n-alpha\n+A".into(),
        // Grammar errors
        "*** Frob File: a.txt".into(),
        "*** Update File: a.txt".into(),
        "*** Update File: a.txt\n@@".into(),
        "*** Update File: a.txt\nbad line".into(),
        "*** Update File: a.txt\n@@\n-alpha\nbad line".into(),
        "*** Update File: a.txt\n@@\n*** End of File".into(),
        "*** Update File: a.txt\n@@ beta\n@@ gamma\n-delta\n+D".into(),
        "*** Add File: x.txt\nno plus".into(),
        "*** Add File:x.txt\n+y".into(),
        "*** Delete File:".into(),
        "*** Update File: a.txt\n*** Move to: b.txt".into(),
        "*** update file: a.txt\n@@\n-alpha\n+x".into(),
        "   *** Update File: a.txt   \n@@\n-alpha\n+A".into(),
        "*** Update File: a.txt\n  @@\n-alpha\n+A".into(),
        "*** Update File: a.txt\n@@\n-alpha\n+A\n*** End of File \n".into(),
        "*** Update File: a.txt\n@@  beta\n-gamma\n+G".into(),
        "*** Update File: a.txt\n@@\n-alpha\n+A\n\n*** Delete File: nonl.txt".into(),
    ];
    let mut raw: Vec<String> = bodies.drain(..).map(|b| p(&b)).collect();
    raw.extend([
        String::new(),
        "*** Begin Patch\n*** End Patch".into(),
        "*** Begin Patch".into(),
        "garbage".into(),
        "*** Begin Patch\n*** Add File: x\n+y".into(),
        "  *** Begin Patch  \n*** Add File: x\n+y\n  *** End Patch  ".into(),
        "*** Begin Patch\r\n*** Update File: a.txt\r\n@@\r\n-alpha\r\n+A\r\n*** End Patch\r\n"
            .into(),
        "<<'EOF'\n*** Begin Patch\n*** Add File: h.txt\n+heredoc\n*** End Patch\nEOF\n".into(),
        "<<EOF\n*** Begin Patch\n*** Add File: h.txt\n+heredoc\n*** End Patch\nEOF".into(),
        "<<\"EOF\"\n*** Begin Patch\n*** Add File: h.txt\n+heredoc\n*** End Patch\nEOF".into(),
        "<<'EOF'\n*** Begin Patch\n*** End Patch\nEOF".into(),
        "\n\n*** Begin Patch\n*** Add File: x\n+y\n*** End Patch\n\n\n".into(),
        "*** Begin Patch\n*** Add File: x\n+y\n*** End Patch\ntrailing".into(),
    ]);
    // Every update above again on CRLF and unterminated versions of a.txt.
    let variants: [(&str, &str); 2] = [
        ("a.txt", "alpha\r\nbeta\r\ngamma\r\ndelta\r\n"),
        ("a.txt", "alpha\nbeta\ngamma\ndelta"),
    ];
    let mut out: Vec<(Vec<(&str, &str)>, String)> =
        raw.iter().map(|r| (base.clone(), r.clone())).collect();
    for (path, content) in variants {
        let tree: Vec<(&str, &str)> = base
            .iter()
            .map(|&(p, c)| if p == path { (p, content) } else { (p, c) })
            .collect();
        for r in raw
            .iter()
            .filter(|r| r.contains("*** Update File: a.txt\n@@"))
        {
            out.push((tree.clone(), r.clone()));
        }
    }
    out
}

#[test]
fn apply_patch_matches_codex() {
    let Some(bin) = codex() else { return };
    let bin_dir = tempfile::tempdir().unwrap();
    let link = bin_dir.path().join("apply_patch");
    std::os::unix::fs::symlink(&bin, &link).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cases = cases();
    let mut failures = Vec::new();
    let (mut ok, mut failed) = (0, 0);
    for (files, patch) in &cases {
        let theirs = run_codex(&link, files, patch);
        let (ours, before) = run_ours(&rt, files, patch);
        let mut problems = Vec::new();
        if theirs.ok != ours.ok {
            problems.push(format!("codex ok={} ours ok={}", theirs.ok, ours.ok));
        } else if theirs.ok {
            ok += 1;
            if theirs.tree != ours.tree {
                problems.push(format!(
                    "trees differ:\n codex {:?}\n ours  {:?}",
                    lossy(&theirs.tree),
                    lossy(&ours.tree)
                ));
            }
            if theirs.text != ours.text {
                problems.push("summaries differ".to_owned());
            }
        } else {
            failed += 1;
            if ours.tree != before {
                problems.push("our failed patch changed the tree".to_owned());
            }
            let first = theirs.text.lines().next().unwrap_or_default();
            if !ours.text.starts_with(first) {
                problems.push("messages differ".to_owned());
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "patch {patch:?}\n  {}\n  codex: {}\n  ours:  {}",
                problems.join("\n  "),
                theirs.text,
                ours.text
            ));
        }
    }
    println!(
        "apply_patch vs codex 0.171: {} patches ({ok} applied by both, {failed} refused by both), {} differences",
        cases.len(),
        failures.len()
    );
    assert!(cases.len() >= 100);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn lossy(tree: &Tree) -> BTreeMap<&str, Option<String>> {
    tree.iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                v.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
            )
        })
        .collect()
}
