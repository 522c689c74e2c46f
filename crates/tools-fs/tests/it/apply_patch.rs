//! apply_patch through the pool: encodings, BOM, line endings and modes kept, the ledger
//! left ready for Edit, permissions judged on every path (one denial refuses the patch),
//! plan mode, and random mutations of valid patches (never a panic; a refused patch
//! changes nothing).

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use serde_json::json;
use tool_core::{CallResult, PermissionMode, RuleBehavior, ToolContext, ToolPool, Typed};

use crate::Fixture;

fn call(ctx: &ToolContext, tool: &str, input: serde_json::Value) -> CallResult {
    let mut tools = tools_fs::tools();
    tools.push(Arc::new(Typed::new(tools_fs::ApplyPatch)));
    let pool = ToolPool::new(tools);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(pool.call(tool, input, ctx))
}

fn patch(body: &str) -> serde_json::Value {
    if body.is_empty() {
        return json!({ "input": "*** Begin Patch\n*** End Patch" });
    }
    json!({ "input": format!("*** Begin Patch\n{body}\n*** End Patch") })
}

/// Applies `body` (in acceptEdits mode) to a tree holding `files`; `expected` is either
/// `Ok(files after)` (every file of the tree, by name) or `Err(text the message contains)`,
/// in which case the tree must be unchanged.
fn check(files: &[(&str, &[u8])], body: &str, expected: Result<&[(&str, &[u8])], &str>) {
    let fx = Fixture::new(&[]);
    for (name, bytes) in files {
        fx.write(name, bytes);
    }
    let ctx = fx.context_with(PermissionMode::AcceptEdits, &[]);
    let result = call(&ctx, "apply_patch", patch(body));
    match expected {
        Ok(after) => {
            assert!(!result.is_error, "{body}: {}", result.text());
            for (name, bytes) in after {
                assert_eq!(fx.read(name), bytes.to_vec(), "{body}: {name}");
            }
        }
        Err(text) => {
            assert!(result.is_error, "{body}: {}", result.text());
            assert!(result.text().contains(text), "{body}: {}", result.text());
            for (name, bytes) in files {
                assert_eq!(fx.read(name), bytes.to_vec(), "{body}: {name} changed");
            }
        }
    }
}

