//! Sessions from settings files and options.

use std::path::Path;

use registry::{SessionOptions, build_context};
use tool_core::{PermissionMode, RuleBehavior, RuleSourceKind};

fn options(dir: &Path) -> SessionOptions {
    SessionOptions {
        cwd: dir.to_path_buf(),
        state_dir: Some(dir.join("home")),
        ..SessionOptions::default()
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn layers_merge_rules_and_the_last_mode_wins() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root.join("home/settings.json"),
        r#"{"permissions":{"allow":["Glob"],"defaultMode":"plan"}}"#,
    );
    write(
        &root.join(".agent-tools/settings.json"),
        r#"{"permissions":{"deny":["Bash"],"defaultMode":"acceptEdits","additionalDirectories":["../extra"]}}"#,
    );
    write(
        &root.join(".agent-tools/settings.local.json"),
        r#"{"permissions":{"ask":["Read(/secret/**)"]}}"#,
    );
    let mut opts = options(&root);
    opts.allow = vec!["Bash(npm test)".into()];
    let ctx = build_context(&opts).unwrap();
    assert_eq!(ctx.permission_mode(), PermissionMode::AcceptEdits);
    let rules = ctx.permissions().rules();
    let kinds: Vec<(RuleSourceKind, RuleBehavior, String)> = rules
        .iter()
        .map(|r| (r.source.kind, r.behavior, r.rule.to_string()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                RuleSourceKind::UserSettings,
                RuleBehavior::Allow,
                "Glob".into()
            ),
            (
                RuleSourceKind::ProjectSettings,
                RuleBehavior::Deny,
                "Bash".into()
            ),
            (
                RuleSourceKind::LocalSettings,
                RuleBehavior::Ask,
                "Read(/secret/**)".into()
            ),
            (
                RuleSourceKind::CliArg,
                RuleBehavior::Allow,
                "Bash(npm test)".into()
            ),
        ]
    );
    // `/x` patterns of project files are rooted at the project, not at `.agent-tools/`.
    assert_eq!(rules[2].source.root, root);
    assert_eq!(
        ctx.additional_dirs(),
        vec![root.parent().unwrap().join("extra")]
    );

    opts.mode = Some(PermissionMode::DontAsk);
    assert_eq!(
        build_context(&opts).unwrap().permission_mode(),
        PermissionMode::DontAsk
    );
}

#[test]
fn errors_name_the_file_or_option() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut opts = options(&root);
    opts.settings_file = Some(root.join("missing.json"));
    let err = build_context(&opts).unwrap_err().to_string();
    assert!(
        err.contains("missing.json") && err.contains("does not exist"),
        "{err}"
    );

    write(&root.join("bad.json"), "{\"permissions\": [}");
    opts.settings_file = Some(root.join("bad.json"));
    let err = build_context(&opts).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "invalid settings file {}",
            root.join("bad.json").display()
        )),
        "{err}"
    );

    write(
        &root.join("nobypass.json"),
        r#"{"permissions":{"disableBypassPermissionsMode":"disable"}}"#,
    );
    opts.settings_file = Some(root.join("nobypass.json"));
    opts.mode = Some(PermissionMode::BypassPermissions);
    let err = build_context(&opts).unwrap_err().to_string();
    assert!(err.contains("bypassPermissions mode is disabled"), "{err}");

    let mut opts = options(&root.join("nope"));
    opts.state_dir = Some(root.join("home"));
    assert!(build_context(&opts).is_err());
}
