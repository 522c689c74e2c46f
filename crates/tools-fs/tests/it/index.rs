//! The search index behind Grep and Glob: its answers are byte for byte those of the scan
//! on a tree mutated between queries — files added, edited, truncated, renamed and deleted,
//! by our tools and by outside writes, ignore files changed — and they are fresh; a saved
//! index is reused by the next session, and a damaged one is rebuilt, never trusted.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolContext};
use tools_fs::{IndexMode, IndexSettings};

use crate::Fixture;

/// A long-lived session of `f` with the index built at start (whatever the tree's size),
/// waited for.
fn indexed(f: &Fixture) -> ToolContext {
    indexed_with(f, true)
}

fn indexed_with(f: &Fixture, long_lived: bool) -> ToolContext {
    let settings = IndexSettings {
        mode: IndexMode::Eager,
        auto_min_bytes: 0,
        ..IndexSettings::default()
    };
    let builder = ToolContext::builder(f.root())
        .state_dir(f.state_dir())
        .mode(PermissionMode::AcceptEdits);
    let ctx =
        tools_fs::install_index(builder, f.root(), f.state_dir(), settings, long_lived).build();
    if long_lived {
        wait_ready(&ctx);
    }
    ctx
}

/// Waits until the session's index is ready.
#[track_caller]
fn wait_ready(ctx: &ToolContext) {
    let started = Instant::now();
    loop {
        let status = tools_fs::index_status(ctx).expect("an index is installed");
        if status.state == "ready" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60) && status.state != "failed",
            "{status:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn answered(ctx: &ToolContext) -> u64 {
    tools_fs::index_status(ctx).map_or(0, |s| s.answered)
}

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap() % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next(items.len())]
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "Bravo",
    "bravo",
    "charlie_delta",
    "ECHO",
    "Echo",
    "KMALLOC",
    "\u{212A}elvin",
    "kelvin",
    "foxtrot",
    "golf",
    "hotel",
    "needle",
    "static",
    "int",
    "probe",
    "kmalloc",
    "café",
    "日本",
    "x",
    "rcu_read_lock",
];

fn text(rng: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    for _ in 0..lines {
        let n = 1 + rng.next(6);
        let words: Vec<&str> = (0..n).map(|_| rng.pick(WORDS)).collect();
        let indent = ["", "    ", "\t"][rng.next(3)];
        out.push_str(&format!("{indent}{}\n", words.join(" ")));
    }
    out
}

const DIRS: &[&str] = &[
    "", "src", "src/deep", "docs", ".hidden", "build", "gen/a", "gen/b",
];
const EXTS: &[&str] = &["rs", "txt", "md", "py", "log", "c"];

