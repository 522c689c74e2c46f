//! A host's own tools that declare path fields get the file tools' rules: the Read rules
//! and the working directories for a path read, the Edit rules, protected paths, plan mode
//! and the read ledger for a path written. Each case asserts what happened on disk and
//! whether the tool ran, not only the message.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tool_core::schemars::JsonSchema;
use tool_core::serde::Deserialize;
use tool_core::serde_json::{Value, json};
use tool_core::{
    PathField, PermissionMode, ReadRecord, ReadSource, ToolContext, ToolError, ToolMeta, ToolPool,
    ToolResult, Typed, TypedTool, content_hash,
};

/// Counts the words of the files it is given.
struct WordCount(Arc<AtomicUsize>);

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct WordCountInput {
    /// The file
    path: String,
    /// More files
    #[serde(default)]
    more: Vec<String>,
}

#[tool_core::async_trait]
impl TypedTool for WordCount {
    type Input = WordCountInput;
    type Output = usize;
    const META: ToolMeta = ToolMeta::new("WordCount")
        .describe("Counts the words of files.")
        .read_only()
        .path_fields(&[PathField::read("path"), PathField::read("more")]);
    async fn call(
        &self,
        i: WordCountInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<usize>, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut words = 0;
        for p in std::iter::once(&i.path).chain(&i.more) {
            // The engine hands the path over absolute.
            assert!(Path::new(p).is_absolute(), "{p}");
            let text = std::fs::read_to_string(p)
                .map_err(|e| ToolError::from_io(Path::new(p), &ctx.cwd(), e))?;
            words += text.split_whitespace().count();
        }
        Ok(ToolResult::ok(words))
    }
}

/// Appends a line to a file.
struct Append(Arc<AtomicUsize>);

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct AppendInput {
    /// The file
    file: String,
    /// The line
    line: String,
}

#[tool_core::async_trait]
impl TypedTool for Append {
    type Input = AppendInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Append")
        .describe("Appends a line to a file.")
        .path_fields(&[PathField::write("file")]);
    async fn call(&self, i: AppendInput, _: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        use std::io::Write as _;
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&i.file)
            .map_err(|e| ToolError::fatal(e.to_string()))?;
        writeln!(f, "{}", i.line).map_err(|e| ToolError::fatal(e.to_string()))?;
        Ok(ToolResult::ok("appended".to_owned()))
    }
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir),
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    state: std::path::PathBuf,
    runs: Arc<AtomicUsize>,
    pool: ToolPool,
}

fn setup() -> Setup {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let root = a.path().canonicalize().unwrap();
    let outside = b.path().canonicalize().unwrap();
    let state = c.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "one two three\n").unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/key.txt"), "s3cret words\n").unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(outside.join("far.txt"), "far away words\n").unwrap();
    std::os::unix::fs::symlink(outside.join("far.txt"), root.join("link.txt")).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let pool = ToolPool::new(vec![
        Arc::new(Typed::new(WordCount(Arc::clone(&runs)))),
        Arc::new(Typed::new(Append(Arc::clone(&runs)))),
    ]);
    Setup {
        _dirs: (a, b, c),
        root,
        outside,
        state,
        runs,
        pool,
    }
}

impl Setup {
    fn ctx(&self, mode: PermissionMode, rules: &[(&str, String)]) -> ToolContext {
        let mut b = ToolContext::builder(&self.root)
            .mode(mode)
            .state_dir(&self.state);
        for (behavior, rule) in rules {
            b = match *behavior {
                "allow" => b.allow(rule),
                "deny" => b.deny(rule),
                _ => b.ask(rule),
            };
        }
        b.build()
    }

    /// Runs `tool` with `input` ({root} and {outside} replaced) and checks the outcome:
    /// `Ok(text)` for a result containing `text`, `Err(text)` for an error containing it;
    /// on an error the tool must not have run.
    #[track_caller]
    fn check(&self, ctx: &ToolContext, tool: &str, input: &str, want: Result<&str, &str>) {
        let input = input
            .replace("{root}", self.root.to_str().unwrap())
            .replace("{outside}", self.outside.to_str().unwrap());
        let input: Value = serde_json::from_str(&input).unwrap();
        let before = self.runs.load(Ordering::SeqCst);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = runtime.block_on(self.pool.call(tool, input.clone(), ctx));
        let ran = self.runs.load(Ordering::SeqCst) > before;
        match want {
            Ok(text) => {
                assert!(!result.is_error, "{input}: {}", result.text());
                assert!(result.text().contains(text), "{input}: {}", result.text());
                assert!(ran, "{input}: the tool did not run");
            }
            Err(text) => {
                assert!(result.is_error, "{input}: {}", result.text());
                assert!(result.text().contains(text), "{input}: {}", result.text());
                assert!(!ran, "{input}: the tool ran: {}", result.text());
            }
        }
    }

