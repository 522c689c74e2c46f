//! Edit, MultiEdit and Write through the pool: read-before-write and staleness by content,
//! matching rules, messages, encodings, line endings, modes, the LSP hook, protected paths
//! and symlinks (safety rows 19, 20, 22, 26–34, 36, 37).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    CallResult, FileDiagnostic, LspManager, PermissionEngine, PermissionMode, RuleBehavior,
    ToolContext, ToolError,
};

use crate::Fixture;

/// A context that may write inside the root without asking.
fn ctx(f: &Fixture) -> ToolContext {
    f.context_with(PermissionMode::AcceptEdits, &[])
}

/// [`ctx`] with `lsp` as the language-server manager.
fn ctx_with_lsp(f: &Fixture, lsp: Arc<dyn LspManager>) -> ToolContext {
    ToolContext::builder(f.root())
        .mode(PermissionMode::AcceptEdits)
        .permissions(PermissionEngine::default())
        .state_dir(f.root().join(".state"))
        .lsp(lsp)
        .build()
}

fn read(f: &Fixture, ctx: &ToolContext, rel: &str) -> CallResult {
    let r = f.call_tool(
        ctx,
        "Read",
        &json!({"file_path": format!("{{root}}/{rel}")}),
    );
    assert!(!r.is_error, "{r:#?}");
    r
}

fn edit(f: &Fixture, ctx: &ToolContext, rel: &str, old: &str, new: &str) -> CallResult {
    f.call_tool(
        ctx,
        "Edit",
        &json!({"file_path": format!("{{root}}/{rel}"), "old_string": old, "new_string": new}),
    )
}

/// Writes `before` as `f.txt`, reads it, edits `old` → `new`, and checks the bytes after.
#[track_caller]
fn check(before: &[u8], old: &str, new: &str, after: &[u8]) -> CallResult {
    let f = Fixture::new(&[]);
    f.write("f.txt", before);
    let c = ctx(&f);
    read(&f, &c, "f.txt");
    let r = edit(&f, &c, "f.txt", old, new);
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(
        String::from_utf8_lossy(&f.read("f.txt")),
        String::from_utf8_lossy(after)
    );
    assert_eq!(f.read("f.txt"), after);
    r
}

