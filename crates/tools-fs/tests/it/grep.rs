//! Grep through the pool: output modes, context, line numbers, case, type and glob filters,
//! multiline, pagination and its trailers, newest-first order, the ignore policy it shares
//! with Glob (with the count of skipped paths), VCS folders, binary files, long lines and
//! its messages.

use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{CallResult, PermissionMode, RuleBehavior};

use crate::{FIXED_MTIME, Fixture};

fn grep(f: &Fixture, input: Value) -> CallResult {
    f.call_tool(&f.context(), "Grep", &input)
}

/// Runs Grep with `input` in a fresh `tree` and compares its text lines.
#[track_caller]
fn check(tree: &[&str], input: Value, expected: &[&str]) -> CallResult {
    let f = Fixture::new(tree);
    let r = grep(&f, input);
    let text = r.text();
    let got: Vec<&str> = text.lines().collect();
    let expected: Vec<String> = expected.iter().map(|l| f.expand(l)).collect();
    assert_eq!(got, expected, "{r:#?}");
    r
}

const TREE: &[&str] = &[
    "a.rs = fn main() {\\n    println!(\"hello\");\\n}\\n",
    "b.txt = Hello world\\nsecond line\\nhello again\\n",
    "src/c.rs = // nothing here\\n",
];

#[test]
fn files_with_matches_is_the_default() {
    check(
        TREE,
        json!({"pattern": "hello"}),
        &["Found 2 files", "a.rs", "b.txt"],
    );
    check(TREE, json!({"pattern": "zzz"}), &["No files found"]);
}

#[test]
fn content_mode_with_numbers_and_context() {
    check(
        TREE,
        json!({"pattern": "hello", "output_mode": "content"}),
        &["a.rs:2:    println!(\"hello\");", "b.txt:3:hello again"],
    );
    check(
        TREE,
        json!({"pattern": "hello", "output_mode": "content", "-n": false}),
        &["a.rs:    println!(\"hello\");", "b.txt:hello again"],
    );
    check(
        TREE,
        json!({"pattern": "hello", "output_mode": "content", "-i": true, "path": "b.txt"}),
        &["1:Hello world", "3:hello again"],
    );
    check(
        TREE,
        json!({"pattern": "again", "output_mode": "content", "-B": 1}),
        &["b.txt-2-second line", "b.txt:3:hello again"],
    );
    check(
        TREE,
        json!({"pattern": "main", "output_mode": "content", "-A": 1, "-B": 5}),
        &["a.rs:1:fn main() {", "a.rs-2-    println!(\"hello\");"],
    );
    // context beats -C beats -A/-B.
    check(
        TREE,
        json!({"pattern": "second", "output_mode": "content", "context": 1, "-C": 0, "-A": 0}),
        &[
            "b.txt-1-Hello world",
            "b.txt:2:second line",
            "b.txt-3-hello again",
        ],
    );
    check(
        &["x.txt = m1\\na\\nb\\nc\\nd\\nm2\\n", "y.txt = m3\\n"],
        json!({"pattern": "m\\d", "output_mode": "content", "-C": 1}),
        &[
            "x.txt:1:m1",
            "x.txt-2-a",
            "--",
            "x.txt-5-d",
            "x.txt:6:m2",
            "--",
            "y.txt:1:m3",
        ],
    );
    check(
        TREE,
        json!({"pattern": "zzz", "output_mode": "content"}),
        &["No matches found"],
    );
}

#[test]
fn count_mode_with_its_trailer() {
    check(
        TREE,
        json!({"pattern": "(?i)hello", "output_mode": "count"}),
        &[
            "a.rs:1",
            "b.txt:2",
            "",
            "Found 3 total occurrences across 2 files.",
        ],
    );
    check(
        TREE,
        json!({"pattern": "world", "output_mode": "count"}),
        &["b.txt:1", "", "Found 1 total occurrence across 1 file."],
    );
    check(
        TREE,
        json!({"pattern": "zzz", "output_mode": "count"}),
        &["No matches found"],
    );
}

#[test]
fn type_glob_and_multiline() {
    check(
        TREE,
        json!({"pattern": "h", "type": "rust"}),
        &["Found 2 files", "a.rs", "src/c.rs"],
    );
    check(
        TREE,
        json!({"pattern": "h", "glob": "*.txt"}),
        &["Found 1 file", "b.txt"],
    );
    check(
        TREE,
        json!({"pattern": "h", "glob": "*.txt,src/*"}),
        &["Found 2 files", "b.txt", "src/c.rs"],
    );
    check(
        TREE,
        json!({"pattern": "h", "glob": "*.{txt,rs} !a.rs"}),
        &["Found 2 files", "b.txt", "src/c.rs"],
    );
    check(
        TREE,
        json!({"pattern": "world.second", "output_mode": "content"}),
        &["No matches found"],
    );
    check(
        TREE,
        json!({"pattern": "world.second", "output_mode": "content", "multiline": true}),
        &["b.txt:1:Hello world", "b.txt:2:second line"],
    );
    let f = Fixture::new(TREE);
    let r = grep(&f, json!({"pattern": "x", "type": "nosuchtype"}));
    assert!(r.text().contains("Invalid type \"nosuchtype\""), "{r:#?}");
}

