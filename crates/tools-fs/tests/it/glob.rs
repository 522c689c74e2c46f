//! Glob's pattern semantics, `path`, newest-first order, the result cap, and its messages.

use std::time::Duration;

use serde_json::json;
use tool_core::{PermissionMode, RuleBehavior};

use crate::{FIXED_MTIME, Fixture, check};

#[test]
fn star_matches_at_any_depth() {
    check(
        &["a.rs", "src/b.rs", "src/deep/er/c.rs", "d.txt", "e.rsx"],
        json!({"pattern": "*.rs"}),
        &["a.rs", "src/b.rs", "src/deep/er/c.rs"],
    );
}

#[test]
fn directories_are_not_listed() {
    check(
        &["dir.rs/inner.txt", "x.rs"],
        json!({"pattern": "*.rs"}),
        &["x.rs"],
    );
}

#[test]
fn pattern_with_a_slash_is_anchored_at_the_root() {
    check(
        &["a.rs", "src/b.rs", "src/x/c.rs", "other/src/d.rs"],
        json!({"pattern": "src/**/*.rs"}),
        &["src/b.rs", "src/x/c.rs"],
    );
}

#[test]
fn single_star_does_not_cross_directories() {
    check(
        &["src/a.rs", "src/x/b.rs"],
        json!({"pattern": "src/*.rs"}),
        &["src/a.rs"],
    );
}

#[test]
fn braces_match_alternatives() {
    check(
        &[
            "Cargo.toml",
            "src/lib.rs",
            "README.md",
            "x/y.toml",
            "z.rs.bak",
        ],
        json!({"pattern": "**/*.{rs,toml}"}),
        &["Cargo.toml", "src/lib.rs", "x/y.toml"],
    );
}

#[test]
fn question_mark_and_classes() {
    check(
        &["a1.txt", "a2.txt", "ab.txt", "a10.txt"],
        json!({"pattern": "a[0-9].tx?"}),
        &["a1.txt", "a2.txt"],
    );
}

#[test]
fn exact_file_name() {
    check(
        &["Cargo.toml", "crates/x/Cargo.toml", "Cargo.lock"],
        json!({"pattern": "Cargo.toml"}),
        &["Cargo.toml", "crates/x/Cargo.toml"],
    );
}

#[test]
fn matching_is_case_sensitive() {
    check(
        &["README.md", "readme.md"],
        json!({"pattern": "README.md"}),
        &["README.md"],
    );
}

#[test]
fn absolute_pattern() {
    check(
        &["a.rs", "src/b.rs", "src/x/c.rs", "src/d.txt"],
        json!({"pattern": "{root}/src/**/*.rs"}),
        &["src/b.rs", "src/x/c.rs"],
    );
}

#[test]
fn absolute_pattern_overrides_path() {
    check(
        &["a.rs", "src/b.rs", "lib/c.rs"],
        json!({"pattern": "{root}/src/**/*.rs", "path": "lib"}),
        &["src/b.rs"],
    );
}

#[test]
fn absolute_pattern_to_one_file() {
    check(
        &["src/a.rs", "src/x/a.rs"],
        json!({"pattern": "{root}/src/a.rs"}),
        &["src/a.rs"],
    );
}

#[test]
fn absolute_single_star_matches_like_the_relative_pattern() {
    check(
        &["src/a.rs", "src/x/b.rs"],
        json!({"pattern": "{root}/src/*.rs"}),
        &["src/a.rs"],
    );
}

#[test]
fn relative_path() {
    check(
        &["a.rs", "src/b.rs", "src/x/c.rs"],
        json!({"pattern": "*.rs", "path": "src"}),
        &["src/b.rs", "src/x/c.rs"],
    );
}

#[test]
fn relative_path_is_normalised() {
    check(
        &["a.rs", "src/b.rs", "lib/c.rs"],
        json!({"pattern": "*.rs", "path": "./src/../lib/"}),
        &["lib/c.rs"],
    );
}

#[test]
fn absolute_path() {
    check(
        &["a.rs", "src/b.rs", "src/x/c.rs"],
        json!({"pattern": "*.rs", "path": "{root}/src"}),
        &["src/b.rs", "src/x/c.rs"],
    );
}

#[test]
fn anchored_pattern_is_relative_to_path() {
    check(
        &["src/x/a.rs", "x/b.rs"],
        json!({"pattern": "x/*.rs", "path": "src"}),
        &["src/x/a.rs"],
    );
}

#[test]
fn blank_path_means_the_working_directory() {
    check(
        &["a.rs", "src/b.rs"],
        json!({"pattern": "*.rs", "path": "  "}),
        &["a.rs", "src/b.rs"],
    );
}