fn random_file(rng: &mut Rng) -> String {
    let dir = rng.pick(DIRS);
    let name = format!("f{}.{}", rng.next(12), rng.pick(EXTS));
    if dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

/// A Grep input drawn from the kinds of query the model sends.
fn random_grep(rng: &mut Rng) -> Value {
    let word = rng.pick(WORDS);
    let other = rng.pick(WORDS);
    let pattern = match rng.next(12) {
        0 => format!("{word}|{other}"),
        1 => format!("^\\s*{word}"),
        2 => format!("{word}$"),
        3 => format!("[a-z]+_{}", &word[..word.len().min(3)]),
        4 => format!("{word}\\s+{other}"),
        5 => format!("\\b{word}\\b"),
        6 => format!("{word}.*{other}"),
        7 => format!("({word}|{other}) \\w+"),
        8 => ".".to_owned(),
        9 => format!("{word}\\n\\s*{other}"),
        _ => word.to_owned(),
    };
    let multiline = pattern.contains("\\n");
    let mut input = json!({"pattern": pattern});
    if multiline {
        input["multiline"] = json!(true);
    }
    match rng.next(3) {
        0 => input["output_mode"] = json!("content"),
        1 => input["output_mode"] = json!("count"),
        _ => {}
    }
    if rng.next(3) == 0 {
        input["-i"] = json!(true);
    }
    match rng.next(8) {
        0 => input["glob"] = json!("*.rs"),
        1 => input["glob"] = json!("**/*.{txt,md}"),
        2 => input["type"] = json!("py"),
        3 => input["type"] = json!("rust"),
        4 => input["path"] = json!(rng.pick(&["src", "docs", ".hidden", "gen"])),
        _ => {}
    }
    match rng.next(5) {
        0 => input["head_limit"] = json!(0),
        1 => input["head_limit"] = json!(1 + rng.next(5)),
        2 => input["head_limit"] = json!(3),
        _ => {}
    }
    if rng.next(4) == 0 {
        input["offset"] = json!(rng.next(4));
    }
    if input["output_mode"] == "content" {
        match rng.next(5) {
            0 => input["-C"] = json!(1),
            1 => input["-A"] = json!(2),
            2 => input["-n"] = json!(false),
            _ => {}
        }
    }
    input
}

fn random_glob(rng: &mut Rng) -> Value {
    let pattern = [
        "**/*.rs",
        "*.txt",
        "src/**",
        "**/f1*.md",
        ".hidden/*",
        "**/*.{c,py}",
        "gen/**/*.log",
    ][rng.next(7)];
    let mut input = json!({"pattern": pattern});
    if rng.next(4) == 0 {
        input["path"] = json!("src");
    }
    input
}

/// One change to the tree: by an outside process, or through our own tools.
fn mutate(f: &Fixture, ctx: &ToolContext, rng: &mut Rng) -> String {
    let target = random_file(rng);
    let path = f.path(&target);
    match rng.next(12) {
        0 | 1 => {
            let lines = 1 + rng.next(8);
            f.write(&target, text(rng, lines));
            format!("outside write {target}")
        }
        2 => {
            if path.is_file() {
                let mut bytes = std::fs::read(&path).unwrap();
                bytes.extend_from_slice(text(rng, 2).as_bytes());
                std::fs::write(&path, bytes).unwrap();
            }
            format!("outside append {target}")
        }
        3 => {
            if path.is_file() {
                let len = std::fs::metadata(&path).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
            }
            format!("outside truncate {target}")
        }
        4 => {
            let to = random_file(rng);
            if path.is_file() {
                let dest = f.path(&to);
                std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
                let _ = std::fs::rename(&path, dest);
            }
            format!("outside rename {target} -> {to}")
        }
        5 => {
            let _ = std::fs::remove_file(&path);
            format!("outside delete {target}")
        }
        6 => {
            let rules = [
                "*.log\n",
                "build/\n",
                "*.log\n!f1.log\n",
                "",
                "gen/b/\n",
                "*.md\n",
            ];
            let file = [".gitignore", "src/.ignore", ".agent-toolsignore"][rng.next(3)];
            f.write(file, rules[rng.next(rules.len())]);
            format!("outside ignore file {file}")
        }
        7 => {
            let dir = ["gen/b", "src/deep", "docs"][rng.next(3)];
            let _ = std::fs::remove_dir_all(f.path(dir));
            format!("outside remove {dir}")
        }
        8 => {
            f.write(
                &target,
                [b"needle before nul\n".as_slice(), &[0u8, 1, 2]].concat(),
            );
            format!("outside binary {target}")
        }
        9 => {
            let r = f.call_tool(
                ctx,
                "Write",
                &json!({"file_path": path.display().to_string(), "content": text(rng, 3)}),
            );
            format!("Write {target}: error {}", r.is_error)
        }
        _ => {
            if !path.is_file() {
                return "nothing".to_owned();
            }
            let r = f.call_tool(
                ctx,
                "Read",
                &json!({"file_path": path.display().to_string()}),
            );
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let Some(line) = old.lines().find(|l| !l.trim().is_empty()) else {
                return "nothing".to_owned();
            };
            let r2 = f.call_tool(
                ctx,
                "Edit",
                &json!({"file_path": path.display().to_string(), "old_string": line,
                        "new_string": format!("edited {}", rng.pick(WORDS)), "replace_all": true}),
            );
            format!("Edit {target}: read {} edit {}", !r.is_error, !r2.is_error)
        }
    }
}

fn seed_tree(f: &Fixture, rng: &mut Rng) {
    f.write(".git/HEAD", "ref: refs/heads/main\n");
    f.write(".gitignore", "*.log\nbuild/\n");
    for _ in 0..60 {
        let target = random_file(rng);
        let lines = 1 + rng.next(20);
        f.write(&target, text(rng, lines));
    }
}

#[track_caller]
fn same(
    f: &Fixture,
    indexed: &ToolContext,
    scan: &ToolContext,
    tool: &str,
    input: &Value,
    what: &str,
) {
    let ours = f.call_tool(indexed, tool, input);
    let theirs = f.call_tool(scan, tool, input);
    let strip = |r: &tool_core::CallResult| {
        // Glob's duration differs from run to run; a result too large for the model is
        // saved to a file named per session (its data is compared whole).
        let mut data = r.data.clone();
        if let Some(d) = data.get_mut("durationMs") {
            *d = json!(0);
        }
        let text = r.text();
        let text = if text.starts_with("<persisted-output>") {
            "(persisted)".to_owned()
        } else {
            text
        };
        (text, r.is_error, data)
    };
    assert_eq!(strip(&ours), strip(&theirs), "{tool} {input} after {what}");
}

// 2,400 queries (Grep and Glob) in all, with a change to the tree before every second one:
// four trees of 600 each, so the four run side by side and none nears the test timeout on a
// loaded machine.
#[test]
fn index_answers_are_the_scan_answers_on_a_tree_changing_between_queries() {
    scan_answers_on_a_changing_tree(0x1dea_5eed);
}

#[test]
fn index_answers_are_the_scan_answers_on_a_second_changing_tree() {
    scan_answers_on_a_changing_tree(0x5eed_0002);
}

#[test]
fn index_answers_are_the_scan_answers_on_a_third_changing_tree() {
    scan_answers_on_a_changing_tree(0x5eed_0003);
}

#[test]
fn index_answers_are_the_scan_answers_on_a_fourth_changing_tree() {
    scan_answers_on_a_changing_tree(0x5eed_0004);
}

/// 600 queries on a tree seeded from `seed`, compared with the scan's answers.
fn scan_answers_on_a_changing_tree(seed: u64) {
    let f = Fixture::new(&[]);
    let mut rng = Rng(seed);
    seed_tree(&f, &mut rng);
    let ctx = indexed(&f);
    let scan = f.context_with(PermissionMode::AcceptEdits, &[]);
    let mut what = "the start".to_owned();
    let queries = 600;
    for i in 0..queries {
        if i % 2 == 1 {
            what = mutate(&f, &ctx, &mut rng);
        }
        if i % 6 == 0 {
            let input = random_glob(&mut rng);
            same(&f, &ctx, &scan, "Glob", &input, &what);
        } else {
            let input = random_grep(&mut rng);
            same(&f, &ctx, &scan, "Grep", &input, &what);
        }
    }
    let status = tools_fs::index_status(&ctx).unwrap();
    assert_eq!(status.state, "ready", "{status:?}");
    // The index answered (it falls back to the scan only where it does not cover the root,
    // as in a subdirectory that an ignore file excludes).
    assert!(status.answered * 10 >= queries * 9, "{status:?}");
}

#[test]
fn a_change_is_seen_by_the_next_query() {
    let f = Fixture::new(&["a.txt = nothing here\n", "src/b.rs = fn main() {}\n"]);
    let ctx = indexed(&f);
    let grep = |pattern: &str| {
        f.call_tool(
            &ctx,
            "Grep",
            &json!({"pattern": pattern, "output_mode": "content"}),
        )
        .text()
    };
    assert_eq!(grep("unique_token_1"), "No matches found");
    // An outside write, seen at once.
    f.write("src/new.rs", "let unique_token_1 = 1;\n");
    assert_eq!(
        grep("unique_token_1"),
        "src/new.rs:1:let unique_token_1 = 1;"
    );
    // Our own write.
    let r = f.call_tool(
        &ctx,
        "Write",
        &json!({"file_path": f.path("c.txt").display().to_string(), "content": "unique_token_2\n"}),
    );
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(grep("unique_token_2"), "c.txt:1:unique_token_2");
    // A delete and a rename.
    std::fs::remove_file(f.path("c.txt")).unwrap();
    std::fs::rename(f.path("src/new.rs"), f.path("a2.txt")).unwrap();
    assert_eq!(grep("unique_token_2"), "No matches found");
    assert_eq!(grep("unique_token_1"), "a2.txt:1:let unique_token_1 = 1;");
    // An ignore file now excludes it: gone; then allowed again.
    f.write(".ignore", "a2.txt\n");
    assert_eq!(
        grep("unique_token_1"),
        "No matches found\n\n(1 path was skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    f.write(".ignore", "");
    assert_eq!(grep("unique_token_1"), "a2.txt:1:let unique_token_1 = 1;");
    // A whole new directory.
    f.write("new/dir/deep.txt", "unique_token_3\n");
    assert_eq!(grep("unique_token_3"), "new/dir/deep.txt:1:unique_token_3");
    let glob = f.call_tool(&ctx, "Glob", &json!({"pattern": "new/**"}));
    assert_eq!(glob.text(), "new/dir/deep.txt");
    assert!(answered(&ctx) >= 8, "{:?}", tools_fs::index_status(&ctx));
}

#[test]
fn the_next_session_reuses_the_saved_index_and_reads_what_changed() {
    let f = Fixture::new(&["a.txt = alpha\n", "b.txt = bravo\n"]);
    let first = indexed(&f);
    let status = tools_fs::index_status(&first).unwrap();
    assert!(status.detail.contains("built"), "{status:?}");
    assert!(status.file.is_file() && status.file.starts_with(f.state_dir()));
    drop(first);
    // Changed while no session ran (its time pushed past the racy window).
    f.write("a.txt", "alpha changed\n");
    f.write("c.txt", "charlie\n");
    std::fs::remove_file(f.path("b.txt")).unwrap();
    let second = indexed(&f);
    let status = tools_fs::index_status(&second).unwrap();
    assert!(
        status.detail.contains("saved index validated"),
        "{status:?}"
    );
    let r = f.call_tool(
        &second,
        "Grep",
        &json!({"pattern": "alpha|bravo|charlie", "output_mode": "content"}),
    );
    let mut lines: Vec<String> = r.text().lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["a.txt:1:alpha changed", "c.txt:1:charlie"]);
    // A one-shot session uses it too.
    let one_shot = indexed_with(&f, false);
    let r = f.call_tool(&one_shot, "Grep", &json!({"pattern": "charlie"}));
    assert_eq!(r.text(), "Found 1 file\nc.txt");
    assert_eq!(
        answered(&one_shot),
        1,
        "{:?}",
        tools_fs::index_status(&one_shot)
    );
}

/// Damages the saved index of `f` in every way a file can be damaged; each time the next
/// session notes why and rebuilds, and its answers are right.
#[test]
fn a_damaged_saved_index_is_rebuilt_never_trusted() {
    let f = Fixture::new(&["a.txt = alpha\n", "src/b.rs = bravo\n"]);
    let ctx = indexed(&f);
    let file = tools_fs::index_status(&ctx).unwrap().file;
    drop(ctx);
    let good = std::fs::read(&file).unwrap();
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("flipped", {
            let mut b = good.clone();
            let at = b.len() - 3;
            b[at] ^= 0x40;
            b
        }),
        ("the previous version", {
            let mut b = good.clone();
            b[8] -= 1;
            b
        }),
        ("a later version", {
            let mut b = good.clone();
            b[8] += 1;
            b
        }),
        ("garbage", vec![7u8; 4096]),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&file, &bytes).unwrap();
        // Meanwhile the tree changed: a stale file must never answer.
        f.write("a.txt", format!("alpha {what}\n"));
        let ctx = indexed(&f);
        let status = tools_fs::index_status(&ctx).unwrap();
        assert!(status.detail.contains("built"), "{what}: {status:?}");
        assert!(
            status.notes.iter().any(|n| n.contains("rebuilt")),
            "{what}: {status:?}"
        );
        let r = f.call_tool(
            &ctx,
            "Grep",
            &json!({"pattern": "alpha", "output_mode": "content"}),
        );
        assert_eq!(r.text(), format!("a.txt:1:alpha {what}"), "{what}");
        assert!(answered(&ctx) >= 1);
        assert_ne!(std::fs::read(&file).unwrap(), bytes, "{what}: rewritten");
    }
}

