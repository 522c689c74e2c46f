//! `--profile gemini`: the binary lists Gemini CLI's tools and runs them over the built-ins.

use serde_json::Value;

use crate::{Project, text};

#[test]
fn gemini_profile_lists_and_calls_geminis_tools() {
    let p = Project::new(&["a.txt = alpha\nbeta\n"]);
    let run = p.run(&["--profile", "gemini", "list"], None);
    run.assert_code(0);
    let listed = run.stdout.clone();
    for name in [
        "read_file",
        "replace",
        "run_shell_command",
        "list_directory",
    ] {
        assert!(listed.lines().any(|l| l.trim() == name), "{listed}");
    }
    assert!(!listed.lines().any(|l| l.trim() == "Read"), "{listed}");

    let input = r#"{"tool":"read_file","input":{"file_path":"a.txt"}}
{"tool":"replace","input":{"file_path":"a.txt","instruction":"rename","old_string":"beta","new_string":"gamma"}}
{"tool":"run_shell_command","input":{"command":"cat a.txt"}}
"#;
    let run = p.run(
        &["--profile", "gemini", "--mode", "acceptEdits", "batch"],
        Some(input),
    );
    run.assert_code(0);
    let lines: Vec<Value> = run.lines();
    assert_eq!(lines.len(), 3, "{run:#?}");
    assert_eq!(text(&lines[0]), "alpha\nbeta\n");
    assert_eq!(
        text(&lines[1]),
        format!(
            "Successfully modified file: {}/a.txt (1 replacements).",
            p.root_str()
        )
    );
    assert_eq!(text(&lines[2]), "Output: alpha\ngamma");
    assert_eq!(
        std::fs::read_to_string(p.root().join("a.txt")).unwrap_or_default(),
        "alpha\ngamma\n"
    );

    let run = p.run(
        &[
            "--profile",
            "gemini",
            "call",
            "read_file",
            r#"{"file_path":"a.txt","start_line":2}"#,
        ],
        None,
    );
    run.assert_code(0);
    assert!(text(&run.result()).ends_with("--- FILE CONTENT (truncated) ---\ngamma\n"));
}
