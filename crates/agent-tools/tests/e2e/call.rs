//! `agent-tools call`: Glob on generated trees, input from the argument, stdin or nothing,
//! and input mistakes (bad JSON, unknown tool, missing, unexpected and mistyped fields).

use serde_json::Value;

use crate::{Project, Run, filenames, text};

/// Runs `call Glob INPUT` (or `call Glob` when `input` is `None`) in a project with `tree`
/// and checks the exit status and, for a successful call, the listed files in order.
#[track_caller]
fn check(project: &Project, input: Option<&str>, code: i32, files: &[&str]) -> Run {
    let mut args = vec!["call", "Glob"];
    args.extend(input);
    let run = project.run(&args, None);
    run.assert_code(code);
    if code != 2 {
        let result = run.result();
        assert_eq!(result["tool"], "Glob", "{run:#?}");
        assert_eq!(result["is_error"], code == 1, "{run:#?}");
        if code == 0 {
            assert_eq!(filenames(&result), files, "{run:#?}");
        }
    }
    run
}

/// The text of the one result line.
fn result_text(run: &Run) -> String {
    text(&run.result())
}

#[test]
fn glob_lists_generated_files() {
    let p = Project::new(&["a.rs", "src/b.rs", "src/c.txt", "docs/readme.md"]);
    let run = check(
        &p,
        Some(r#"{"pattern": "**/*.rs"}"#),
        0,
        &["a.rs", "src/b.rs"],
    );
    assert_eq!(result_text(&run), "a.rs\nsrc/b.rs");
    let result = run.result();
    assert_eq!(result["data"]["numFiles"], 2);
    assert_eq!(result["data"]["truncated"], false);
    assert!(result["data"]["durationMs"].is_u64(), "{result}");
    assert_eq!(result["content"][0]["type"], "text");
    assert!(run.stderr.is_empty(), "{run:#?}");
}

#[test]
fn pattern_without_slash_matches_at_any_depth() {
    let p = Project::new(&["a.rs", "x/y/z/deep.rs", "x/other.txt"]);
    check(
        &p,
        Some(r#"{"pattern": "*.rs"}"#),
        0,
        &["a.rs", "x/y/z/deep.rs"],
    );
}

#[test]
fn path_narrows_the_search() {
    let p = Project::new(&["a.rs", "src/b.rs", "src/inner/c.rs"]);
    check(
        &p,
        Some(r#"{"pattern": "*.rs", "path": "src"}"#),
        0,
        &["src/b.rs", "src/inner/c.rs"],
    );
}

#[test]
fn no_match_says_no_files_found() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some(r#"{"pattern": "*.py"}"#), 0, &[]);
    assert_eq!(result_text(&run), "No files found");
}

#[test]
fn gitignored_directory_hidden_by_default() {
    let p = Project::new(&["kept.rs", "build/out.rs", ".gitignore = build/\\n"]);
    p.git_init();
    check(&p, Some(r#"{"pattern": "**/*.rs"}"#), 0, &["kept.rs"]);
}

#[test]
fn gitignored_file_hidden_by_default() {
    let p = Project::new(&["kept.rs", "ignored.rs", ".gitignore = ignored.rs\\n"]);
    p.git_init();
    check(&p, Some(r#"{"pattern": "**/*.rs"}"#), 0, &["kept.rs"]);
}

#[test]
fn gitignored_files_listed_with_include_ignored() {
    let p = Project::new(&[
        "kept.rs",
        "ignored.rs",
        "build/out.rs",
        ".gitignore = ignored.rs\\nbuild/\\n",
    ]);
    p.git_init();
    check(
        &p,
        Some(r#"{"pattern": "**/*.rs", "include_ignored": true}"#),
        0,
        &["build/out.rs", "ignored.rs", "kept.rs"],
    );
}

#[test]
fn git_directory_never_listed() {
    let p = Project::new(&["a.txt"]);
    p.git_init();
    check(
        &p,
        Some(r#"{"pattern": "**", "include_ignored": true}"#),
        0,
        &["a.txt"],
    );
}

#[test]
fn hidden_directory_listed_by_default() {
    // As the reference's ripgrep `--hidden`: `.github/workflows` is searched.
    let p = Project::new(&["a.yml", ".github/ci.yml"]);
    check(
        &p,
        Some(r#"{"pattern": "**/*.yml"}"#),
        0,
        &[".github/ci.yml", "a.yml"],
    );
}

#[test]
fn hidden_file_listed_by_default() {
    let p = Project::new(&["a.rs", ".hidden.rs"]);
    check(
        &p,
        Some(r#"{"pattern": "*.rs"}"#),
        0,
        &[".hidden.rs", "a.rs"],
    );
}

#[test]
fn hidden_directory_included_when_the_pattern_names_it() {
    let p = Project::new(&["a.yml", ".github/ci.yml", ".github/workflows/test.yml"]);
    check(
        &p,
        Some(r#"{"pattern": ".github/**/*.yml"}"#),
        0,
        &[".github/ci.yml", ".github/workflows/test.yml"],
    );
}

#[test]
fn hidden_file_included_when_the_pattern_names_it() {
    let p = Project::new(&["a.env", ".env"]);
    check(&p, Some(r#"{"pattern": ".env"}"#), 0, &[".env"]);
}

#[test]
fn hidden_files_listed_with_include_ignored() {
    let p = Project::new(&["a.yml", ".github/ci.yml"]);
    check(
        &p,
        Some(r#"{"pattern": "**/*.yml", "include_ignored": true}"#),
        0,
        &[".github/ci.yml", "a.yml"],
    );
}

#[test]
fn input_from_stdin() {
    let p = Project::new(&["a.rs", "b.txt"]);
    let run = p.run(&["call", "Glob", "-"], Some(r#"{"pattern": "*.rs"}"#));
    run.assert_code(0);
    assert_eq!(filenames(&run.result()), ["a.rs"]);
}

#[test]
fn empty_stdin_means_empty_object() {
    let p = Project::new(&["a.rs"]);
    let run = p.run(&["call", "Glob", "-"], Some(""));
    run.assert_code(1);
    assert!(
        result_text(&run).contains("InputValidationError"),
        "{run:#?}"
    );
}

#[test]
fn no_input_means_empty_object() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, None, 1, &[]);
    let t = result_text(&run);
    assert!(t.contains("InputValidationError"), "{t}");
    assert!(
        t.contains("The required parameter `pattern` is missing"),
        "{t}"
    );
}

#[test]
fn bad_json_exits_2_without_output() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some("{\"pattern\": "), 2, &[]);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("JSON"), "{run:#?}");
}

#[test]
fn bad_json_on_stdin_exits_2() {
    let p = Project::new(&["a.rs"]);
    let run = p.run(&["call", "Glob", "-"], Some("{nope"));
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("JSON"), "{run:#?}");
}

#[test]
fn unknown_tool_exits_2_and_lists_tools() {
    let p = Project::new(&["a.rs"]);
    let run = p.run(&["call", "Nope", "{}"], None);
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("Nope"), "{run:#?}");
    assert!(run.stderr.contains("available tools: "), "{run:#?}");
    assert!(run.stderr.contains("Glob"), "{run:#?}");
}

#[test]
fn missing_field_is_a_validation_error() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some(r#"{"path": "."}"#), 1, &[]);
    let t = result_text(&run);
    assert!(t.contains("InputValidationError"), "{t}");
    assert!(
        t.contains("The required parameter `pattern` is missing"),
        "{t}"
    );
    assert_eq!(run.result()["data"], Value::Null);
}

#[test]
fn unexpected_field_is_a_validation_error() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some(r#"{"pattern": "*.rs", "bogus": 1}"#), 1, &[]);
    let t = result_text(&run);
    assert!(t.contains("InputValidationError"), "{t}");
    assert!(t.contains("`bogus`"), "{t}");
}

#[test]
fn wrongly_typed_field_is_a_validation_error() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some(r#"{"pattern": 5}"#), 1, &[]);
    let t = result_text(&run);
    assert!(t.contains("InputValidationError"), "{t}");
    assert!(t.contains("`pattern`"), "{t}");
}

#[test]
fn input_that_is_not_an_object_is_a_validation_error() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some("[1, 2]"), 1, &[]);
    assert!(
        result_text(&run).contains("InputValidationError"),
        "{run:#?}"
    );
}

#[test]
fn string_boolean_is_coerced() {
    let p = Project::new(&["kept.rs", "build/out.rs", ".gitignore = build/\\n"]);
    p.git_init();
    check(
        &p,
        Some(r#"{"pattern": "**/*.rs", "include_ignored": "true"}"#),
        0,
        &["build/out.rs", "kept.rs"],
    );
}

#[test]
fn null_optional_field_means_not_given() {
    let p = Project::new(&["a.rs"]);
    check(
        &p,
        Some(r#"{"pattern": "*.rs", "path": null, "include_ignored": null}"#),
        0,
        &["a.rs"],
    );
}

#[test]
fn missing_directory_is_an_error_result() {
    let p = Project::new(&["src/a.rs"]);
    let run = check(&p, Some(r#"{"pattern": "*.rs", "path": "nope"}"#), 1, &[]);
    let t = result_text(&run);
    assert!(t.contains("Directory does not exist"), "{t}");
    assert!(t.contains(p.root_str()), "{t}");
}

#[test]
fn empty_pattern_is_an_error_result() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, Some(r#"{"pattern": "  "}"#), 1, &[]);
    assert!(result_text(&run).contains("must not be empty"), "{run:#?}");
}

#[test]
fn alias_free_name_is_case_sensitive() {
    let p = Project::new(&["a.rs"]);
    let run = p.run(&["call", "glob", r#"{"pattern": "*.rs"}"#], None);
    run.assert_code(2);
}