    fn read(&self, p: &str) -> String {
        std::fs::read_to_string(self.root.join(p)).unwrap_or_default()
    }

    /// What Read records after reading the whole of `p`.
    fn record_read(&self, ctx: &ToolContext, p: &str) {
        let path = self.root.join(p);
        let bytes = std::fs::read(&path).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        ctx.ledger().record(
            &path,
            ReadRecord {
                content_hash: Some(content_hash(&bytes)),
                mtime: meta.modified().ok(),
                len: meta.len(),
                offset: None,
                limit: None,
                partial_view: false,
                source: ReadSource::Read,
            },
        );
    }
}

#[test]
fn a_path_read_follows_the_read_rules_and_the_working_directories() {
    let s = setup();
    let plain = s.ctx(PermissionMode::Default, &[]);
    // Relative paths resolve against the session's working directory, not the process's.
    s.check(&plain, "WordCount", r#"{"path": "notes.txt"}"#, Ok("3"));
    s.check(
        &plain,
        "WordCount",
        r#"{"path": "{root}/notes.txt"}"#,
        Ok("3"),
    );
    // Outside the working directories: an ask, which nobody answers here.
    for outside in [
        r#"{"path": "{outside}/far.txt"}"#,
        r#"{"path": "../far.txt"}"#,
        r#"{"path": "link.txt"}"#,
        r#"{"path": "notes.txt", "more": ["{outside}/far.txt"]}"#,
    ] {
        s.check(
            &plain,
            "WordCount",
            outside,
            Err("outside allowed working directories"),
        );
    }
    // A Read allow rule for that place lets it through.
    let allowed = s.ctx(
        PermissionMode::Default,
        &[("allow", format!("Read(/{}/**)", s.outside.display()))],
    );
    s.check(
        &allowed,
        "WordCount",
        r#"{"path": "{outside}/far.txt"}"#,
        Ok("3"),
    );
    s.check(&allowed, "WordCount", r#"{"path": "link.txt"}"#, Ok("3"));
    // Deny rules hold inside the working directories, in every mode, through every spelling.
    for mode in [PermissionMode::Default, PermissionMode::BypassPermissions] {
        let denied = s.ctx(
            mode,
            &[
                ("deny", "Read(secret/**)".to_owned()),
                ("deny", format!("Read(/{}/**)", s.outside.display())),
            ],
        );
        for input in [
            r#"{"path": "secret/key.txt"}"#,
            r#"{"path": "./secret/../secret/key.txt"}"#,
            r#"{"path": "{root}/secret/key.txt"}"#,
            r#"{"path": " secret/key.txt "}"#,
            r#"{"path": "notes.txt", "more": ["secret/key.txt"]}"#,
            r#"{"path": "link.txt"}"#,
            r#"{"path": "{outside}/far.txt"}"#,
        ] {
            s.check(&denied, "WordCount", input, Err("has been denied"));
        }
        s.check(&denied, "WordCount", r#"{"path": "notes.txt"}"#, Ok("3"));
    }
}

#[test]
fn the_issue_example_is_refused_under_a_deny_rule() {
    let s = setup();
    let ctx = s.ctx(
        PermissionMode::Default,
        &[("deny", "Read(//etc/**)".to_owned())],
    );
    s.check(
        &ctx,
        "WordCount",
        r#"{"path": "/etc/hostname"}"#,
        Err("has been denied"),
    );
    s.check(
        &ctx,
        "WordCount",
        r#"{"path": "/etc/../etc/hostname"}"#,
        Err("has been denied"),
    );
    s.check(
        &ctx,
        "WordCount",
        r#"{"path": "../../../../../../../../etc/hostname"}"#,
        Err("has been denied"),
    );
}

#[test]
fn a_path_written_follows_the_edit_rules_protected_paths_and_plan_mode() {
    let s = setup();
    // Default mode asks for any write; acceptEdits allows new files inside.
    let plain = s.ctx(PermissionMode::Default, &[]);
    s.check(
        &plain,
        "Append",
        r#"{"file": "new.txt", "line": "x"}"#,
        Err("needs approval"),
    );
    assert!(!s.root.join("new.txt").exists());
    let accept = s.ctx(PermissionMode::AcceptEdits, &[]);
    s.check(
        &accept,
        "Append",
        r#"{"file": "new.txt", "line": "x"}"#,
        Ok("appended"),
    );
    assert_eq!(s.read("new.txt"), "x\n");
    // Outside the working directories: an ask even in acceptEdits.
    s.check(
        &accept,
        "Append",
        r#"{"file": "{outside}/new.txt", "line": "x"}"#,
        Err("outside allowed working directories"),
    );
    assert!(!s.outside.join("new.txt").exists());
    // Through a link or `..`, the place written is what counts.
    for escape in [
        r#"{"file": "link.txt", "line": "x"}"#,
        r#"{"file": "../x.txt", "line": "x"}"#,
    ] {
        s.check(
            &accept,
            "Append",
            escape,
            Err("outside allowed working directories"),
        );
    }
    assert_eq!(
        std::fs::read_to_string(s.outside.join("far.txt")).unwrap(),
        "far away words\n"
    );
    // Protected paths need a person even in bypassPermissions.
    let bypass = s.ctx(PermissionMode::BypassPermissions, &[]);
    for protected in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".bashrc",
        ".mcp.json",
    ] {
        let input = format!(r#"{{"file": "{protected}", "line": "evil"}}"#);
        s.check(&bypass, "Append", &input, Err("protected path"));
        assert!(!s.read(protected).contains("evil"), "{protected}");
    }
    // An Edit deny rule holds in every mode.
    let denied = s.ctx(
        PermissionMode::BypassPermissions,
        &[("deny", "Edit(secret/**)".to_owned())],
    );
    s.check(
        &denied,
        "Append",
        r#"{"file": "secret/key.txt", "line": "x"}"#,
        Err("has been denied"),
    );
    assert_eq!(s.read("secret/key.txt"), "s3cret words\n");
    // Plan mode refuses the write.
    let plan = s.ctx(PermissionMode::Plan, &[]);
    s.check(
        &plan,
        "Append",
        r#"{"file": "plan.txt", "line": "x"}"#,
        Err("Plan mode"),
    );
    assert!(!s.root.join("plan.txt").exists());
}

#[test]
fn a_path_written_must_have_been_read_and_unchanged_since() {
    let s = setup();
    let ctx = s.ctx(PermissionMode::AcceptEdits, &[]);
    s.check(
        &ctx,
        "Append",
        r#"{"file": "notes.txt", "line": "four"}"#,
        Err("has not been read yet"),
    );
    assert_eq!(s.read("notes.txt"), "one two three\n");
    s.record_read(&ctx, "notes.txt");
    s.check(
        &ctx,
        "Append",
        r#"{"file": "notes.txt", "line": "four"}"#,
        Ok("appended"),
    );
    // Its own write was recorded: the next one needs no new read.
    s.check(
        &ctx,
        "Append",
        r#"{"file": "notes.txt", "line": "five"}"#,
        Ok("appended"),
    );
    assert_eq!(s.read("notes.txt"), "one two three\nfour\nfive\n");
    // Changed behind the session's back: read it again first.
    std::fs::write(s.root.join("notes.txt"), "rewritten\n").unwrap();
    s.check(
        &ctx,
        "Append",
        r#"{"file": "notes.txt", "line": "six"}"#,
        Err("modified since read"),
    );
    assert_eq!(s.read("notes.txt"), "rewritten\n");
    // A count is not a read: it does not let a write through.
    s.check(&ctx, "WordCount", r#"{"path": "secret/key.txt"}"#, Ok("2"));
    s.check(
        &ctx,
        "Append",
        r#"{"file": "secret/key.txt", "line": "x"}"#,
        Err("has not been read yet"),
    );
}

/// Echoes a text: no path fields, so a path in it means nothing to the engine.
struct Echo;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct EchoInput {
    /// The text
    path: String,
}

#[tool_core::async_trait]
impl TypedTool for Echo {
    type Input = EchoInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Echo").read_only();
    async fn call(&self, i: EchoInput, _: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok(i.path))
    }
}

#[test]
fn a_tool_without_path_fields_is_unchanged() {
    let s = setup();
    let ctx = s.ctx(
        PermissionMode::Default,
        &[("deny", "Read(//etc/**)".to_owned())],
    );
    let pool = ToolPool::new(vec![Arc::new(Typed::new(Echo))]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = runtime.block_on(pool.call("Echo", json!({"path": "../../etc/hostname"}), &ctx));
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "../../etc/hostname");
}