#[test]
fn encodings_endings_and_bom_are_kept() {
    check(
        &[("a.txt", b"one\r\ntwo\r\n")],
        "*** Update File: a.txt\n@@\n-two\n+2\n+3",
        Ok(&[("a.txt", b"one\r\n2\r\n3\r\n")]),
    );
    check(
        &[("bom.txt", b"\xEF\xBB\xBFfirst\nsecond\n")],
        "*** Update File: bom.txt\n@@\n-first\n+1st",
        Ok(&[("bom.txt", b"\xEF\xBB\xBF1st\nsecond\n")]),
    );
    let utf16: Vec<u8> = b"\xFF\xFE"
        .iter()
        .copied()
        .chain("a\nb\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let expected: Vec<u8> = b"\xFF\xFE"
        .iter()
        .copied()
        .chain("a\nB\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    check(
        &[("w.txt", &utf16)],
        "*** Update File: w.txt\n@@\n-b\n+B",
        Ok(&[("w.txt", &expected)]),
    );
    check(
        &[("bin.dat", b"a\0b\n")],
        "*** Update File: bin.dat\n@@\n-a\n+b",
        Err("binary file"),
    );
    check(
        &[("bad.txt", b"ok\n\xFF\n")],
        "*** Update File: bad.txt\n@@\n-ok\n+b",
        Err("not valid utf-8"),
    );
}

#[test]
fn several_files_change_together_or_not_at_all() {
    let files: &[(&str, &[u8])] = &[("a.txt", b"a\n"), ("b.txt", b"b\n")];
    check(
        files,
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: b.txt\n*** Add File: c/d.txt\n+new",
        Ok(&[("a.txt", b"A\n"), ("c/d.txt", b"new\n")]),
    );
    // Codex would leave a.txt changed here; nothing changes.
    check(
        files,
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-zzz\n+q",
        Err("Failed to find expected lines"),
    );
    check(
        files,
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: nope",
        Err("Failed to delete file"),
    );
    check(files, "", Err("No files were modified."));
    check(
        files,
        "*** Update File: a.txt\n*** Move to: a.txt\n@@\n-a\n+A",
        Ok(&[("a.txt", b"A\n")]),
    );
}

#[test]
fn the_mode_is_kept_and_a_later_edit_needs_no_read() {
    let fx = Fixture::new(&[]);
    fx.write("run.sh", "echo hi\n");
    std::fs::set_permissions(fx.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ctx = fx.context_with(PermissionMode::AcceptEdits, &[]);
    let r = call(
        &ctx,
        "apply_patch",
        patch("*** Update File: run.sh\n@@\n-echo hi\n+echo ho"),
    );
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "Success. Updated the following files:\nM run.sh");
    let mode = std::fs::metadata(fx.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    let edit =
        json!({"file_path": fx.path("run.sh"), "old_string": "echo ho", "new_string": "echo hey"});
    let r = call(&ctx, "Edit", edit);
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(fx.read("run.sh"), b"echo hey\n");
    // No Read was needed before the patch either: its lines are the check.
    fx.write("fresh.txt", "x\n");
    let r = call(
        &ctx,
        "apply_patch",
        patch("*** Update File: fresh.txt\n@@\n-x\n+y"),
    );
    assert!(!r.is_error, "{}", r.text());
}

#[test]
fn every_path_is_judged_and_one_denial_refuses_the_patch() {
    let fx = Fixture::new(&[]);
    fx.write("ok.txt", "a\n");
    fx.write("secret/s.txt", "s\n");
    let ctx = fx.context_with(
        PermissionMode::AcceptEdits,
        &[(RuleBehavior::Deny, "Edit(secret/**)")],
    );
    let body = "*** Update File: ok.txt\n@@\n-a\n+A\n*** Update File: secret/s.txt\n@@\n-s\n+S";
    let r = call(&ctx, "apply_patch", patch(body));
    assert!(r.is_error && r.text().contains("denied"), "{}", r.text());
    assert_eq!(fx.read("ok.txt"), b"a\n");
    // A move's destination is judged too.
    let body = "*** Update File: ok.txt\n*** Move to: secret/moved.txt\n@@\n-a\n+A";
    let r = call(&ctx, "apply_patch", patch(body));
    assert!(r.is_error && r.text().contains("denied"), "{}", r.text());
    // A blanket Edit deny governs apply_patch.
    let ctx = fx.context_with(PermissionMode::AcceptEdits, &[(RuleBehavior::Deny, "Edit")]);
    let r = call(&ctx, "apply_patch", patch("*** Add File: n.txt\n+x"));
    assert!(r.is_error, "{}", r.text());
    assert!(!fx.path("n.txt").exists());
    // Plan mode is read-only; protected paths need approval, which no one gives here.
    let ctx = fx.context_with(PermissionMode::Plan, &[]);
    let r = call(&ctx, "apply_patch", patch("*** Add File: n.txt\n+x"));
    assert!(r.is_error && r.text().contains("Plan mode"), "{}", r.text());
    let ctx = fx.context_with(PermissionMode::BypassPermissions, &[]);
    let r = call(&ctx, "apply_patch", patch("*** Add File: .git/config\n+x"));
    assert!(r.is_error && r.text().contains("protected"), "{}", r.text());
    assert!(!fx.path(".git/config").exists());
    // Outside the working directory: an ask naming the path, refused without a person.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("o.txt");
    let ctx = fx.context_with(PermissionMode::AcceptEdits, &[]);
    let r = call(
        &ctx,
        "apply_patch",
        patch(&format!("*** Add File: {}\n+x", target.display())),
    );
    assert!(r.is_error && r.text().contains("o.txt"), "{}", r.text());
    assert!(!target.exists());
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_mutations_never_panic_and_a_refused_patch_changes_nothing() {
    let seeds = [
        "*** Begin Patch\n*** Update File: a.txt\n@@ fn\n ctx\n-old\n+new\n*** End of File\n*** Add File: n/b.txt\n+x\n*** Delete File: c.txt\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: m/a.txt\n@@\n-old\n+new\n@@\n ctx\n+more\n*** End Patch",
    ];
    let pieces = [
        "\n",
        "*",
        "@@",
        "@@ ",
        "+",
        "-",
        " ",
        "*** End Patch",
        "*** Begin Patch",
        "*** End of File",
        "*** Add File: ",
        "*** Move to: ",
        "\r\n",
        "é",
        "—",
        "\u{a0}",
        "../",
        "/",
        "",
    ];
    let fx = Fixture::new(&[]);
    let ctx = fx.context_with(PermissionMode::AcceptEdits, &[]);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..400 {
        for (name, text) in [("a.txt", "fn\nctx\nold\n"), ("c.txt", "c\n")] {
            fx.write(name, text);
        }
        let _ = std::fs::remove_dir_all(fx.path("n"));
        let _ = std::fs::remove_dir_all(fx.path("m"));
        let mut s: Vec<char> = seeds[round % seeds.len()].chars().collect();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(s.len() + 1);
            match rng.below(3) {
                0 if at < s.len() => {
                    let end = (at + 1 + rng.below(12)).min(s.len());
                    s.drain(at..end);
                }
                1 => {
                    let piece = pieces[rng.below(pieces.len())];
                    for (k, c) in piece.chars().enumerate() {
                        s.insert(at + k, c);
                    }
                }
                _ if at < s.len() => {
                    let other = rng.below(s.len());
                    s.swap(at, other);
                }
                _ => {}
            }
        }
        let input: String = s.into_iter().collect();
        let r = call(&ctx, "apply_patch", json!({ "input": input }));
        if r.is_error {
            assert_eq!(
                fx.read("a.txt"),
                b"fn\nctx\nold\n",
                "{input:?}: {}",
                r.text()
            );
            assert_eq!(fx.read("c.txt"), b"c\n", "{input:?}: {}", r.text());
            assert!(
                !fx.path("n").exists() && !fx.path("m").exists(),
                "{input:?}"
            );
        }
    }
}