#[test]
fn results_outside_the_working_directory_are_absolute() {
    let outside = Fixture::new(&["o.rs", "p/q.rs"]);
    let fixture = Fixture::new(&["a.rs"]);
    let ctx = fixture.context_with(PermissionMode::BypassPermissions, &[]);
    let pattern = format!("{}/**/*.rs", outside.root().display());
    let result = fixture.call(&ctx, &json!({"pattern": pattern}));
    outside.assert_lines(&result, &["{root}/o.rs", "{root}/p/q.rs"]);
}

#[test]
fn path_outside_the_working_directory_needs_permission() {
    let outside = Fixture::new(&["o.rs"]);
    let fixture = Fixture::new(&["a.rs"]);
    let path = outside.root().display().to_string();
    let result = fixture.call(
        &fixture.context(),
        &json!({"pattern": "*.rs", "path": path}),
    );
    assert!(result.is_error, "{result:#?}");
    let text = result.text();
    assert!(
        text.contains("Path is outside allowed working directories"),
        "{text}"
    );
    assert!(text.contains(&format!("Read(/{path}/**)")), "{text}");
}

#[test]
fn read_allow_rule_allows_a_path_outside() {
    let outside = Fixture::new(&["o.rs"]);
    let fixture = Fixture::new(&["a.rs"]);
    let rule = format!("Read(/{}/**)", outside.root().display());
    let ctx = fixture.context_with(PermissionMode::Default, &[(RuleBehavior::Allow, &rule)]);
    let path = outside.root().display().to_string();
    let result = fixture.call(&ctx, &json!({"pattern": "*.rs", "path": path}));
    outside.assert_lines(&result, &["{root}/o.rs"]);
}

#[test]
fn newest_first() {
    let fixture = Fixture::new(&["old.rs", "mid.rs", "new.rs", "src/newest.rs"]);
    fixture.set_mtime("old.rs", FIXED_MTIME);
    fixture.set_mtime("mid.rs", FIXED_MTIME + Duration::from_secs(10));
    fixture.set_mtime("new.rs", FIXED_MTIME + Duration::from_secs(20));
    fixture.set_mtime("src/newest.rs", FIXED_MTIME + Duration::from_secs(30));
    let result = fixture.call(&fixture.context(), &json!({"pattern": "*.rs"}));
    fixture.assert_lines(&result, &["src/newest.rs", "new.rs", "mid.rs", "old.rs"]);
}

#[test]
fn equal_times_are_ordered_by_path() {
    check(
        &["b.rs", "a.rs", "c/a.rs", "B.rs"],
        json!({"pattern": "**/*.rs"}),
        &["B.rs", "a.rs", "b.rs", "c/a.rs"],
    );
}

/// A tree of `n` files `f000.txt`.. whose mtimes grow with their number.
fn numbered(n: u64) -> Fixture {
    let fixture = Fixture::new(&[]);
    for i in 0..n {
        let name = format!("f{i:03}.txt");
        fixture.add(&name);
        fixture.set_mtime(&name, FIXED_MTIME + Duration::from_secs(i));
    }
    fixture
}

#[test]
fn cap_of_one_hundred_with_truncation_line() {
    let fixture = numbered(105);
    let result = fixture.call(&fixture.context(), &json!({"pattern": "*.txt"}));
    let names: Vec<String> = (5..105).rev().map(|i| format!("f{i:03}.txt")).collect();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    expected.push("(Results are truncated. Consider using a more specific path or pattern.)");
    fixture.assert_lines(&result, &expected);
    assert_eq!(result.data["truncated"], true);
    assert_eq!(result.data["numFiles"], tools_fs::limits::GLOB_MAX_RESULTS);
}

#[test]
fn exactly_one_hundred_is_not_truncated() {
    let fixture = numbered(100);
    let result = fixture.call(&fixture.context(), &json!({"pattern": "*.txt"}));
    assert_eq!(result.data["truncated"], false, "{result:#?}");
    assert_eq!(result.data["numFiles"], 100);
    assert_eq!(result.text().lines().count(), 100);
    assert!(!result.text().contains("truncated"));
}

#[test]
fn no_files_found() {
    let result = check(&["a.rs"], json!({"pattern": "*.py"}), &["No files found"]);
    assert_eq!(result.data["numFiles"], 0);
    assert_eq!(result.data["truncated"], false);
    assert!(!result.is_error);
}

#[test]
fn empty_directory() {
    check(&["empty/"], json!({"pattern": "**"}), &["No files found"]);
}

