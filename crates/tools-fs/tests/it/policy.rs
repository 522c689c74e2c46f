//! The shared ignore policy (version-control folders, `.gitignore`, `.ignore`,
//! `.agent-toolsignore`, hidden files listed), symlinks, read-deny rules and cancellation.

use serde_json::json;
use tool_core::{PermissionMode, RuleBehavior};

use crate::{Fixture, check};

/// A git repository as the `ignore` crate recognises it.
const GIT: &[&str] = &[
    ".git/HEAD = ref: refs/heads/main\\n",
    ".git/objects/ab/cdef",
];

fn with_git(tree: &[&'static str]) -> Vec<&'static str> {
    GIT.iter().chain(tree).copied().collect()
}

#[test]
fn git_contents_never_listed_even_with_include_ignored() {
    check(
        &with_git(&["a.txt"]),
        json!({"pattern": "**", "include_ignored": true}),
        &["a.txt"],
    );
}

#[test]
fn git_contents_never_listed_when_the_pattern_names_them() {
    check(
        &with_git(&["a.txt"]),
        json!({"pattern": ".git/**", "include_ignored": true}),
        &["No files found"],
    );
    check(
        &with_git(&["a.txt"]),
        json!({"pattern": "HEAD"}),
        &["No files found"],
    );
}

#[test]
fn other_vcs_folders_never_listed() {
    check(
        &[
            ".hg/store",
            ".svn/entries",
            ".jj/repo",
            "sub/.git/config",
            "a.txt",
        ],
        json!({"pattern": "**", "include_ignored": true}),
        &["a.txt"],
    );
}

#[test]
fn gitignored_directory_hidden_in_a_repository() {
    check(
        &with_git(&["kept.rs", "target/debug/out.rs", ".gitignore = target/\\n"]),
        json!({"pattern": "**/*.rs"}),
        &["kept.rs"],
    );
}

#[test]
fn gitignored_file_hidden_in_a_repository() {
    check(
        &with_git(&["kept.rs", "gen.rs", ".gitignore = gen.rs\\n"]),
        json!({"pattern": "**/*.rs"}),
        &["kept.rs"],
    );
}

#[test]
fn nested_gitignore_honoured() {
    check(
        &with_git(&[
            "a/kept.rs",
            "a/out/x.rs",
            "a/.gitignore = out/\\n",
            "out/y.rs",
        ]),
        json!({"pattern": "**/*.rs"}),
        &["a/kept.rs", "out/y.rs"],
    );
}

#[test]
fn gitignored_files_listed_with_include_ignored() {
    check(
        &with_git(&[
            "kept.rs",
            "gen.rs",
            "target/out.rs",
            ".gitignore = gen.rs\\ntarget/\\n",
        ]),
        json!({"pattern": "**/*.rs", "include_ignored": true}),
        &["gen.rs", "kept.rs", "target/out.rs"],
    );
}

#[test]
fn gitignore_outside_a_repository_is_not_applied() {
    // As ripgrep does: `.gitignore` only counts inside a git repository.
    check(
        &["kept.rs", "target/out.rs", ".gitignore = target/\\n"],
        json!({"pattern": "**/*.rs"}),
        &["kept.rs", "target/out.rs"],
    );
}

#[test]
fn dot_ignore_honoured_without_git() {
    check(
        &["kept.rs", "vendor/v.rs", ".ignore = vendor/\\n"],
        json!({"pattern": "**/*.rs"}),
        &["kept.rs"],
    );
}

#[test]
fn agent_tools_ignore_hides_a_directory() {
    check(
        &[
            "kept.rs",
            "private/p.rs",
            ".agent-toolsignore = private/\\n",
        ],
        json!({"pattern": "**/*.rs"}),
        &["kept.rs"],
    );
}

#[test]
fn agent_tools_ignore_hides_a_file() {
    check(
        &["kept.rs", "secret.rs", ".agent-toolsignore = secret.rs\\n"],
        json!({"pattern": "**/*.rs"}),
        &["kept.rs"],
    );
}

#[test]
fn agent_tools_ignored_files_listed_with_include_ignored() {
    check(
        &[
            "kept.rs",
            "private/p.rs",
            ".agent-toolsignore = private/\\n",
        ],
        json!({"pattern": "**/*.rs", "include_ignored": true}),
        &["kept.rs", "private/p.rs"],
    );
}

#[test]
fn hidden_directories_listed_by_default() {
    // As the reference's ripgrep `--hidden`: `.github/workflows/*.yml` is found.
    check(
        &["a.yml", ".github/ci.yml", ".config/x/y.yml"],
        json!({"pattern": "**/*.yml"}),
        &[".config/x/y.yml", ".github/ci.yml", "a.yml"],
    );
}

#[test]
fn hidden_files_listed_by_default() {
    check(
        &["a.rs", ".hidden.rs", "src/.also.rs"],
        json!({"pattern": "**/*.rs"}),
        &[".hidden.rs", "a.rs", "src/.also.rs"],
    );
}

#[test]
fn hidden_files_still_follow_the_ignore_rules() {
    check(
        &[
            ".git/HEAD",
            ".gitignore = .env*\n!.env.example\n",
            ".env",
            ".env.example",
            "a.env",
        ],
        json!({"pattern": "**/*env*"}),
        &[".env.example", "a.env"],
    );
}

#[test]
fn hidden_directory_named_by_the_pattern() {
    check(
        &["a.yml", ".github/ci.yml", ".github/workflows/t.yml"],
        json!({"pattern": ".github/**"}),
        &[".github/ci.yml", ".github/workflows/t.yml"],
    );
}

#[test]
fn hidden_file_named_by_the_pattern() {
    check(
        &["env", ".env", "sub/.env"],
        json!({"pattern": "**/.env"}),
        &[".env", "sub/.env"],
    );
}

#[test]
fn hidden_files_listed_with_include_ignored() {
    check(
        &["a.yml", ".github/ci.yml"],
        json!({"pattern": "**/*.yml", "include_ignored": true}),
        &[".github/ci.yml", "a.yml"],
    );
}

#[test]
fn symlinked_directory_not_followed() {
    check(
        &["real/a.rs", "link -> real"],
        json!({"pattern": "**/*.rs"}),
        &["real/a.rs"],
    );
}

#[test]
fn symlink_to_a_directory_outside_not_followed() {
    let outside = Fixture::new(&["o.rs"]);
    let link = format!("out -> {}", outside.root().display());
    check(
        &["a.rs", link.as_str()],
        json!({"pattern": "**/*.rs"}),
        &["a.rs"],
    );
}

#[test]
fn symlink_to_a_directory_is_not_listed_as_a_file() {
    check(
        &["a.txt", "real/b.txt", "link -> real"],
        json!({"pattern": "*"}),
        &["a.txt", "real/b.txt"],
    );
}

#[test]
fn read_deny_rule_hides_files() {
    let fixture = Fixture::new(&["a.rs", "secret/key.rs", "secret/deep/more.rs", "src/b.rs"]);
    let ctx = fixture.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(secret/**)")],
    );
    let result = fixture.call(&ctx, &json!({"pattern": "**/*.rs"}));
    fixture.assert_lines(&result, &["a.rs", "src/b.rs"]);
}

#[test]
fn read_deny_name_rule_hides_files_anywhere() {
    let fixture = Fixture::new(&["a.rs", "id.key", "deep/er/b.key"]);
    let ctx = fixture.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(*.key)")],
    );
    let result = fixture.call(&ctx, &json!({"pattern": "**"}));
    fixture.assert_lines(&result, &["a.rs"]);
}

#[test]
fn read_deny_absolute_rule_hides_files() {
    let fixture = Fixture::new(&["a.rs", "secret/key.rs"]);
    let ctx = fixture.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(/{root}/secret/**)")],
    );
    let result = fixture.call(&ctx, &json!({"pattern": "**/*.rs"}));
    fixture.assert_lines(&result, &["a.rs"]);
}

#[test]
fn read_deny_rule_holds_in_bypass_mode() {
    let fixture = Fixture::new(&["a.rs", "secret/key.rs"]);
    let ctx = fixture.context_with(
        PermissionMode::BypassPermissions,
        &[(RuleBehavior::Deny, "Read(secret/**)")],
    );
    let result = fixture.call(&ctx, &json!({"pattern": "**/*.rs"}));
    fixture.assert_lines(&result, &["a.rs"]);
}

#[test]
fn read_deny_rule_on_the_search_root_denies_the_call() {
    let fixture = Fixture::new(&["a.rs", "secret/key.rs"]);
    let ctx = fixture.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(secret/**)")],
    );
    let result = fixture.call(&ctx, &json!({"pattern": "*.rs", "path": "secret"}));
    fixture.assert_lines(
        &result,
        &["<tool_use_error>Permission to read {root}/secret has been denied.</tool_use_error>"],
    );
}

#[test]
fn blanket_glob_deny_denies_the_call() {
    let fixture = Fixture::new(&["a.rs"]);
    let ctx = fixture.context_with(PermissionMode::Default, &[(RuleBehavior::Deny, "Glob")]);
    let result = fixture.call(&ctx, &json!({"pattern": "*.rs"}));
    fixture.assert_lines(
        &result,
        &["<tool_use_error>Permission to use Glob has been denied.</tool_use_error>"],
    );
}

#[test]
fn cancelled_context_returns_an_error_result() {
    let fixture = Fixture::new(&["a.rs", "b/c.rs"]);
    let ctx = fixture.context();
    ctx.cancel_token().cancel();
    let result = fixture.call(&ctx, &json!({"pattern": "**/*.rs"}));
    fixture.assert_lines(
        &result,
        &["<tool_use_error>Glob was cancelled before it completed</tool_use_error>"],
    );
    assert!(!result.retryable, "{result:#?}");
}

#[test]
fn cancelling_one_context_leaves_a_fresh_one_working() {
    let fixture = Fixture::new(&["a.rs"]);
    let cancelled = fixture.context();
    cancelled.cancel_token().cancel();
    assert!(
        fixture
            .call(&cancelled, &json!({"pattern": "*.rs"}))
            .is_error
    );
    let result = fixture.call(&fixture.context(), &json!({"pattern": "*.rs"}));
    fixture.assert_lines(&result, &["a.rs"]);
}