#[test]
fn edit_replaces_and_reports_a_diff() {
    let r = check(b"a\nb\nc\n", "b", "B", b"a\nB\nc\n");
    let path = r.data["filePath"].as_str().unwrap().to_owned();
    assert_eq!(
        r.text(),
        format!("The file {path} has been updated successfully.")
    );
    assert_eq!(
        r.data["diff"],
        format!("--- {path}\n+++ {path}\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    );
    assert_eq!(r.data["structuredPatch"][0]["oldStart"], 1);
    assert_eq!(r.data["oldString"], "b");
    assert_eq!(r.data["edits"][0]["matchedBy"], "exact");
}

#[test]
fn replacement_is_literal_and_deletion_takes_the_newline() {
    check(b"x = 1\n", "1", "$& $1 $$", b"x = $& $1 $$\n");
    check(b"keep\ndrop\nkeep2\n", "drop", "", b"keep\nkeep2\n");
}

#[test]
fn matches_must_be_unique_unless_replace_all() {
    // Row 34: 0 or 2 matches → refused with the count; the file is unchanged.
    let f = Fixture::new(&[]);
    f.write("f.txt", "x\nx\n");
    let c = ctx(&f);
    read(&f, &c, "f.txt");
    let r = edit(&f, &c, "f.txt", "x", "y");
    assert_eq!(
        r.text(),
        "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: x</tool_use_error>"
    );
    let r = edit(&f, &c, "f.txt", "nothing", "y");
    assert_eq!(
        r.text(),
        "<tool_use_error>String to replace not found in file.\nString: nothing</tool_use_error>"
    );
    assert_eq!(f.read("f.txt"), b"x\nx\n");
    let r = f.call_tool(
        &c,
        "Edit",
        &json!({"file_path": "{root}/f.txt", "old_string": "x", "new_string": "y", "replace_all": true}),
    );
    let path = f.path("f.txt").display().to_string();
    assert_eq!(
        r.text(),
        format!("The file {path} has been updated. All occurrences were successfully replaced.")
    );
    assert_eq!(f.read("f.txt"), b"y\ny\n");
}

#[test]
fn near_misses_match_when_unique_and_say_how() {
    let r = check(
        "s = “hi”\n".as_bytes(),
        "s = \"hi\"",
        "s = \"yo\"",
        "s = “yo”\n".as_bytes(),
    );
    assert!(
        r.text()
            .contains("Note: old_string matched after reading curly quotes as straight ones"),
        "{}",
        r.text()
    );
    let r = check(
        b"fn f() {\n\tlet a = 1;  \n\tlet b = 2;\n}\n",
        "    let a = 1;\n    let b = 2;",
        "    let a = 10;\n    let b = 20;",
        b"fn f() {\n\tlet a = 10;\n\tlet b = 20;\n}\n",
    );
    assert_eq!(r.data["edits"][0]["matchedBy"], "whitespace");
}

#[test]
fn not_found_names_the_closest_lines() {
    let f = Fixture::new(&[]);
    f.write("f.rs", "fn a() {}\nfn b() {\n    call(1);\n}\n");
    let c = ctx(&f);
    read(&f, &c, "f.rs");
    let r = edit(&f, &c, "f.rs", "fn b() {\n    call(2);\n}", "x");
    assert_eq!(
        r.text(),
        "<tool_use_error>String to replace not found in file.\nString: fn b() {\n    call(2);\n}\n\nThe closest match is at lines 2-4 of the file:\n2\tfn b() {\n3\t    call(1);\n4\t}\nThe first line that differs is line 3:\n  file:       \"    call(1);\"\n  old_string: \"    call(2);\"</tool_use_error>"
    );
}

#[test]
fn read_first_and_staleness_by_content() {
    let f = Fixture::new(&[]);
    f.write("f.txt", "one\n");
    let c = ctx(&f);
    let r = edit(&f, &c, "f.txt", "one", "two");
    assert_eq!(
        r.text(),
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    );
    read(&f, &c, "f.txt");
    // Touched without a change: still fresh.
    f.set_mtime("f.txt", Duration::from_secs(1_700_000_000));
    assert!(!edit(&f, &c, "f.txt", "one", "two").is_error);
    // Row 32: changed by someone else after the read → refused; their change is kept.
    f.write("f.txt", "two\nexternal\n");
    let r = edit(&f, &c, "f.txt", "two", "three");
    assert!(
        r.text().starts_with("<tool_use_error>File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."),
        "{r:#?}"
    );
    assert_eq!(f.read("f.txt"), b"two\nexternal\n");
    // A read with offset/limit counts as a read.
    let r = f.call_tool(
        &c,
        "Read",
        &json!({"file_path": "{root}/f.txt", "offset": 2, "limit": 1}),
    );
    assert!(!r.is_error);
    assert!(!edit(&f, &c, "f.txt", "two", "three").is_error);
    // Our own edit updates the ledger: a second edit needs no new read.
    assert!(!edit(&f, &c, "f.txt", "three", "four").is_error);
    assert_eq!(f.read("f.txt"), b"four\nexternal\n");
}

#[test]
fn empty_old_string_creates_or_fills() {
    let f = Fixture::new(&[]);
    let c = ctx(&f);
    let r = edit(&f, &c, "new/dir/n.txt", "", "hello\n");
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(
        r.text(),
        format!(
            "File created successfully at: {}",
            f.path("new/dir/n.txt").display()
        )
    );
    assert_eq!(f.read("new/dir/n.txt"), b"hello\n");
    f.write("empty.txt", "");
    assert!(!edit(&f, &c, "empty.txt", "", "filled").is_error);
    assert_eq!(f.read("empty.txt"), b"filled");
    f.write("full.txt", "content");
    let r = edit(&f, &c, "full.txt", "", "x");
    read(&f, &c, "full.txt");
    let r2 = edit(&f, &c, "full.txt", "", "x");
    for r in [r, r2] {
        assert!(
            r.text()
                .contains("Cannot create new file - file already exists."),
            "{r:#?}"
        );
    }
}

#[test]
fn input_rules() {
    let f = Fixture::new(&["a.ipynb = {}", "src/main.rs = x"]);
    let c = ctx(&f);
    assert_eq!(
        edit(&f, &c, "f.txt", "same", "same").text(),
        "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>"
    );
    assert_eq!(
        edit(&f, &c, "a.ipynb", "a", "b").text(),
        "<tool_use_error>File is a Jupyter Notebook. Use the NotebookEdit to edit this file.</tool_use_error>"
    );
    assert_eq!(
        edit(&f, &c, "src/mainn.rs", "a", "b").text(),
        f.expand("<tool_use_error>File does not exist. Note: your current working directory is {root}. Did you mean {root}/src/main.rs?</tool_use_error>")
    );
    let r = f.call_tool(
        &c,
        "Edit",
        &json!({"file_path": "{root}/x", "old_string": "a"}),
    );
    assert!(
        r.text()
            .contains("The required parameter `new_string` is missing"),
        "{r:#?}"
    );
}

#[test]
fn encodings_boms_and_binary() {
    // Row 30: the UTF-8 BOM stays.
    check(b"\xEF\xBB\xBFa\nb\n", "b", "c", b"\xEF\xBB\xBFa\nc\n");
    // UTF-16LE with BOM stays UTF-16LE.
    let utf16 = |s: &str| {
        let mut v = vec![0xFF, 0xFE];
        for u in s.encode_utf16() {
            v.extend_from_slice(&u.to_le_bytes());
        }
        v
    };
    check(
        &utf16("héllo\r\nwörld\r\n"),
        "wörld",
        "welt",
        &utf16("héllo\r\nwelt\r\n"),
    );
    // Row 27: Latin-1 is refused; the byte is not rewritten.
    let f = Fixture::new(&[]);
    f.write("latin.txt", b"caf\xe9\nbar\n");
    let c = ctx(&f);
    read(&f, &c, "latin.txt");
    let r = edit(&f, &c, "latin.txt", "bar", "baz");
    assert!(
        r.text().contains(
            "is not valid utf-8 text (invalid byte sequence at byte 3). It was not modified"
        ),
        "{r:#?}"
    );
    assert_eq!(f.read("latin.txt"), b"caf\xe9\nbar\n");
    // Row 26: a PNG is refused by Edit.
    f.write("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let r = edit(&f, &c, "img.png", "PNG", "JPG");
    assert!(r.text().contains("it is a binary file"), "{r:#?}");
}

#[test]
fn line_endings_of_untouched_lines_are_kept() {
    // Row 28: CRLF; only the edited line changes.
    check(b"a\r\nb\r\nc\r\n", "b", "B", b"a\r\nB\r\nc\r\n");
    check(
        b"a\r\nb\r\nc\r\n",
        "a\nb",
        "x\ny\nz",
        b"x\r\ny\r\nz\r\nc\r\n",
    );
    // Row 29: mixed endings; untouched lines byte-identical.
    check(b"a\r\nb\nc\r\nd\n", "c", "C", b"a\r\nb\nC\r\nd\n");
    check(b"a\r\nb\nc\r\nd\n", "b\nc", "B\nC", b"a\r\nB\nC\r\nd\n");
}

#[test]
fn large_files_are_spliced_with_every_other_byte_kept() {
    // Over 1 MiB, one edit is written as the original file with the replacement spliced in.
    let mut body = Vec::new();
    for i in 0..60_000 {
        let ending: &[u8] = if i % 3 == 0 { b"\r\n" } else { b"\n" };
        body.extend_from_slice(format!("line {i} with some text").as_bytes());
        body.extend_from_slice(ending);
    }
    assert!(body.len() > 1024 * 1024);
    let replace = |from: &[u8], to: &[u8]| {
        let at = body.windows(from.len()).position(|w| w == from).unwrap();
        [&body[..at], to, &body[at + from.len()..]].concat()
    };
    // A CRLF region: the replacement's line breaks follow it.
    check(
        &body,
        "line 30000 with some text\nline 30001",
        "changed\nlines",
        &replace(
            b"line 30000 with some text\r\nline 30001",
            b"changed\r\nlines",
        ),
    );
    // A deletion takes its line break; the last line, too.
    check(
        &body,
        "line 20 with some text",
        "",
        &replace(b"line 20 with some text\n", b""),
    );
    check(
        &body,
        "line 59999 with some text",
        "end",
        &replace(b"line 59999 with some text", b"end"),
    );
    // replace_all across the file, the mode kept, the ledger updated: a second edit needs no
    // new read, and a no-op edit is refused.
    let f = Fixture::new(&[]);
    f.write("big.txt", &body);
    std::fs::set_permissions(f.path("big.txt"), std::fs::Permissions::from_mode(0o751)).unwrap();
    let c = ctx(&f);
    read(&f, &c, "big.txt");
    let r = f.call_tool(
        &c,
        "Edit",
        &json!({"file_path": "{root}/big.txt", "old_string": "some text", "new_string": "words", "replace_all": true}),
    );
    assert!(!r.is_error, "{r:#?}");
    let after = f.read("big.txt");
    assert_eq!(
        after,
        String::from_utf8(body.clone())
            .unwrap()
            .replace("some text", "words")
            .into_bytes()
    );
    let meta = std::fs::metadata(f.path("big.txt")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
    assert!(!edit(&f, &c, "big.txt", "line 7 with", "line seven with").is_error);
    let r = edit(&f, &c, "big.txt", "line seven", "line seven");
    assert!(r.is_error);
    // Changed behind our back after the read: refused, their change kept.
    f.write("big.txt", &body);
    let r = edit(&f, &c, "big.txt", "line 8 with", "line eight with");
    assert!(
        r.text().contains("File has been modified since read"),
        "{r:#?}"
    );
    assert_eq!(f.read("big.txt"), body);
}

#[test]
fn files_over_64_mib_are_edited_without_loading_them() {
    // 5 000 000 lines of 14 bytes: 70 MB, over the hashing limit, so the Read stops after
    // its page and one exact edit streams the file.
    let mut body = Vec::with_capacity(70_000_000);
    for i in 0..5_000_000 {
        body.extend_from_slice(format!("line {i:08}\n").as_bytes());
    }
    let f = Fixture::new(&[]);
    f.write("huge.txt", &body);
    let c = ctx(&f);
    let r = f.call_tool(
        &c,
        "Read",
        &json!({"file_path": "{root}/huge.txt", "limit": 2}),
    );
    assert!(
        r.text().contains("\n\n[Showing lines 1-2 of at least ")
            && r.text().ends_with(" (a file of 70000000 bytes; the lines after this page were not counted). To read more, call Read with offset: 3.]"),
        "{}",
        r.text()
    );
    assert_eq!(r.data["totalLinesPartial"], true);
    let r = edit(&f, &c, "huge.txt", "line 02500000", "the middle");
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(r.data["structuredPatch"][0]["oldStart"], 2_499_998);
    assert!(
        r.data["diff"]
            .as_str()
            .unwrap()
            .contains("-line 02500000\n+the middle\n"),
        "{}",
        r.data["diff"]
    );
    // A second edit needs no new read; a deletion takes its line break.
    assert!(!edit(&f, &c, "huge.txt", "line 04999999", "").is_error);
    let mut expected = body.clone();
    let at = 2_500_000 * 14;
    expected.splice(at..at + 13, b"the middle".iter().copied());
    expected.truncate(expected.len() - 14);
    assert_eq!(f.read("huge.txt"), expected);
    // Not unique: the general path's message.
    let r = edit(&f, &c, "huge.txt", "line 0000000", "x");
    assert!(
        r.text()
            .contains("Found 10 matches of the string to replace"),
        "{}",
        r.text()
    );
}

#[test]
fn mode_is_kept() {
    // Row 31.
    let f = Fixture::new(&[]);
    f.write("run.sh", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(f.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = ctx(&f);
    read(&f, &c, "run.sh");
    assert!(!edit(&f, &c, "run.sh", "hi", "bye").is_error);
    let meta = std::fs::metadata(f.path("run.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
    let w = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/run.sh", "content": "#!/bin/sh\n"}),
    );
    assert!(!w.is_error, "{w:#?}");
    let meta = std::fs::metadata(f.path("run.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
}

#[test]
fn multi_edit_is_all_or_nothing() {
    let f = Fixture::new(&[]);
    f.write("m.txt", "alpha\nbeta\ngamma\n");
    let c = ctx(&f);
    read(&f, &c, "m.txt");
    let r = f.call_tool(
        &c,
        "MultiEdit",
        &json!({"file_path": "{root}/m.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "zzz", "new_string": "DELTA"},
        ]}),
    );
    assert_eq!(
        r.text(),
        "<tool_use_error>Edit 2 of 2 failed: String to replace not found in file.\nString: zzz\nNo edits were applied; the file is unchanged.</tool_use_error>"
    );
    assert_eq!(f.read("m.txt"), b"alpha\nbeta\ngamma\n");
    let r = f.call_tool(
        &c,
        "MultiEdit",
        &json!({"file_path": "{root}/m.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "gamma", "new_string": "GAMMA"},
            {"old_string": "a", "new_string": "4", "replace_all": true},
        ]}),
    );
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(f.read("m.txt"), b"ALPHA\nbet4\nGAMMA\n");
    assert_eq!(r.data["edits"].as_array().map(Vec::len), Some(3));
    assert!(
        r.data["diff"]
            .as_str()
            .unwrap()
            .contains("-alpha\n-beta\n-gamma\n+ALPHA\n+bet4\n+GAMMA\n"),
        "{r:#?}"
    );
    let r = f.call_tool(
        &c,
        "MultiEdit",
        &json!({"file_path": "{root}/m.txt", "edits": [
            {"old_string": "bet4", "new_string": "new text"},
            {"old_string": "new text", "new_string": "z"},
        ]}),
    );
    assert!(r.text().contains("Edit 2 of 2 failed: Cannot edit file: old_string is a substring of a new_string from a previous edit."), "{r:#?}");
    let r = f.call_tool(
        &c,
        "MultiEdit",
        &json!({"file_path": "{root}/m.txt", "edits": []}),
    );
    assert!(r.is_error);
    let r = f.call_tool(
        &c,
        "MultiEdit",
        &json!({"file_path": "{root}/m.txt", "edits": [
        {"old_string": "q", "new_string": "q"}]}),
    );
    assert_eq!(
        r.text(),
        "<tool_use_error>Edit 1 of 1: No changes to make: old_string and new_string are exactly the same.</tool_use_error>"
    );
}

#[test]
fn write_creates_and_updates() {
    let f = Fixture::new(&[]);
    let c = ctx(&f);
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/a/b/new.txt", "content": "x\n"}),
    );
    assert_eq!(
        r.text(),
        format!(
            "File created successfully at: {}",
            f.path("a/b/new.txt").display()
        )
    );
    assert_eq!(r.data["type"], "create");
    // Row 33: an existing file never read is refused.
    f.write("old.txt", "old\n");
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/old.txt", "content": "new\n"}),
    );
    assert_eq!(
        r.text(),
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    );
    read(&f, &c, "old.txt");
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/old.txt", "content": "new\n"}),
    );
    assert_eq!(
        r.text(),
        format!(
            "The file {} has been updated successfully.",
            f.path("old.txt").display()
        )
    );
    assert!(r.data["diff"].as_str().unwrap().contains("-old\n+new\n"));
    // Stale: changed after our write.
    f.write("old.txt", "someone else\n");
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/old.txt", "content": "mine\n"}),
    );
    assert!(
        r.text().contains("File has been modified since read"),
        "{r:#?}"
    );
    assert_eq!(f.read("old.txt"), b"someone else\n");
}

#[test]
fn write_keeps_crlf_and_bom() {
    let f = Fixture::new(&[]);
    f.write("w.txt", b"\xEF\xBB\xBFa\r\nb\r\n");
    let c = ctx(&f);
    read(&f, &c, "w.txt");
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/w.txt", "content": "x\ny\n"}),
    );
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(f.read("w.txt"), b"\xEF\xBB\xBFx\r\ny\r\n");
}

#[test]
fn protected_paths_ask_even_in_bypass() {
    // Rows 36 and 37.
    let f = Fixture::new(&[".git/config = [core]", ".git/hooks/pre-commit = #!/bin/sh"]);
    let c = f.context_with(PermissionMode::BypassPermissions, &[]);
    for rel in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".bashrc",
        ".GIT/hooks/x",
        ".agent-tools/settings.json",
    ] {
        let r = f.call_tool(
            &c,
            "Write",
            &json!({"file_path": format!("{{root}}/{rel}"), "content": "evil"}),
        );
        assert!(r.is_error, "{rel}: {r:#?}");
        assert!(r.text().contains("is a protected path"), "{rel}: {r:#?}");
        let r = edit(&f, &c, rel, "", "evil");
        assert!(r.text().contains("is a protected path"), "{rel}: {r:#?}");
    }
    assert_eq!(f.read(".git/config"), b"[core]");
    assert!(!f.path(".bashrc").exists());
}

#[test]
fn symlinks_and_traversal_cannot_escape() {
    let (_outside_dir, outside) = test_support::tempdir();
    let target = outside.join("outside.txt");
    let f = Fixture::new(&[]);
    std::os::unix::fs::symlink(&target, f.path("out")).unwrap();
    let c = ctx(&f);
    // Row 19, dangling link.
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/out", "content": "x"}),
    );
    assert!(r.is_error, "{r:#?}");
    assert!(!target.exists());
    // Row 19, live link to a file outside: refused by the permission check on the target.
    std::fs::write(&target, "theirs").unwrap();
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/out", "content": "x"}),
    );
    assert!(
        r.text()
            .contains("Path is outside allowed working directories"),
        "{r:#?}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
    // Row 20: non-existent dirs and `..`.
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/newdir/../../escape.txt", "content": "x"}),
    );
    assert!(
        r.text()
            .contains("Path is outside allowed working directories"),
        "{r:#?}"
    );
    assert!(!f.root().parent().unwrap().join("escape.txt").exists());
    // A link inside the workspace to a file inside is written through, the link kept.
    f.write("real.txt", "a\n");
    std::os::unix::fs::symlink(f.path("real.txt"), f.path("alias.txt")).unwrap();
    read(&f, &c, "alias.txt");
    assert!(!edit(&f, &c, "alias.txt", "a", "b").is_error);
    assert_eq!(f.read("real.txt"), b"b\n");
    assert!(
        std::fs::symlink_metadata(f.path("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn fifos_are_refused_for_writes() {
    // Row 22.
    let f = Fixture::new(&[]);
    let status = std::process::Command::new("mkfifo")
        .arg(f.path("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let c = ctx(&f);
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/pipe", "content": "x"}),
    );
    assert!(
        r.text()
            .contains("it is a FIFO (named pipe), not a regular file"),
        "{r:#?}"
    );
    let r = edit(&f, &c, "pipe", "a", "b");
    assert!(
        r.text()
            .contains("it is a FIFO (named pipe), not a regular file"),
        "{r:#?}"
    );
}

/// Writes `new` through `rel` in a tree with links — `in` to the directory `real/`,
/// `alias.txt` to `real/file.txt`, `out` to a directory outside, `cfg` to `.git/config`,
/// `dangling` to nothing — in `mode` with `rules` (`{out}` stands for the outside
/// directory); `expected` is where it landed (`{out}/…` outside, else under the root) or
/// the error text. The link itself is always kept, and nothing else appears outside.
#[track_caller]
fn check_link(
    mode: PermissionMode,
    rules: &[(RuleBehavior, &str)],
    rel: &str,
    expected: Result<&str, &str>,
) {
    let (_outside, out) = test_support::tempdir();
    let out_text = out.to_str().unwrap();
    let f = Fixture::new(&[
        "real/file.txt = a\n",
        ".git/config = [core]",
        "in -> {root}/real",
        "alias.txt -> {root}/real/file.txt",
        "cfg -> {root}/.git/config",
        "dangling -> {root}/nowhere",
    ]);
    std::os::unix::fs::symlink(&out, f.path("out")).unwrap();
    let rules: Vec<(RuleBehavior, String)> = rules
        .iter()
        .map(|(b, r)| (*b, r.replace("{out}", out_text.trim_start_matches('/'))))
        .collect();
    let rules: Vec<(RuleBehavior, &str)> = rules.iter().map(|(b, r)| (*b, r.as_str())).collect();
    let c = f.context_with(mode, &rules);
    if rel == "alias.txt" {
        read(&f, &c, rel);
    }
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": format!("{{root}}/{rel}"), "content": "new\n"}),
    );
    let landed = match expected {
        Ok(at) => {
            assert!(!r.is_error, "{rel}: {r:#?}");
            let at = match at.strip_prefix("{out}/") {
                Some(rest) => out.join(rest),
                None => f.path(at),
            };
            assert_eq!(std::fs::read_to_string(&at).unwrap(), "new\n", "{rel}");
            Some(at)
        }
        Err(text) => {
            assert!(r.is_error, "{rel}: {r:#?}");
            assert!(r.text().contains(text), "{rel}: {r:#?}");
            None
        }
    };
    let in_out: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let expected_out: Vec<PathBuf> = landed.into_iter().filter(|p| p.starts_with(&out)).collect();
    assert_eq!(in_out, expected_out, "{rel}: outside");
    for link in ["in", "alias.txt", "out", "cfg", "dangling"] {
        assert!(
            std::fs::symlink_metadata(f.path(link))
                .unwrap()
                .is_symlink(),
            "{link} replaced"
        );
    }
    if rel != "alias.txt" {
        assert_eq!(f.read("real/file.txt"), b"a\n", "{rel}");
    }
    assert_eq!(f.read(".git/config"), b"[core]", "{rel}");
}

#[test]
fn writes_through_links_go_where_the_check_looked() {
    use PermissionMode::{AcceptEdits, BypassPermissions};
    use RuleBehavior::{Allow, Deny};
    let outside = "Path is outside allowed working directories";
    // Links resolved inside the working directory are written through.
    check_link(AcceptEdits, &[], "in/x.txt", Ok("real/x.txt"));
    check_link(
        AcceptEdits,
        &[],
        "in/new/deeper/x.txt",
        Ok("real/new/deeper/x.txt"),
    );
    check_link(AcceptEdits, &[], "alias.txt", Ok("real/file.txt"));
    // A link to outside needs what a write outside needs.
    check_link(AcceptEdits, &[], "out/x.txt", Err(outside));
    check_link(AcceptEdits, &[], "out/new/x.txt", Err(outside));
    check_link(BypassPermissions, &[], "out/x.txt", Ok("{out}/x.txt"));
    check_link(
        AcceptEdits,
        &[(Allow, "Edit(//{out}/**)")],
        "out/x.txt",
        Ok("{out}/x.txt"),
    );
    // A rule that names only the link's path does not cover the target it resolves to.
    check_link(
        AcceptEdits,
        &[(Allow, "Edit(out/**)")],
        "out/x.txt",
        Err(outside),
    );
    check_link(
        BypassPermissions,
        &[(Deny, "Edit(//{out}/**)")],
        "out/x.txt",
        Err("has been denied"),
    );
    check_link(BypassPermissions, &[], "cfg", Err("is a protected path"));
    check_link(AcceptEdits, &[], "dangling", Err("dangling link"));
}

#[test]
fn a_call_without_a_permission_check_resolves_when_it_runs() {
    // A library may call a tool directly: the target is resolved then, and written
    // without following a link after that.
    let f = Fixture::new(&["real/", "in -> {root}/real"]);
    let c = ctx(&f);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = f.path("in/x.txt").display().to_string();
    let r = rt
        .block_on(tool_core::TypedTool::call(
            &tools_fs::Write,
            tools_fs::WriteInput::new(&path, "x"),
            &c,
        ))
        .unwrap();
    assert_eq!(r.data.kind, tools_fs::WriteKind::Create);
    assert_eq!(f.read("real/x.txt"), b"x");
    let mut input = tools_fs::EditInput::new(&path, "x", "y");
    input.replace_all = Some(true);
    read(&f, &c, "in/x.txt");
    rt.block_on(tool_core::TypedTool::call(&tools_fs::Edit, input, &c))
        .unwrap();
    assert_eq!(f.read("real/x.txt"), b"y");
}

#[test]
fn writes_need_permission_outside_accept_edits() {
    let f = Fixture::new(&[]);
    let c = f.context();
    let r = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/a.txt", "content": "x"}),
    );
    assert!(r.is_error);
    assert!(
        r.text().contains("the acceptEdits permission mode"),
        "{r:#?}"
    );
    assert!(!f.path("a.txt").exists());
}

/// An LSP manager that records `did_change` calls.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<(PathBuf, String)>>);

#[async_trait]
impl LspManager for Recorder {
    fn has_server_for(&self, _file: &Path) -> bool {
        true
    }
    async fn request(&self, _f: &Path, _m: &str, _p: Value) -> Result<Value, ToolError> {
        Ok(Value::Null)
    }
    async fn did_change(&self, file: &Path, text: &str) -> Result<(), ToolError> {
        self.0
            .lock()
            .unwrap()
            .push((file.to_path_buf(), text.to_owned()));
        Err(ToolError::respond("ignored"))
    }
    async fn diagnostics(&self, _f: Option<&Path>) -> Result<Vec<FileDiagnostic>, ToolError> {
        Ok(Vec::new())
    }
}

#[test]
fn the_language_server_hears_about_changes() {
    let f = Fixture::new(&[]);
    f.write("l.rs", "fn a() {}\n");
    let lsp = Arc::new(Recorder::default());
    let c = ctx_with_lsp(&f, lsp.clone());
    read(&f, &c, "l.rs");
    assert!(!edit(&f, &c, "l.rs", "a()", "b()").is_error);
    assert!(
        !f.call_tool(
            &c,
            "Write",
            &json!({"file_path": "{root}/n.rs", "content": "x"})
        )
        .is_error
    );
    let calls = lsp.0.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![
            (f.path("l.rs"), "fn b() {}\n".to_owned()),
            (f.path("n.rs"), "x".to_owned())
        ]
    );
}