#[test]
fn missing_directory() {
    check(
        &["a.rs"],
        json!({"pattern": "*.rs", "path": "zzzzzz"}),
        &[
            "<tool_use_error>Directory does not exist: {root}/zzzzzz. Note: your current working directory is {root}.</tool_use_error>",
        ],
    );
}

#[test]
fn missing_directory_suggests_a_sibling_differing_by_case() {
    check(
        &["Src/a.rs"],
        json!({"pattern": "*.rs", "path": "src"}),
        &[
            "<tool_use_error>Directory does not exist: {root}/src. Note: your current working directory is {root}. Did you mean {root}/Src?</tool_use_error>",
        ],
    );
}

#[test]
fn missing_directory_suggests_a_sibling_with_a_typo() {
    check(
        &["components/a.ts"],
        json!({"pattern": "*.ts", "path": "{root}/componets"}),
        &[
            "<tool_use_error>Directory does not exist: {root}/componets. Note: your current working directory is {root}. Did you mean {root}/components?</tool_use_error>",
        ],
    );
}

#[test]
fn missing_base_of_an_absolute_pattern() {
    check(
        &["a.rs"],
        json!({"pattern": "{root}/gone/**/*.rs"}),
        &[
            "<tool_use_error>Directory does not exist: {root}/gone. Note: your current working directory is {root}.</tool_use_error>",
        ],
    );
}

#[test]
fn path_is_not_a_directory() {
    check(
        &["a.rs"],
        json!({"pattern": "*", "path": "a.rs"}),
        &["<tool_use_error>Path is not a directory: {root}/a.rs</tool_use_error>"],
    );
}

#[test]
fn empty_pattern() {
    check(
        &["a.rs"],
        json!({"pattern": " "}),
        &["<tool_use_error>The pattern must not be empty.</tool_use_error>"],
    );
}

#[test]
fn invalid_pattern() {
    check(
        &["a.rs"],
        json!({"pattern": "a[b"}),
        &[
            "<tool_use_error>Invalid glob pattern \"a[b\": error parsing glob 'a[b': unclosed character class; missing ']'</tool_use_error>",
        ],
    );
}

#[test]
fn missing_pattern() {
    check(
        &["a.rs"],
        json!({}),
        &[
            "<tool_use_error>InputValidationError: Glob failed due to the following issue(s):",
            "The required parameter `pattern` is missing</tool_use_error>",
        ],
    );
}

#[test]
fn unexpected_parameter() {
    check(
        &["a.rs"],
        json!({"pattern": "*.rs", "limit": 3}),
        &[
            "<tool_use_error>InputValidationError: Glob failed due to the following issue(s):",
            "An unexpected parameter `limit` was provided</tool_use_error>",
        ],
    );
}

#[test]
fn string_boolean_is_coerced() {
    check(
        &["a.rs", ".hid/b.rs"],
        json!({"pattern": "**/*.rs", "include_ignored": "true"}),
        &[".hid/b.rs", "a.rs"],
    );
}

#[test]
fn null_optional_parameters_mean_not_given() {
    check(
        &["a.rs"],
        json!({"pattern": "*.rs", "path": null, "include_ignored": null}),
        &["a.rs"],
    );
}

#[test]
fn file_names_with_spaces_and_unicode() {
    check(
        &["my file.rs", "ünï/cødé.rs"],
        json!({"pattern": "**/*.rs"}),
        &["my file.rs", "ünï/cødé.rs"],
    );
}

#[test]
fn newest_hundred_of_many_with_equal_times() {
    // More matches than are kept while walking, in several folders, many sharing an mtime:
    // the hundred listed are the newest, ties by path, exactly as a full sort would have it.
    let fixture = Fixture::new(&[]);
    let mut all: Vec<(u64, String)> = Vec::new();
    for i in 0..2000u64 {
        let name = format!("d{}/f{i:04}.txt", i % 9);
        fixture.add(&name);
        let secs = (i * 7919) % 3;
        fixture.set_mtime(&name, FIXED_MTIME + Duration::from_secs(secs));
        all.push((secs, name));
    }
    fixture.add("d1/other.rs");
    all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut expected: Vec<&str> = all.iter().take(100).map(|(_, n)| n.as_str()).collect();
    expected.push("(Results are truncated. Consider using a more specific path or pattern.)");
    let result = fixture.call(&fixture.context(), &json!({"pattern": "**/*.txt"}));
    fixture.assert_lines(&result, &expected);
    let result = fixture.call(&fixture.context(), &json!({"pattern": "d*/f*.txt"}));
    fixture.assert_lines(&result, &expected);
}