#[test]
fn pagination_and_its_trailers() {
    let tree: Vec<String> = (0..5).map(|i| format!("f{i}.txt = hit\\nhit\\n")).collect();
    let tree: Vec<&str> = tree.iter().map(String::as_str).collect();
    check(
        &tree,
        json!({"pattern": "hit", "head_limit": 2}),
        &["Found 2 files limit: 2", "f0.txt", "f1.txt"],
    );
    check(
        &tree,
        json!({"pattern": "hit", "head_limit": 2, "offset": 4}),
        &["Found 1 file offset: 4", "f4.txt"],
    );
    check(
        &tree,
        json!({"pattern": "hit", "output_mode": "content", "head_limit": 3, "offset": 1}),
        &[
            "f0.txt:2:hit",
            "f1.txt:1:hit",
            "f1.txt:2:hit",
            "",
            "[Showing results with pagination = limit: 3, offset: 1]",
        ],
    );
    check(
        &tree,
        json!({"pattern": "hit", "output_mode": "count", "head_limit": 1}),
        &[
            "f0.txt:2",
            "",
            "Found 2 total occurrences across 1 file. with pagination = limit: 1",
        ],
    );
    // 0 means unlimited; the default is 250.
    let many: Vec<String> = (0..300).map(|i| format!("m{i:03}.txt = x")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let f = Fixture::new(&many);
    let r = grep(&f, json!({"pattern": "x"}));
    assert!(
        r.text().starts_with("Found 250 files limit: 250\n"),
        "{}",
        &r.text()[..40]
    );
    assert_eq!(r.data["appliedLimit"], 250);
    let r = grep(&f, json!({"pattern": "x", "head_limit": 0}));
    assert!(r.text().starts_with("Found 300 files\n"));
}

#[test]
fn newest_first() {
    let f = Fixture::new(&["old.txt = x", "new.txt = x", "mid.txt = x"]);
    f.set_mtime("new.txt", FIXED_MTIME + Duration::from_secs(100));
    f.set_mtime("mid.txt", FIXED_MTIME + Duration::from_secs(50));
    let r = grep(&f, json!({"pattern": "x"}));
    assert_eq!(r.text(), "Found 3 files\nnew.txt\nmid.txt\nold.txt");
    let r = grep(&f, json!({"pattern": "x", "output_mode": "content"}));
    assert_eq!(r.text(), "new.txt:1:x\nmid.txt:1:x\nold.txt:1:x");
}

#[test]
fn ignore_policy_shared_with_glob() {
    let tree = [
        ".gitignore = build/\\n*.log\\n",
        "src/a.rs = needle",
        "build/out.rs = needle",
        "app.log = needle",
        ".hidden/h.rs = needle",
        ".env = needle",
        ".git/config = needle",
    ];
    let f = Fixture::new(&tree);
    std::fs::create_dir_all(f.path(".git")).unwrap();
    let r = grep(&f, json!({"pattern": "needle"}));
    // Hidden files are searched; version-control folders never are.
    assert_eq!(
        r.text(),
        "Found 3 files\n.env\n.hidden/h.rs\nsrc/a.rs\n\n(2 paths were skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    assert_eq!(r.data["ignoredEntries"], 2);
    let r = grep(&f, json!({"pattern": "needle", "include_ignored": true}));
    assert_eq!(
        r.text(),
        "Found 5 files\n.env\n.hidden/h.rs\napp.log\nbuild/out.rs\nsrc/a.rs"
    );
    // Glob agrees on the same policy.
    let g = f.call_tool(&f.context(), "Glob", &json!({"pattern": "**/*.rs"}));
    assert_eq!(g.text(), ".hidden/h.rs\nsrc/a.rs");
    let r = grep(&f, json!({"pattern": "needle", "glob": ".hidden/**"}));
    assert!(r.text().starts_with("Found 1 file\n.hidden/h.rs"), "{r:#?}");
}

#[test]
fn binary_files_are_skipped_and_long_lines_cut() {
    let f = Fixture::new(&["text.txt = needle"]);
    f.write("blob.bin", b"needle\0\x01\x02");
    let r = grep(&f, json!({"pattern": "needle"}));
    assert_eq!(r.text(), "Found 1 file\ntext.txt");
    f.write(
        "long.txt",
        format!("{}needle{}", "a".repeat(300), "b".repeat(400)),
    );
    let r = grep(
        &f,
        json!({"pattern": "needle", "output_mode": "content", "glob": "long.txt"}),
    );
    let expected = format!(
        "long.txt:1:{}needle{} [... 206 more characters]",
        "a".repeat(300),
        "b".repeat(194)
    );
    assert_eq!(r.text(), expected);
}

#[test]
fn messages_for_bad_input() {
    let f = Fixture::new(&["src/a.rs = x"]);
    let r = grep(&f, json!({"pattern": "x", "path": "{root}/srcs"}));
    assert_eq!(
        r.text(),
        f.expand("<tool_use_error>Path does not exist: {root}/srcs. Note: your current working directory is {root}. Did you mean {root}/src?</tool_use_error>")
    );
    let r = grep(&f, json!({"pattern": "(unclosed"}));
    assert!(
        r.text()
            .starts_with("<tool_use_error>Invalid regular expression \"(unclosed\""),
        "{r:#?}"
    );
    let r = grep(&f, json!({"pattern": "x", "output_mode": "lines"}));
    assert!(r.text().contains("output_mode"), "{r:#?}");
    let r = grep(&f, json!({"pattern": "x", "head_limit": "5"}));
    assert!(!r.is_error, "{r:#?}");
}

#[test]
fn permissions_and_deny_rules() {
    let f = Fixture::new(&["pub/a.txt = key", "secret/b.txt = key"]);
    let ctx = f.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(secret/**)")],
    );
    let r = f.call_tool(&ctx, "Grep", &json!({"pattern": "key"}));
    assert_eq!(r.text(), "Found 1 file\npub/a.txt");
    let r = grep(&f, json!({"pattern": "root", "path": "/etc"}));
    assert!(
        r.text()
            .contains("Path is outside allowed working directories"),
        "{r:#?}"
    );
    // A file symlink inside the tree is not followed out of it.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("t.txt"), "key").unwrap();
    std::os::unix::fs::symlink(outside.path().join("t.txt"), f.path("pub/link.txt")).unwrap();
    let r = grep(&f, json!({"pattern": "key", "path": "pub"}));
    assert_eq!(r.text(), "Found 1 file\npub/a.txt");
}

/// A tree of files with distinct and shared modification times, several matches each, a
/// binary file whose match comes before its NUL byte, and one file the deny rule hides.
fn paging_tree() -> Fixture {
    let mut entries = Vec::new();
    for i in 0..24 {
        let lines: Vec<String> = (0..(1 + i % 5))
            .map(|n| format!("before {i}.{n}\\nhit {i}.{n}\\nafter {i}.{n}"))
            .collect();
        entries.push(format!("d{}/f{i:02}.txt = {}\\n", i % 4, lines.join("\\n")));
    }
    let refs: Vec<&str> = entries.iter().map(String::as_str).collect();
    let f = Fixture::new(&refs);
    for i in 0..24u64 {
        // Pairs of files share a time, so ties are broken by path.
        f.set_mtime(
            &format!("d{}/f{i:02}.txt", i % 4),
            FIXED_MTIME + Duration::from_secs(10 * (i / 2)),
        );
    }
    f.write("late.bin", b"hit late\nmore\n\0binary");
    f.set_mtime("late.bin", FIXED_MTIME + Duration::from_secs(1000));
    f
}

#[test]
fn a_page_is_the_slice_of_every_result() {
    // Grep with a head limit stops once its page is full; what it shows must be exactly the
    // page of the whole result (head_limit 0), for every mode, offset, limit and context.
    let f = paging_tree();
    let ctx = f.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(d1/f05.txt)")],
    );
    let run = |input: Value| f.call_tool(&ctx, "Grep", &input);
    for mode in ["content", "files_with_matches", "count"] {
        for context in [json!(null), json!(1)] {
            let mut base = json!({"pattern": "hit", "output_mode": mode, "head_limit": 0});
            if !context.is_null() {
                base["-C"] = context.clone();
            }
            let whole = run(base.clone());
            let key = if mode == "content" {
                "content"
            } else {
                "filenames"
            };
            let all: Vec<String> = match mode {
                "content" => whole.data["content"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect(),
                _ => whole.data["filenames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect(),
            };
            assert!(
                !all.iter().any(|l| l.contains("f05")),
                "the denied file: {all:?}"
            );
            assert!(
                !all.iter().any(|l| l.contains("late.bin")),
                "binary: {all:?}"
            );
            for offset in [0usize, 1, 3, 7, 40] {
                for limit in [1usize, 2, 5, 9, 250] {
                    let mut input = base.clone();
                    input["head_limit"] = json!(limit);
                    input["offset"] = json!(offset);
                    let page = run(input.clone());
                    let expected: Vec<String> =
                        all.iter().skip(offset).take(limit).cloned().collect();
                    let got: Vec<String> = match mode {
                        "content" => page.data[key]
                            .as_str()
                            .unwrap_or_default()
                            .lines()
                            .map(str::to_owned)
                            .collect(),
                        _ => page.data[key]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_str().unwrap().to_owned())
                            .collect(),
                    };
                    assert_eq!(got, expected, "{input}");
                    let cut = all.len() > offset + limit;
                    assert_eq!(
                        page.data["appliedLimit"].as_u64(),
                        cut.then_some(limit as u64),
                        "{input}"
                    );
                    if mode == "count" {
                        let counts: Vec<&str> = page.data["content"]
                            .as_str()
                            .unwrap_or_default()
                            .lines()
                            .collect();
                        let whole_counts: Vec<&str> = whole.data["content"]
                            .as_str()
                            .unwrap_or_default()
                            .lines()
                            .skip(offset)
                            .take(limit)
                            .collect();
                        assert_eq!(counts, whole_counts, "{input}");
                    }
                }
            }
        }
    }
}
