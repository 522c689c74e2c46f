//! The gemini profile: Gemini CLI's tools over the built-ins, their result texts, and the
//! built-ins' permission rules applied to them.

use std::path::{Path, PathBuf};

use registry::{Profile, SessionOptions, ToolRegistry, build_context};
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::{PermissionMode, ToolContext, ToolPool};

/// A project in a temporary directory with a session over it.
struct Session {
    _dir: TempDir,
    root: PathBuf,
    ctx: ToolContext,
    pool: ToolPool,
}

fn session_with(files: &[(&str, &str)], mode: PermissionMode, deny: &[&str]) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("project");
    std::fs::create_dir_all(&root).unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let options = SessionOptions {
        cwd: root.clone(),
        state_dir: Some(root.parent().unwrap().join("home")),
        mode: Some(mode),
        deny: deny.iter().map(|s| (*s).to_owned()).collect(),
        profile: Some(Profile::Gemini),
        ..SessionOptions::default()
    };
    let ctx = build_context(&options).unwrap();
    let pool = ToolRegistry::for_profile(Profile::Gemini).pool(ctx.permissions(), Vec::new());
    Session {
        _dir: dir,
        root,
        ctx,
        pool,
    }
}

fn session(files: &[(&str, &str)]) -> Session {
    session_with(files, PermissionMode::AcceptEdits, &[])
}