#[test]
fn settings_choose_when_to_index() {
    let f = Fixture::new(&["a.txt = alpha\n"]);
    // Off: never built, the scan answers.
    let settings = IndexSettings {
        mode: IndexMode::Off,
        ..IndexSettings::default()
    };
    let builder = ToolContext::builder(f.root()).state_dir(f.state_dir());
    let ctx = tools_fs::install_index(builder, f.root(), f.state_dir(), settings, true).build();
    let r = f.call_tool(&ctx, "Grep", &json!({"pattern": "alpha"}));
    assert_eq!(r.text(), "Found 1 file\na.txt");
    let status = tools_fs::index_status(&ctx).unwrap();
    assert_eq!(status.state, "not used");
    assert!(status.detail.contains("off"), "{status:?}");
    // Auto below the threshold: the scan answers, and the status says why.
    let builder = ToolContext::builder(f.root()).state_dir(f.state_dir());
    let ctx = tools_fs::install_index(
        builder,
        f.root(),
        f.state_dir(),
        IndexSettings::default(),
        true,
    )
    .build();
    let r = f.call_tool(&ctx, "Grep", &json!({"pattern": "alpha"}));
    assert_eq!(r.text(), "Found 1 file\na.txt");
    let started = Instant::now();
    while tools_fs::index_status(&ctx).unwrap().state != "not used" {
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = tools_fs::index_status(&ctx).unwrap();
    assert!(status.detail.contains("autoThresholdMB"), "{status:?}");
    assert!(!status.file.exists());
    // Over the disk budget: not built, said so.
    let settings = IndexSettings {
        mode: IndexMode::Eager,
        auto_min_bytes: 0,
        disk_budget_bytes: 0,
        ..IndexSettings::default()
    };
    let builder = ToolContext::builder(f.root()).state_dir(f.state_dir());
    let ctx = tools_fs::install_index(builder, f.root(), f.state_dir(), settings, true).build();
    let started = Instant::now();
    while tools_fs::index_status(&ctx).unwrap().state != "not used" {
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        tools_fs::index_status(&ctx)
            .unwrap()
            .detail
            .contains("budget")
    );
}

#[test]
fn faults_lead_to_correct_answers_and_notes() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new(&[
        "a.txt = alpha\n",
        "locked/b.txt = alpha locked\n",
        "c.txt = gamma\n",
    ]);
    let ctx = indexed(&f);
    let scan = f.context_with(PermissionMode::AcceptEdits, &[]);
    let input = json!({"pattern": "alpha|gamma", "output_mode": "content", "head_limit": 0});
    // A file that cannot be read, a directory that cannot be listed (root reads anyway:
    // the answers must agree either way).
    std::fs::set_permissions(f.path("c.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(f.path("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    same(&f, &ctx, &scan, "Grep", &input, "permissions removed");
    std::fs::set_permissions(f.path("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(f.path("c.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
    same(&f, &ctx, &scan, "Grep", &input, "permissions restored");
    // A file vanishing between the listing and the search.
    std::fs::remove_file(f.path("a.txt")).unwrap();
    same(&f, &ctx, &scan, "Grep", &input, "a.txt deleted");
    // The project itself deleted under the session: an error like the scan's, no panic,
    // and a note.
    let root = f.root().to_path_buf();
    std::fs::remove_dir_all(&root).unwrap();
    let r = f.call_tool(&ctx, "Grep", &json!({"pattern": "alpha"}));
    assert!(r.is_error, "{r:#?}");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("z.txt"), "alpha again\n").unwrap();
    let r = f.call_tool(&ctx, "Grep", &json!({"pattern": "alpha"}));
    assert_eq!(r.text(), "Found 1 file\nz.txt");
    let status = tools_fs::index_status(&ctx).unwrap();
    assert!(
        status.notes.iter().any(|n| n.contains("removed or moved")),
        "{status:?}"
    );
}

/// More changes than the kernel queues between two queries: the notification queue
/// overflows, so the next query is answered by the scan (the same answer), the index is
/// validated again, and the query after that answers from it again.
#[test]
fn a_notification_queue_overflow_falls_back_to_the_scan_and_revalidates() {
    let f = Fixture::new(&["a.txt = alpha\n", "src/b.rs = bravo\n"]);
    let ctx = indexed(&f);
    let scan = f.context_with(PermissionMode::AcceptEdits, &[]);
    let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384);
    // Each write queues at least two events (created or modified, then closed).
    for i in 0..queued / 2 + 100 {
        std::fs::write(f.path(&format!("src/n{i}.txt")), format!("alpha {i}\n")).unwrap();
    }
    let before = answered(&ctx);
    let input = json!({"pattern": "alpha 1\\b", "output_mode": "content", "head_limit": 0});
    same(&f, &ctx, &scan, "Grep", &input, "a queue overflow");
    assert_eq!(answered(&ctx), before, "the scan answered");
    let status = tools_fs::index_status(&ctx).unwrap();
    assert!(
        status.notes.iter().any(|n| n.contains("overflowed")),
        "{status:?}"
    );
    wait_ready(&ctx);
    std::fs::write(f.path("src/late.txt"), "alpha 1 late\n").unwrap();
    same(&f, &ctx, &scan, "Grep", &input, "revalidation");
    assert_eq!(answered(&ctx), before + 1, "the index answered again");
}

/// Without notifications (`search.notifications: false`, and what a project on a network
/// or FUSE file system gets: their changes made elsewhere send none), every query validates
/// its scope first: outside changes are seen at once, the answers are the scan's, and the
/// index still answers them.
#[test]
fn without_notifications_each_query_validates_its_scope_first() {
    let f = Fixture::new(&[]);
    let mut rng = Rng(0x5eed_0b11);
    seed_tree(&f, &mut rng);
    let settings = IndexSettings {
        mode: IndexMode::Eager,
        auto_min_bytes: 0,
        notifications: false,
        ..IndexSettings::default()
    };
    let builder = ToolContext::builder(f.root())
        .state_dir(f.state_dir())
        .mode(PermissionMode::AcceptEdits);
    let ctx = tools_fs::install_index(builder, f.root(), f.state_dir(), settings, true).build();
    wait_ready(&ctx);
    let status = tools_fs::index_status(&ctx).unwrap();
    assert!(
        status
            .notes
            .iter()
            .any(|n| n.contains("search.notifications is false")),
        "{status:?}"
    );
    assert!(!status.detail.contains("watched"), "{status:?}");
    let scan = f.context_with(PermissionMode::AcceptEdits, &[]);
    // An outside write into a directory the index already knows, and one into a new one:
    // the next query sees both.
    f.write("src/deep/fresh.rs", "a novel_marker here\n");
    f.write("brand/new/dir/x.txt", "novel_marker too\n");
    let input = json!({"pattern": "novel_marker", "output_mode": "content", "head_limit": 0});
    let before = answered(&ctx);
    same(&f, &ctx, &scan, "Grep", &input, "two outside writes");
    let r = f.call_tool(&ctx, "Grep", &input);
    assert!(
        r.text().contains("fresh.rs") && r.text().contains("brand/new/dir/x.txt"),
        "{}",
        r.text()
    );
    assert_eq!(answered(&ctx), before + 2, "the index answered");
    let mut what = "the start".to_owned();
    let queries = 150;
    for i in 0..queries {
        if i % 2 == 1 {
            what = mutate(&f, &ctx, &mut rng);
        }
        let input = if i % 5 == 0 {
            random_glob(&mut rng)
        } else {
            random_grep(&mut rng)
        };
        let tool = if i % 5 == 0 { "Glob" } else { "Grep" };
        same(&f, &ctx, &scan, tool, &input, &what);
    }
    let status = tools_fs::index_status(&ctx).unwrap();
    assert_eq!(status.state, "ready", "{status:?}");
    assert!(status.answered * 10 >= queries * 9, "{status:?}");
}

#[test]
fn the_notifications_setting_is_read_and_checked() {
    let f = Fixture::new(&[]);
    let layer = |v: Value| tool_core::SettingsLayer {
        kind: tool_core::RuleSourceKind::FlagSettings,
        path: f.path("settings.json"),
        settings: serde_json::from_value(json!({"search": {"notifications": v}})).unwrap(),
    };
    let off = IndexSettings::from_layers(&[layer(json!(false))]).unwrap();
    assert!(!off.notifications);
    assert!(IndexSettings::default().notifications);
    let err = IndexSettings::from_layers(&[layer(json!("no"))]).unwrap_err();
    assert!(
        err.to_string()
            .contains("search.notifications must be true or false"),
        "{err}"
    );
}

/// `Path` of the saved index file, for the kill test.
fn saved(f: &Fixture) -> std::path::PathBuf {
    tools_fs::index_file(f.state_dir(), &f.root().canonicalize().unwrap())
}

#[test]
fn rebuild_status_and_drop() {
    let f = Fixture::new(&["a.txt = alpha\n"]);
    let root: &Path = f.root();
    let status = tools_fs::saved_index_status(root, f.state_dir());
    assert_eq!(status.state, "not built");
    let status = tools_fs::rebuild_index(root, f.state_dir(), IndexSettings::default());
    assert_eq!(status.state, "ready", "{status:?}");
    assert!(saved(&f).is_file());
    let status = tools_fs::saved_index_status(root, f.state_dir());
    assert_eq!(status.state, "ready", "{status:?}");
    assert!(status.detail.contains("validated"), "{status:?}");
    assert!(tools_fs::drop_index(root, f.state_dir()).unwrap());
    assert!(!saved(&f).exists());
    assert!(!tools_fs::drop_index(root, f.state_dir()).unwrap());
}