/// A language server that reports one new error per change, as the LSP manager's
/// `did_change_diagnostics` does after a bounded wait.
#[derive(Debug)]
struct Diagnosing;

#[async_trait]
impl LspManager for Diagnosing {
    fn has_server_for(&self, file: &Path) -> bool {
        file.extension().is_some_and(|e| e == "rs")
    }
    async fn request(&self, _f: &Path, _m: &str, _p: Value) -> Result<Value, ToolError> {
        Ok(Value::Null)
    }
    async fn did_change(&self, _file: &Path, _text: &str) -> Result<(), ToolError> {
        Ok(())
    }
    async fn did_change_diagnostics(
        &self,
        file: &Path,
        _text: &str,
    ) -> Result<Vec<FileDiagnostic>, ToolError> {
        Ok((1..=22)
            .map(|i| FileDiagnostic {
                path: file.to_path_buf(),
                line: i,
                character: 4,
                severity: "error".to_owned(),
                message: format!("problem {i}"),
                source: Some("fake".to_owned()),
            })
            .collect())
    }
    async fn diagnostics(&self, _f: Option<&Path>) -> Result<Vec<FileDiagnostic>, ToolError> {
        Ok(Vec::new())
    }
}

#[test]
fn writes_report_the_diagnostics_they_introduced() {
    let f = Fixture::new(&[]);
    f.write("l.rs", "fn a() {}\n");
    f.write("notes.txt", "x\n");
    let c = ctx_with_lsp(&f, Arc::new(Diagnosing));
    read(&f, &c, "l.rs");
    let r = edit(&f, &c, "l.rs", "a()", "b()");
    let text = r.text();
    assert!(!r.is_error, "{text}");
    assert!(
        text.contains(
            "\n\nNew diagnostics after this change:\nl.rs:1:4: error: problem 1 [fake]\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("l.rs:20:4: error: problem 20 [fake]"),
        "{text}"
    );
    assert!(!text.contains("problem 21"), "{text}");
    assert!(
        text.ends_with("... and 2 more: call LSP with operation diagnostics to see them all"),
        "{text}"
    );
    let w = f.call_tool(
        &c,
        "Write",
        &json!({"file_path": "{root}/m.rs", "content": "x"}),
    );
    assert!(
        w.text()
            .contains("New diagnostics after this change:\nm.rs:1:4"),
        "{}",
        w.text()
    );
    // No server for the file type: nothing is added.
    read(&f, &c, "notes.txt");
    let plain = edit(&f, &c, "notes.txt", "x", "y");
    assert!(!plain.text().contains("diagnostics"), "{}", plain.text());
}