impl Session {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn p(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }
    /// The text the model reads and whether the call failed.
    async fn run(&self, tool: &str, input: Value) -> (String, bool) {
        let result = self.pool.call(tool, input, &self.ctx).await;
        let text: Vec<&str> = result.content.iter().filter_map(|b| b.as_text()).collect();
        (text.join("\n"), result.is_error)
    }
    /// Calls `tool` and checks the text the model reads (`{root}` stands for the project).
    async fn check(&self, tool: &str, input: Value, expected: &str) {
        let (text, is_error) = self.run(tool, input.clone()).await;
        let expected = expected.replace("{root}", &self.root.display().to_string());
        assert_eq!(text, expected, "{tool} {input}: error={is_error}");
    }
    /// Calls `tool` and checks it failed with a text containing each of `parts`.
    async fn check_err(&self, tool: &str, input: Value, parts: &[&str]) {
        let (text, is_error) = self.run(tool, input.clone()).await;
        assert!(is_error, "{tool} {input} should fail: {text}");
        for part in parts {
            let part = part.replace("{root}", &self.root.display().to_string());
            assert!(
                text.contains(&part),
                "{tool} {input}: `{part}` not in {text}"
            );
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

#[test]
fn the_pool_speaks_gemini_and_keeps_tools_without_a_counterpart() {
    let s = session(&[]);
    let names = s.pool.names();
    for name in [
        "read_file",
        "read_many_files",
        "write_file",
        "replace",
        "glob",
        "grep_search",
        "list_directory",
        "run_shell_command",
        "web_fetch",
        "google_web_search",
        "write_todos",
        "save_memory",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for gone in [
        "Read",
        "Write",
        "Edit",
        "MultiEdit",
        "Glob",
        "Grep",
        "Bash",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
    ] {
        assert!(!names.contains(&gone), "{gone} still in {names:?}");
    }
    assert!(names.contains(&"NotebookEdit") && names.contains(&"LSP"));
    let checked: Vec<(&str, Vec<&str>)> = s
        .pool
        .tools()
        .iter()
        .filter(|t| t.name().chars().all(|c| c.is_lowercase() || c == '_'))
        .map(|t| (t.name(), t.checked_as().to_vec()))
        .collect();
    for (name, governing) in checked {
        let want: &[&str] = match name {
            "read_file" | "read_many_files" | "list_directory" => &["Read"],
            "write_file" => &["Write"],
            "replace" | "save_memory" => &["Edit"],
            "glob" => &["Glob"],
            "grep_search" => &["Grep"],
            "run_shell_command" => &["Bash"],
            "web_fetch" => &["WebFetch"],
            "google_web_search" => &["WebSearch"],
            "write_todos" => &["TodoWrite"],
            other => panic!("unexpected tool {other}"),
        };
        assert_eq!(governing, want, "{name}");
    }
}

#[test]
fn read_file_returns_the_text_and_says_when_it_is_a_part() {
    rt().block_on(async {
        let s = session(&[("a.txt", "one\ntwo\nthree\nfour\n"), ("empty.txt", "")]);
        s.check("read_file", json!({"file_path": s.p("a.txt")}), "one\ntwo\nthree\nfour\n")
            .await;
        // A second read of the same unchanged file points back to the first.
        s.check(
            "read_file",
            json!({"file_path": "a.txt"}),
            "File unchanged since it was last read: the content from the earlier read_file result for {root}/a.txt is still current; refer to that instead of reading it again.",
        )
        .await;
        s.check(
            "read_file",
            json!({"file_path": "a.txt", "start_line": 2, "end_line": 3}),
            "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-3 of 4 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 4.\n\n--- FILE CONTENT (truncated) ---\ntwo\nthree\n",
        )
        .await;
        s.check(
            "read_file",
            json!({"file_path": "a.txt", "start_line": 4}),
            "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 4-4 of 4 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 5.\n\n--- FILE CONTENT (truncated) ---\nfour\n",
        )
        .await;
        s.check(
            "read_file",
            json!({"file_path": "a.txt", "end_line": 1}),
            "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 1-1 of 4 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 2.\n\n--- FILE CONTENT (truncated) ---\none\n",
        )
        .await;
        s.check("read_file", json!({"file_path": "empty.txt"}), "").await;
        s.check_err(
            "read_file",
            json!({"file_path": "a.txt", "start_line": 3, "end_line": 2}),
            &["`end_line` (2) is before `start_line` (3)"],
        )
        .await;
        s.check_err("read_file", json!({"file_path": "a.txt", "start_line": 0}), &["start_line"])
            .await;
        s.check_err("read_file", json!({"absolute_path": "a.txt"}), &["file_path"])
            .await;
        s.check_err("read_file", json!({"file_path": "missing.txt"}), &["File does not exist"])
            .await;
    });
}

#[test]
fn write_file_creates_and_overwrites_in_geminis_words() {
    rt().block_on(async {
        let s = session(&[("old.txt", "before\n")]);
        s.check(
            "write_file",
            json!({"file_path": "dir/new.txt", "content": "hello\n"}),
            "Successfully created and wrote to new file: {root}/dir/new.txt.",
        )
        .await;
        assert_eq!(s.read("dir/new.txt"), "hello\n");
        // An existing file must be read first: the ledger's rule, in words naming read_file.
        s.check_err(
            "write_file",
            json!({"file_path": "old.txt", "content": "after\n"}),
            &["call read_file on old.txt first", "retry write_file"],
        )
        .await;
        assert_eq!(s.read("old.txt"), "before\n");
        s.run("read_file", json!({"file_path": "old.txt"})).await;
        s.check(
            "write_file",
            json!({"file_path": "old.txt", "content": "after\n"}),
            "Successfully overwrote file: {root}/old.txt.",
        )
        .await;
        assert_eq!(s.read("old.txt"), "after\n");
        s.check_err("write_file", json!({"file_path": "x.txt"}), &["content"])
            .await;
    });
}

#[test]
fn replace_counts_occurrences_as_gemini_does() {
    rt().block_on(async {
        let s = session(&[("a.txt", "alpha\nbeta\nbeta\ngamma\n")]);
        let edit = |old: &str, new: &str| {
            json!({"file_path": "a.txt", "instruction": "change it", "old_string": old, "new_string": new})
        };
        s.check_err(
            "replace",
            edit("alpha", "A"),
            &["File has not been read yet: call read_file on a.txt first", "retry replace"],
        )
        .await;
        assert_eq!(s.read("a.txt"), "alpha\nbeta\nbeta\ngamma\n");
        s.run("read_file", json!({"file_path": "a.txt"})).await;
        s.check(
            "replace",
            edit("alpha", "A"),
            "Successfully modified file: {root}/a.txt (1 replacements).",
        )
        .await;
        s.check_err(
            "replace",
            edit("beta", "B"),
            &["Failed to edit, Expected 1 occurrence but found 2 for old_string in file: a.txt. If you intended to replace multiple occurrences, set 'allow_multiple' to true."],
        )
        .await;
        assert_eq!(s.read("a.txt"), "A\nbeta\nbeta\ngamma\n");
        s.check_err(
            "replace",
            edit("zeta", "Z"),
            &["Failed to edit, 0 occurrences found for old_string in a.txt. Ensure you're not escaping content incorrectly and check whitespace, indentation, and context. Use read_file tool to verify."],
        )
        .await;
        s.check_err(
            "replace",
            edit("gamma", "gamma"),
            &["No changes to apply. The old_string and new_string are identical in file: a.txt"],
        )
        .await;
        // expected_replacements is counted before anything is written.
        let mut three = edit("beta", "B");
        three["expected_replacements"] = json!(3);
        s.check_err(
            "replace",
            three,
            &["Failed to edit, Expected 3 occurrences but found 2 for old_string in file: a.txt", "Set `expected_replacements` to 2"],
        )
        .await;
        assert_eq!(s.read("a.txt"), "A\nbeta\nbeta\ngamma\n");
        let mut two = edit("beta", "B");
        two["expected_replacements"] = json!(2);
        s.check(
            "replace",
            two,
            "Successfully modified file: {root}/a.txt (2 replacements).",
        )
        .await;
        assert_eq!(s.read("a.txt"), "A\nB\nB\ngamma\n");
        let mut all = edit("B", "b");
        all["allow_multiple"] = json!(true);
        s.check(
            "replace",
            all,
            "Successfully modified file: {root}/a.txt (2 replacements).",
        )
        .await;
        assert_eq!(s.read("a.txt"), "A\nb\nb\ngamma\n");
        let mut both = edit("A", "a");
        both["allow_multiple"] = json!(true);
        both["expected_replacements"] = json!(1);
        s.check_err("replace", both, &["`expected_replacements` is 1 but `allow_multiple` is true"])
            .await;
        s.check_err(
            "replace",
            json!({"file_path": "a.txt", "old_string": "A", "new_string": "a"}),
            &["instruction"],
        )
        .await;
        s.check(
            "replace",
            json!({"file_path": "new.txt", "instruction": "create", "old_string": "", "new_string": "fresh\n"}),
            "Created new file: {root}/new.txt with provided content.",
        )
        .await;
        assert_eq!(s.read("new.txt"), "fresh\n");
    });
}

#[test]
fn glob_lists_absolute_paths() {
    rt().block_on(async {
        let s = session(&[("src/a.rs", ""), ("src/B.RS", ""), ("readme.md", "")]);
        let (text, _) = s.run("glob", json!({"pattern": "**/*.rs"})).await;
        let root = s.root.display().to_string();
        assert!(
            text.starts_with(&format!(
                "Found 2 file(s) matching \"**/*.rs\" within {root}, sorted by modification time (newest first):\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!("{root}/src/a.rs")) && text.contains(&format!("{root}/src/B.RS")), "{text}");
        let (text, _) = s
            .run("glob", json!({"pattern": "**/*.rs", "case_sensitive": true}))
            .await;
        assert!(text.starts_with("Found 1 file(s)") && text.ends_with("/src/a.rs"), "{text}");
        s.check(
            "glob",
            json!({"pattern": "*.md", "dir_path": s.p("src")}),
            "No files found matching pattern \"*.md\" within {root}/src",
        )
        .await;
        s.check(
            "glob",
            json!({"pattern": "*.md"}),
            "Found 1 file(s) matching \"*.md\" within {root}, sorted by modification time (newest first):\n{root}/readme.md",
        )
        .await;
        s.check_err("glob", json!({"pattern": " "}), &["`pattern` is empty"]).await;
    });
}

#[test]
fn grep_search_prints_files_and_numbered_lines() {
    rt().block_on(async {
        let s = session(&[
            ("a.txt", "Hello world\nbye\nhello again\n"),
            ("src/b.rs", "fn hello() {}\n"),
        ]);
        let (text, _) = s.run("grep_search", json!({"pattern": "hello"})).await;
        assert!(text.starts_with("Found 3 matches for pattern \"hello\" in path \".\":\n---\n"), "{text}");
        assert!(text.contains("File: a.txt\nL1: Hello world\nL3: hello again\n---\n"), "{text}");
        assert!(text.contains("File: src/b.rs\nL1: fn hello() {}\n---\n"), "{text}");
        s.check(
            "grep_search",
            json!({"pattern": "hello", "case_sensitive": true, "include_pattern": "*.txt"}),
            "Found 1 match for pattern \"hello\" in path \".\" (filter: \"*.txt\"):\n---\nFile: a.txt\nL3: hello again\n---\n",
        )
        .await;
        s.check(
            "grep_search",
            json!({"pattern": "bye", "dir_path": "a.txt", "context": 1}),
            "Found 1 match for pattern \"bye\" in path \"a.txt\":\n---\nFile: a.txt\nL1- Hello world\nL2: bye\nL3- hello again\n---\n",
        )
        .await;
        s.check(
            "grep_search",
            json!({"pattern": "hello", "names_only": true, "include_pattern": "*.rs"}),
            "Found 1 files with matches for pattern \"hello\" in path \".\" (filter: \"*.rs\"):\nsrc/b.rs",
        )
        .await;
        s.check(
            "grep_search",
            json!({"pattern": "hello", "exclude_pattern": "again|fn", "include_pattern": "*.txt"}),
            "Found 1 match for pattern \"hello\" in path \".\" (filter: \"*.txt\"):\n---\nFile: a.txt\nL1: Hello world\n---\n",
        )
        .await;
        s.check(
            "grep_search",
            json!({"pattern": "hello", "total_max_matches": 1, "include_pattern": "a.txt"}),
            "Found 1 match for pattern \"hello\" in path \".\" (filter: \"a.txt\") (results limited to 1 matches for performance):\n---\nFile: a.txt\nL1: Hello world\n---\n",
        )
        .await;
        s.check(
            "grep_search",
            json!({"pattern": "fn()", "fixed_strings": true}),
            "No matches found for pattern \"fn()\" in path \".\".",
        )
        .await;
        s.check(
            "grep_search",
            json!({"pattern": "hello()", "fixed_strings": true}),
            "Found 1 match for pattern \"hello()\" in path \".\":\n---\nFile: src/b.rs\nL1: fn hello() {}\n---\n",
        )
        .await;
        s.check_err("grep_search", json!({"pattern": "x", "exclude_pattern": "("}), &["`exclude_pattern` is not a valid regular expression"])
            .await;
        s.check_err("grep_search", json!({"pattern": "x", "total_max_matches": 0}), &["total_max_matches"])
            .await;
    });
}

#[test]
fn list_directory_marks_directories_and_respects_ignore_files() {
    rt().block_on(async {
        let s = session(&[
            ("b.txt", "12345"),
            ("a.log", "1"),
            ("src/main.rs", ""),
            ("target/x", ""),
            (".gitignore", "target/\n"),
            ("empty/.keep", ""),
        ]);
        std::fs::remove_file(s.path("empty/.keep")).unwrap();
        std::process::Command::new("git").arg("init").arg("-q").current_dir(&s.root).status().ok();
        s.check(
            "list_directory",
            json!({"dir_path": "."}),
            "Directory listing for {root}:\n[DIR] empty\n[DIR] src\n.gitignore (8 bytes)\na.log (1 bytes)\nb.txt (5 bytes)\n\n(2 ignored)",
        )
        .await;
        s.check(
            "list_directory",
            json!({"dir_path": s.p(""), "ignore": ["*.log", ".*"], "file_filtering_options": {"respect_git_ignore": false}}),
            "Directory listing for {root}:\n[DIR] empty\n[DIR] src\n[DIR] target\nb.txt (5 bytes)",
        )
        .await;
        s.check("list_directory", json!({"dir_path": "empty"}), "Directory {root}/empty is empty.")
            .await;
        s.check_err("list_directory", json!({"dir_path": "b.txt"}), &["Error: Path is not a directory: {root}/b.txt"])
            .await;
        s.check_err("list_directory", json!({"dir_path": "nope"}), &["Error: Directory not found or inaccessible: {root}/nope"])
            .await;
        s.check_err("list_directory", json!({"dir_path": ".", "ignore": ["a{"]}), &["`ignore` pattern `a{`"])
            .await;
        s.check_err("list_directory", json!({}), &["dir_path"]).await;
    });
}

#[test]
fn read_many_files_concatenates_with_separators() {
    rt().block_on(async {
        let s = session(&[
            ("docs/a.md", "A\n"),
            ("docs/b.md", "B\n"),
            ("src/c.rs", "C\n"),
            ("node_modules/x/d.md", "D\n"),
            ("img.png", "png"),
        ]);
        let root = s.root.display().to_string();
        s.check(
            "read_many_files",
            json!({"include": ["**/*.md"]}),
            &format!("--- {root}/docs/a.md ---\n\nA\n\n\n--- {root}/docs/b.md ---\n\nB\n\n\n\n--- End of content ---"),
        )
        .await;
        s.check(
            "read_many_files",
            json!({"include": ["docs/", "src/c.rs"], "exclude": ["b.md"]}),
            &format!("--- {root}/docs/a.md ---\n\nA\n\n\n--- {root}/src/c.rs ---\n\nC\n\n\n\n--- End of content ---"),
        )
        .await;
        let (text, _) = s.run("read_many_files", json!({"include": ["*"]})).await;
        assert!(text.contains("Skipped 1 item(s):\n- ") && text.contains("img.png (Reason: asset file"), "{text}");
        let (text, _) = s
            .run("read_many_files", json!({"include": ["**/*.md"], "useDefaultExcludes": false}))
            .await;
        assert!(text.contains("node_modules/x/d.md ---"), "{text}");
        s.check(
            "read_many_files",
            json!({"include": ["*.zig"]}),
            "No files matching the criteria were found or all were skipped.",
        )
        .await;
        s.check_err("read_many_files", json!({"include": []}), &["include"]).await;
        s.check_err("read_many_files", json!({"include": ["*.md"], "exclude": ["a{"]}), &["`exclude` pattern"])
            .await;
    });
}

#[test]
fn run_shell_command_reports_output_and_exit_code() {
    rt().block_on(async {
        let s = session_with(&[("sub/f.txt", "")], PermissionMode::BypassPermissions, &[]);
        s.check(
            "run_shell_command",
            json!({"command": "echo hi"}),
            "Output: hi",
        )
        .await;
        s.check(
            "run_shell_command",
            json!({"command": "true"}),
            "Output: (empty)",
        )
        .await;
        s.check(
            "run_shell_command",
            json!({"command": "echo out; echo err >&2; exit 3", "description": "fails"}),
            "Output: out\nerr\nExit Code: 3",
        )
        .await;
        s.check(
            "run_shell_command",
            json!({"command": "ls", "dir_path": "sub"}),
            "Output: f.txt",
        )
        .await;
        // A cd does not carry over: each call starts in the project.
        s.run("run_shell_command", json!({"command": "cd sub"}))
            .await;
        s.check("run_shell_command", json!({"command": "ls"}), "Output: sub")
            .await;
        let (text, is_error) = s
            .run(
                "run_shell_command",
                json!({"command": "sleep 30", "is_background": true}),
            )
            .await;
        assert!(
            !is_error && text.starts_with("Command moved to background (task ID: "),
            "{text}"
        );
        s.check_err(
            "run_shell_command",
            json!({"command": "  "}),
            &["`command` is empty"],
        )
        .await;
        s.check_err("run_shell_command", json!({"cmd": "ls"}), &["command"])
            .await;
    });
}

#[test]
fn write_todos_lists_gemini_statuses() {
    rt().block_on(async {
        let s = session(&[]);
        s.check(
            "write_todos",
            json!({"todos": [
                {"description": "plan", "status": "completed"},
                {"description": "build", "status": "in_progress"},
                {"description": "old idea", "status": "cancelled"},
                {"description": "deploy", "status": "blocked"},
            ]}),
            "Successfully updated the todo list. The current list is now:\n1. [completed] plan\n2. [in_progress] build\n3. [cancelled] old idea\n4. [blocked] deploy",
        )
        .await;
        s.check("write_todos", json!({"todos": []}), "Successfully cleared the todo list.").await;
        s.check_err(
            "write_todos",
            json!({"todos": [{"description": "a", "status": "in_progress"}, {"description": "b", "status": "in_progress"}]}),
            &["Only one task can be \"in_progress\" at a time"],
        )
        .await;
        s.check_err("write_todos", json!({"todos": [{"description": " ", "status": "pending"}]}), &["`todos[0].description` is empty"])
            .await;
        s.check_err("write_todos", json!({"todos": [{"description": "a", "status": "done"}]}), &["status"])
            .await;
    });
}

#[test]
fn save_memory_appends_under_the_gemini_heading() {
    rt().block_on(async {
        // The state directory is outside the project: writing there asks, as Edit would.
        let s = session(&[]);
        s.check_err(
            "save_memory",
            json!({"fact": "likes tea"}),
            &["Edit(", "home"],
        )
        .await;
        assert!(!s.ctx.state_dir().join("GEMINI.md").exists());
        let s = session_with(&[], PermissionMode::BypassPermissions, &[]);
        let memory = s.ctx.state_dir().join("GEMINI.md");
        s.check(
            "save_memory",
            json!({"fact": "likes tea"}),
            "Okay, I've remembered that: \"likes tea\"",
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(&memory).unwrap(),
            "## Gemini Added Memories\n- likes tea\n"
        );
        std::fs::write(
            &memory,
            "# Notes\nkeep\n\n## Gemini Added Memories\n- likes tea\n\n## Other\nx\n",
        )
        .unwrap();
        s.check(
            "save_memory",
            json!({"fact": "- uses\nvim <b>"}),
            "Okay, I've remembered that: \"uses vim  b\"",
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(&memory).unwrap(),
            "# Notes\nkeep\n\n## Gemini Added Memories\n- likes tea\n- uses vim  b\n## Other\nx\n"
        );
        s.check_err(
            "save_memory",
            json!({"fact": "  "}),
            &["Parameter \"fact\" must be a non-empty string"],
        )
        .await;
    });
}

#[test]
fn web_fetch_needs_a_url_in_the_prompt() {
    rt().block_on(async {
        let s = session(&[]);
        s.check_err(
            "web_fetch",
            json!({"prompt": "summarize the rust book"}),
            &["`prompt` contains no URL"],
        )
        .await;
        s.check_err(
            "google_web_search",
            json!({"query": " "}),
            &["`query` is empty"],
        )
        .await;
    });
}

fn denied(s: &Session, tool: &str) -> bool {
    !s.pool.names().contains(&tool)
}

#[test]
fn blanket_denies_of_the_builtins_hide_their_gemini_tools() {
    let s = session_with(&[], PermissionMode::Default, &["Edit"]);
    assert!(denied(&s, "replace") && denied(&s, "save_memory"));
    assert!(!denied(&s, "write_file") && !denied(&s, "read_file"));
    let s = session_with(&[], PermissionMode::Default, &["Write", "Bash"]);
    assert!(denied(&s, "write_file") && denied(&s, "run_shell_command"));
    let s = session_with(&[], PermissionMode::Default, &["Read"]);
    assert!(
        denied(&s, "read_file") && denied(&s, "read_many_files") && denied(&s, "list_directory")
    );
}

#[test]
fn path_rules_of_the_builtins_refuse_gemini_calls() {
    rt().block_on(async {
        let files = [("a.txt", "keep\n"), (".env", "SECRET=1\n"), ("ok.md", "fine\n")];
        let s = session_with(&files, PermissionMode::AcceptEdits, &["Edit(a.txt)", "Read(.env)"]);
        s.run("read_file", json!({"file_path": "a.txt"})).await;
        s.check_err(
            "replace",
            json!({"file_path": "a.txt", "instruction": "x", "old_string": "keep", "new_string": "gone"}),
            &["denied"],
        )
        .await;
        s.check_err("write_file", json!({"file_path": "a.txt", "content": "gone\n"}), &["denied"])
            .await;
        assert_eq!(s.read("a.txt"), "keep\n");
        s.check_err("read_file", json!({"file_path": ".env"}), &["denied"]).await;
        // Named, .env is refused as Read refuses it; matched by a glob, it is left out.
        s.check_err(
            "read_many_files",
            json!({"include": [".env", "ok.md"], "useDefaultExcludes": false}),
            &["Permission to read", ".env has been denied"],
        )
        .await;
        let (text, _) = s
            .run("read_many_files", json!({"include": ["*"], "useDefaultExcludes": false}))
            .await;
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("fine"), "{text}");
        let (text, _) = s.run("list_directory", json!({"dir_path": "."})).await;
        assert!(!text.contains(".env"), "{text}");
        let (text, _) = s.run("grep_search", json!({"pattern": "SECRET"})).await;
        assert!(!text.contains("SECRET=1"), "{text}");
    });
}

#[test]
fn bash_rules_hold_for_run_shell_command_even_when_bypassing() {
    rt().block_on(async {
        let s = session_with(
            &[("f.txt", "x")],
            PermissionMode::BypassPermissions,
            &["Bash(rm:*)"],
        );
        s.check_err("run_shell_command", json!({"command": "rm f.txt"}), &["rm"])
            .await;
        s.check_err(
            "run_shell_command",
            json!({"command": "rm -f f.txt", "dir_path": "."}),
            &["rm"],
        )
        .await;
        assert!(s.path("f.txt").exists());
    });
}

#[test]
fn plan_mode_refuses_gemini_writes() {
    rt().block_on(async {
        let s = session_with(&[("a.txt", "keep\n")], PermissionMode::Plan, &[]);
        s.run("read_file", json!({"file_path": "a.txt"})).await;
        s.check_err("write_file", json!({"file_path": "a.txt", "content": "gone\n"}), &[])
            .await;
        s.check_err(
            "replace",
            json!({"file_path": "a.txt", "instruction": "x", "old_string": "keep", "new_string": "gone"}),
            &[],
        )
        .await;
        s.check_err("run_shell_command", json!({"command": "echo gone > a.txt"}), &[])
            .await;
        s.check_err("save_memory", json!({"fact": "x"}), &[]).await;
        assert_eq!(s.read("a.txt"), "keep\n");
        assert!(!s.ctx.state_dir().join("GEMINI.md").exists());
        // Reading is still fine.
        s.check(
            "read_file",
            json!({"file_path": "a.txt", "start_line": 1}),
            "keep\n",
        )
        .await;
    });
}

#[test]
fn writes_outside_the_working_directory_ask() {
    rt().block_on(async {
        let s = session(&[]);
        let outside: &Path = s.root.parent().unwrap();
        let target = outside.join("outside.txt");
        s.check_err(
            "write_file",
            json!({"file_path": target.display().to_string(), "content": "x"}),
            &["approv"],
        )
        .await;
        assert!(!target.exists());
    });
}
